//! How to reach Postgres: the URL as libpq reads it (several hosts, and
//! `target_session_attrs=read-write` to find the primary among them), the
//! password from the URL or `PGPASSWORD`, TLS as `sslmode` asks (`require`:
//! the server's certificate checked against `--postgres-ca-file` or the
//! system's roots, and its host name), and connections whose making and
//! calls are bounded in time, with TCP keepalives short enough that a
//! vanished server is noticed within seconds rather than hours.

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use tokio_postgres::config::SslMode;
use tokio_postgres::tls::MakeTlsConnect;
use tokio_postgres::{AsyncMessage, Client, NoTls, Socket};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::PostgresError;

/// How many bytes of records a commit may carry for each second it is
/// given beyond `--postgres-timeout`: a tenth of what this project's 2-core
/// machine writes (90 MB of a 200,000-message snapshot in 2.6 s), so that
/// only a stalled server runs out of time.
pub const BYTES_PER_SECOND: usize = 4 * 1024 * 1024;

/// How to reach Postgres, and the time limit of a call.
#[derive(Clone)]
pub struct Target {
    config: tokio_postgres::Config,
    /// With `sslmode=require` (or `prefer`, which then requires it).
    tls: Option<MakeRustlsConnect>,
    pub timeout: Duration,
}

impl std::fmt::Debug for Target {
    /// Never the password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("hosts", &self.config.get_hosts())
            .field("user", &self.config.get_user())
            .field("database", &self.config.get_dbname())
            .finish()
    }
}

impl Target {
    /// Reads `url`; a password missing from it comes from `PGPASSWORD`,
    /// as libpq's tools take it. TLS as `sslmode` asks, the server's
    /// certificate always checked (against `ca_file`, or the system's
    /// roots): `require` (or a CA file) needs it, an explicit `prefer`
    /// falls back to plain text only with a server that offers no TLS;
    /// without `sslmode`, plain text (libpq would try TLS without checking
    /// the certificate, which ssq does not do).
    pub fn parse(url: &str, ca_file: Option<&Path>, timeout: Duration) -> Result<Target, PostgresError> {
        let mut config = tokio_postgres::Config::from_str(url).map_err(PostgresError::BadUrl)?;
        let explicit = url.contains("sslmode=");
        let tls = match (config.get_ssl_mode(), explicit, ca_file) {
            (SslMode::Disable, _, None) | (SslMode::Prefer, false, None) => {
                config.ssl_mode(SslMode::Disable);
                None
            }
            (SslMode::Disable, _, Some(_)) => return Err(PostgresError::CaFileWithoutTls),
            (mode, explicit, _) => {
                if mode != SslMode::Prefer || !explicit {
                    config.ssl_mode(SslMode::Require);
                }
                Some(MakeRustlsConnect::new(crate::store::tls::client_config(ca_file)?))
            }
        };
        if config.get_password().is_none()
            && let Ok(password) = std::env::var("PGPASSWORD")
        {
            config.password(password);
        }
        if config.get_user().is_none() {
            // libpq's default: the operating system's user name.
            if let Ok(user) = std::env::var("PGUSER").or_else(|_| std::env::var("USER")) {
                config.user(user);
            }
        }
        config
            .application_name("ssq")
            .connect_timeout(timeout)
            .keepalives_idle(Duration::from_secs(5))
            .tcp_user_timeout(timeout.max(Duration::from_secs(5)));
        Ok(Target { config, tls, timeout })
    }

    /// A new connection, its messages driven by a task of its own that
    /// ends when the client is dropped or the connection breaks.
    pub async fn connect(&self) -> Result<Client, PostgresError> {
        self.connect_notifying(Arc::new([])).await
    }

    /// The same; a notification the connection receives (after a `LISTEN`
    /// on it) on one of `channels` wakes what the channel is paired with.
    pub async fn connect_notifying(&self, channels: Channels) -> Result<Client, PostgresError> {
        match &self.tls {
            None => self.open(NoTls, channels).await,
            Some(tls) => self.open(tls.clone(), channels).await,
        }
    }

    /// Connects through `tls` (or without it) within the time limit, and
    /// spawns the task that drives the connection.
    async fn open<T>(&self, tls: T, channels: Channels) -> Result<Client, PostgresError>
    where
        T: MakeTlsConnect<Socket>,
        T::Stream: Send + 'static,
    {
        let (client, connection) = tokio::time::timeout(self.timeout, self.config.connect(tls))
            .await
            .map_err(|_| PostgresError::TimedOut(self.timeout))??;
        tokio::spawn(drive(connection, channels));
        Ok(client)
    }

    /// `call`, bounded by the time limit.
    pub async fn bounded<T, E: Into<PostgresError>>(
        &self,
        call: impl Future<Output = Result<T, E>>,
    ) -> Result<T, PostgresError> {
        self.bounded_by(self.timeout, call).await
    }

    /// `call`, carrying `bytes` to Postgres, bounded by the time limit and
    /// a second more for each [`BYTES_PER_SECOND`] it carries: a snapshot's
    /// import is one commit, however large, and its time to write grows
    /// with it.
    pub async fn bounded_for<T, E: Into<PostgresError>>(
        &self,
        bytes: usize,
        call: impl Future<Output = Result<T, E>>,
    ) -> Result<T, PostgresError> {
        let allowance = Duration::from_secs_f64(bytes as f64 / BYTES_PER_SECOND as f64);
        self.bounded_by(self.timeout + allowance, call).await
    }

    async fn bounded_by<T, E: Into<PostgresError>>(
        &self,
        limit: Duration,
        call: impl Future<Output = Result<T, E>>,
    ) -> Result<T, PostgresError> {
        tokio::time::timeout(limit, call)
            .await
            .map_err(|_| PostgresError::TimedOut(limit))?
            .map_err(Into::into)
    }
}

/// Channels listened on, each paired with what its notifications wake.
pub type Channels = Arc<[(String, Arc<Notify>)]>;

/// One connection for a task's calls, made again when it broke or a call
/// on it went unanswered (its answer might still come, out of turn).
pub struct Reconnecting {
    target: Target,
    client: tokio::sync::Mutex<Option<Arc<Client>>>,
}

impl Reconnecting {
    pub fn new(target: Target) -> Reconnecting {
        Reconnecting {
            target,
            client: tokio::sync::Mutex::new(None),
        }
    }

    pub fn target(&self) -> &Target {
        &self.target
    }

    /// Runs `call` on the connection (made first if there is none), bounded
    /// by the time limit; a lost connection is dropped, to be made again.
    pub async fn call<T, F>(&self, call: impl FnOnce(Arc<Client>) -> F) -> Result<T, PostgresError>
    where
        F: Future<Output = Result<T, tokio_postgres::Error>>,
    {
        let client = {
            let mut slot = self.client.lock().await;
            match slot.as_ref().filter(|client| !client.is_closed()) {
                Some(client) => client.clone(),
                None => {
                    let client = Arc::new(self.target.connect().await?);
                    *slot = Some(client.clone());
                    client
                }
            }
        };
        let result = self.target.bounded(call(client.clone())).await;
        if result.as_ref().is_err_and(PostgresError::connection_lost) {
            let mut slot = self.client.lock().await;
            if slot.as_ref().is_some_and(|held| Arc::ptr_eq(held, &client)) {
                *slot = None;
            }
        }
        result
    }
}

/// Drives a connection's messages until the client is dropped or the
/// connection breaks; a notification wakes its channel's waiter.
async fn drive<S, T>(mut connection: tokio_postgres::Connection<S, T>, channels: Channels)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    loop {
        match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
            Some(Ok(AsyncMessage::Notification(notification))) => {
                if let Some((_, wake)) = channels.iter().find(|(name, _)| name == notification.channel()) {
                    wake.notify_one();
                }
            }
            Some(Ok(_)) => {}
            Some(Err(error)) => {
                tracing::debug!(%error, "a connection to Postgres ended");
                return;
            }
            None => return,
        }
    }
}
