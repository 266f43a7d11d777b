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

/// Waits up to 10 s until something accepts connections on `port`.
fn wait_for_port(port: u16, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "{what} did not start listening on {port}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
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
        // SSQ_BIN runs another build (an older one, to compare with).
        let binary = std::env::var("SSQ_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_ssq").to_string());
        let child = Command::new(binary)
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(args)
            // SSQ_TEST_LOG sets the instances' log filter, to see why a test failed.
            .env(
                "RUST_LOG",
                std::env::var("SSQ_TEST_LOG").unwrap_or_else(|_| "error".into()),
            )
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
        wait_for_port(self.port, "ssq");
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
    client_signing_with(url, "test", "test")
}

/// A client that signs its requests with the given access key and secret.
pub fn client_signing_with(url: &str, access_key_id: &str, secret: &str) -> aws_sdk_sqs::Client {
    let config = aws_sdk_sqs::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new(access_key_id, secret, None, None, "ssq-tests"))
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

/// A private `redis-server` on a free port, killed when dropped.
pub struct RedisServer {
    child: Option<Child>,
    pub port: u16,
    dir: std::path::PathBuf,
    extra: Vec<String>,
}

impl RedisServer {
    /// Starts Redis with no persistence.
    pub fn start() -> RedisServer {
        RedisServer::start_with(&["--appendonly", "no"])
    }

    /// Starts Redis with extra arguments, e.g. `--appendonly yes`.
    pub fn start_with(args: &[&str]) -> RedisServer {
        let port = free_port();
        let dir = std::env::temp_dir().join(format!("ssq-test-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut redis = RedisServer {
            child: None,
            port,
            dir,
            extra: args.iter().map(|s| s.to_string()).collect(),
        };
        redis.restart();
        redis
    }

    /// Starts Redis serving TLS only, with a fresh CA and a certificate for
    /// 127.0.0.1 made by openssl. Returns it and the CA's PEM file.
    pub fn start_tls() -> (RedisServer, std::path::PathBuf) {
        let port = free_port();
        let dir = std::env::temp_dir().join(format!("ssq-test-redis-tls-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = |name: &str| dir.join(name).to_str().unwrap().to_string();
        std::fs::write(dir.join("san.ext"), "subjectAltName=IP:127.0.0.1\n").unwrap();
        let steps: [&[&str]; 3] = [
            &[
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "1",
                "-subj",
                "/CN=ssq-test-ca",
                "-keyout",
                &file("ca.key"),
                "-out",
                &file("ca.pem"),
            ],
            &[
                "req",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-subj",
                "/CN=127.0.0.1",
                "-keyout",
                &file("server.key"),
                "-out",
                &file("server.csr"),
            ],
            &[
                "x509",
                "-req",
                "-in",
                &file("server.csr"),
                "-CA",
                &file("ca.pem"),
                "-CAkey",
                &file("ca.key"),
                "-CAcreateserial",
                "-days",
                "1",
                "-extfile",
                &file("san.ext"),
                "-out",
                &file("server.pem"),
            ],
        ];
        for step in steps {
            let status = Command::new("openssl")
                .args(step)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("openssl is installed");
            assert!(status.success(), "openssl {step:?} failed");
        }
        let extra = [
            "--appendonly",
            "no",
            "--port",
            "0",
            "--tls-port",
            &port.to_string(),
            "--tls-cert-file",
            &file("server.pem"),
            "--tls-key-file",
            &file("server.key"),
            "--tls-ca-cert-file",
            &file("ca.pem"),
            "--tls-auth-clients",
            "no",
        ];
        let mut redis = RedisServer {
            child: None,
            port,
            dir: dir.clone(),
            extra: extra.iter().map(|s| s.to_string()).collect(),
        };
        redis.restart();
        (redis, dir.join("ca.pem"))
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// A connected client built as ssq builds its own, with a 5 s timeout.
    pub async fn client(&self) -> fred::prelude::Client {
        use fred::prelude::ClientLike;
        let target = ssq::redis::Target {
            url: self.url(),
            command_timeout: Duration::from_secs(5),
            reconnect_every: Duration::from_millis(500),
            ca_file: None,
        };
        let client = ssq::redis::client(&target).unwrap();
        client.init().await.unwrap();
        client
    }

    /// Starts (again) on the same port with the same data directory.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "redis is already running");
        let child = Command::new("redis-server")
            .args([
                "--port",
                &self.port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
            ])
            .arg("--dir")
            .arg(&self.dir)
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("redis-server is installed (`make test` installs it: scripts/test-deps.sh)");
        self.child = Some(child);
        wait_for_port(self.port, "redis-server");
    }

    /// Kills Redis at once (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Lock timings short enough for tests: TTL 2 s, renew every 250 ms, step
/// down 1.2 s after the last good renewal was sent.
pub const FAST_LOCK: &[&str] = &[
    "--lock-ttl",
    "2s",
    "--lock-renew",
    "250ms",
    "--lock-step-down",
    "1200ms",
    "--lock-retry",
    "200ms",
    "--redis-timeout",
    "250ms",
];

impl Server {
    /// Starts an instance of a Redis-backed group with the test timings.
    pub fn start_node(redis: &RedisServer, node_id: &str) -> Server {
        let url = redis.url();
        let mut args = vec!["--redis-url", url.as_str(), "--node-id", node_id];
        args.extend_from_slice(FAST_LOCK);
        Server::start_with(&args)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The process's resident memory in KiB (VmRSS); panics if it is gone.
    pub fn rss_kib(&self) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .ok()
            .and_then(|s| s.lines().find(|l| l.starts_with("VmRSS:")).map(str::to_string))
            .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
            .expect("the instance is running and reports VmRSS")
    }

    /// Sends a signal by name (KILL, TERM, STOP, CONT).
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([&format!("-{name}"), &self.pid().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -{name} failed");
    }

    /// GET `path`, or None if the instance does not answer within 500 ms.
    pub async fn get(&self, path: &str) -> Option<(u16, String)> {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_millis(500))
            .build()
            .unwrap();
        let response = client.get(format!("{}{path}", self.url)).send().await.ok()?;
        let status = response.status().as_u16();
        Some((status, response.text().await.ok()?))
    }

    pub async fn is_ready(&self) -> bool {
        matches!(self.get("/ready").await, Some((200, _)))
    }

    /// The HTTP status of a cheap SQS call (ListQueues), or None if no answer.
    pub async fn queue_call_status(&self) -> Option<u16> {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_millis(500))
            .build()
            .unwrap();
        let response = client
            .post(&self.url)
            .header("x-amz-target", "AmazonSQS.ListQueues")
            .header("content-type", "application/x-amz-json-1.0")
            .body("{}")
            .send()
            .await
            .ok()?;
        Some(response.status().as_u16())
    }

    /// The value of the `ssq_leader` gauge.
    pub async fn leader_gauge(&self) -> i64 {
        let (_, text) = self.get("/metrics").await.expect("metrics answer");
        text.lines()
            .find(|l| l.starts_with("ssq_leader{"))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .expect("ssq_leader is exported")
    }

    pub async fn status(&self) -> serde_json::Value {
        let (_, text) = self.get("/status").await.expect("status answers");
        serde_json::from_str(&text).unwrap()
    }
}

/// Polls `condition` every 10 ms until it holds or `limit` passes; returns
/// how long it took, or None.
pub async fn wait_for<F, Fut>(limit: Duration, mut condition: F) -> Option<Duration>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = Instant::now();
    while started.elapsed() < limit {
        if condition().await {
            return Some(started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    None
}

/// The index of the one ready instance, once exactly one is.
pub async fn single_leader(nodes: &[Server], limit: Duration) -> usize {
    let started = Instant::now();
    loop {
        let mut ready = Vec::new();
        for (i, node) in nodes.iter().enumerate() {
            if node.is_ready().await {
                ready.push(i);
            }
        }
        if let [only] = ready[..] {
            return only;
        }
        assert!(
            started.elapsed() < limit,
            "no single leader within {limit:?}: ready = {ready:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// An SDK client that does not retry: tests that count failures see each.
pub fn client_without_retries(url: &str) -> aws_sdk_sqs::Client {
    let config = aws_sdk_sqs::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "ssq-tests"))
        .endpoint_url(url)
        .retry_config(aws_sdk_sqs::config::retry::RetryConfig::disabled())
        .timeout_config(
            aws_sdk_sqs::config::timeout::TimeoutConfig::builder()
                .operation_attempt_timeout(Duration::from_secs(5))
                .build(),
        )
        .build();
    aws_sdk_sqs::Client::from_conf(config)
}

/// The queue URL every instance of a group answers for (queue URLs are
/// matched by account and name, whatever the host).
pub fn queue_url(name: &str) -> String {
    format!("http://127.0.0.1/000000000000/{name}")
}

/// An in-process leader built from the library parts, holding the lock in
/// `redis`: for tests and benchmarks that must drive the store directly.
pub struct LibraryLeader {
    pub service: std::sync::Arc<ssq::service::Service>,
    pub leadership: std::sync::Arc<ssq::leader::Leadership>,
    pub metrics: std::sync::Arc<ssq::metrics::Metrics>,
    pub client: fred::prelude::Client,
    pub layout: ssq::store::Layout,
}

impl LibraryLeader {
    pub async fn start(redis: &RedisServer) -> LibraryLeader {
        use ssq::election::{Acquire, LockStore, RedisLock};
        use std::sync::Arc;

        let client = redis.client().await;
        let layout = ssq::store::Layout::new("ssq");
        let metrics = Arc::new(ssq::metrics::Metrics::new("library"));
        let (journal, journal_rx) = tokio::sync::mpsc::unbounded_channel();
        let service = Arc::new(
            ssq::service::Service::new(Arc::new(ssq::clock::SystemClock), metrics.clone())
                .persisting_to(journal),
        );
        let leadership = Arc::new(ssq::leader::Leadership::new(
            "library".into(),
            ssq::leader::Role::Passive,
            Duration::from_secs(3),
            service.clone(),
            metrics.clone(),
        ));
        let loader = Arc::new(ssq::store::loader::Loader::new(
            client.clone(),
            layout.clone(),
            service.clone(),
            leadership.clone(),
        ));
        let committer = ssq::store::committer::Committer::new(
            client.clone(),
            layout.clone(),
            leadership.clone(),
            service.clone(),
            loader,
            metrics.clone(),
            Duration::from_secs(5),
        );
        tokio::spawn(committer.run(journal_rx));
        // A long lease: nothing renews it here.
        let lock = RedisLock::new(
            client.clone(),
            &layout,
            "library",
            "http://library",
            Duration::from_secs(600),
        );
        let Acquire::Won(token) = lock.acquire().await.unwrap() else {
            panic!("the lock was free")
        };
        let info = ssq::leader::LeaderInfo::parse(&token).unwrap();
        let term = leadership.acquired(info, tokio::time::Instant::now()).unwrap();
        leadership.restored(term);
        LibraryLeader {
            service,
            leadership,
            metrics,
            client,
            layout,
        }
    }

    /// A leader with one empty standard queue, `queue`.
    pub async fn start_with_queue(redis: &RedisServer, queue: &str) -> LibraryLeader {
        let leader = LibraryLeader::start(redis).await;
        leader
            .service
            .create_queue(
                queue,
                &std::collections::BTreeMap::new(),
                std::collections::BTreeMap::new(),
            )
            .await
            .unwrap();
        leader
    }

    /// Gives the lock up so that a process can take over.
    pub async fn release(&self) {
        use fred::prelude::KeysInterface;
        let _: i64 = self.client.del(self.layout.lock()).await.unwrap();
    }
}

pub fn new_message(body: &str) -> ssq::queue::NewMessage {
    ssq::queue::NewMessage {
        body: body.into(),
        attributes: ssq::queue::MessageAttributes::new(),
        delay_seconds: None,
        sender_id: "t".into(),
        trace_header: None,
        group_id: None,
        dedup_id: None,
    }
}

/// One long poll of a consumer under test (up to 10 messages, 1 s); `None`
/// when the request failed, as it may while leadership moves.
pub async fn poll_once(sqs: &aws_sdk_sqs::Client, url: &str) -> Option<Vec<aws_sdk_sqs::types::Message>> {
    let out = sqs
        .receive_message()
        .queue_url(url)
        .max_number_of_messages(10)
        .wait_time_seconds(1)
        .send()
        .await
        .ok()?;
    Some(out.messages.unwrap_or_default())
}

/// Deletes a received message; whether the server acknowledged the delete.
pub async fn delete_received(
    sqs: &aws_sdk_sqs::Client,
    url: &str,
    message: &aws_sdk_sqs::types::Message,
) -> bool {
    sqs.delete_message()
        .queue_url(url)
        .receipt_handle(message.receipt_handle().unwrap_or_default())
        .send()
        .await
        .is_ok()
}
