//! Private Postgres servers: `initdb` in a temporary directory and the
//! `postgres` server on a free port, as Debian's `postgresql` package
//! installs them (`make test` does: tools/test-deps.sh). A test can kill or
//! freeze all of it, the postmaster and every process it forked (each
//! backend is a session of its own, so no process group holds them), as a
//! crash or a stall would.
//!
//! Postgres refuses to run as root: as root, the tests run it as the
//! `postgres` user the package creates.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use super::process::{free_port, wait_for_port};

/// A private Postgres on a free port, with a database `ssq` that the user
/// `ssq` may reach without a password; stopped and removed when dropped.
pub struct PostgresServer {
    child: Option<Child>,
    pub port: u16,
    dir: PathBuf,
    extra: Vec<String>,
}

/// Where the server's programs are: `$SSQ_TEST_PG_BIN`, else the newest
/// of Debian's /usr/lib/postgresql/<version>/bin, else the PATH.
pub fn postgres_bin(program: &str) -> PathBuf {
    if let Ok(dir) = std::env::var("SSQ_TEST_PG_BIN") {
        return Path::new(&dir).join(program);
    }
    let newest = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .max();
    match newest {
        Some(version) => PathBuf::from(format!("/usr/lib/postgresql/{version}/bin/{program}")),
        None => PathBuf::from(program),
    }
}

/// The `postgres` user's ids when running as root (Postgres refuses root).
fn run_as() -> Option<(u32, u32)> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    let line = passwd.lines().find(|line| line.starts_with("postgres:"))?;
    let mut fields = line.split(':').skip(2);
    Some((fields.next()?.parse().ok()?, fields.next()?.parse().ok()?))
}

/// A command for one of Postgres's programs, as the user that may run it.
fn command(program: &str) -> Command {
    let mut command = Command::new(postgres_bin(program));
    if let Some((uid, gid)) = run_as() {
        command.uid(uid).gid(gid);
    }
    command
}

/// Gives `path` to the user Postgres runs as.
fn hand_over(path: &Path) {
    if let Some((uid, gid)) = run_as() {
        std::os::unix::fs::chown(path, Some(uid), Some(gid)).unwrap();
    }
}

impl PostgresServer {
    /// Starts Postgres with fsync on, as a production one runs.
    pub fn start() -> PostgresServer {
        PostgresServer::start_with(&[])
    }

    /// Starts Postgres with extra `-c name=value` settings.
    pub fn start_with(settings: &[&str]) -> PostgresServer {
        let port = free_port();
        let dir = std::env::temp_dir().join(format!("ssq-test-pg-{}-{port}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        hand_over(&dir);
        let output = command("initdb")
            .args([
                "--auth=trust",
                "--username=ssq",
                "--no-sync",
                "--encoding=UTF8",
                "--locale=C",
            ])
            .arg("-D")
            .arg(dir.join("data"))
            .output()
            .expect("initdb is installed (`make test` installs Debian's postgresql: tools/test-deps.sh)");
        assert!(
            output.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let mut server = PostgresServer {
            child: None,
            port,
            dir,
            extra: settings.iter().map(|s| s.to_string()).collect(),
        };
        server.restart();
        server.psql("postgres", "CREATE DATABASE ssq");
        server
    }

    /// Starts Postgres serving TLS (and plain text too, as Postgres does),
    /// with a certificate for 127.0.0.1 (`certificates.rs`). Returns it and
    /// the CA's PEM file.
    pub fn start_tls() -> (PostgresServer, PathBuf) {
        let certificates_dir =
            std::env::temp_dir().join(format!("ssq-test-pg-tls-{}-{}", std::process::id(), free_port()));
        std::fs::create_dir_all(&certificates_dir).unwrap();
        let certificates = super::certificates::for_loopback(&certificates_dir);
        // Postgres reads its key only if no one else may.
        for file in [&certificates.server, &certificates.key] {
            std::fs::set_permissions(file, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
            hand_over(file);
        }
        hand_over(&certificates_dir);
        let settings = [
            "ssl=on".to_string(),
            format!("ssl_cert_file={}", certificates.server.display()),
            format!("ssl_key_file={}", certificates.key.display()),
        ];
        let settings: Vec<&str> = settings.iter().map(String::as_str).collect();
        (PostgresServer::start_with(&settings), certificates.ca)
    }

    /// A streaming standby of this server, made with `pg_basebackup`, on
    /// a free port; it follows the primary until [`PostgresServer::promote`].
    pub fn start_standby(&self) -> PostgresServer {
        let port = free_port();
        let dir = std::env::temp_dir().join(format!("ssq-test-pg-{}-{port}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        hand_over(&dir);
        let output = command("pg_basebackup")
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", "ssq"])
            .args([
                "--write-recovery-conf",
                "--wal-method=stream",
                "--checkpoint=fast",
                "-D",
            ])
            .arg(dir.join("data"))
            .output()
            .expect("pg_basebackup is installed with postgresql");
        assert!(
            output.status.success(),
            "pg_basebackup failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let mut standby = PostgresServer {
            child: None,
            port,
            dir,
            extra: self.extra.clone(),
        };
        standby.restart();
        standby
    }

    /// Makes a standby the primary.
    pub fn promote(&self) {
        self.psql("postgres", "SELECT pg_promote()");
    }

    /// The URL ssq reaches the database `ssq` with.
    pub fn url(&self) -> String {
        format!("postgres://ssq@127.0.0.1:{}/ssq", self.port)
    }

    /// Starts (again) on the same port with the same data.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "postgres is already running");
        let mut server = command("postgres");
        server
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(["-p", &self.port.to_string(), "-c", "listen_addresses=127.0.0.1"])
            .arg("-c")
            .arg(format!("unix_socket_directories={}", self.dir.display()))
            .args(["-c", "max_connections=200"]);
        for setting in &self.extra {
            server.args(["-c", setting]);
        }
        let child = server
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("postgres is installed");
        self.child = Some(child);
        wait_for_port(self.port, "postgres");
        // Accepting connections before recovery is done answers "the
        // database system is starting up": wait for a query to pass.
        for _ in 0..500 {
            if self.try_psql("postgres", "SELECT 1").is_some() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        panic!("postgres on {} never accepted a query", self.port);
    }

    /// Sends `signal` (KILL, STOP, CONT...) to the whole server: the
    /// postmaster, then every process it forked.
    pub fn signal(&self, signal: &str) {
        let postmaster = self.child.as_ref().expect("postgres is running").id();
        let mut pids = vec![postmaster.to_string()];
        pids.extend(children_of(postmaster).iter().map(u32::to_string));
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .args(&pids)
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(
            status.success() || signal != "STOP",
            "kill -{signal} {pids:?} failed"
        );
    }

    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// Kills the whole server at once, as a crash would (its data stays).
    pub fn kill(&mut self) {
        self.signal("KILL");
        if let Some(mut child) = self.child.take() {
            let _ = child.wait();
        }
        // The backends are gone with their group; wait for their socket.
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// What `sql` prints, run by psql on `database`; panics if it fails.
    pub fn psql(&self, database: &str, sql: &str) -> String {
        self.try_psql(database, sql)
            .unwrap_or_else(|| panic!("psql failed on {sql:?}"))
    }

    fn try_psql(&self, database: &str, sql: &str) -> Option<String> {
        let output = Command::new("psql")
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "ssq",
                "-d",
                database,
            ])
            .args(["-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-c", sql])
            .stderr(Stdio::null())
            .output()
            .ok()?;
        output
            .status
            .success()
            .then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
    }
}

/// The processes whose parent is `parent` (from /proc).
fn children_of(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // pid (comm) state ppid ...: comm may hold spaces, so read after ')'.
            let ppid: u32 = stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()?;
            (ppid == parent).then_some(pid)
        })
        .collect()
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        if self.child.is_some() {
            self.signal("CONT");
            self.kill();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
