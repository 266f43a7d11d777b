//! Private `redis-server` processes on free ports, with TLS certificates
//! made by openssl where a test needs them.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::process::{free_port, wait_for_port};

/// A private `redis-server` on a free port, killed when dropped.
pub struct RedisServer {
    child: Option<Child>,
    pub port: u16,
    dir: std::path::PathBuf,
    extra: Vec<String>,
}

/// What `redis-cli -p <port> <args>` prints (a Redis or a Sentinel).
pub fn redis_cli(port: u16, args: &[&str]) -> String {
    let output = Command::new("redis-cli")
        .args(["-p", &port.to_string()])
        .args(args)
        .output()
        .expect("redis-cli is installed with redis-server");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Whether the Redis on `port` is a replica in sync with its primary.
pub fn is_synced_replica(port: u16) -> bool {
    let info = redis_cli(port, &["info", "replication"]);
    info.contains("role:slave") && info.contains("master_link_status:up")
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
    /// 127.0.0.1 (`certificates.rs`). Returns it and the CA's PEM file.
    pub fn start_tls() -> (RedisServer, std::path::PathBuf) {
        let port = free_port();
        let dir = std::env::temp_dir().join(format!("ssq-test-redis-tls-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let certificates = super::certificates::for_loopback(&dir);
        let file = |path: &std::path::Path| path.to_str().unwrap().to_string();
        let extra = [
            "--appendonly",
            "no",
            "--port",
            "0",
            "--tls-port",
            &port.to_string(),
            "--tls-cert-file",
            &file(&certificates.server),
            "--tls-key-file",
            &file(&certificates.key),
            "--tls-ca-cert-file",
            &file(&certificates.ca),
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
        (redis, certificates.ca)
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    fn target(&self) -> ssq::store::redis::Target {
        ssq::store::redis::Target {
            url: self.url(),
            command_timeout: Duration::from_secs(5),
            reconnect_every: Duration::from_millis(500),
            ca_file: None,
        }
    }

    /// ssq's connections to this Redis, connecting: `link(key)` on them
    /// reaches it as a shard's parts do.
    pub fn connections(&self) -> ssq::store::redis::Redis {
        let redis = ssq::store::redis::Redis::new(&self.target(), false).unwrap();
        // One Redis: nothing to follow, so nothing to stop.
        redis.start(tokio::sync::watch::channel(false).1);
        redis
    }

    /// A connected client built as ssq builds its own, with a 5 s timeout.
    pub async fn client(&self) -> fred::prelude::Client {
        use fred::prelude::ClientLike;
        let client = ssq::store::redis::client(&self.target()).unwrap();
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
            .expect("redis-server is installed (`make test` installs it: tools/test-deps.sh)");
        self.child = Some(child);
        wait_for_port(self.port, "redis-server");
    }

    /// Sends a signal to the Redis process: `STOP` freezes it, `CONT` wakes it.
    pub fn signal(&self, name: &str) {
        let pid = self.child.as_ref().expect("redis is running").id();
        let status = std::process::Command::new("kill")
            .args([&format!("-{name}"), &pid.to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -{name} failed");
    }

    /// Starts a replica of this Redis and waits until it has synced.
    pub async fn start_replica(&self) -> RedisServer {
        let primary = self.port.to_string();
        let replica = RedisServer::start_with(&["--appendonly", "no", "--replicaof", "127.0.0.1", &primary]);
        let synced = super::wait_for(std::time::Duration::from_secs(10), || async {
            is_synced_replica(replica.port)
        })
        .await;
        assert!(synced.is_some(), "the replica synced with the primary");
        replica
    }

    pub fn is_running(&self) -> bool {
        self.child.is_some()
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
