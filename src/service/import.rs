//! Queues imported from a snapshot at start (`--import`): the fixtures a
//! test suite starts from, or a backup or another mode's state moved here.
//!
//! The import runs once per process, at the first load of the state (at
//! start in memory-only mode, after the first load from disk or Redis).
//! It is whole or nothing: the queues of the snapshot that do not exist
//! are checked against the limits together, then created with their
//! messages in one commit, so a crash leaves the store as before the
//! import or with all of it. A queue that exists is left as it is, so a
//! restart with the same `--import` changes nothing. If the import cannot
//! be made (a limit, a failed write), nothing of it is applied, the
//! instance never turns ready, and the node stops with the cause
//! ([`Service::import_failure`]).
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
pub type SeedSource = Arc<dyn Fn() -> Result<Vec<Queue>, SeedError> + Send + Sync>;

/// Why the snapshot could not be read again (the store's snapshot reader
/// says, naming the line; the service does not know the file's format).
pub type SeedError = Arc<dyn std::error::Error + Send + Sync>;

/// Why an import was refused; nothing of it was applied.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ImportError {
    #[error("cannot read the snapshot to import: {0}")]
    Read(SeedError),
    #[error(
        "the snapshot's {queues} new queues with {messages} messages do not fit ({}); nothing was imported",
        error.message
    )]
    NoRoom {
        queues: usize,
        messages: u64,
        error: SqsError,
    },
    #[error("the import could not be stored ({}); nothing was imported", error.message)]
    NotStored { error: SqsError },
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
    /// `None` when there is nothing (left) to import. A refusal is also
    /// kept for [`Service::import_failure`].
    pub async fn import_seed(&self) -> Option<Result<Imported, ImportError>> {
        let seed = self
            .seed
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()?;
        let result = self.import_from(seed).await;
        match &result {
            Ok(_) => *self.seed.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = None,
            Err(error) => {
                self.import_failed.send_replace(Some(error.clone()));
            }
        }
        Some(result)
    }

    /// Resolves with the refusal once an import was refused: the node
    /// stops on it, since an instance that serves part of a snapshot (or
    /// none of it, as if it were imported) would mislead its users.
    pub async fn import_failure(&self) -> ImportError {
        let mut failed = self.import_failed.subscribe();
        let refused = failed.wait_for(Option::is_some).await;
        match refused.as_deref() {
            Ok(Some(error)) => error.clone(),
            _ => unreachable!("the service keeps the sender"),
        }
    }

    async fn import_from(&self, seed: SeedSource) -> Result<Imported, ImportError> {
        let queues = tokio::task::spawn_blocking(move || seed())
            .await
            .map_err(|panic| ImportError::Read(Arc::new(panic)))?
            .map_err(ImportError::Read)?;
        let mut imported = Imported::default();
        // Recorded before the map is locked: copying a large queue's
        // changes must not hold up every other queue's requests.
        let mut fresh = Vec::with_capacity(queues.len());
        for mut queue in queues {
            if self.queue_exists(&queue.name) {
                imported.skipped.push(queue.name);
                continue;
            }
            if self.journal.is_some() {
                queue.enable_journal();
                queue.record_whole();
            }
            fresh.push(queue);
        }
        let (commit, slots) = {
            let mut map = self.write_queues();
            fresh.retain(|queue| {
                let exists = map.contains_key(&queue.name);
                if exists {
                    imported.skipped.push(queue.name.clone());
                }
                !exists
            });
            let (messages, bytes) = fresh
                .iter()
                .map(Queue::holding)
                .fold((0u64, 0u64), |(m, b), (qm, qb)| (m + qm, b.saturating_add(qb)));
            let no_room = |error| ImportError::NoRoom {
                queues: fresh.len(),
                messages,
                error,
            };
            match fresh.len() {
                0 => return Ok(imported),
                n => self.check_queue_room(map.len() + n - 1).map_err(no_room)?,
            }
            self.check_room(messages, bytes).map_err(no_room)?;
            self.account((0, 0), (messages, bytes));
            imported.queues = fresh.len();
            imported.messages = messages as usize;
            let generation = self.generation();
            let mut writes = Vec::with_capacity(fresh.len());
            let mut slots = Vec::with_capacity(fresh.len());
            for mut queue in fresh {
                let name = queue.name.clone();
                writes.push(Write::Queue {
                    name: name.clone(),
                    changes: queue.take_changes(),
                });
                let slot = QueueSlot::new(queue, generation);
                map.insert(name, slot.clone());
                slots.push(slot);
            }
            (self.submit(generation, writes), slots)
        };
        if let Err(error) = self.committed(commit).await {
            self.withdraw(&slots);
            return Err(ImportError::NotStored { error });
        }
        Ok(imported)
    }

    /// Takes out the queues of an import that was not stored, where a
    /// load has not already replaced them.
    fn withdraw(&self, slots: &[Arc<QueueSlot>]) {
        let mut map = self.write_queues();
        for slot in slots {
            if map.get(&slot.name).is_some_and(|held| Arc::ptr_eq(held, slot)) {
                map.remove(&slot.name);
                self.account(slot.lock().holding(), (0, 0));
                slot.close();
            }
        }
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
    async fn an_import_past_the_limits_is_refused_whole() {
        let seed: SeedSource =
            Arc::new(|| Ok(vec![queue_with("small", &["a"]), queue_with("big", &["b", "c"])]));
        let limits = crate::service::Limits {
            max_messages: 2,
            ..Default::default()
        };
        let service = Service::new(Arc::new(SystemClock), Arc::new(Metrics::new("test")))
            .with_limits(limits)
            .with_seed(seed);
        let refused = service.import_seed().await.unwrap().unwrap_err();
        assert!(
            matches!(
                refused,
                ImportError::NoRoom {
                    queues: 2,
                    messages: 3,
                    ..
                }
            ),
            "{refused}"
        );
        assert!(
            !service.queue_exists("small") && !service.queue_exists("big"),
            "nothing of it applied"
        );
        assert_eq!(service.held(), (0, 0));
        assert!(service.preparing(), "never ready");
        let failure = tokio::time::timeout(std::time::Duration::from_secs(1), service.import_failure())
            .await
            .expect("the refusal is kept for the node");
        assert!(failure.to_string().contains("--max-messages"), "{failure}");
    }
}
