//! Leadership in a group of instances sharing a store, whatever the store:
//! the elector that takes and keeps each shard's lock, the watchdog that
//! ends a leadership at its deadline, the group that shares shards out
//! among its members, and the tasks that move messages between shards.
//! What a store must do for them is a trait each (`LockStore`, `Roster`,
//! `Mailboxes`, and [`Backend`], a backend's parts for the group); each
//! backend implements them in its own folder under `store/`, and nothing
//! here names one.

pub mod backend;
pub(crate) mod election;
pub(crate) mod group;
pub mod lock;
pub(crate) mod transfers;
pub(crate) mod watchdog;

pub use backend::Backend;

/// Why a store's call failed, whatever the store: its name, and its own
/// error (each backend converts its errors into this one). The caller
/// retries at its next turn.
#[derive(Debug, thiserror::Error)]
#[error("{store}: {source}")]
pub struct StoreError {
    pub store: &'static str,
    pub source: Box<dyn std::error::Error + Send + Sync>,
}
