//! The Redis backend, all of it: the connections (`connections.rs`,
//! `routing.rs`), the key layout (`layout.rs`), the leader lock
//! (`lock.rs`), the fenced group commit (`committer.rs`, one Lua call built
//! by `batch.rs`, confirmed by replicas when asked, `replicas.rs`), the
//! loads on takeover (`loader.rs`), the group's roster (`roster.rs`), the
//! notices (`notices.rs`), and in a sharded group the mailboxes between
//! shards (`mailboxes.rs`) and the list of every shard's queues
//! (`catalog.rs`); `backend.rs` starts them for the group. The scripts it
//! runs in Redis are in `lua/`.
//!
//! The service hands each operation's changes to the [`committer`] as a
//! [`crate::journal::Pending`] write and waits for it. The committer gathers
//! whatever writes are waiting into one Lua script call (group commit),
//! which first checks that the lock still holds this leader's token. The
//! [`loader`] reads everything back when an instance becomes leader, or
//! after a failed write left memory and Redis possibly apart. Both reach the
//! service's queues only through [`crate::journal::Memory`].

mod backend;
mod batch;
pub(crate) mod catalog;
pub(crate) mod committer;
mod connections;
mod error;
pub(crate) mod layout;
pub(crate) mod loader;
mod lock;
mod mailboxes;
mod notices;
pub(crate) mod replicas;
mod roster;
mod routing;

use std::sync::Arc;

use crate::journal::Memory;
use crate::leader::Leadership;
use crate::metrics::Metrics;

pub use backend::{RedisBackend, Settings};
pub use connections::{Target, client, log_connection_errors, subscriber};
pub use error::{RedisError, SetupError};
pub use layout::Layout;
pub use lock::RedisLock;
pub use routing::{Link, Redis};

pub use super::load_id::LoadId;

/// What the loader and the committer of one leadership unit share: the
/// Redis connections that reach its keys, where its keys are, the memory they keep and the
/// leadership whose token fences every write.
#[derive(Clone)]
pub struct RedisStore {
    pub link: Link,
    pub layout: Layout,
    pub memory: Arc<dyn Memory>,
    pub leadership: Arc<Leadership>,
    pub metrics: Arc<Metrics>,
    /// The id of the load that memory came from, which every commit names
    /// (the load fence: `Layout::load_fence`).
    pub load_id: Arc<LoadId>,
}

/// Where one shard's keys are, and the connections that reach them.
#[derive(Clone)]
pub struct ShardKeys {
    pub layout: Layout,
    pub link: Link,
}
