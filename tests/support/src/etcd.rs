//! Private etcd clusters: Debian's `etcd-server` (3.4), each member on
//! free loopback ports with its data in a temporary directory, as the
//! tests start redis-server (`make test` installs it: tools/test-deps.sh).
//! A test kills, freezes and restarts members, and finds the one etcd
//! elected, through etcd's own HTTP/JSON API.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::certificates::{Certificates, for_loopback};
use super::process::{free_port, wait_for_port};

/// One member of a cluster: its ports and, while it runs, its process.
struct Member {
    name: String,
    client_port: u16,
    peer_port: u16,
    child: Option<Child>,
}

/// A private etcd cluster on loopback, killed and removed when dropped.
pub struct EtcdCluster {
    members: Vec<Member>,
    dir: PathBuf,
    /// `--initial-cluster`: every member's name and peer address.
    initial: String,
    /// With TLS: its certificates; clients must present the server's.
    pub tls: Option<Certificates>,
    /// Flags every member runs with besides the cluster's own.
    extra: Vec<String>,
    /// The root user's password once authentication is on.
    root_password: Option<String>,
}

/// POSTs `body` to etcd's `path` on `port` in plain HTTP, with `headers`:
/// its JSON answer, or None if it does not answer within `limit`.
fn etcd_call(port: u16, path: &str, body: &Value, headers: &[String], limit: Duration) -> Option<Value> {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(limit)).ok()?;
    let body = body.to_string();
    let headers: String = headers.iter().map(|header| format!("{header}\r\n")).collect();
    let request = format!(
        "POST {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (_, json) = response.split_once("\r\n\r\n")?;
    serde_json::from_str(json).ok()
}

impl EtcdCluster {
    /// Starts `size` members and waits until they have a leader. Elections
    /// are quick (heartbeat 50 ms, election timeout 500 ms), so that a lost
    /// leader is replaced within a second, and leases can be as short as 1 s.
    pub fn start(size: usize) -> EtcdCluster {
        EtcdCluster::start_with(size, false, &[])
    }

    /// Starts `size` members serving clients over TLS only, each client
    /// checked for a certificate the test CA signed (`--client-cert-auth`).
    pub fn start_tls(size: usize) -> EtcdCluster {
        EtcdCluster::start_with(size, true, &[])
    }

    /// Starts `size` members, over TLS or not, with `extra` flags.
    pub fn start_with(size: usize, tls: bool, extra: &[&str]) -> EtcdCluster {
        let members: Vec<Member> = (0..size)
            .map(|index| Member {
                name: format!("m{index}"),
                client_port: free_port(),
                peer_port: free_port(),
                child: None,
            })
            .collect();
        let initial = (members.iter())
            .map(|m| format!("{}=http://127.0.0.1:{}", m.name, m.peer_port))
            .collect::<Vec<_>>()
            .join(",");
        let dir = std::env::temp_dir().join(format!(
            "ssq-test-etcd-{}-{}",
            std::process::id(),
            members[0].client_port
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let tls = tls.then(|| for_loopback(&dir));
        let mut cluster = EtcdCluster {
            members,
            dir,
            initial,
            tls,
            extra: extra.iter().map(|flag| flag.to_string()).collect(),
            root_password: None,
        };
        for index in 0..size {
            cluster.spawn(index);
        }
        for member in &cluster.members {
            wait_for_port(member.client_port, "etcd");
        }
        cluster.wait_for_leader(Duration::from_secs(20));
        cluster
    }

    fn spawn(&mut self, index: usize) {
        let member = &self.members[index];
        assert!(member.child.is_none(), "etcd member {index} is already running");
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        let client = format!("{scheme}://127.0.0.1:{}", member.client_port);
        let peer = format!("http://127.0.0.1:{}", member.peer_port);
        let log = std::fs::File::create(self.dir.join(format!("{}.log", member.name))).unwrap();
        let child = Command::new("etcd")
            .args(["--name", &member.name])
            .arg("--data-dir")
            .arg(self.dir.join(&member.name))
            .args([
                "--listen-client-urls",
                &client,
                "--advertise-client-urls",
                &client,
            ])
            .args([
                "--listen-peer-urls",
                &peer,
                "--initial-advertise-peer-urls",
                &peer,
            ])
            .args([
                "--initial-cluster",
                &self.initial,
                "--initial-cluster-token",
                "ssq-test",
            ])
            .args(["--heartbeat-interval", "50", "--election-timeout", "500"])
            .args(self.tls.iter().flat_map(|tls| {
                [
                    "--cert-file".into(),
                    tls.server.clone().into_os_string(),
                    "--key-file".into(),
                    tls.key.clone().into_os_string(),
                    "--trusted-ca-file".into(),
                    tls.ca.clone().into_os_string(),
                    "--client-cert-auth".into(),
                ]
            }))
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("etcd is installed (`make test` installs Debian's etcd-server: tools/test-deps.sh)");
        self.members[index].child = Some(child);
    }

    /// `--lock-url` for ssq: every member.
    pub fn url(&self) -> String {
        self.url_of(&self.members.iter().map(|m| m.client_port).collect::<Vec<_>>())
    }

    /// `--lock-url` naming `ports` (a relay's, say) as the members.
    pub fn url_of(&self, ports: &[u16]) -> String {
        let hosts: Vec<String> = ports.iter().map(|port| format!("127.0.0.1:{port}")).collect();
        let scheme = if self.tls.is_some() { "etcds" } else { "etcd" };
        format!("{scheme}://{}", hosts.join(","))
    }

    /// Member `index`'s client port.
    pub fn client_port(&self, index: usize) -> u16 {
        self.members[index].client_port
    }

    /// POSTs `body` to `path` on member `index` (over TLS with the test
    /// certificate, as root once authentication is on): its JSON answer, or
    /// None if it does not answer within `limit`.
    pub fn call(&self, index: usize, path: &str, body: &Value, limit: Duration) -> Option<Value> {
        let port = self.members[index].client_port;
        let mut headers = Vec::new();
        if let Some(password) = &self.root_password {
            let signed_in = self.call_as(
                port,
                "/v3/auth/authenticate",
                &json!({"name": "root", "password": password}),
                &[],
                limit,
            )?;
            headers.push(format!("Authorization: {}", signed_in["token"].as_str()?));
        }
        self.call_as(port, path, body, &headers, limit)
    }

    fn call_as(
        &self,
        port: u16,
        path: &str,
        body: &Value,
        headers: &[String],
        limit: Duration,
    ) -> Option<Value> {
        let Some(tls) = &self.tls else {
            return etcd_call(port, path, body, headers, limit);
        };
        let mut curl = Command::new("curl");
        curl.args(["-s", "--max-time", &format!("{:.1}", limit.as_secs_f64())])
            .arg("--cacert")
            .arg(&tls.ca)
            .arg("--cert")
            .arg(&tls.server)
            .arg("--key")
            .arg(&tls.key);
        for header in headers {
            curl.args(["-H", header]);
        }
        let output = curl
            .args([
                "-d",
                &body.to_string(),
                &format!("https://127.0.0.1:{port}{path}"),
            ])
            .output()
            .expect("curl is installed");
        serde_json::from_slice(&output.stdout).ok()
    }

    /// Turns etcd's authentication on: a root user, and `user` with
    /// `password` allowed to read and write the keys under `prefix` only.
    pub fn enable_auth(&mut self, user: &str, password: &str, prefix: &str) {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD;
        let end = range_end(prefix);
        let steps = [
            (
                "/v3/auth/user/add",
                json!({"name": "root", "password": "root-secret"}),
            ),
            ("/v3/auth/role/add", json!({"name": "root"})),
            ("/v3/auth/user/grant", json!({"user": "root", "role": "root"})),
            ("/v3/auth/user/add", json!({"name": user, "password": password})),
            ("/v3/auth/role/add", json!({"name": user})),
            (
                "/v3/auth/role/grant",
                json!({"name": user, "perm": {"permType": "READWRITE", "key": b64.encode(prefix), "range_end": b64.encode(end)}}),
            ),
            ("/v3/auth/user/grant", json!({"user": user, "role": user})),
            ("/v3/auth/enable", json!({})),
        ];
        for (path, body) in steps {
            let answer = self.call(0, path, &body, Duration::from_secs(5));
            assert!(
                answer
                    .as_ref()
                    .is_some_and(|answer| answer.get("error").is_none()),
                "etcd {path}: {answer:?}"
            );
        }
        self.root_password = Some("root-secret".to_string());
    }

    /// The index of the member the cluster elected, if a running member says.
    pub fn leader(&self) -> Option<usize> {
        let status = |index: usize| {
            let running = self.members[index].child.is_some();
            running
                .then(|| {
                    self.call(
                        index,
                        "/v3/maintenance/status",
                        &json!({}),
                        Duration::from_millis(500),
                    )
                })
                .flatten()
        };
        let leader = (0..self.members.len()).filter_map(status).find_map(|status| {
            status["leader"]
                .as_str()
                .filter(|id| *id != "0")
                .map(str::to_string)
        })?;
        (0..self.members.len()).position(|index| {
            status(index).is_some_and(|own| own["header"]["member_id"].as_str() == Some(&leader))
        })
    }

    /// The running members' indexes.
    fn running(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.members.len()).filter(|&index| self.members[index].child.is_some())
    }

    /// Waits until a linearizable read succeeds (a leader and a quorum).
    pub fn wait_for_leader(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            let read = self.running().any(|index| {
                self.call(
                    index,
                    "/v3/kv/range",
                    &json!({"key": "cHJvYmU="}),
                    Duration::from_secs(1),
                )
                .is_some_and(|answer| answer.get("header").is_some())
            });
            if read {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the etcd cluster elected no leader within {limit:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Every key under `prefix` and its value, as text.
    pub fn keys(&self, prefix: &str) -> Vec<(String, String)> {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD;
        let range = json!({"key": b64.encode(prefix), "range_end": b64.encode(range_end(prefix))});
        let index = self.running().next().expect("a member runs");
        let answer =
            (self.call(index, "/v3/kv/range", &range, Duration::from_secs(2))).expect("etcd answers");
        let text =
            |value: &Value| String::from_utf8(b64.decode(value.as_str().unwrap_or("")).unwrap()).unwrap();
        (answer["kvs"].as_array().into_iter().flatten())
            .map(|kv| (text(&kv["key"]), text(&kv["value"])))
            .collect()
    }

    /// Whether member `index` runs (it may be frozen).
    pub fn is_running(&self, index: usize) -> bool {
        self.members[index].child.is_some()
    }

    /// Kills member `index` at once (SIGKILL), as a crash would.
    pub fn kill(&mut self, index: usize) {
        if let Some(mut child) = self.members[index].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts member `index` again, with its data, on its ports.
    pub fn restart(&mut self, index: usize) {
        self.spawn(index);
        wait_for_port(self.members[index].client_port, "etcd");
    }

    /// Sends member `index` a signal by name (STOP, CONT).
    pub fn signal(&self, index: usize, name: &str) {
        let pid = self.members[index].child.as_ref().expect("the member runs").id();
        let status = Command::new("kill")
            .args([&format!("-{name}"), &pid.to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -{name} failed");
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        for index in 0..self.members.len() {
            self.kill(index);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The end of the range of every key that starts with `prefix`: the same
/// start with its last byte one higher.
fn range_end(prefix: &str) -> String {
    let (start, last) = prefix.split_at(prefix.len() - 1);
    format!("{start}{}", (last.as_bytes()[0] + 1) as char)
}
