//! The service: every queue behind its own lock, long polling, and the hand-
//! off of each change to the store.
//!
//! The queue map sits behind a `RwLock` that is only written when a queue is
//! created or deleted; each queue has its own `std::sync::Mutex`, held for the
//! short, non-async critical section of one core operation. A long poll never
//! spins: it waits on the queue's `Notify`, or sleeps until the next moment a
//! message turns visible by itself, whichever comes first.
//!
//! With persistence on, an operation's changes are submitted to the store
//! *while the queue's lock is held*, so the store receives each queue's
//! changes in the order memory applied them; the operation then waits, lock
//! released, for its commit before it answers. Memory has a generation that
//! every leadership change or reload bumps; the store refuses changes made in
//! an older generation.

pub mod move_tasks;
pub mod shards;

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Duration;

use tokio::sync::{Notify, mpsc, oneshot};
use tokio::time::Instant;

use crate::error::{ErrorCode, Result, SqsError};
use crate::journal::{Memory, Pending, Transfer, Write};
use crate::metrics::Metrics;
use crate::queue::clock::Clock;
use crate::queue::{
    Activity, Counts, DeadLetter, DeadLetterQueue, Message, NewMessage, Queue, QueueAttributes, Received,
    Sent,
};
use crate::queue::{key, validate_name};
use crate::service::shards::Placement;

/// What one instance holds at most; beyond it, CreateQueue and sends answer
/// OverLimit rather than letting memory run out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_queues: usize,
    /// Messages held over all queues, in any state.
    pub max_messages: u64,
    /// Payload bytes (bodies and attributes) and FIFO deduplication records
    /// held over all queues.
    pub max_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_queues: 1_000_000,
            max_messages: u64::MAX,
            max_bytes: u64::MAX,
        }
    }
}

pub struct Service {
    queues: RwLock<BTreeMap<String, Arc<QueueSlot>>>,
    clock: Arc<dyn Clock>,
    pub metrics: Arc<Metrics>,
    /// Set once at shutdown: long polls return at once.
    closing: AtomicBool,
    /// Where changes go to be made durable; `None` in memory-only mode.
    journal: Option<mpsc::UnboundedSender<Pending>>,
    generation: AtomicU64,
    limits: Limits,
    /// Queues the configuration file asks for, created wherever missing.
    configured_queues: Vec<QueueSpec>,
    /// Messages and payload bytes held over all queues, kept up to date by
    /// applying each operation's difference.
    held_messages: AtomicU64,
    held_bytes: AtomicU64,
    /// Notified after each load of the state is installed: what the state
    /// holds that runs in the background (message move tasks) resumes.
    pub state_loaded: Notify,
    /// In a sharded group: which shard this service holds, so that a
    /// message bound for another shard's queue goes through the outbox.
    home: Option<(Placement, usize)>,
    /// Notified when messages were committed into the outbox.
    pub outbox_ready: Notify,
    /// Queues of other shards that a transfer found missing, and until when
    /// receives stop sending dead letters to them (they stay in their
    /// queue, as with a missing dead-letter queue of this shard).
    missing_targets: Mutex<HashMap<String, Instant>>,
}

/// How long a dead-letter queue of another shard that was found missing is
/// not sent to again.
const MISSING_TARGET_BACKOFF: Duration = Duration::from_secs(10);

/// A commit to wait for before answering; `None` when there was nothing
/// to write.
type Commit = Option<Submitted>;

/// Writes handed to the store.
struct Submitted {
    done: oneshot::Receiver<Result<()>>,
    /// Whether they put messages in the outbox, whose sender is woken once
    /// they are durable (see `transfers.rs`).
    fill_outbox: bool,
}

/// One queue and what waits on it.
struct QueueSlot {
    /// The queue's name, readable without its lock (to order locking).
    name: String,
    queue: Mutex<Queue>,
    /// Woken when a message may have become receivable, and on deletion.
    ready: Notify,
    /// Set under the queue's lock when the queue is deleted or dropped; no
    /// operation applies to it afterwards.
    deleted: AtomicBool,
    /// The memory generation the queue belongs to.
    generation: u64,
}

impl QueueSlot {
    fn new(queue: Queue, generation: u64) -> Arc<QueueSlot> {
        Arc::new(QueueSlot {
            name: queue.name.clone(),
            queue: Mutex::new(queue),
            ready: Notify::new(),
            deleted: AtomicBool::new(false),
            generation,
        })
    }

    /// Marks the queue gone, under its lock, so that an operation either ran
    /// before (and submitted its changes first) or sees it gone.
    fn close(&self) {
        let _queue = self.lock();
        self.deleted.store(true, Ordering::Release);
        self.ready.notify_waiters();
    }

    fn is_closed(&self) -> bool {
        self.deleted.load(Ordering::Acquire)
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        // A panic while holding the lock is a bug; the queue state it guards
        // is still consistent per operation, so keep serving rather than
        // poisoning every later request.
        self.queue.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Locks two queues in the order of their names and returns the guards in
/// the order asked: every caller locks in the same order, so none deadlocks.
fn lock_pair<'a>(a: &'a QueueSlot, b: &'a QueueSlot) -> (MutexGuard<'a, Queue>, MutexGuard<'a, Queue>) {
    if a.name <= b.name {
        let first = a.lock();
        (first, b.lock())
    } else {
        let second = b.lock();
        (a.lock(), second)
    }
}

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

/// What a ReceiveMessage asks for.
#[derive(Debug, Default, Clone, Copy)]
pub struct ReceiveRequest<'a> {
    pub max: usize,
    pub visibility_timeout: Option<u32>,
    /// Wait up to this long for a message; `None`: the queue's setting.
    pub wait_seconds: Option<u32>,
    /// FIFO: a retried receive with the same id gets the same messages.
    pub attempt_id: Option<&'a str>,
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
    pub fn new(clock: Arc<dyn Clock>, metrics: Arc<Metrics>) -> Service {
        Service {
            queues: RwLock::new(BTreeMap::new()),
            clock,
            metrics,
            closing: AtomicBool::new(false),
            journal: None,
            generation: AtomicU64::new(0),
            limits: Limits::default(),
            configured_queues: Vec::new(),
            held_messages: AtomicU64::new(0),
            held_bytes: AtomicU64::new(0),
            state_loaded: Notify::new(),
            home: None,
            outbox_ready: Notify::new(),
            missing_targets: Mutex::new(HashMap::new()),
        }
    }

    /// Holds shard `shard` of `placement`'s queues.
    pub fn in_shard(mut self, placement: Placement, shard: usize) -> Service {
        self.home = Some((placement, shard));
        self
    }

    /// Whether the queue `key` belongs to another shard than this one.
    pub fn is_elsewhere(&self, key: &str) -> bool {
        self.home
            .as_ref()
            .is_some_and(|(placement, shard)| placement.shard_of(key) != *shard)
    }

    fn target_missing(&self, key: &str) -> bool {
        let mut missing = self.missing_targets.lock().unwrap_or_else(|p| p.into_inner());
        missing.retain(|_, until| *until > Instant::now());
        missing.contains_key(key)
    }

    pub fn with_limits(mut self, limits: Limits) -> Service {
        self.limits = limits;
        self
    }

    /// Queues to create wherever they are missing: at startup in memory-only
    /// mode, after each restore from Redis.
    pub fn with_configured_queues(mut self, queues: Vec<QueueSpec>) -> Service {
        self.configured_queues = queues;
        self
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

    /// Messages and payload bytes held over all queues.
    pub fn held(&self) -> (u64, u64) {
        (
            self.held_messages.load(Ordering::Acquire),
            self.held_bytes.load(Ordering::Acquire),
        )
    }

    /// Applies the change in what one queue holds to the totals.
    fn account(&self, before: (u64, u64), after: (u64, u64)) {
        for (total, (old, new)) in [
            (&self.held_messages, (before.0, after.0)),
            (&self.held_bytes, (before.1, after.1)),
        ] {
            if new >= old {
                total.fetch_add(new - old, Ordering::AcqRel);
            } else {
                total.fetch_sub(old - new, Ordering::AcqRel);
            }
        }
    }

    /// Refuses `messages` more messages of `bytes` payload beyond the limits.
    fn check_room(&self, messages: u64, bytes: u64) -> Result<()> {
        let (held_messages, held_bytes) = self.held();
        if held_messages.saturating_add(messages) > self.limits.max_messages {
            return Err(SqsError::new(
                ErrorCode::OverLimit,
                format!(
                    "This server holds its maximum of {} messages (--max-messages); consume some or raise the limit.",
                    self.limits.max_messages
                ),
            ));
        }
        if held_bytes.saturating_add(bytes) > self.limits.max_bytes {
            return Err(SqsError::new(
                ErrorCode::OverLimit,
                format!(
                    "This server holds its maximum of {} bytes of messages and FIFO deduplication records \
                     (--max-bytes); consume some, wait for deduplication ids to expire (5 minutes after \
                     their send), or raise the limit.",
                    self.limits.max_bytes
                ),
            ));
        }
        Ok(())
    }

    /// Persists every change through `journal` from now on.
    pub fn persisting_to(mut self, journal: mpsc::UnboundedSender<Pending>) -> Service {
        self.journal = Some(journal);
        self
    }

    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Hands one request's writes to the store; call with the locks of the
    /// queues they touch held.
    fn submit(&self, generation: u64, mut writes: Vec<Write>) -> Commit {
        let journal = self.journal.as_ref()?;
        writes.retain(|write| !matches!(write, Write::Queue { changes, .. } if changes.is_empty()));
        if writes.is_empty() {
            return None;
        }
        let fill_outbox = writes.iter().any(|write| matches!(write, Write::Outbox(_)));
        let (done, committed) = oneshot::channel();
        journal
            .send(Pending {
                generation,
                writes,
                done,
            })
            .ok()?;
        Some(Submitted {
            done: committed,
            fill_outbox,
        })
    }

    /// The changes `queue` recorded, as a write.
    fn changes_of(queue: &mut Queue) -> Write {
        Write::Queue {
            name: queue.name.clone(),
            changes: queue.take_changes(),
        }
    }

    /// Waits until the store holds the change; then wakes the outbox's
    /// sender if the change put messages there.
    async fn committed(&self, commit: Commit) -> Result<()> {
        let Some(Submitted { done, fill_outbox }) = commit else {
            return Ok(());
        };
        done.await.unwrap_or_else(|_| {
            Err(SqsError::new(
                ErrorCode::ServiceUnavailable,
                "ssq is shutting down and could not make this change durable; retry.",
            ))
        })?;
        if fill_outbox {
            self.outbox_ready.notify_one();
        }
        Ok(())
    }

    pub fn now(&self) -> u64 {
        self.clock.now_millis()
    }

    fn read_queues(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Arc<QueueSlot>>> {
        self.queues
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write_queues(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, Arc<QueueSlot>>> {
        self.queues
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Every queue, in name order, taken out of the map's lock so that each
    /// can be locked in turn without holding it.
    fn slots(&self) -> Vec<(String, Arc<QueueSlot>)> {
        self.read_queues()
            .iter()
            .map(|(name, slot)| (name.clone(), slot.clone()))
            .collect()
    }

    fn slot(&self, name: &str) -> Result<Arc<QueueSlot>> {
        self.read_queues()
            .get(name)
            .cloned()
            .ok_or_else(SqsError::queue_does_not_exist)
    }

    /// Creates a queue, or confirms an existing one whose attributes agree
    /// with every attribute given.
    pub async fn create_queue(
        &self,
        name: &str,
        attributes: &BTreeMap<String, String>,
        tags: BTreeMap<String, String>,
    ) -> Result<Created> {
        // `name` is a queue key: the region it may carry came from a
        // request's signature, the name from the request.
        let (region, bare_name) = key::split(name);
        validate_name(bare_name)?;
        if region.is_some_and(|region| !key::is_region(region)) {
            return Err(SqsError::invalid_parameter(format!(
                "{name} is not a region and a queue name."
            )));
        }
        let mut parsed = QueueAttributes::default();
        for (key, value) in attributes {
            parsed.set(key, value)?;
        }
        let given: Vec<&str> = attributes.keys().map(String::as_str).collect();
        parsed.check_consistency(bare_name, &given)?;
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
            if queues.len() >= self.limits.max_queues {
                return Err(SqsError::new(
                    ErrorCode::OverLimit,
                    format!(
                        "This server holds its maximum of {} queues (--max-queues); delete one first.",
                        self.limits.max_queues
                    ),
                ));
            }
            let mut queue = Queue::new(name.to_string(), parsed, tags, now);
            let holding = queue.holding();
            self.check_room(0, holding.1)?;
            self.account((0, 0), holding);
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

    pub async fn delete_queue(&self, name: &str) -> Result<()> {
        let slot = self
            .write_queues()
            .remove(name)
            .ok_or_else(SqsError::queue_does_not_exist)?;
        let commit = {
            let queue = slot.lock();
            self.account(queue.holding(), (0, 0));
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

    /// Drops every queue and starts a new memory generation: on a change of
    /// leadership, or before a reload, memory can no longer be trusted. Long
    /// polls on the dropped queues return at once.
    pub fn clear(&self) {
        let dropped = {
            let mut queues = self.write_queues();
            self.generation.fetch_add(1, Ordering::AcqRel);
            self.held_messages.store(0, Ordering::Release);
            self.held_bytes.store(0, Ordering::Release);
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
        self.state_loaded.notify_one();
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

    /// Runs `operation` on the named queue under its lock, with the time,
    /// and answers once its changes are durable. Wakes the queue's long
    /// pollers, since any operation may have made a message receivable.
    pub async fn with_queue<R>(&self, name: &str, operation: impl FnOnce(&mut Queue, u64) -> R) -> Result<R> {
        self.with_queue_sending(name, |queue, now| (operation(queue, now), Vec::new()))
            .await
    }

    /// As [`Service::with_queue`], where the operation may also take
    /// messages out for queues of other shards: they go into the outbox in
    /// the same commit as their removal (see `transfers.rs`).
    pub async fn with_queue_sending<R>(
        &self,
        name: &str,
        operation: impl FnOnce(&mut Queue, u64) -> (R, Vec<Transfer>),
    ) -> Result<R> {
        let slot = self.slot(name)?;
        let (result, commit) = {
            let mut queue = slot.lock();
            if slot.is_closed() {
                return Err(SqsError::queue_does_not_exist());
            }
            let before = queue.holding();
            let (result, transfers) = operation(&mut queue, self.now());
            self.account(before, queue.holding());
            let mut writes = vec![Self::changes_of(&mut queue)];
            if !transfers.is_empty() {
                writes.push(Write::Outbox(transfers));
            }
            (result, self.submit(slot.generation, writes))
        };
        slot.ready.notify_waiters();
        self.committed(commit).await?;
        Ok(result)
    }

    /// Runs `look` on the named queue under its lock, borrowed immutably:
    /// time is not advanced, nothing is submitted to the store and no long
    /// poll is woken, so a look leaves no trace (the message browser).
    pub fn inspect<R>(&self, name: &str, look: impl FnOnce(&Queue, u64) -> R) -> Result<R> {
        let slot = self.slot(name)?;
        let queue = slot.lock();
        if slot.is_closed() {
            return Err(SqsError::queue_does_not_exist());
        }
        Ok(look(&queue, self.now()))
    }

    /// Runs `operation` on two queues at once, both locked (in name order, so
    /// that no two callers can deadlock), and commits both queues' changes
    /// together: what moves from one to the other is never lost nor in both.
    pub async fn with_queues<R>(
        &self,
        first: &str,
        second: &str,
        operation: impl FnOnce(&mut Queue, &mut Queue, u64) -> R,
    ) -> Result<R> {
        let (slot_a, slot_b) = (self.slot(first)?, self.slot(second)?);
        if Arc::ptr_eq(&slot_a, &slot_b) {
            return Err(SqsError::invalid_parameter(
                "The source and the destination must be different queues.",
            ));
        }
        let (result, commit) = {
            let (mut a, mut b) = lock_pair(&slot_a, &slot_b);
            if slot_a.is_closed() || slot_b.is_closed() {
                return Err(SqsError::queue_does_not_exist());
            }
            let before = (a.holding(), b.holding());
            let result = operation(&mut a, &mut b, self.now());
            self.account(before.0, a.holding());
            self.account(before.1, b.holding());
            let commit = self.submit(
                slot_a.generation,
                vec![Self::changes_of(&mut a), Self::changes_of(&mut b)],
            );
            (result, commit)
        };
        slot_a.ready.notify_waiters();
        slot_b.ready.notify_waiters();
        self.committed(commit).await?;
        Ok(result)
    }

    /// The names of the queues for which `select` holds, in order.
    pub fn queues_where(&self, select: impl Fn(&Queue) -> bool) -> Vec<String> {
        self.slots()
            .into_iter()
            .filter(|(_, slot)| select(&slot.lock()))
            .map(|(name, _)| name)
            .collect()
    }

    /// Sends messages in one critical section and wakes long pollers once.
    pub async fn send(&self, name: &str, messages: Vec<NewMessage>) -> Result<Vec<Result<Sent>>> {
        self.send_with(name, messages, |_, _| Ok(()), Queue::send).await
    }

    /// Sends a SendMessageBatch's messages: as [`Service::send`], except
    /// that the rules SQS applies to the whole batch of a FIFO queue
    /// ([`Queue::check_fifo_batch`]) fail the whole call, and that entries
    /// are checked in the batch's words ([`Queue::send_batch_entry`]).
    pub async fn send_batch(&self, name: &str, messages: Vec<NewMessage>) -> Result<Vec<Result<Sent>>> {
        self.send_with(name, messages, Queue::check_fifo_batch, Queue::send_batch_entry)
            .await
    }

    async fn send_with(
        &self,
        name: &str,
        messages: Vec<NewMessage>,
        whole_call: fn(&Queue, &[NewMessage]) -> Result<()>,
        each: fn(&mut Queue, NewMessage, u64) -> Result<Sent>,
    ) -> Result<Vec<Result<Sent>>> {
        let bytes = messages
            .iter()
            .map(|m| (m.body.len() + crate::queue::message::attributes_size(&m.attributes)) as u64)
            .sum();
        self.check_room(messages.len() as u64, bytes)?;
        let results: Vec<Result<Sent>> = self
            .with_queue(name, |queue, now| {
                whole_call(queue, &messages)?;
                Ok(messages.into_iter().map(|m| each(queue, m, now)).collect())
            })
            .await??;
        let sent = results.iter().filter(|r| r.is_ok()).count();
        self.metrics.messages_sent.inc_by(sent as u64);
        Ok(results)
    }

    /// Receives up to `max` messages, waiting up to `wait_seconds` (or the
    /// queue's ReceiveMessageWaitTimeSeconds) for the first to arrive.
    pub async fn receive(&self, name: &str, request: ReceiveRequest<'_>) -> Result<Vec<Received>> {
        let slot = self.slot(name)?;
        let mut deadline = None;
        loop {
            // Register interest before looking, so that a send between the
            // look and the wait still wakes us.
            let notified = slot.ready.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();

            let (received, wait_default, next_wakeup, commit) = self.receive_once(name, &slot, &request)?;
            self.committed(commit).await?;
            self.metrics.messages_received.inc_by(received.len() as u64);
            let deadline = *deadline.get_or_insert_with(|| {
                Instant::now() + Duration::from_secs(request.wait_seconds.unwrap_or(wait_default).into())
            });
            let closed = slot.is_closed() || self.closing.load(Ordering::Acquire);
            if !received.is_empty() || closed || Instant::now() >= deadline {
                return Ok(received);
            }
            let wake_at = match next_wakeup {
                Some(ms) => deadline.min(Instant::now() + Duration::from_millis(ms)),
                None => deadline,
            };
            tokio::select! {
                _ = &mut notified => {}
                _ = tokio::time::sleep_until(wake_at) => {}
            }
        }
    }

    /// One look at the queue: receives what it can, moving over-received
    /// messages to the dead-letter queue. Both queues are locked, in name
    /// order (so two queues redriving into each other cannot deadlock), and
    /// their changes go to the store as one commit: a moved message is never
    /// lost and never in both. A dead-letter queue of another shard gets the
    /// messages through the outbox, written in the same commit.
    #[allow(clippy::type_complexity)]
    fn receive_once(
        &self,
        name: &str,
        slot: &Arc<QueueSlot>,
        request: &ReceiveRequest<'_>,
    ) -> Result<(Vec<Received>, u32, Option<u64>, Commit)> {
        let policy = slot.lock().attributes.redrive_policy.clone();
        // A dead-letter queue is in its source's region.
        let target_key = policy
            .as_ref()
            .map(|p| key::sibling(name, p.target_name()))
            .filter(|target| target != name);
        let (remote_target, target_key) = match target_key {
            Some(target) if self.is_elsewhere(&target) => {
                ((!self.target_missing(&target)).then_some(target), None)
            }
            local => (None, local),
        };
        let target = policy
            .as_ref()
            .zip(target_key.as_deref())
            .and_then(|(p, target)| Some((p, self.read_queues().get(target)?.clone())));
        let (mut queue, mut dead_letters) = match &target {
            None => (slot.lock(), None),
            Some((_, dlq)) => {
                let (queue, dead_letters) = lock_pair(slot, dlq);
                (queue, Some(dead_letters))
            }
        };
        if slot.is_closed() {
            return Ok((Vec::new(), 0, None, None));
        }
        let now = self.now();
        let held_before = (queue.holding(), dead_letters.as_deref().map(Queue::holding));
        let source_arn: Option<Arc<str>> = policy
            .as_ref()
            .filter(|_| target.is_some() || remote_target.is_some())
            .map(|policy| {
                let prefix = policy
                    .dead_letter_target_arn
                    .rsplit_once(':')
                    .map_or("", |(prefix, _)| prefix);
                // The source is in the dead-letter queue's region and account.
                format!("{prefix}:{}", key::split(name).1).into()
            });
        let mut leaving: Vec<Message> = Vec::new();
        let dead_letter = match (
            dead_letters.as_deref_mut(),
            &target,
            &remote_target,
            source_arn.clone(),
        ) {
            (Some(dlq), Some((_, dlq_slot)), _, Some(source_arn)) if !dlq_slot.is_closed() => {
                Some(DeadLetter {
                    queue: DeadLetterQueue::Here(dlq),
                    source_arn,
                })
            }
            (None, None, Some(_), Some(source_arn)) => Some(DeadLetter {
                queue: DeadLetterQueue::Elsewhere(&mut leaving),
                source_arn,
            }),
            _ => None,
        };
        let received = queue.receive(
            request.max,
            request.visibility_timeout,
            request.attempt_id,
            dead_letter,
            now,
        );
        self.account(held_before.0, queue.holding());
        if let (Some(before), Some(dlq)) = (held_before.1, dead_letters.as_deref()) {
            self.account(before, dlq.holding());
        }
        let next_wakeup = queue.next_wakeup().map(|at| at.saturating_sub(now));
        let mut writes = vec![Self::changes_of(&mut queue)];
        if let Some(dlq) = dead_letters.as_deref_mut() {
            writes.push(Self::changes_of(dlq));
        }
        if let Some(to) = remote_target.filter(|_| !leaving.is_empty()) {
            let transfers = leaving
                .into_iter()
                .map(|message| Transfer {
                    from: name.to_string(),
                    to: to.clone(),
                    message,
                    dead_letter_source: source_arn.clone(),
                })
                .collect();
            writes.push(Write::Outbox(transfers));
        }
        let commit = self.submit(slot.generation, writes);
        if let Some((_, dlq_slot)) = &target {
            dlq_slot.ready.notify_waiters();
        }
        Ok((
            received,
            queue.attributes.receive_message_wait_time_seconds,
            next_wakeup,
            commit,
        ))
    }

    /// Takes messages from other shards (inbox entries, by stream id) into
    /// their queues; each queue's arrivals commit with the removal of their
    /// entries, so each is taken exactly once. Arrivals for a queue deleted
    /// meanwhile go with it.
    pub async fn take_in(&self, arrivals: Vec<(String, Transfer)>) -> Result<()> {
        self.settle(
            arrivals,
            |t| &t.to,
            Write::TakenIn,
            |queue, transfer, now| queue.accept(transfer.message, transfer.dead_letter_source, now),
        )
        .await
    }

    /// Puts outbox entries whose target queue does not exist back into the
    /// queues they left, and stops sending dead letters there for a while.
    pub async fn put_back(&self, returned: Vec<(String, Transfer)>) -> Result<()> {
        {
            let mut missing = self.missing_targets.lock().unwrap_or_else(|p| p.into_inner());
            for (_, transfer) in &returned {
                missing.insert(transfer.to.clone(), Instant::now() + MISSING_TARGET_BACKOFF);
            }
        }
        self.settle(
            returned,
            |t| &t.from,
            Write::Delivered,
            |queue, transfer, now| queue.put_back(transfer.message, now),
        )
        .await
    }

    /// Commits a write that changes no queue (stream entries removed).
    pub async fn commit_alone(&self, write: Write) -> Result<()> {
        self.committed(self.submit(self.generation(), vec![write])).await
    }

    /// Applies transfers to the queues `queue_of` names, each queue's in
    /// one commit with `settled` (the stream entries they came from).
    async fn settle(
        &self,
        transfers: Vec<(String, Transfer)>,
        queue_of: fn(&Transfer) -> &String,
        settled: fn(Vec<String>) -> Write,
        apply: impl Fn(&mut Queue, Transfer, u64),
    ) -> Result<()> {
        let mut by_queue: BTreeMap<String, Vec<(String, Transfer)>> = BTreeMap::new();
        for (id, transfer) in transfers {
            by_queue
                .entry(queue_of(&transfer).clone())
                .or_default()
                .push((id, transfer));
        }
        let mut commits = Vec::with_capacity(by_queue.len());
        for (name, transfers) in by_queue {
            let ids = transfers.iter().map(|(id, _)| id.clone()).collect();
            let slot = self.read_queues().get(&name).cloned();
            let commit = match slot {
                Some(slot) => {
                    let commit = {
                        let mut queue = slot.lock();
                        let before = queue.holding();
                        if !slot.is_closed() {
                            let now = self.now();
                            for (_, transfer) in transfers {
                                apply(&mut queue, transfer, now);
                            }
                        }
                        self.account(before, queue.holding());
                        self.submit(slot.generation, vec![Self::changes_of(&mut queue), settled(ids)])
                    };
                    slot.ready.notify_waiters();
                    commit
                }
                None => {
                    tracing::info!(queue = %name, "messages from another shard for a queue that no longer exists are dropped with it");
                    self.submit(self.generation(), vec![settled(ids)])
                }
            };
            commits.push(commit);
        }
        for commit in commits {
            self.committed(commit).await?;
        }
        Ok(())
    }

    /// Runs `look` on every queue in key order, each under its lock in
    /// turn: what the metrics scrape and the admin page read. `look` may
    /// count the queue's messages, which advances time and may drop
    /// messages past retention, so what the queue holds is accounted after.
    pub fn each_queue<R>(&self, mut look: impl FnMut(&str, &mut Queue, u64) -> R) -> Vec<R> {
        let now = self.now();
        self.slots()
            .into_iter()
            .map(|(name, slot)| {
                let mut queue = slot.lock();
                let before = queue.holding();
                let result = look(&name, &mut queue, now);
                self.account(before, queue.holding());
                result
            })
            .collect()
    }

    /// What each queue has done (its counters), for the admin page's rates.
    pub fn activity_by_queue(&self) -> Vec<(String, Activity)> {
        self.each_queue(|name, queue, _| (name.to_string(), queue.activity()))
    }

    /// Message counts of every queue, for the metrics scrape.
    pub fn counts_by_queue(&self) -> Vec<(String, Counts)> {
        self.each_queue(|name, queue, now| (name.to_string(), queue.counts(now)))
    }
}

impl Memory for Service {
    fn generation(&self) -> u64 {
        Service::generation(self)
    }

    fn clear(&self) {
        Service::clear(self)
    }

    fn install(&self, queues: Vec<Queue>) {
        Service::install(self, queues)
    }

    fn close_long_polls(&self) {
        Service::close_long_polls(self)
    }

    fn create_configured_queues(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            match self.create_missing_queues().await {
                Ok(0) => {}
                Ok(created) => tracing::info!(created, "created the configured queues that were missing"),
                Err(error) => tracing::error!(%error, "a configured queue could not be created"),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::MessageAttributes;
    use crate::queue::clock::TokioClock;

    const T0: u64 = 1_700_000_000_000;

    async fn service() -> Arc<Service> {
        let service = Arc::new(Service::new(
            Arc::new(TokioClock::new(T0)),
            Arc::new(Metrics::new("test")),
        ));
        service
            .create_queue("q", &BTreeMap::new(), BTreeMap::new())
            .await
            .unwrap();
        service
    }

    fn message(body: &str, delay: Option<u32>) -> NewMessage {
        NewMessage {
            body: body.into(),
            attributes: MessageAttributes::new(),
            delay_seconds: delay,
            sender_id: "t".into(),
            trace_header: None,
            group_id: None,
            dedup_id: None,
        }
    }

    fn wait(max: usize, wait_seconds: Option<u32>) -> ReceiveRequest<'static> {
        ReceiveRequest {
            max,
            wait_seconds,
            ..Default::default()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn long_poll_returns_as_soon_as_a_message_arrives() {
        let svc = service().await;
        let poller = {
            let svc = svc.clone();
            tokio::spawn(async move {
                let started = Instant::now();
                let got = svc.receive("q", wait(10, Some(20))).await.unwrap();
                (got.len(), started.elapsed())
            })
        };
        tokio::time::sleep(Duration::from_secs(3)).await;
        svc.send("q", vec![message("hi", None)]).await.unwrap();
        let (count, waited) = poller.await.unwrap();
        assert_eq!(count, 1);
        assert_eq!(waited, Duration::from_secs(3));
    }

    #[tokio::test(start_paused = true)]
    async fn long_poll_times_out_empty_after_the_wait() {
        let svc = service().await;
        let started = Instant::now();
        let got = svc.receive("q", wait(10, Some(7))).await.unwrap();
        assert!(got.is_empty());
        assert_eq!(started.elapsed(), Duration::from_secs(7));
    }

    #[tokio::test(start_paused = true)]
    async fn long_poll_wakes_when_a_delayed_message_turns_visible() {
        let svc = service().await;
        svc.send("q", vec![message("later", Some(4))]).await.unwrap();
        let started = Instant::now();
        let got = svc.receive("q", wait(10, Some(20))).await.unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(started.elapsed(), Duration::from_secs(4));
    }

    #[tokio::test(start_paused = true)]
    async fn queue_wait_time_applies_when_the_request_gives_none() {
        let svc = service().await;
        svc.with_queue("q", |q, _| q.attributes.receive_message_wait_time_seconds = 2)
            .await
            .unwrap();
        let started = Instant::now();
        assert!(svc.receive("q", wait(1, None)).await.unwrap().is_empty());
        assert_eq!(started.elapsed(), Duration::from_secs(2));
    }

    #[tokio::test(start_paused = true)]
    async fn deleting_a_queue_ends_its_long_polls() {
        let svc = service().await;
        let poller = {
            let svc = svc.clone();
            tokio::spawn(async move { svc.receive("q", wait(1, Some(20))).await })
        };
        tokio::time::sleep(Duration::from_secs(1)).await;
        svc.delete_queue("q").await.unwrap();
        let started = Instant::now();
        assert!(poller.await.unwrap().unwrap().is_empty());
        assert_eq!(started.elapsed(), Duration::ZERO);
    }

    #[tokio::test]
    async fn create_is_idempotent_only_for_agreeing_attributes() {
        let svc = Service::new(
            Arc::new(crate::queue::clock::SystemClock),
            Arc::new(Metrics::new("test")),
        );
        let attrs = BTreeMap::from([("VisibilityTimeout".to_string(), "60".to_string())]);
        assert_eq!(
            svc.create_queue("a", &attrs, BTreeMap::new()).await.unwrap(),
            Created::New
        );
        assert_eq!(
            svc.create_queue("a", &attrs, BTreeMap::new()).await.unwrap(),
            Created::Existing
        );
        assert_eq!(
            svc.create_queue("a", &BTreeMap::new(), BTreeMap::new())
                .await
                .unwrap(),
            Created::Existing
        );
        let other = BTreeMap::from([("VisibilityTimeout".to_string(), "61".to_string())]);
        let err = svc.create_queue("a", &other, BTreeMap::new()).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::QueueNameExists);
    }

    #[tokio::test]
    async fn names_list_by_prefix_in_pages() {
        let svc = Service::new(
            Arc::new(crate::queue::clock::SystemClock),
            Arc::new(Metrics::new("test")),
        );
        for name in ["b1", "a", "b2", "b3", "c", "eu-north-1/b1", "eu-north-1/b4", "e"] {
            svc.create_queue(name, &BTreeMap::new(), BTreeMap::new())
                .await
                .unwrap();
        }
        assert_eq!(svc.queue_names("", "b", None, 2), ["b1", "b2"]);
        assert_eq!(svc.queue_names("", "b", Some("b2"), 2), ["b3"]);
        assert_eq!(
            svc.queue_names("", "", None, 10),
            ["a", "b1", "b2", "b3", "c", "e"],
            "the home region's own"
        );
        assert_eq!(
            svc.queue_names("eu-north-1/", "b", None, 10),
            ["eu-north-1/b1", "eu-north-1/b4"]
        );
        assert_eq!(
            svc.queue_names("eu-north-1/", "", Some("eu-north-1/b1"), 10),
            ["eu-north-1/b4"]
        );
    }
}
