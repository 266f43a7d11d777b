//! Durability: every change a client is told about is written to the store
//! first, in Redis (`redis/`) or Postgres (`postgres/`), both fenced by the
//! leader's epoch, or on local disk (`disk/`, one instance). All take the
//! service's writes through the same seam (`journal.rs`), gather them into
//! group commits the same way (`group_commit.rs`) and keep the same records
//! (`codec.rs`); the group-backed ones fence loads alike (`load_id.rs`,
//! `reload.rs`) and reach their servers over the same TLS (`tls.rs`); a
//! snapshot (`snapshot.rs`) moves the state between them.

pub(crate) mod codec;
pub mod disk;
pub(crate) mod group_commit;
pub(crate) mod load_id;
pub mod postgres;
pub mod redis;
pub(crate) mod reload;
pub mod snapshot;
pub mod tls;
