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
}

/// POSTs `body` to etcd's `path` on `port`: its JSON answer, or None if it
/// does not answer within `limit`.
pub fn etcd_call(port: u16, path: &str, body: &Value, limit: Duration) -> Option<Value> {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(limit)).ok()?;
    let body = body.to_string();
    let request = format!(
        "POST {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
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
        let mut cluster = EtcdCluster {
            members,
            dir,
            initial,
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
        let client = format!("http://127.0.0.1:{}", member.client_port);
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
        format!("etcd://{}", hosts.join(","))
    }

    /// Member `index`'s client port.
    pub fn client_port(&self, index: usize) -> u16 {
        self.members[index].client_port
    }

    /// The index of the member the cluster elected, if a running member says.
    pub fn leader(&self) -> Option<usize> {
        let running = self.members.iter().filter(|m| m.child.is_some());
        let status = running
            .filter_map(|m| {
                etcd_call(
                    m.client_port,
                    "/v3/maintenance/status",
                    &json!({}),
                    Duration::from_millis(500),
                )
            })
            .find(|status| status["leader"].as_str().is_some_and(|id| id != "0"))?;
        let leader = status["leader"].as_str()?.to_string();
        self.members.iter().position(|m| {
            m.child.is_some()
                && etcd_call(
                    m.client_port,
                    "/v3/maintenance/status",
                    &json!({}),
                    Duration::from_millis(500),
                )
                .is_some_and(|own| own["header"]["member_id"].as_str() == Some(&leader))
        })
    }

    /// Waits until a write succeeds (a leader and a quorum).
    pub fn wait_for_leader(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            let written = self.members.iter().filter(|m| m.child.is_some()).any(|m| {
                etcd_call(
                    m.client_port,
                    "/v3/kv/put",
                    &json!({"key": "cHJvYmU=", "value": ""}),
                    Duration::from_secs(1),
                )
                .is_some_and(|answer| answer.get("header").is_some())
            });
            if written {
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
        let end = format!(
            "{}{}",
            &prefix[..prefix.len() - 1],
            (prefix.as_bytes()[prefix.len() - 1] + 1) as char
        );
        let port = self
            .members
            .iter()
            .find(|m| m.child.is_some())
            .expect("a member runs")
            .client_port;
        let answer = etcd_call(
            port,
            "/v3/kv/range",
            &json!({"key": b64.encode(prefix), "range_end": b64.encode(end)}),
            Duration::from_secs(2),
        )
        .expect("etcd answers");
        let text =
            |value: &Value| String::from_utf8(b64.decode(value.as_str().unwrap_or("")).unwrap()).unwrap();
        (answer["kvs"].as_array().into_iter().flatten())
            .map(|kv| (text(&kv["key"]), text(&kv["value"])))
            .collect()
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
