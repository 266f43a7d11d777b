//! The leader lock: the [`LockStore`] interface the elector, the watchdog
//! and the HTTP front act through. Each backend has its own in its folder
//! (`store/redis/lock.rs`: a key with a TTL; `store/postgres/lock.rs`: a
//! session advisory lock and a lease row; `store/mysql/lock.rs`:
//! `GET_LOCK` and a lease row), and each fences every write by the epoch
//! its acquisition took. A lock kept apart from the store (`--lock-url`,
//! `store/etcd/`) fences through the store's [`Fence`].
//!
//! The elector's timing rules are tested against a lock in memory that can
//! be made to hang or fail (`election.rs`'s tests); each backend is tested
//! against a real server (`tests/ha/fencing.rs`, `tests/ha/postgres.rs`).

use std::future::Future;
use std::pin::Pin;

use super::StoreError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acquire {
    Won(String),
    Held(String),
}

/// Why a lock call gave no answer to act on. Either way the elector retries
/// at its next turn; only the watchdog's deadline ends a leadership.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// No answer within the store's timeout: `what` says which call.
    #[error("{0} timed out")]
    TimedOut(&'static str),
}

/// What a lock call returns: boxed, so that the lock can be shared as a
/// `dyn LockStore` whatever its backend (a call a second costs nothing).
pub type LockCall<'a, T> = Pin<Box<dyn Future<Output = Result<T, LockError>> + Send + 'a>>;

/// The leader lock: acquire with a fresh token (`epoch|node|nonce|url`,
/// see [`crate::leader::LeaderInfo`]), renew, release.
pub trait LockStore: Send + Sync + 'static {
    fn acquire(&self) -> LockCall<'_, Acquire>;
    /// The holder's token, without taking the lock.
    fn holder(&self) -> LockCall<'_, Option<String>>;
    fn renew<'a>(&'a self, token: &'a str) -> LockCall<'a, bool>;
    fn release<'a>(&'a self, token: &'a str) -> LockCall<'a, bool>;
}

/// A store's side of a lock kept apart from it (`--lock-url`): the store
/// records each new holder's revision, which only grows from one holder to
/// the next, and starts a new epoch with it; every commit carries the
/// epoch's token and is refused once a later holder recorded its own. So a
/// holder frozen past its lease, or cut off from the lock but not from the
/// store, cannot write once its successor has recorded.
pub trait Fence: Send + Sync + 'static {
    /// Records `revision` for `holder` (`node|nonce|url`) if it is larger
    /// than the revision recorded: `Won` with the new token
    /// (`epoch|node|nonce|url`), or `Held` with the recorded holder's token
    /// when as large a revision is recorded already.
    fn record<'a>(&'a self, revision: u64, holder: &'a str) -> LockCall<'a, Acquire>;
}
