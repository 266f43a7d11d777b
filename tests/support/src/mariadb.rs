//! Private MariaDB servers: `mariadb-install-db` into a temporary directory
//! and `mariadbd` on a free port, as Debian's `mariadb-server` package
//! installs them (`make test` does: tools/test-deps.sh), with a database
//! `ssq` and a user `ssq` who may do anything in it and nothing else (the
//! privileges docs/operations.md asks for). A test can kill, freeze or
//! restart the server, as a crash or a stall would.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use super::process::{free_port, wait_for_port};

/// A private MariaDB on a free port; stopped and removed when dropped.
pub struct MariadbServer {
    child: Option<Child>,
    pub port: u16,
    dir: PathBuf,
    /// More `mariadbd` flags, kept across restarts.
    flags: Vec<String>,
}

/// Where a MariaDB program is: Debian puts the server in /usr/sbin.
fn program(name: &str) -> PathBuf {
    let sbin = PathBuf::from("/usr/sbin").join(name);
    if sbin.exists() { sbin } else { PathBuf::from(name) }
}

/// As root, mariadbd must be told to stay root (it would rather not).
fn as_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

impl MariadbServer {
    pub fn start() -> MariadbServer {
        let server = MariadbServer::install(&[]);
        server.sql(
            "CREATE DATABASE ssq; CREATE USER 'ssq'@'127.0.0.1'; GRANT ALL ON ssq.* TO 'ssq'@'127.0.0.1'",
        );
        server
    }

    /// A server offering TLS with a certificate for 127.0.0.1
    /// (`certificates.rs`), whose user `ssq` may connect only over TLS.
    /// Returns it and the CA's PEM file.
    pub fn start_tls() -> (MariadbServer, PathBuf) {
        let certificates_dir = std::env::temp_dir().join(format!(
            "ssq-test-mariadb-tls-{}-{}",
            std::process::id(),
            free_port()
        ));
        std::fs::create_dir_all(&certificates_dir).unwrap();
        let certificates = super::certificates::for_loopback(&certificates_dir);
        let flags = [
            format!("--ssl-ca={}", certificates.ca.display()),
            format!("--ssl-cert={}", certificates.server.display()),
            format!("--ssl-key={}", certificates.key.display()),
        ];
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        let server = MariadbServer::install(&flags);
        server.sql(
            "CREATE DATABASE ssq; CREATE USER 'ssq'@'127.0.0.1' REQUIRE SSL; GRANT ALL ON ssq.* TO 'ssq'@'127.0.0.1'",
        );
        (server, certificates.ca)
    }

    /// A primary that writes a binary log and, once its first replica is
    /// attached ([`MariadbServer::start_replica`], as the user `repl`),
    /// acknowledges a commit only once a semi-synchronous replica has it
    /// (`AFTER_SYNC`).
    pub fn start_semi_sync_primary() -> MariadbServer {
        let server = MariadbServer::install(&[
            "--server-id=1",
            "--log-bin=binlog",
            "--rpl-semi-sync-master-wait-point=AFTER_SYNC",
            "--rpl-semi-sync-master-timeout=60000",
        ]);
        server.sql(
            "CREATE USER 'repl'@'127.0.0.1'; GRANT REPLICATION SLAVE ON *.* TO 'repl'@'127.0.0.1'; \
             CREATE DATABASE ssq; CREATE USER 'ssq'@'127.0.0.1'; GRANT ALL ON ssq.* TO 'ssq'@'127.0.0.1'",
        );
        server
    }

    /// A read-only, semi-synchronous replica of this primary, replaying its
    /// binary log from the start (the database and users too).
    pub fn start_replica(&self) -> MariadbServer {
        let replica = MariadbServer::install(&[
            "--server-id=2",
            "--read-only=ON",
            "--rpl-semi-sync-slave-enabled=ON",
        ]);
        replica.sql(&format!(
            "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT={}, MASTER_USER='repl', \
             MASTER_USE_GTID=no, MASTER_LOG_FILE='binlog.000001', MASTER_LOG_POS=4; START SLAVE",
            self.port
        ));
        for _ in 0..500 {
            if replica
                .try_sql("SELECT 1 FROM mysql.user WHERE user = 'ssq'")
                .is_some_and(|found| found == "1")
            {
                self.sql("SET GLOBAL rpl_semi_sync_master_enabled = ON");
                return replica;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        panic!("the replica never caught up: {:?}", replica.slave_status());
    }

    /// Makes a replica the primary, as an operator (or an orchestrator)
    /// does: it stops fetching, applies everything it received, and takes
    /// writes.
    pub fn promote(&self) {
        self.sql("STOP SLAVE IO_THREAD");
        for _ in 0..1_000 {
            let status = self.slave_status();
            let caught_up = status.get("Master_Log_File") == status.get("Relay_Master_Log_File")
                && status.get("Read_Master_Log_Pos") == status.get("Exec_Master_Log_Pos");
            if caught_up {
                self.sql("STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only = OFF");
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!(
            "the replica never applied what it received: {:?}",
            self.slave_status()
        );
    }

    /// `SHOW SLAVE STATUS`, by column.
    fn slave_status(&self) -> std::collections::HashMap<String, String> {
        let output = Command::new("mariadb")
            .arg("--no-defaults")
            .args(["-uroot", "-B"])
            .arg(format!("--socket={}", self.dir.join("socket").display()))
            .args(["-e", "SHOW SLAVE STATUS"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&output.stdout);
        let mut lines = text.lines();
        let (Some(names), Some(values)) = (lines.next(), lines.next()) else {
            return Default::default();
        };
        names
            .split('\t')
            .map(str::to_string)
            .zip(values.split('\t').map(str::to_string))
            .collect()
    }

    /// A new server with `flags`, its system tables only.
    fn install(flags: &[&str]) -> MariadbServer {
        let port = free_port();
        let dir = std::env::temp_dir().join(format!("ssq-test-mariadb-{}-{port}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        // A temporary directory of its own: servers sharing /tmp name their
        // temporary tables alike, and two installs side by side then drop
        // each other's (`Unknown table 'mysql.tmp_user_sys'`).
        std::fs::create_dir_all(dir.join("tmp")).unwrap();
        let mut install = Command::new(program("mariadb-install-db"));
        install
            .arg("--no-defaults")
            .arg(format!("--datadir={}", dir.join("data").display()))
            .arg(format!("--tmpdir={}", dir.join("tmp").display()))
            .args(["--auth-root-authentication-method=normal", "--skip-test-db"]);
        if as_root() {
            install.arg("--user=root");
        }
        let output = install
            .output()
            .expect("mariadb-install-db is installed (`make test` installs Debian's mariadb-server: tools/test-deps.sh)");
        assert!(
            output.status.success(),
            "mariadb-install-db failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let mut server = MariadbServer {
            child: None,
            port,
            dir,
            flags: flags.iter().map(|flag| flag.to_string()).collect(),
        };
        server.restart();
        server
    }

    /// The URL ssq reaches the database `ssq` with.
    pub fn url(&self) -> String {
        format!("mysql://ssq@127.0.0.1:{}/ssq", self.port)
    }

    /// Starts (again) on the same port with the same data.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "mariadbd is already running");
        let mut server = Command::new(program("mariadbd"));
        server
            .arg("--no-defaults")
            .arg(format!("--datadir={}", self.dir.join("data").display()))
            .arg(format!("--tmpdir={}", self.dir.join("tmp").display()))
            .arg(format!("--port={}", self.port))
            .arg(format!("--socket={}", self.dir.join("socket").display()))
            .arg(format!("--pid-file={}", self.dir.join("pid").display()))
            .arg(format!("--log-error={}", self.dir.join("error.log").display()))
            .args([
                "--bind-address=127.0.0.1",
                "--skip-name-resolve",
                "--max-connections=300",
                "--innodb-buffer-pool-size=128M",
            ])
            .args(&self.flags);
        if as_root() {
            server.arg("--user=root");
        }
        let child = server
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("mariadbd is installed");
        self.child = Some(child);
        wait_for_port(self.port, "mariadbd");
        for _ in 0..500 {
            if self.try_sql("SELECT 1").is_some() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        panic!("mariadbd on {} never accepted a query", self.port);
    }

    /// Sends `signal` (KILL, STOP, CONT...) to the server (one process).
    pub fn signal(&self, signal: &str) {
        let pid = self.child.as_ref().expect("mariadbd is running").id();
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(pid.to_string())
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal} {pid} failed");
    }

    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// Kills the server at once, as a crash would (its data stays).
    pub fn kill(&mut self) {
        self.signal("KILL");
        if let Some(mut child) = self.child.take() {
            let _ = child.wait();
        }
    }

    /// What `sql` prints (tab-separated, no headers), run as root (no
    /// database chosen: name ssq's tables `ssq.<table>`); panics if it fails.
    pub fn sql(&self, sql: &str) -> String {
        self.try_sql(sql)
            .unwrap_or_else(|| panic!("mariadb failed on {sql:?}"))
    }

    /// The same; what it printed on its error output if it failed.
    pub fn try_sql_err(&self, sql: &str) -> Result<String, String> {
        let output = Command::new("mariadb")
            .arg("--no-defaults")
            .args(["-uroot", "-N", "-B"])
            .arg(format!("--socket={}", self.dir.join("socket").display()))
            .args(["-e", sql])
            .output()
            .map_err(|error| error.to_string())?;
        match output.status.success() {
            true => Ok(String::from_utf8_lossy(&output.stdout).trim().to_string()),
            false => Err(String::from_utf8_lossy(&output.stderr).into_owned()),
        }
    }

    fn try_sql(&self, sql: &str) -> Option<String> {
        self.try_sql_err(sql).ok()
    }
}

impl Drop for MariadbServer {
    fn drop(&mut self) {
        if self.child.is_some() {
            let _ = Command::new("kill")
                .arg("-CONT")
                .arg(self.child.as_ref().unwrap().id().to_string())
                .status();
            self.kill();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
