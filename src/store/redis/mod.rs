//! The Redis backend: the connections (`connections.rs`, `routing.rs`),
//! the key layout (`layout.rs`), the fenced group commit (`committer.rs`,
//! one Lua call built by `batch.rs`, confirmed by replicas when asked,
//! `replicas.rs`), the loads on takeover (`loader.rs`), and a sharded
//! group's list of every shard's queues (`catalog.rs`). The scripts it runs
//! in Redis are in `lua/`.
//!
//! The service hands each operation's changes to the [`committer`] as a
//! [`crate::journal::Pending`] write and waits for it. The committer gathers
//! whatever writes are waiting into one Lua script call (group commit),
//! which first checks that the lock still holds this leader's token. The
//! [`loader`] reads everything back when an instance becomes leader, or
//! after a failed write left memory and Redis possibly apart. Both reach the
//! service's queues only through [`crate::journal::Memory`].

mod batch;
pub(crate) mod catalog;
pub(crate) mod committer;
mod connections;
mod error;
pub(crate) mod layout;
pub(crate) mod loader;
pub(crate) mod replicas;
mod routing;

use std::sync::Arc;

use crate::journal::Memory;
use crate::leader::Leadership;
use crate::metrics::Metrics;

pub use connections::{Target, client, log_connection_errors, subscriber};
pub use error::{RedisError, SetupError};
pub use layout::Layout;
pub use routing::{Link, Redis};

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

/// The id of the latest load and the memory generation it was installed
/// as. Installing and reading both happen under its lock, so a commit
/// never pairs writes of one generation with the load id of another.
#[derive(Default)]
pub struct LoadId(std::sync::Mutex<Option<(u64, Arc<str>)>>);

impl LoadId {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<(u64, Arc<str>)>> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Memory's current generation, and the id of the load it came from;
    /// no id while memory is cleared or not yet installed.
    pub fn current(&self, memory: &dyn Memory) -> (u64, Option<Arc<str>>) {
        let installed = self.lock();
        let generation = memory.generation();
        let id = installed
            .as_ref()
            .filter(|(installed_as, _)| *installed_as == generation)
            .map(|(_, id)| id.clone());
        (generation, id)
    }

    /// Installs loaded state into `memory` as the load `id`, which Redis
    /// already holds as its fence.
    pub fn install(
        &self,
        id: Arc<str>,
        memory: &dyn Memory,
        queues: Vec<crate::queue::Queue>,
        topics: crate::topic::Topics,
    ) {
        let mut installed = self.lock();
        memory.install(queues, topics);
        *installed = Some((memory.generation(), id));
    }
}
