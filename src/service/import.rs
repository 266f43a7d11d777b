//! Queues and topics imported from a snapshot at start (`--import`): the
//! fixtures a test suite starts from, or a backup or another mode's state
//! moved here.
//!
//! The import runs once per process, at the first load of the state (at
//! start in memory-only mode, after the first load from disk or Redis).
//! It is whole or nothing: the queues of the snapshot that do not exist
//! are checked against the limits together, then created with their
//! messages, and the topics that do not exist with their subscriptions,
//! in one commit, so a crash leaves the store as before the import or
//! with all of it. A queue or topic that exists is left as it is, so a
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
use crate::topic::{TopicArn, TopicSnapshot};

/// What a snapshot gives one shard.
#[derive(Default)]
pub struct Seed {
    pub queues: Vec<Queue>,
    pub topics: Vec<TopicSnapshot>,
}

/// Reads the snapshot's queues and topics of this service's shard.
pub type SeedSource = Arc<dyn Fn() -> Result<Seed, SeedError> + Send + Sync>;

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
    #[error("the snapshot's topics cannot be taken in ({0}); nothing was imported")]
    Topics(String),
    #[error("the import could not be stored ({}); nothing was imported", error.message)]
    NotStored { error: SqsError },
}

/// What an import did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Imported {
    pub queues: usize,
    pub messages: usize,
    pub topics: usize,
    /// Queues (by name) and topics (by ARN) that existed already, left as
    /// they were.
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
        let Seed { queues, topics } = tokio::task::spawn_blocking(move || seed())
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
        let (commit, withdrawn) = {
            // The topics' lock before the queues', as a Publish takes them.
            let mut held_topics = self.topics();
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
            if let Some(n) = fresh.len().checked_sub(1) {
                self.check_queue_room(map.len() + n).map_err(no_room)?;
            }
            // Archived publications count as messages do.
            let (archived, archived_bytes) = topics
                .iter()
                .flat_map(|topic| &topic.archived)
                .fold((0u64, 0u64), |(n, b), archived| (n + 1, b + archived.size()));
            self.check_room(messages + archived, bytes.saturating_add(archived_bytes))
                .map_err(no_room)?;
            let arns: Vec<TopicArn> = topics.iter().map(|topic| topic.arn.clone()).collect();
            let archived_before = held_topics.held();
            let skipped_topics = held_topics
                .import(topics)
                .map_err(|error| ImportError::Topics(error.message))?;
            self.hold_topics(archived_before, &mut held_topics);
            let new_topics: Vec<TopicArn> = arns
                .into_iter()
                .filter(|arn| !skipped_topics.contains(&arn.to_string()))
                .collect();
            imported.topics = new_topics.len();
            imported.skipped.extend(skipped_topics);
            let topic_changes = held_topics.take_changes();
            if fresh.is_empty() && imported.topics == 0 {
                return Ok(imported);
            }
            for queue in &fresh {
                self.hold_queue(&queue.name, (0, 0), queue.holding());
            }
            imported.queues = fresh.len();
            imported.messages = messages as usize;
            // Topics a load replaced carry the older generation, which
            // the store refuses.
            let generation = self.generation().min(held_topics.generation());
            let mut writes = Vec::with_capacity(fresh.len() + 1);
            if !topic_changes.is_empty() {
                writes.push(Write::Sns(topic_changes));
            }
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
            let withdrawn = Withdrawn {
                slots,
                topics: new_topics,
                generation,
            };
            (self.submit(generation, writes), withdrawn)
        };
        if let Err(error) = self.committed(commit).await {
            self.withdraw(withdrawn);
            return Err(ImportError::NotStored { error });
        }
        Ok(imported)
    }

    /// Takes out the queues and topics of an import that was not stored,
    /// where a load has not already replaced them.
    fn withdraw(&self, withdrawn: Withdrawn) {
        let mut topics = self.topics();
        if topics.generation() == withdrawn.generation {
            let archived = topics.held();
            for arn in &withdrawn.topics {
                topics.delete(arn);
            }
            self.hold_topics(archived, &mut topics);
            // Never stored, so nothing to take out of the store.
            topics.take_changes();
        }
        let mut map = self.write_queues();
        for slot in &withdrawn.slots {
            if map.get(&slot.name).is_some_and(|held| Arc::ptr_eq(held, slot)) {
                map.remove(&slot.name);
                {
                    let queue = slot.lock();
                    self.hold_queue(&queue.name, queue.holding(), (0, 0));
                }
                slot.close();
            }
        }
    }
}

/// What an import put in memory, to take out if it is not stored.
struct Withdrawn {
    slots: Vec<Arc<QueueSlot>>,
    topics: Vec<TopicArn>,
    generation: u64,
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

    fn seed_of(queues: Vec<Queue>) -> Seed {
        Seed {
            queues,
            topics: Vec::new(),
        }
    }

    fn topic(name: &str, subscriptions: Vec<crate::topic::SubscriptionSnapshot>) -> TopicSnapshot {
        TopicSnapshot {
            arn: TopicArn::new("us-east-1", "000000000000", name),
            attributes: BTreeMap::new(),
            tags: BTreeMap::new(),
            sequence: 0,
            archive_since: None,
            subscriptions,
            archived: Vec::new(),
        }
    }

    fn subscription_to(queue: &str, filter: &str) -> crate::topic::SubscriptionSnapshot {
        crate::topic::SubscriptionSnapshot {
            id: Some("kept-id".into()),
            protocol: crate::topic::Protocol::Sqs,
            endpoint: format!("arn:aws:sqs:us-east-1:000000000000:{queue}"),
            owner: None,
            attributes: BTreeMap::from([("FilterPolicy".into(), filter.into())]),
            pending: false,
            token: None,
        }
    }

    #[tokio::test]
    async fn topics_are_imported_with_the_queues_and_a_wrong_one_refuses_the_whole_import() {
        let good = Arc::new(|| {
            Ok(Seed {
                queues: vec![queue_with("paid", &["a"])],
                topics: vec![topic(
                    "orders",
                    vec![subscription_to("paid", r#"{"kind":["paid"]}"#)],
                )],
            })
        });
        let service = Service::new(Arc::new(SystemClock), Arc::new(Metrics::new("test"))).with_seed(good);
        let imported = service.import_seed().await.unwrap().unwrap();
        assert_eq!((imported.queues, imported.topics), (1, 1));
        let arn = "arn:aws:sns:us-east-1:000000000000:orders:kept-id";
        assert!(
            service.topics().subscription(arn).is_ok(),
            "the subscription keeps its ARN"
        );

        let wrong = Arc::new(|| {
            Ok(Seed {
                queues: vec![queue_with("other", &["b"])],
                topics: vec![topic(
                    "refunds",
                    vec![subscription_to("other", r#"{"kind":"not a list"}"#)],
                )],
            })
        });
        let service = Service::new(Arc::new(SystemClock), Arc::new(Metrics::new("test"))).with_seed(wrong);
        let refused = service.import_seed().await.unwrap().unwrap_err();
        assert!(matches!(refused, ImportError::Topics(_)), "{refused}");
        assert!(refused.to_string().contains("refunds"), "{refused}");
        assert!(!service.queue_exists("other"), "nothing of it applied");
        assert!(service.topics().is_empty());
        assert!(service.preparing(), "never ready");
    }

    #[tokio::test]
    async fn an_import_creates_the_missing_queues_once_and_leaves_existing_ones() {
        let reads = Arc::new(AtomicUsize::new(0));
        let counted = reads.clone();
        let seed: SeedSource = Arc::new(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            Ok(Seed {
                queues: vec![queue_with("new", &["a", "b"]), queue_with("kept", &["c"])],
                topics: Vec::new(),
            })
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
                topics: 0,
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

    /// An import the store refuses is taken out of memory whole: its queues
    /// gone, what they held no longer counted (its account's share too). It
    /// runs on a thread of its own, so that a withdrawal that deadlocked
    /// fails the test rather than hanging it.
    #[test]
    fn an_import_the_store_refuses_is_withdrawn() {
        let (finished, outcome) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let (journal, mut pending) =
                    tokio::sync::mpsc::unbounded_channel::<crate::journal::Pending>();
                tokio::spawn(async move {
                    while let Some(writes) = pending.recv().await {
                        let down =
                            SqsError::new(crate::error::ErrorCode::ServiceUnavailable, "the store is down");
                        let _ = writes.done.send(Err(down));
                    }
                });
                let home = crate::queue::Home {
                    account: "000000000000".into(),
                    region: "us-east-1".into(),
                };
                let seed: SeedSource = Arc::new(|| Ok(seed_of(vec![queue_with("lost", &["a", "b"])])));
                let service = Service::new(Arc::new(SystemClock), Arc::new(Metrics::new("test")))
                    .with_accounts(home)
                    .with_seed(seed)
                    .persisting_to(journal);
                let imported = service.import_seed().await.unwrap();
                let _ = finished.send((
                    matches!(imported, Err(ImportError::NotStored { .. })),
                    service.queue_exists("lost"),
                    service.held(),
                    service.holdings_by_account(),
                ));
            });
        });
        let (not_stored, exists, held, holdings) = outcome
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("the withdrawal finished (no queue's lock taken twice)");
        assert!(not_stored, "the store's refusal is the import's");
        assert!(!exists, "the queue withdrawn");
        assert_eq!(held, (0, 0));
        assert!(
            holdings
                .iter()
                .all(|holding| holding.messages == 0 && holding.bytes == 0),
            "{holdings:?}"
        );
    }

    #[tokio::test]
    async fn an_import_past_the_limits_is_refused_whole() {
        let seed: SeedSource = Arc::new(|| {
            Ok(seed_of(vec![
                queue_with("small", &["a"]),
                queue_with("big", &["b", "c"]),
            ]))
        });
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
