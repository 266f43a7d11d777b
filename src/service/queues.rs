//! Queues coming and going: CreateQueue (idempotent when the attributes
//! agree), DeleteQueue, the queues the configuration file asks for, a
//! load's queues installed in place of memory, and ListQueues' pages.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use super::Service;
use super::slot::QueueSlot;
use crate::error::{ErrorCode, Result, SqsError};
use crate::journal::Write;
use crate::queue::{Queue, QueueAttributes, key, validate_name};

/// Of queue keys in order, those of one region (keys starting with
/// `region`, `""` or `"<region>/"`, see `queue::key`) whose name starts with
/// `prefix`, after the key `after`, at most `limit`: what ListQueues pages
/// through, whether the keys come from one shard's memory or from every
/// shard's.
pub fn select_names<'a>(
    keys: impl Iterator<Item = &'a String>,
    region: &str,
    prefix: &str,
    after: Option<&str>,
    limit: usize,
) -> Vec<String> {
    let first = format!("{region}{prefix}");
    keys.filter(|name| after.is_none_or(|after| name.as_str() > after))
        .skip_while(|name| name.as_str() < first.as_str())
        .take_while(|name| name.starts_with(&first))
        .filter(|name| !name[region.len()..].contains('/'))
        .take(limit)
        .cloned()
        .collect()
}

/// How many of `queues` are of the account of the queue keyed `key`: a
/// range of the map for another account than the instance's own (its keys
/// share their first part), a walk for the instance's own.
fn queues_in_account<T>(queues: &BTreeMap<String, T>, key: &str) -> usize {
    match key::split(key).account {
        Some(account) => {
            let prefix = format!("{account}/");
            queues
                .range(prefix.clone()..)
                .take_while(|(k, _)| k.starts_with(&prefix))
                .count()
        }
        None => queues.keys().filter(|k| key::split(k).account.is_none()).count(),
    }
}

/// Refuses a queue beyond its account's `max_queues`, `held` being held now.
pub fn check_account_room(held: usize, max: usize) -> Result<()> {
    if held >= max {
        return Err(SqsError::new(
            ErrorCode::OverLimit,
            format!(
                "This account holds its maximum of {max} queues (max_queues in the credentials file); delete one first."
            ),
        ));
    }
    Ok(())
}

/// A queue the configuration asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueSpec {
    pub name: String,
    pub attributes: BTreeMap<String, String>,
    pub tags: BTreeMap<String, String>,
}

/// A configured queue that could not be created.
#[derive(Debug, thiserror::Error)]
#[error("cannot create the configured queue {name}: {}", error.message)]
pub struct ConfiguredQueueError {
    pub name: String,
    pub error: SqsError,
}

/// The outcome of CreateQueue.
#[derive(Debug, PartialEq, Eq)]
pub enum Created {
    New,
    /// The queue existed with the same attributes: CreateQueue is idempotent.
    Existing,
}

impl Service {
    /// Queues to create wherever they are missing: at startup in memory-only
    /// mode, after each restore from Redis.
    pub fn with_configured_queues(mut self, queues: Vec<QueueSpec>) -> Service {
        if !queues.is_empty() {
            self.preparing.store(true, Ordering::Release);
        }
        self.configured_queues = queues;
        self
    }

    /// Whether the queues to be there from the start (a snapshot's, the
    /// configuration file's) are not in place yet: `/ready` waits for them,
    /// so that what a test suite seeds is there when its wait says go.
    pub fn preparing(&self) -> bool {
        self.preparing.load(Ordering::Acquire)
    }

    /// The first load's import and configured queues are done (or failed
    /// and logged): the instance is ready.
    pub fn prepared(&self) {
        self.preparing.store(false, Ordering::Release);
    }

    /// Creates the configured queues that do not exist yet; existing queues
    /// are left as they are (a failover must not reset what clients
    /// changed). Returns how many it created.
    pub async fn create_missing_queues(&self) -> std::result::Result<usize, ConfiguredQueueError> {
        let mut created = 0;
        for spec in &self.configured_queues {
            if self.queue_exists(&spec.name) {
                continue;
            }
            self.create_queue(&spec.name, &spec.attributes, spec.tags.clone())
                .await
                .map_err(|error| ConfiguredQueueError {
                    name: spec.name.clone(),
                    error,
                })?;
            created += 1;
        }
        Ok(created)
    }

    /// Creates a queue, or confirms an existing one whose attributes agree
    /// with every attribute given.
    pub async fn create_queue(
        &self,
        name: &str,
        attributes: &BTreeMap<String, String>,
        tags: BTreeMap<String, String>,
    ) -> Result<Created> {
        self.create_queue_within(name, attributes, tags, None).await
    }

    /// [`Service::create_queue`] for an account that may hold at most
    /// `max_in_account` queues (its `max_queues`), counted under the same
    /// lock as the creation, so that racing creates cannot pass it.
    pub async fn create_queue_within(
        &self,
        name: &str,
        attributes: &BTreeMap<String, String>,
        tags: BTreeMap<String, String>,
        max_in_account: Option<usize>,
    ) -> Result<Created> {
        // `name` is a queue key: the region it may carry came from a
        // request's signature, the name from the request.
        let key::Parts {
            account,
            region,
            name: bare_name,
        } = key::split(name);
        validate_name(bare_name, QueueAttributes::request_fifo(attributes))?;
        if region.is_some_and(|region| !key::is_region(region))
            || account.is_some_and(|account| !key::is_account(account))
        {
            return Err(SqsError::invalid_parameter(format!(
                "{name} is not a region and a queue name."
            )));
        }
        let parsed = QueueAttributes::for_new_queue(bare_name, attributes)?;
        crate::queue::tags::validate(&tags)?;
        let now = self.now();
        let commit = {
            let mut queues = self.write_queues();
            if let Some(existing) = queues.get(name) {
                let existing = existing.lock();
                for (key, value) in attributes {
                    if !existing.attributes.agrees_with(key, value)? {
                        return Err(SqsError::new(
                            ErrorCode::QueueNameExists,
                            format!(
                                "A queue already exists with the same name and a different value for attribute {key}"
                            ),
                        ));
                    }
                }
                return Ok(Created::Existing);
            }
            self.check_queue_room(queues.len())?;
            if let Some(max) = max_in_account {
                check_account_room(queues_in_account(&queues, name), max)?;
            }
            let mut queue = Queue::new(name.to_string(), parsed, tags, now);
            let holding = queue.holding();
            self.check_room(0, holding.1)?;
            self.hold_queue(name, (0, 0), holding);
            if self.journal.is_some() {
                queue.enable_journal();
                queue.record_meta();
            }
            let changes = queue.take_changes();
            let generation = self.generation();
            queues.insert(name.to_string(), QueueSlot::new(queue, generation));
            self.submit(
                generation,
                vec![Write::Queue {
                    name: name.to_string(),
                    changes,
                }],
            )
        };
        self.committed(commit).await?;
        Ok(Created::New)
    }

    /// Refuses a queue beyond `--max-queues`, `held` being held now.
    pub(super) fn check_queue_room(&self, held: usize) -> Result<()> {
        if held >= self.limits.max_queues {
            return Err(SqsError::new(
                ErrorCode::OverLimit,
                format!(
                    "This server holds its maximum of {} queues (--max-queues); delete one first.",
                    self.limits.max_queues
                ),
            ));
        }
        Ok(())
    }

    pub async fn delete_queue(&self, name: &str) -> Result<()> {
        let slot = self
            .write_queues()
            .remove(name)
            .ok_or_else(SqsError::queue_does_not_exist)?;
        let commit = {
            let queue = slot.lock();
            self.hold_queue(&queue.name, queue.holding(), (0, 0));
            slot.deleted.store(true, Ordering::Release);
            self.submit(
                slot.generation,
                vec![Write::DeleteQueue {
                    name: name.to_string(),
                }],
            )
        };
        slot.ready.notify_waiters();
        self.committed(commit).await
    }

    /// Deletes every queue, each as DeleteQueue does (durable, fenced), with
    /// its messages, move tasks and deduplication records: the control
    /// API's reset. Returns how many were deleted.
    pub async fn delete_all_queues(&self) -> Result<usize> {
        let names: Vec<String> = self.read_queues().keys().cloned().collect();
        let mut deleted = 0;
        for name in names {
            match self.delete_queue(&name).await {
                Ok(()) => deleted += 1,
                // Deleted meanwhile by a client: as good.
                Err(error) if error.code == ErrorCode::QueueDoesNotExist => {}
                Err(error) => return Err(error),
            }
        }
        Ok(deleted)
    }

    /// Wakes every long poll to look again: the virtual clock moved, and
    /// messages may have turned visible.
    pub fn wake_long_polls(&self) {
        for slot in self.read_queues().values() {
            slot.ready.notify_waiters();
        }
    }

    /// Drops every queue and starts a new memory generation: on a change of
    /// leadership, or before a reload, memory can no longer be trusted. Long
    /// polls on the dropped queues return at once.
    pub fn clear(&self) {
        let dropped = {
            let mut queues = self.write_queues();
            self.generation.fetch_add(1, Ordering::AcqRel);
            self.held_messages.store(0, Ordering::Release);
            self.held_bytes.store(0, Ordering::Release);
            if let Some(accounts) = &self.accounts {
                accounts.clear();
            }
            std::mem::take(&mut *queues)
        };
        for slot in dropped.values() {
            slot.close();
        }
    }

    /// Puts loaded queues in place of whatever memory held.
    pub fn install(&self, queues: Vec<Queue>) {
        let mut map = self.write_queues();
        let generation = self.generation.fetch_add(1, Ordering::AcqRel) + 1;
        let (messages, bytes) = queues
            .iter()
            .map(Queue::holding)
            .fold((0, 0), |(m, b), (qm, qb)| (m + qm, b + qb));
        self.held_messages.store(messages, Ordering::Release);
        self.held_bytes.store(bytes, Ordering::Release);
        if let Some(accounts) = &self.accounts {
            accounts.clear();
            for queue in &queues {
                accounts.apply(accounts.of(&queue.name), (0, 0), queue.holding());
            }
        }
        let dropped = std::mem::replace(
            &mut *map,
            queues
                .into_iter()
                .map(|mut queue| {
                    if self.journal.is_some() {
                        queue.enable_journal();
                    }
                    (queue.name.clone(), QueueSlot::new(queue, generation))
                })
                .collect(),
        );
        drop(map);
        for slot in dropped.values() {
            slot.close();
        }
    }

    /// Ends every long poll now and any started later: the server is
    /// shutting down and must not keep requests waiting.
    pub fn close_long_polls(&self) {
        self.closing.store(true, Ordering::Release);
        for slot in self.read_queues().values() {
            slot.ready.notify_waiters();
        }
    }

    pub fn queue_exists(&self, name: &str) -> bool {
        self.read_queues().contains_key(name)
    }

    /// Queue keys in order: those of one region (keys starting with
    /// `region`, `""` or `"<region>/"`, see `queue::key`) whose name starts
    /// with `prefix`, after the key `after`.
    pub fn queue_names(&self, region: &str, prefix: &str, after: Option<&str>, limit: usize) -> Vec<String> {
        use std::ops::Bound;
        let queues = self.read_queues();
        let start = match after {
            Some(after) => Bound::Excluded(after.to_string()),
            None => Bound::Included(format!("{region}{prefix}")),
        };
        select_names(
            queues
                .range::<String, _>((start, Bound::Unbounded))
                .map(|(name, _)| name),
            region,
            prefix,
            after,
            limit,
        )
    }
}
