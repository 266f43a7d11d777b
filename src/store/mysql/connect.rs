//! How to reach MySQL or MariaDB: the URL (`mysql://user:password@host
//! [:port][,host[:port]...]/database`, `mariadb://` alike), the password
//! from the URL or `MYSQL_PWD`, TLS when `ssl-mode` asks for it or a CA
//! file is given (the server's certificate always checked, against the
//! CA file or the Mozilla roots mysql_async carries, and its host name),
//! and connections
//! whose making and calls are bounded in time.
//!
//! With several hosts, a connection goes to the first that is writable
//! (`@@global.read_only` off): after a failover, the promoted replica is
//! found by the next connection, and a demoted primary's refusal to write
//! drops the connection it came on (`MysqlError::connection_lost`).

use std::path::Path;
use std::time::Duration;

use mysql_async::{Conn, OptsBuilder, SslOpts};
use percent_encoding::percent_decode_str;

use super::MysqlError;

/// How many bytes of records a commit may carry for each second it is
/// given beyond `--mysql-timeout`, as on Postgres (`postgres/connect.rs`):
/// only a stalled server runs out of time.
pub const BYTES_PER_SECOND: usize = 4 * 1024 * 1024;

/// How to reach MySQL, and the time limit of a call.
#[derive(Clone)]
pub struct Target {
    hosts: Vec<(String, u16)>,
    /// Everything but the host.
    options: OptsBuilder,
    pub timeout: Duration,
}

impl std::fmt::Debug for Target {
    /// Never the password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target").field("hosts", &self.hosts).finish()
    }
}

impl Target {
    pub fn parse(url: &str, ca_file: Option<&Path>, timeout: Duration) -> Result<Target, MysqlError> {
        let bad = |why: &str| MysqlError::BadUrl(why.to_string());
        let rest = url
            .strip_prefix("mysql://")
            .or_else(|| url.strip_prefix("mariadb://"))
            .ok_or_else(|| bad("it does not start with mysql:// or mariadb://"))?;
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        // The user part ends at the last `@`, as `store::without_password` reads it.
        let (userinfo, rest) = match rest.rfind('@') {
            Some(at) => (Some(&rest[..at]), &rest[at + 1..]),
            None => (None, rest),
        };
        let (hosts, database) = rest
            .split_once('/')
            .ok_or_else(|| bad("no /database after the hosts"))?;
        if database.is_empty() || database.contains('/') {
            return Err(bad("the database name is missing or holds a /"));
        }
        let hosts = hosts
            .split(',')
            .map(|host| match host.rsplit_once(':') {
                Some((name, port)) => Ok((
                    name.to_string(),
                    port.parse().map_err(|_| bad("a port is not a number"))?,
                )),
                None => Ok((host.to_string(), 3306)),
            })
            .collect::<Result<Vec<(String, u16)>, MysqlError>>()?;
        if hosts.iter().any(|(name, _)| name.is_empty()) {
            return Err(bad("a host is empty"));
        }
        let decode = |part: &str| percent_decode_str(part).decode_utf8_lossy().into_owned();
        let (user, password) = match userinfo.map(|info| info.split_once(':').unwrap_or((info, ""))) {
            Some((user, password)) => (
                Some(decode(user)),
                Some(decode(password)).filter(|p| !p.is_empty()),
            ),
            None => (None, None),
        };
        let password = password.or_else(|| std::env::var("MYSQL_PWD").ok());
        let mut tls = None;
        for pair in query.split('&').filter(|pair| !pair.is_empty()) {
            match pair.split_once('=') {
                Some(("ssl-mode" | "sslmode", mode)) => {
                    tls = Some(match mode.to_ascii_uppercase().as_str() {
                        "DISABLED" => false,
                        "REQUIRED" | "VERIFY_CA" | "VERIFY_IDENTITY" => true,
                        _ => {
                            return Err(bad(
                                "ssl-mode is none of DISABLED, REQUIRED, VERIFY_CA, VERIFY_IDENTITY",
                            ));
                        }
                    })
                }
                _ => {
                    return Err(bad(&format!(
                        "unknown parameter {pair:?} (only ssl-mode is read)"
                    )));
                }
            }
        }
        let ssl = match (tls, ca_file) {
            (Some(false), Some(_)) => return Err(MysqlError::CaFileWithoutTls),
            (Some(false), None) | (None, None) => None,
            (_, ca_file) => {
                crate::store::tls::use_ring();
                let mut ssl = SslOpts::default();
                if let Some(path) = ca_file {
                    let pem = std::fs::read(path)
                        .map_err(|error| MysqlError::CaFile(path.display().to_string(), error))?;
                    ssl = ssl.with_root_certs(vec![pem.into()]);
                }
                Some(ssl)
            }
        };
        let lock_wait = timeout.as_secs().max(1);
        let options = OptsBuilder::default()
            .user(user.or_else(|| std::env::var("USER").ok()))
            .pass(password)
            .db_name(Some(decode(database)))
            .ssl_opts(ssl)
            .prefer_socket(false)
            .client_found_rows(true)
            .tcp_keepalive(Some(Duration::from_secs(5)))
            .stmt_cache_size(64)
            .init(vec![
                // Every time in ssq's tables is the database's NOW(6): one zone.
                "SET time_zone = '+00:00'".to_string(),
                // A lock wait ends with the call's own time limit.
                format!("SET SESSION innodb_lock_wait_timeout = {lock_wait}"),
            ]);
        Ok(Target {
            hosts,
            options,
            timeout,
        })
    }

    /// A new connection to the first writable host, within the time limit
    /// for each host tried.
    pub async fn connect(&self) -> Result<Conn, MysqlError> {
        let mut last = None;
        for (host, port) in &self.hosts {
            let options = self.options.clone().ip_or_hostname(host.clone()).tcp_port(*port);
            let attempt = async {
                let mut conn = self.bounded(Conn::new(options)).await?;
                let read_only: Option<bool> = self
                    .bounded(mysql_async::prelude::Queryable::query_first(
                        &mut conn,
                        "SELECT @@global.read_only",
                    ))
                    .await?;
                Ok::<_, MysqlError>((conn, read_only.unwrap_or(false)))
            };
            match attempt.await {
                Ok((conn, false)) => return Ok(conn),
                Ok((conn, true)) => {
                    tokio::spawn(conn.disconnect());
                    last = Some(MysqlError::ReadOnly(format!("{host}:{port}")));
                }
                Err(error) => last = Some(error),
            }
        }
        Err(last.expect("a URL has at least one host"))
    }

    /// `call`, bounded by the time limit.
    pub async fn bounded<T, E: Into<MysqlError>>(
        &self,
        call: impl Future<Output = Result<T, E>>,
    ) -> Result<T, MysqlError> {
        self.bounded_by(self.timeout, call).await
    }

    /// `call`, carrying `bytes` to MySQL, bounded by the time limit and a
    /// second more for each [`BYTES_PER_SECOND`] it carries.
    pub async fn bounded_for<T, E: Into<MysqlError>>(
        &self,
        bytes: usize,
        call: impl Future<Output = Result<T, E>>,
    ) -> Result<T, MysqlError> {
        let allowance = Duration::from_secs_f64(bytes as f64 / BYTES_PER_SECOND as f64);
        self.bounded_by(self.timeout + allowance, call).await
    }

    async fn bounded_by<T, E: Into<MysqlError>>(
        &self,
        limit: Duration,
        call: impl Future<Output = Result<T, E>>,
    ) -> Result<T, MysqlError> {
        tokio::time::timeout(limit, call)
            .await
            .map_err(|_| MysqlError::TimedOut(limit))?
            .map_err(Into::into)
    }
}

/// One connection for a task's calls, made again when it broke or a call
/// on it went unanswered (its answer might still come, out of turn).
pub struct Reconnecting {
    target: Target,
    conn: tokio::sync::Mutex<Option<Conn>>,
}

impl Reconnecting {
    pub fn new(target: Target) -> Reconnecting {
        Reconnecting {
            target,
            conn: tokio::sync::Mutex::new(None),
        }
    }

    pub fn target(&self) -> &Target {
        &self.target
    }

    /// Runs `call` on the connection (made first if there is none), bounded
    /// by the time limit; a lost connection is dropped, to be made again.
    pub async fn call<T>(
        &self,
        call: impl AsyncFnOnce(&mut Conn) -> Result<T, mysql_async::Error>,
    ) -> Result<T, MysqlError> {
        let mut slot = self.conn.lock().await;
        if slot.is_none() {
            *slot = Some(self.target.connect().await?);
        }
        let conn = slot.as_mut().expect("connected above");
        let result = self.target.bounded(call(conn)).await;
        if result.as_ref().is_err_and(MysqlError::connection_lost) {
            *slot = None;
        }
        result
    }
}
