//! The Postgres backend (`--postgres-url`): instances sharing one database
//! form a group as they do on Redis, with the same records (`codec.rs`)
//! in tables.
//!
//! - `connect.rs`: the URL, the password, connections with timeouts.
//! - `schema.rs`: the tables and the commit function, made or upgraded
//!   once, under an advisory lock, by whichever instance comes first.
//! - `committer.rs`: a group commit (folded by `store/batch.rs`) as one
//!   call of the commit function; `loader.rs`: the load on takeover and
//!   after a failed write (a shard's queues only).
//! - `lock.rs`: the lock that elects the leader, and whose epoch fences
//!   every commit.
//! - `roster.rs`, `notices.rs`: the group's members and its notices;
//!   `mailboxes.rs`: a sharded group's messages between shards;
//!   `catalog.rs`: every shard's queues, for a sharded group's calls.
//! - `backend.rs`: all of it started for the group.

mod backend;
pub(crate) mod catalog;
pub(crate) mod committer;
mod connect;
pub(crate) mod loader;
mod lock;
mod mailboxes;
mod notices;
mod roster;
pub(crate) mod schema;

use std::sync::Arc;
use std::time::Duration;

pub use self::backend::PostgresBackend;
pub use self::connect::{Channels, Reconnecting, Target};
pub use self::lock::PostgresLock;
use super::load_id::LoadId;
use crate::cluster::StoreError;
use crate::cluster::lock::LockError;
use crate::cluster::transfers::MailboxError;
use crate::journal::Memory;
use crate::leader::Leadership;
use crate::metrics::Metrics;
use crate::service::shards::Placement;
pub(crate) use crate::store::current_epoch;

/// Why a Postgres call did not do what was asked, or the URL cannot be
/// used. Calls are retried; a URL error stops the start.
#[derive(Debug, thiserror::Error)]
pub enum PostgresError {
    #[error(
        "--postgres-url is not a valid Postgres URL ({0}); expected \
         postgres://[user[:password]@]host[:port][,host[:port]...]/database[?target_session_attrs=read-write]"
    )]
    BadUrl(tokio_postgres::Error),
    #[error("--postgres-ca-file with sslmode=disable in --postgres-url: drop one or the other")]
    CaFileWithoutTls,
    #[error("--postgres-ca-file: {0}")]
    Tls(#[from] crate::store::tls::TlsError),
    #[error("{0}")]
    Call(#[from] tokio_postgres::Error),
    #[error("no answer from Postgres within {0:?}")]
    TimedOut(Duration),
    #[error(
        "the database holds ssq's tables at schema version {found}, and this ssq knows versions up to \
         {known}: run the newer ssq that made them"
    )]
    NewerSchema { found: i32, known: i32 },
    #[error(
        "ssq's session advisory lock is not held by the session that took it: is --postgres-url a \
         connection pooler in transaction mode (PgBouncer's pool_mode = transaction)? Session locks do \
         not hold there; point ssq at Postgres itself, or at a pool in session mode"
    )]
    BehindPooler,
}

impl PostgresError {
    /// Whether the connection it came on is worth dropping: a broken or
    /// timed-out one, rather than an error Postgres answered with.
    pub fn connection_lost(&self) -> bool {
        match self {
            PostgresError::Call(error) => error.as_db_error().is_none(),
            PostgresError::TimedOut(_) => true,
            _ => false,
        }
    }
}

/// A failed Postgres call, as the group's tasks (lock, roster, mailboxes)
/// see it.
impl From<PostgresError> for StoreError {
    fn from(error: PostgresError) -> StoreError {
        StoreError {
            store: "Postgres",
            source: Box::new(error),
        }
    }
}

impl From<PostgresError> for LockError {
    fn from(error: PostgresError) -> LockError {
        StoreError::from(error).into()
    }
}

impl From<PostgresError> for MailboxError {
    fn from(error: PostgresError) -> MailboxError {
        StoreError::from(error).into()
    }
}

/// What the loader and the committer of one shard share: how to reach
/// Postgres, which shard's lease fences them (and, in a sharded group,
/// which queues are theirs), the memory they keep and the leadership whose
/// epoch fences every write.
#[derive(Clone)]
pub struct PostgresStore {
    pub target: Target,
    pub shard: i32,
    pub placement: Placement,
    pub memory: Arc<dyn Memory>,
    pub leadership: Arc<Leadership>,
    pub metrics: Arc<Metrics>,
    /// The id of the load that memory came from, which every commit names.
    pub load_id: Arc<LoadId>,
}
