//! How to reach Postgres: the URL as libpq reads it (several hosts, and
//! `target_session_attrs=read-write` to find the primary among them), the
//! password from the URL or `PGPASSWORD`, and connections whose making and
//! calls are bounded in time, with TCP keepalives short enough that a
//! vanished server is noticed within seconds rather than hours.

use std::str::FromStr;
use std::time::Duration;

use tokio_postgres::config::SslMode;
use tokio_postgres::{Client, NoTls};

use super::PostgresError;

/// How to reach Postgres, and the time limit of a call.
#[derive(Clone)]
pub struct Target {
    config: tokio_postgres::Config,
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
    /// as libpq's tools take it.
    pub fn parse(url: &str, timeout: Duration) -> Result<Target, PostgresError> {
        let mut config = tokio_postgres::Config::from_str(url).map_err(PostgresError::BadUrl)?;
        match config.get_ssl_mode() {
            SslMode::Disable | SslMode::Prefer => {
                config.ssl_mode(SslMode::Disable);
            }
            other => return Err(PostgresError::TlsUnsupported(format!("{other:?}").to_lowercase())),
        }
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
        Ok(Target { config, timeout })
    }

    /// A new connection, its messages driven by a task of its own that
    /// ends when the client is dropped or the connection breaks.
    pub async fn connect(&self) -> Result<Client, PostgresError> {
        let (client, connection) = tokio::time::timeout(self.timeout, self.config.connect(NoTls))
            .await
            .map_err(|_| PostgresError::TimedOut(self.timeout))??;
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "a connection to Postgres ended");
            }
        });
        Ok(client)
    }

    /// `call`, bounded by the time limit.
    pub async fn bounded<T, E: Into<PostgresError>>(
        &self,
        call: impl Future<Output = Result<T, E>>,
    ) -> Result<T, PostgresError> {
        tokio::time::timeout(self.timeout, call)
            .await
            .map_err(|_| PostgresError::TimedOut(self.timeout))?
            .map_err(Into::into)
    }
}
