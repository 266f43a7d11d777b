//! The MySQL and MariaDB backend (`--mysql-url`): instances sharing one
//! database form a group as they do on Redis and Postgres, with the same
//! records (`codec.rs`) in InnoDB tables.
//!
//! - `connect.rs`: the URL (several hosts: the first writable one is
//!   used), the password, TLS, connections with timeouts.
//! - `schema.rs`: the tables and the procedures, made or upgraded once,
//!   under a named lock, by whichever instance comes first.
//! - `committer.rs`: a group commit (folded by `store/batch.rs`) as one
//!   call of `ssq_commit`, whose writes are each one statement over a
//!   `JSON_TABLE`; `loader.rs`: the load on takeover and after a failed
//!   write (a shard's queues only).
//! - `lock.rs`: `GET_LOCK` on a connection of its own and the lease row
//!   whose epoch fences every commit.
//! - `roster.rs`: the group's members; `mailboxes.rs`: a sharded group's
//!   messages between shards; `catalog.rs`: every shard's queues.
//! - `backend.rs`: all of it started for the group. MySQL has no
//!   notices: each task polls, as every task does on the other stores too.

mod backend;
mod catalog;
mod committer;
mod connect;
mod loader;
mod lock;
mod mailboxes;
mod roster;
mod schema;

use std::sync::Arc;
use std::time::Duration;

pub use self::backend::MysqlBackend;
pub use self::connect::{Reconnecting, Target};
pub use self::lock::MysqlLock;
use crate::cluster::StoreError;
use crate::cluster::lock::LockError;
use crate::cluster::transfers::MailboxError;
use crate::journal::Memory;
use crate::leader::Leadership;
use crate::service::shards::Placement;
use crate::store::load_id::LoadId;

/// The error number `ssq_commit` and `ssq_deliver` raise when another
/// instance leads the shard.
const FENCED: u16 = 30_001;

/// Why a MySQL call did not do what was asked, or the URL cannot be used.
/// Calls are retried; a URL error stops the start.
#[derive(Debug, thiserror::Error)]
pub enum MysqlError {
    #[error(
        "--mysql-url is not a valid MySQL URL ({0}); expected \
         mysql://[user[:password]@]host[:port][,host[:port]...]/database[?ssl-mode=REQUIRED]"
    )]
    BadUrl(String),
    #[error("--mysql-ca-file with ssl-mode=DISABLED in --mysql-url: drop one or the other")]
    CaFileWithoutTls,
    #[error("--mysql-ca-file {0}: {1}")]
    CaFile(String, std::io::Error),
    #[error("{0}")]
    Call(#[from] mysql_async::Error),
    #[error("no answer from MySQL within {0:?}")]
    TimedOut(Duration),
    #[error("every host of --mysql-url is read-only ({0}): no primary to write to; retrying")]
    ReadOnly(String),
    #[error(
        "the database holds ssq's tables at schema version {found}, and this ssq knows versions up to \
         {known}: run the newer ssq that made them"
    )]
    NewerSchema { found: i32, known: i32 },
    #[error(
        "MySQL is a Galera node or a multi-primary Group Replication member ({0}): GET_LOCK is not \
         shared between its nodes, so two instances could each lead. Point --mysql-url at one writer \
         (a single-primary group's primary, or one Galera node); docs/operations.md, \"MySQL and MariaDB\""
    )]
    MultiWriter(String),
    #[error("a stored row is not UTF-8 text: {0}")]
    NotText(String),
}

impl MysqlError {
    /// Whether the connection it came on is worth dropping: a broken or
    /// timed-out one, or one to a server that turned read-only (a primary
    /// demoted: the next connection looks for the new one).
    pub fn connection_lost(&self) -> bool {
        match self {
            MysqlError::Call(mysql_async::Error::Server(error)) => matches!(error.code, 1290 | 1836),
            MysqlError::Call(_) | MysqlError::TimedOut(_) | MysqlError::ReadOnly(_) => true,
            _ => false,
        }
    }

    /// Whether MySQL refused the call because another instance leads.
    pub fn fenced(&self) -> bool {
        matches!(self, MysqlError::Call(mysql_async::Error::Server(error)) if error.code == FENCED)
    }
}

/// A failed MySQL call, as the group's tasks (lock, roster, mailboxes)
/// see it.
impl From<MysqlError> for StoreError {
    fn from(error: MysqlError) -> StoreError {
        StoreError {
            store: "MySQL",
            source: Box::new(error),
        }
    }
}

impl From<MysqlError> for LockError {
    fn from(error: MysqlError) -> LockError {
        StoreError::from(error).into()
    }
}

impl From<MysqlError> for MailboxError {
    fn from(error: MysqlError) -> MailboxError {
        StoreError::from(error).into()
    }
}

/// What the loader and the committer of one shard share: how to reach
/// MySQL, which shard's lease fences them (and, in a sharded group, which
/// queues are theirs), the memory they keep and the leadership whose
/// epoch fences every write.
#[derive(Clone)]
pub struct MysqlStore {
    pub target: Target,
    pub shard: i32,
    pub placement: Placement,
    pub memory: Arc<dyn Memory>,
    pub leadership: Arc<Leadership>,
    /// The id of the load that memory came from, which every commit names.
    pub load_id: Arc<LoadId>,
}

/// A stored text column (records are JSON text).
fn text(bytes: Vec<u8>) -> Result<String, MysqlError> {
    String::from_utf8(bytes).map_err(|error| MysqlError::NotText(error.to_string()))
}
