//! Queues imported from a snapshot at start (`--import`): the fixtures a
//! test suite starts from, or a backup or another mode's state moved here.
//!
//! The import runs once per process, at the first load of the state (at
//! start in memory-only mode, after the first load from disk or Redis):
//! it creates each queue of the snapshot that does not exist, with its
//! messages, in one commit per queue, so that a queue is imported whole
//! or not at all. A queue that exists is left as it is, so a restart with
//! the same `--import` changes nothing. If a commit fails, the import runs
//! again after the next load, skipping the queues already imported.
//! What the seed gives is read on the blocking threads: the queues read
//! at start when the instance imports at once, or the file read again, in
//! a group, rather than held in memory by an instance that may stay
//! passive (see `node::seed_from`).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::Service;
use super::slot::QueueSlot;
use crate::error::SqsError;
use crate::journal::Write;
use crate::queue::Queue;

/// Reads the snapshot's queues of this service's shard.
pub type SeedSource = Arc<dyn Fn() -> Result<Vec<Queue>, String> + Send + Sync>;

/// Why an import stopped; the queues imported before it stay.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("cannot read the snapshot to import: {0}")]
    Read(String),
    #[error("cannot import queue {name}: {}", error.message)]
    Queue { name: String, error: SqsError },
}

/// What an import did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Imported {
    pub queues: usize,
    pub messages: usize,
    /// Queues that existed already, left as they were.
    pub skipped: Vec<String>,
}

impl Service {
    /// Imports the queues `seed` reads at the first load (see the module
    /// comment).
    pub fn with_seed(self, seed: SeedSource) -> Service {
        *self.seed.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(seed);
        self.preparing.store(true, Ordering::Release);
        self
    }

    /// Runs the import if it has not yet succeeded in this process;
    /// `None` when there is nothing (left) to import.
    pub async fn import_seed(&self) -> Option<Result<Imported, ImportError>> {
        let seed = self
            .seed
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()?;
        let result = self.import_from(seed).await;
        if result.is_ok() {
            *self.seed.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = None;
        }
        Some(result)
    }

    async fn import_from(&self, seed: SeedSource) -> Result<Imported, ImportError> {
        let queues = tokio::task::spawn_blocking(move || seed())
            .await
            .map_err(|panic| ImportError::Read(panic.to_string()))?
            .map_err(ImportError::Read)?;
        let mut imported = Imported::default();
        for queue in queues {
            let name = queue.name.clone();
            match self.import_queue(queue).await {
                Ok(Some(messages)) => {
                    imported.queues += 1;
                    imported.messages += messages;
                }
                Ok(None) => imported.skipped.push(name),
                Err(error) => return Err(ImportError::Queue { name, error }),
            }
        }
        Ok(imported)
    }

    /// Puts `queue` in place with its messages, durably, unless a queue of
    /// its name exists; returns how many messages it brought.
    async fn import_queue(&self, mut queue: Queue) -> Result<Option<usize>, SqsError> {
        if self.queue_exists(&queue.name) {
            return Ok(None);
        }
        // Recorded before the map is locked: copying a large queue's
        // changes must not hold up every other queue's requests.
        if self.journal.is_some() {
            queue.enable_journal();
            queue.record_whole();
        }
        let (messages, bytes) = queue.holding();
        let name = queue.name.clone();
        let commit = {
            let mut queues = self.write_queues();
            if queues.contains_key(&name) {
                return Ok(None);
            }
            self.check_queue_room(queues.len())?;
            self.check_room(messages, bytes)?;
            self.account((0, 0), (messages, bytes));
            let changes = queue.take_changes();
            let generation = self.generation();
            queues.insert(name.clone(), QueueSlot::new(queue, generation));
            self.submit(generation, vec![Write::Queue { name, changes }])
        };
        self.committed(commit).await?;
        Ok(Some(messages as usize))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::metrics::Metrics;
    use crate::queue::clock::SystemClock;
    use crate::queue::{NewMessage, QueueAttributes};

    fn queue_with(name: &str, bodies: &[&str]) -> Queue {
        let mut queue = Queue::new(name.into(), QueueAttributes::default(), BTreeMap::new(), 1_000);
        for body in bodies {
            queue.send(NewMessage::plain(body), 1_000).unwrap();
        }
        queue
    }

    #[tokio::test]
    async fn an_import_creates_the_missing_queues_once_and_leaves_existing_ones() {
        let reads = Arc::new(AtomicUsize::new(0));
        let counted = reads.clone();
        let seed: SeedSource = Arc::new(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            Ok(vec![queue_with("new", &["a", "b"]), queue_with("kept", &["c"])])
        });
        let service = Service::new(Arc::new(SystemClock), Arc::new(Metrics::new("test"))).with_seed(seed);
        service
            .create_queue("kept", &BTreeMap::new(), BTreeMap::new())
            .await
            .unwrap();

        assert!(service.preparing(), "not ready before the import");
        let imported = service.import_seed().await.unwrap().unwrap();
        assert_eq!(
            imported,
            Imported {
                queues: 1,
                messages: 2,
                skipped: vec!["kept".into()],
            }
        );
        let held = |name: &str| service.inspect(name, |queue, _| queue.holding().0).unwrap();
        assert_eq!((held("new"), held("kept")), (2, 0));
        assert_eq!(service.held().0, 2);
        // Once done, a later load imports nothing, and the file is not read again.
        assert!(service.import_seed().await.is_none());
        assert_eq!(reads.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn an_import_past_the_limits_is_refused_and_tried_again_later() {
        let seed: SeedSource = Arc::new(|| Ok(vec![queue_with("big", &["a", "b", "c"])]));
        let limits = crate::service::Limits {
            max_messages: 2,
            ..Default::default()
        };
        let service = Service::new(Arc::new(SystemClock), Arc::new(Metrics::new("test")))
            .with_limits(limits)
            .with_seed(seed);
        let refused = service.import_seed().await.unwrap().unwrap_err();
        assert!(
            matches!(refused, ImportError::Queue { ref name, .. } if name == "big"),
            "{refused}"
        );
        assert!(!service.queue_exists("big"));
        assert!(service.import_seed().await.is_some(), "the import is tried again");
    }
}
