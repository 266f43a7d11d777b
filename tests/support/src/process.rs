//! `ssq` processes on free loopback ports: one alone, or a group sharing a
//! Redis with lock timings short enough for tests, and waiting on them.
//!
//! `SSQ_TEST_STORE=mariadb` gives every instance started without a store
//! of its own a private MariaDB (`--mysql-url`), so that a suite written
//! for memory-only runs on MySQL-backed ssq as it is (docs/testing.md).

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::mariadb::MariadbServer;
use super::postgres::PostgresServer;
use super::redis::RedisServer;
use super::sdk::client_for;

/// A running `ssq` process, killed when dropped.
pub struct Server {
    pub child: Child,
    pub port: u16,
    pub url: String,
    /// The private MariaDB it stores in under `SSQ_TEST_STORE=mariadb`,
    /// removed after the process is killed.
    store: Option<MariadbServer>,
}

/// The flags that choose a store: an instance given one keeps it.
const STORE_FLAGS: &[&str] = &["--redis-url", "--postgres-url", "--mysql-url", "--data-dir"];

/// A private MariaDB for an instance started without a store, when the
/// run asks for one (`SSQ_TEST_STORE=mariadb`). An instance on a virtual
/// clock stays memory-only: ssq refuses a shared store beside it.
fn store_for(args: &[&str]) -> Option<MariadbServer> {
    let wanted = std::env::var("SSQ_TEST_STORE").ok()?;
    assert_eq!(wanted, "mariadb", "SSQ_TEST_STORE may only be mariadb");
    let has_store = args.iter().any(|arg| STORE_FLAGS.contains(arg));
    let virtual_clock = args.windows(2).any(|pair| pair == ["--clock", "virtual"]);
    (!has_store && !virtual_clock).then(MariadbServer::start)
}

/// Waits up to 10 s until something accepts connections on `port`.
pub fn wait_for_port(port: u16, what: &str) {
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

    /// A free port can be taken by another test's server between the
    /// moment it was found and the moment ssq binds it; then ssq exits and
    /// the port answers for the other server. So the server is known to be
    /// up only once `/status` answers with its own node id, and it is
    /// started again on another port if it exited first.
    pub fn start_with(args: &[&str]) -> Server {
        let binary = ssq_binary();
        let mut store = store_for(args);
        let store_args: Vec<String> = match &store {
            Some(mariadb) => vec!["--mysql-url".into(), mariadb.url()],
            None => Vec::new(),
        };
        for _ in 0..5 {
            let port = free_port();
            let child = Command::new(&binary)
                .args(["--listen", &format!("127.0.0.1:{port}")])
                .args(args)
                .args(&store_args)
                // SSQ_TEST_LOG sets the instances' log filter, to see why a test failed.
                .env(
                    "RUST_LOG",
                    std::env::var("SSQ_TEST_LOG").unwrap_or_else(|_| "error".into()),
                )
                .stdout(Stdio::null())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("the ssq binary starts");
            let mut server = Server {
                child,
                port,
                url: format!("http://127.0.0.1:{port}"),
                store: None,
            };
            let flag = |name: &str| {
                args.iter()
                    .position(|a| *a == name)
                    .and_then(|at| args.get(at + 1))
                    .map(|value| value.to_string())
            };
            // /status is on the admin address when that is apart.
            let status_at = flag("--admin-listen").unwrap_or_else(|| format!("127.0.0.1:{port}"));
            if server.answers_as_itself(&status_at, flag("--node-id").as_deref()) {
                if store.is_some() {
                    // It serves once it leads: the lock is free, so at once.
                    wait_until_ready(&status_at);
                    server.store = store.take();
                }
                return server;
            }
        }
        panic!("ssq did not start on any of five free ports");
    }

    /// Waits up to 10 s until `/status` at `status_at` names this process
    /// (`node_id`, or the default `<host>-<pid>`); false if it exited first.
    fn answers_as_itself(&mut self, status_at: &str, node_id: Option<&str>) -> bool {
        let own_suffix = format!("-{}", self.child.id());
        let expected = |answered: &str| match node_id {
            Some(id) => answered == id,
            None => answered.ends_with(&own_suffix),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if self.child.try_wait().ok().flatten().is_some() {
                return false;
            }
            if let Some(answered) = status_node_id(status_at)
                && expected(&answered)
            {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("ssq did not answer /status at {status_at} within 10 s");
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

/// Waits up to 10 s until `/ready` at `address` answers 200.
fn wait_until_ready(address: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let ready = || plain_get(address, "/ready").is_some_and(|r| r.split(' ').nth(1) == Some("200"));
    while !ready() {
        assert!(
            Instant::now() < deadline,
            "ssq at {address} did not lead within 10 s"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The node id in `/status` at `address`.
fn status_node_id(address: &str) -> Option<String> {
    let response = plain_get(address, "/status")?;
    let body = response.split_once("\r\n\r\n")?.1;
    let status: serde_json::Value = serde_json::from_str(body).ok()?;
    status["node_id"].as_str().map(str::to_string)
}

/// The whole response to a plain HTTP/1.0 GET of `path` (the harness
/// starts servers outside any runtime).
fn plain_get(address: &str, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(address).ok()?;
    stream.set_read_timeout(Some(Duration::from_millis(500))).ok()?;
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").as_bytes())
        .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    Some(response)
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
        Server::start_node_with(&redis.url(), node_id, &[])
    }

    /// The same on any Redis URL (a Sentinel's, say), with more flags.
    pub fn start_node_with(redis_url: &str, node_id: &str, extra: &[&str]) -> Server {
        let mut args = vec!["--redis-url", redis_url, "--node-id", node_id];
        args.extend_from_slice(FAST_LOCK);
        args.extend_from_slice(extra);
        Server::start_with(&args)
    }

    /// Starts an instance of a Postgres-backed group with the test timings.
    pub fn start_postgres_node(postgres: &PostgresServer, node_id: &str) -> Server {
        Server::start_postgres_node_at(postgres.port, node_id)
    }

    /// The same through another port (a relay's) to the database `ssq`.
    pub fn start_postgres_node_at(port: u16, node_id: &str) -> Server {
        let url = format!("postgres://ssq@127.0.0.1:{port}/ssq");
        Server::start_postgres_node_with(&url, node_id, &[])
    }

    /// An instance of a Postgres-backed group on `url`, with the test
    /// timings and `extra` flags.
    pub fn start_postgres_node_with(url: &str, node_id: &str, extra: &[&str]) -> Server {
        let mut args = vec!["--postgres-url", url, "--node-id", node_id];
        args.extend_from_slice(FAST_LOCK);
        args.extend_from_slice(&["--postgres-timeout", "500ms"]);
        args.extend_from_slice(extra);
        Server::start_with(&args)
    }

    /// An instance of a MySQL-backed group on `url`, with the test timings
    /// and `extra` flags.
    pub fn start_mysql_node_with(url: &str, node_id: &str, extra: &[&str]) -> Server {
        let mut args = vec!["--mysql-url", url, "--node-id", node_id];
        args.extend_from_slice(FAST_LOCK);
        args.extend_from_slice(&["--mysql-timeout", "500ms"]);
        args.extend_from_slice(extra);
        Server::start_with(&args)
    }

    /// An ssq process the test started itself (under a shell, say),
    /// listening on `port`: killed when dropped, as any other.
    pub fn adopt(child: Child, port: u16) -> Server {
        Server {
            child,
            port,
            url: format!("http://127.0.0.1:{port}"),
            store: None,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits up to `limit` for the process to exit (after a signal); true
    /// if it did.
    pub fn wait_exit(&mut self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if self.child.try_wait().ok().flatten().is_some() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
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
    /// (A test that expects an answer takes [`get_text`].)
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

/// The body of a GET that must be answered.
pub async fn get_text(url: &str) -> String {
    reqwest::get(url).await.unwrap().text().await.unwrap()
}

/// The `ssq` binary to run: `SSQ_BIN` (another build, an older one to
/// compare with), else the one cargo built beside the running test or
/// bench: it lives in `target/<profile>/`, the test in `target/<profile>/deps/`.
pub fn ssq_binary() -> std::path::PathBuf {
    if let Some(binary) = std::env::var_os("SSQ_BIN") {
        return binary.into();
    }
    let test = std::env::current_exe().expect("the test binary's path");
    let profile_dir = test
        .parent()
        .and_then(|deps| deps.parent())
        .expect("the test binary lies in target/<profile>/deps/");
    let binary = profile_dir.join(format!("ssq{}", std::env::consts::EXE_SUFFIX));
    assert!(
        binary.exists(),
        "{} is missing: run the tests through cargo (cargo test), which builds it, or set SSQ_BIN",
        binary.display()
    );
    binary
}

/// The admin page's anti-forgery token, as the page holds it (the admin
/// API's calls send it back as `x-ssq-csrf`).
pub fn admin_page_token(page: &str) -> String {
    page.split("name=\"ssq-csrf\" content=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the page holds its token")
        .to_string()
}
