//! What can go wrong with Redis: a client that cannot be built from the
//! settings ([`SetupError`], at startup), and a command that failed or
//! whose write too few replicas confirmed ([`RedisError`], while serving).
//! Callers match on the cause: a setup error stops the process with a
//! message naming the flag to change, a command error is retried.

use std::time::Duration;

use crate::cluster::StoreError;
use crate::cluster::lock::LockError;
use crate::cluster::transfers::MailboxError;

/// Why the Redis clients could not be built; each names the flag to change.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// `url` is the URL with its password left out: an error is logged.
    #[error(
        "--redis-url {url:?} is not a valid Redis URL ({source}); expected redis://[user:password@]host:port, \
         rediss:// for TLS, unix:///path/to/redis.sock for a Unix socket, \
         or redis-cluster://[user:password@]host:port[,host:port...] for Redis Cluster"
    )]
    BadUrl { url: String, source: fred::error::Error },
    #[error(
        "--redis-url starts with {scheme}://, which is not a Redis URL's: use redis://, rediss:// (TLS), unix://, \
         redis-cluster://, rediss-cluster://, redis-sentinel:// or rediss-sentinel://"
    )]
    UnknownScheme { scheme: String },
    #[error("a Redis Cluster URL names no node: give at least one host:port after redis-cluster://")]
    NoClusterNode,
    #[error("--redis-ca-file needs a rediss:// URL")]
    CaFileWithoutTls,
    #[error("--redis-ca-file: {0}")]
    Tls(#[from] crate::store::tls::TlsError),
    #[error("cannot build a Redis client: {0}")]
    Client(fred::error::Error),
}

/// Why a Redis call did not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum RedisError {
    /// Redis refused the command, or did not answer in time.
    #[error("{0}")]
    Command(#[from] fred::error::Error),
    /// `WAIT` itself failed: whether the replicas hold the write is unknown.
    #[error("WAIT failed: {0}")]
    Wait(fred::error::Error),
    /// Fewer replicas than `--redis-min-replicas` hold the write.
    #[error(
        "{acknowledged} of the {wanted} replicas asked for (--redis-min-replicas) confirmed the write within {within:?}"
    )]
    TooFewReplicas {
        acknowledged: i64,
        wanted: u32,
        within: Duration,
    },
}

/// A failed Redis call, as the group's tasks (lock, roster, mailboxes) see it.
impl From<RedisError> for StoreError {
    fn from(error: RedisError) -> StoreError {
        StoreError {
            store: "Redis",
            source: Box::new(error),
        }
    }
}

impl From<fred::error::Error> for StoreError {
    fn from(error: fred::error::Error) -> StoreError {
        RedisError::Command(error).into()
    }
}

impl From<RedisError> for LockError {
    fn from(error: RedisError) -> LockError {
        StoreError::from(error).into()
    }
}

impl From<RedisError> for MailboxError {
    fn from(error: RedisError) -> MailboxError {
        StoreError::from(error).into()
    }
}

impl From<fred::error::Error> for MailboxError {
    fn from(error: fred::error::Error) -> MailboxError {
        StoreError::from(error).into()
    }
}
