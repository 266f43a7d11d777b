//! Shared by the integration tests: start real `ssq` processes on free
//! loopback ports and talk to them with the official AWS SDK.
#![allow(dead_code)] // each test binary uses its own subset

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use aws_sdk_sqs::config::{BehaviorVersion, Credentials, Region};

/// A running `ssq` process, killed when dropped.
pub struct Server {
    pub child: Child,
    pub port: u16,
    pub url: String,
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Server {
    /// Starts memory-only ssq and waits until it answers /health.
    pub fn start() -> Server {
        Server::start_with(&[])
    }

    pub fn start_with(args: &[&str]) -> Server {
        let port = free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_ssq"))
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(args)
            .env("RUST_LOG", "error")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the ssq binary starts");
        let server = Server {
            child,
            port,
            url: format!("http://127.0.0.1:{port}"),
        };
        server.wait_until_listening();
        server
    }

    fn wait_until_listening(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "ssq did not start listening on {}",
                self.port
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn client(&self) -> aws_sdk_sqs::Client {
        client_for(&self.url)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn client_for(url: &str) -> aws_sdk_sqs::Client {
    let config = aws_sdk_sqs::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "ssq-tests"))
        .endpoint_url(url)
        .build();
    aws_sdk_sqs::Client::from_conf(config)
}

/// The SQS error code of a failed SDK call.
pub fn error_code<E, R>(result: Result<impl std::fmt::Debug, aws_sdk_sqs::error::SdkError<E, R>>) -> String
where
    E: aws_sdk_sqs::error::ProvideErrorMetadata + std::fmt::Debug,
    R: std::fmt::Debug,
{
    let error = result.expect_err("the call should fail");
    error
        .as_service_error()
        .and_then(|e| e.code())
        .unwrap_or_else(|| panic!("not a service error: {error:?}"))
        .to_string()
}
