//! The load fence's memory: which load the service's memory came from.
//! A group-backed store (Redis, Postgres) stores the id of each load as it
//! starts, and every commit names the id of the load its writes were made
//! on: a commit made on memory that a later load replaced is refused,
//! however late it reaches the store.

use std::sync::Arc;

use crate::journal::Memory;

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

    /// Installs loaded state into `memory` as the load `id`, which the
    /// store already holds as its fence.
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
