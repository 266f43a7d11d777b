//! Durability: every change a client is told about is written to the store
//! first, in Redis (`redis/`, fenced by the leader's token) or on local
//! disk (`disk/`, one instance). Both take the service's writes through the
//! same seam (`journal.rs`), gather them into group commits the same way
//! (`group_commit.rs`) and keep the same records (`codec.rs`); a snapshot
//! (`snapshot.rs`) moves the state between them.

pub(crate) mod codec;
pub mod disk;
pub(crate) mod group_commit;
pub mod redis;
pub mod snapshot;
