//! One queue: its messages and the ordered indexes that keep every operation
//! cheap.
//!
//! A message is in exactly one of three indexes, matching its
//! [`MessageState`]: `visible` (ordered by sequence number; on a standard
//! queue a message with a group id is in its tenant's, see `fair.rs`),
//! `delayed` or `in_flight` (ordered by the deadline at which they turn
//! visible). Time moves
//! messages between them lazily: every operation first calls [`Queue::advance`],
//! which pops only the entries whose deadline has passed. Receive, delete and
//! visibility changes therefore cost O(log n) in the number of messages, and a
//! queue with a million messages answers as fast as one with ten. Every move
//! between indexes goes through `place` and `unplace`, which also keep the
//! FIFO group indexes (see [`Groups`]) in step.
//!
//! With persistence on, every operation also records what it changed in a
//! journal of [`Change`]s, which the service hands to the store. Turning
//! visible by the clock is not recorded: the stored deadlines reproduce it.
//! Expiry by retention is, so that Redis does not keep what memory dropped.
//!
//! Sending is in `send.rs`, receiving in `receive.rs`, FIFO groups and
//! deduplication in `fifo.rs`; this file keeps the indexes, deletes,
//! visibility changes, purges and the journal.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use super::attributes::{DeduplicationScope, QueueAttributes};
use super::fair::{FairCounts, NoisyTenant, Tenants};
use super::fifo::{Dedup, DedupEntry, Groups};
use super::limits::{MAX_VISIBILITY_TIMEOUT_SECONDS, PURGE_INTERVAL_MS};
use super::message::{Message, MessageState};
use super::move_task::MoveTaskRecord;
use super::receipt::{Issued, ReceiptHandle};
use super::receive::Attempt;
use crate::error::{ErrorCode, Result, SqsError};

/// A visibility timeout cannot reach further than 12 hours after the receive.
const MAX_VISIBILITY_MS: u64 = MAX_VISIBILITY_TIMEOUT_SECONDS as u64 * 1000;

pub struct Queue {
    pub name: String,
    pub attributes: QueueAttributes,
    pub tags: BTreeMap<String, String>,
    /// Wall-clock milliseconds.
    pub created_at: u64,
    pub last_modified_at: u64,
    /// Message move tasks from this queue (see `move_task.rs`); a change is
    /// recorded with the queue's settings ([`Queue::record_meta`]).
    pub move_tasks: Vec<MoveTaskRecord>,
    pub(super) next_seq: u64,
    /// While the queue is journaled, the sequence numbers below this are
    /// reserved in the store: see [`Queue::take_seq`].
    pub(super) seq_ceiling: u64,
    pub(super) last_purge_at: Option<u64>,
    /// The DeduplicationScope the queue was created with, which its
    /// deduplication keeps: as recorded against AWS, changing the attribute
    /// later changes what GetQueueAttributes reports, not which sends are
    /// duplicates.
    pub(super) dedup_scope: DeduplicationScope,
    /// What changed since the service last took it; `None` when nothing is
    /// persisted (memory-only mode), so that nothing is recorded.
    pub(super) journal: Option<Vec<Change>>,
    /// By sequence number. A B-tree, not a hash table: a hash table grows by
    /// copying itself whole, which at a million messages held the queue's
    /// lock for a fifth of a second; the tree never moves more than a node,
    /// and the hot path (the oldest messages, the newest sends) stays in
    /// cache (`cargo bench --bench queue_scale`).
    pub(super) messages: BTreeMap<u64, Message>,
    /// On a standard queue, only the messages without a group id: a
    /// tenant keeps its own (`fair.rs`), as it keeps its sent order.
    pub(super) visible: BTreeSet<u64>,
    pub(super) delayed: BTreeSet<(u64, u64)>,
    pub(super) in_flight: BTreeSet<(u64, u64)>,
    /// (sent_at, seq): retention expires the oldest first (with the
    /// tenants' oldest, see [`Queue::oldest_held`]).
    pub(super) by_sent: BTreeSet<(u64, u64)>,
    /// Sum of the payload sizes of the messages held.
    pub(super) payload_bytes: u64,
    pub(super) groups: Groups,
    /// A standard queue's tenants (fair queues): see `fair.rs`.
    pub(super) tenants: Tenants,
    pub(super) dedup: Dedup,
    /// FIFO ReceiveRequestAttemptId → when it expires and what it returned.
    pub(super) attempts: HashMap<String, Attempt>,
    pub(super) activity: Activity,
}

/// The settings of a queue, apart from its messages: what is stored for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueMeta {
    pub name: String,
    pub attributes: QueueAttributes,
    pub tags: BTreeMap<String, String>,
    pub created_at: u64,
    pub last_modified_at: u64,
    pub last_purge_at: Option<u64>,
    /// See [`Queue::dedup_scope`].
    pub dedup_scope: DeduplicationScope,
    /// Message move tasks from this queue: running, and the last finished.
    pub move_tasks: Vec<MoveTaskRecord>,
}

/// One change to a queue, as the store must write it.
#[derive(Debug, Clone)]
pub enum Change {
    /// The queue's settings, whole.
    Meta(QueueMeta),
    /// A new message (body and state).
    Sent(Message),
    /// A message's state changed (a receive, a visibility change).
    State(Message),
    /// A message is gone (deleted, expired or moved).
    Removed(u64),
    /// Every message is gone, and every deduplication id.
    Purged,
    /// A FIFO deduplication id to remember until it expires.
    Deduplicated(String, DedupEntry),
    /// A deduplication id expired.
    DedupExpired(String),
    /// A FIFO ReceiveRequestAttemptId to remember until it expires, with
    /// the receipt handles its receive gave.
    Attempt(String, Attempt),
    /// A ReceiveRequestAttemptId expired.
    AttemptExpired(String),
    /// Sequence numbers below this one may be in use from now on.
    SequencesReserved(u64),
}

/// How many sequence numbers one write of the counter reserves.
pub const SEQUENCE_BLOCK: u64 = 1_000;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub visible: usize,
    pub in_flight: usize,
    pub delayed: usize,
    /// When the oldest message held (in any state) was sent: what
    /// CloudWatch's ApproximateAgeOfOldestMessage, the metric SQS users
    /// alarm on, is measured from.
    pub oldest_sent_at: Option<u64>,
}

/// What a queue has done since this instance holds it in memory: messages
/// sent (duplicates not counted), handed out by receives, and deleted.
/// Counters only, for the admin page's rates; they start again at zero when
/// memory is loaded again (a new leader, a reload).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Activity {
    pub sent: u64,
    pub received: u64,
    pub deleted: u64,
}

impl Queue {
    pub fn new(name: String, attributes: QueueAttributes, tags: BTreeMap<String, String>, now: u64) -> Queue {
        Queue {
            name,
            dedup_scope: attributes.deduplication_scope,
            attributes,
            tags,
            created_at: now,
            last_modified_at: now,
            move_tasks: Vec::new(),
            next_seq: 1,
            seq_ceiling: 1,
            last_purge_at: None,
            journal: None,
            messages: BTreeMap::new(),
            visible: BTreeSet::new(),
            delayed: BTreeSet::new(),
            in_flight: BTreeSet::new(),
            by_sent: BTreeSet::new(),
            payload_bytes: 0,
            groups: Groups::default(),
            tenants: Tenants::default(),
            dedup: Dedup::default(),
            attempts: HashMap::new(),
            activity: Activity::default(),
        }
    }

    /// Rebuilds a queue from stored state. `next_seq` is at least one past
    /// the highest message, whatever was stored.
    pub fn restore(
        meta: QueueMeta,
        next_seq: u64,
        messages: impl IntoIterator<Item = Message>,
        dedup: impl IntoIterator<Item = (String, DedupEntry)>,
    ) -> Queue {
        let mut queue = Queue::new(meta.name, meta.attributes, meta.tags, meta.created_at);
        queue.last_modified_at = meta.last_modified_at;
        queue.last_purge_at = meta.last_purge_at;
        queue.dedup_scope = meta.dedup_scope;
        queue.move_tasks = meta.move_tasks;
        // Built whole from the messages in order rather than one insert at
        // a time: a B-tree built in bulk takes a fraction of the time (a
        // restart with a million messages), and its nodes are full.
        let messages: BTreeMap<u64, Message> = messages.into_iter().map(|m| (m.seq, m)).collect();
        let last = messages.last_key_value().map_or(0, |(seq, _)| *seq);
        queue.next_seq = next_seq.max(last.saturating_add(1)).max(1);
        queue.payload_bytes = messages.values().map(Message::payload_size).sum();
        queue.by_sent = messages
            .values()
            .filter(|m| queue.tenant_of(m).is_none())
            .map(|m| (m.sent_at, m.seq))
            .collect();
        for message in messages.values() {
            if let Some(tenant) = queue.tenant_of(message) {
                queue.tenants.add(tenant, message.seq, message.sent_at);
            }
        }
        let seqs: Vec<u64> = messages.keys().copied().collect();
        queue.messages = messages;
        for seq in seqs {
            queue.place(seq);
        }
        queue.tenants.settle_after_restore(queue.in_flight.len());
        for (key, entry) in dedup {
            queue.dedup.insert(key, entry);
        }
        queue
    }

    pub fn meta(&self) -> QueueMeta {
        QueueMeta {
            name: self.name.clone(),
            attributes: self.attributes.clone(),
            tags: self.tags.clone(),
            created_at: self.created_at,
            last_modified_at: self.last_modified_at,
            last_purge_at: self.last_purge_at,
            dedup_scope: self.dedup_scope,
            move_tasks: self.move_tasks.clone(),
        }
    }

    pub fn is_fifo(&self) -> bool {
        self.attributes.fifo_queue
    }

    /// Starts recording changes.
    pub fn enable_journal(&mut self) {
        self.journal = Some(Vec::new());
        // The store holds no reservation at or above the next number (a
        // restored queue's next number is the stored ceiling): the next
        // send reserves a block.
        self.seq_ceiling = self.next_seq;
    }

    /// Records the queue's settings whole, as a new queue must be stored.
    pub fn record_meta(&mut self) {
        self.record(|queue| Change::Meta(queue.meta()));
    }

    /// The changes recorded since the last call.
    pub fn take_changes(&mut self) -> Vec<Change> {
        self.journal.as_mut().map(std::mem::take).unwrap_or_default()
    }

    pub(super) fn record(&mut self, change: impl FnOnce(&Self) -> Change) {
        // Taken out for the moment, so that `change` may read the queue.
        if let Some(mut journal) = self.journal.take() {
            journal.push(change(self));
            self.journal = Some(journal);
        }
    }

    /// The next message's sequence number. The store keeps a ceiling above
    /// every number handed out rather than the last one, raised a block at a
    /// time ([`SEQUENCE_BLOCK`]): most sends then write no counter, and a new
    /// leader continues from the ceiling, leaving a gap as AWS's FIFO
    /// sequence numbers do.
    ///
    /// Sends stop at [`MAX_SEQUENCE`](super::limits::MAX_SEQUENCE) (`send.rs`), so the numbers taken
    /// past it (dead letters, moved messages) stay far below `u64::MAX`:
    /// the saturating steps here never saturate in practice, and never wrap.
    pub(super) fn take_seq(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq = seq.saturating_add(1);
        if seq >= self.seq_ceiling {
            self.seq_ceiling = seq.saturating_add(SEQUENCE_BLOCK);
            let ceiling = self.seq_ceiling;
            self.record(|_| Change::SequencesReserved(ceiling));
        }
        seq
    }

    fn record_state(&mut self, seq: u64) {
        self.record(|queue| Change::State(queue.messages[&seq].clone()));
    }

    /// Applies SetQueueAttributes: all of `changes` or, on any bad one, none.
    pub fn set_attributes(&mut self, changes: &BTreeMap<String, String>, now: u64) -> Result<()> {
        // A queue's type is set when it is created: a standard queue does
        // not know the attribute at all, a FIFO queue refuses to change it.
        if let Some(value) = changes.get("FifoQueue") {
            if !self.is_fifo() {
                return Err(super::attributes::unknown_attribute("FifoQueue"));
            }
            if !self.attributes.agrees_with("FifoQueue", value)? {
                return Err(SqsError::new(
                    ErrorCode::InvalidAttributeValue,
                    "Invalid value for the parameter FifoQueue. Reason: Modifying queue type is not supported.",
                ));
            }
        }
        let mut updated = self.attributes.clone();
        for (name, value) in changes {
            updated.set(name, value)?;
        }
        let given: Vec<&str> = changes.keys().map(String::as_str).collect();
        // The name without the region a key of another region carries.
        updated.check_consistency(super::key::split(&self.name).name, &given)?;
        self.attributes = updated;
        self.last_modified_at = now;
        self.record(|queue| Change::Meta(queue.meta()));
        Ok(())
    }

    pub fn tag(&mut self, new: BTreeMap<String, String>) -> Result<()> {
        super::tags::merge(&mut self.tags, new)?;
        self.record(|queue| Change::Meta(queue.meta()));
        Ok(())
    }

    pub fn untag(&mut self, keys: &[String]) {
        for key in keys {
            self.tags.remove(key);
        }
        self.record(|queue| Change::Meta(queue.meta()));
    }

    /// Replaces the Policy attribute (AddPermission, RemovePermission).
    pub fn set_policy(&mut self, policy: Option<String>, now: u64) {
        self.attributes.policy = policy.map(super::attributes::QueuePolicy::new);
        self.last_modified_at = now;
        self.record(|queue| Change::Meta(queue.meta()));
    }

    /// Moves every message whose deadline has passed: delayed and in-flight
    /// messages turn visible, and messages past the retention period are
    /// dropped. Costs O(log n) per message moved, nothing otherwise.
    pub fn advance(&mut self, now: u64) {
        while let Some(&(until, seq)) = self.delayed.first() {
            if until > now {
                break;
            }
            self.set_state(seq, MessageState::Visible { since: until });
        }
        while let Some(&(until, seq)) = self.in_flight.first() {
            if until > now {
                break;
            }
            if let Some(message) = self.messages.get(&seq) {
                charge_processing(&mut self.tenants, self.attributes.fifo_queue, message, until);
            }
            self.set_state(seq, MessageState::Visible { since: until });
        }
        let retention_ms = u64::from(self.attributes.message_retention_period) * 1000;
        while let Some((sent_at, seq)) = self.oldest_held() {
            if sent_at.saturating_add(retention_ms) > now {
                break;
            }
            self.remove(seq);
            self.record(|_| Change::Removed(seq));
        }
        for key in self.dedup.expire(now) {
            self.record(|_| Change::DedupExpired(key));
        }
        self.tenants.advance(now);
    }

    /// The earliest time at which a message will turn visible by itself, so
    /// that a long poll can sleep exactly until then.
    pub fn next_wakeup(&self) -> Option<u64> {
        let delayed = self.delayed.first().map(|&(until, _)| until);
        let in_flight = self.in_flight.first().map(|&(until, _)| until);
        delayed.into_iter().chain(in_flight).min()
    }

    /// Messages held, whatever their state, and the bytes held: their
    /// payload, the FIFO deduplication records, and the queue's own texts
    /// (policies, tags), so that queues cannot grow memory past the limits
    /// that messages are held to.
    pub fn holding(&self) -> (u64, u64) {
        let settings = self.attributes.held_bytes()
            + self
                .tags
                .iter()
                .map(|(key, value)| (key.len() + value.len()) as u64)
                .sum::<u64>();
        (
            self.messages.len() as u64,
            self.payload_bytes + self.dedup.bytes + settings,
        )
    }

    pub fn activity(&self) -> Activity {
        self.activity
    }

    pub fn counts(&mut self, now: u64) -> Counts {
        self.advance(now);
        Counts {
            visible: self.visible.len() + self.tenants.visible(),
            in_flight: self.in_flight.len(),
            delayed: self.delayed.len(),
            oldest_sent_at: self.oldest_held().map(|(sent_at, _)| sent_at),
        }
    }

    /// CloudWatch's fair queue counts (see `fair.rs`), given the queue's
    /// `counts` just taken; on a FIFO queue, where fairness does not apply,
    /// every message counts as quiet. Costs O(tenants): for scrapes.
    pub fn fair_counts(&self, counts: &Counts) -> FairCounts {
        let own_oldest = self.by_sent.first().map(|&(sent_at, _)| sent_at);
        self.tenants.counts(
            counts.visible as u64,
            counts.in_flight as u64,
            counts.delayed as u64,
            own_oldest,
        )
    }

    /// The noisy tenants of a standard queue, most in flight first.
    pub fn noisy_tenants(&mut self, now: u64) -> Vec<NoisyTenant> {
        self.advance(now);
        self.tenants.noisy()
    }

    /// The messages from sequence number `from` on, in order, as they are
    /// stored (time not applied): for [`Queue::peek`].
    pub(super) fn messages_from(&self, from: u64) -> impl Iterator<Item = &Message> {
        self.messages.range(from..).map(|(_, message)| message)
    }

    /// The messages of FIFO group `group` that the in-flight index holds,
    /// oldest first (time not applied): for [`Queue::peek`].
    pub(super) fn group_in_flight(&self, group: &str) -> impl Iterator<Item = &Message> {
        self.groups
            .by_name
            .get(group)
            .into_iter()
            .flat_map(|group| group.in_flight.iter())
            .filter_map(|seq| self.messages.get(seq))
    }

    /// Takes a message from another queue (a dead letter, or a message move
    /// task): same id, body, attributes and sent time. A dead letter keeps
    /// its receive count, as AWS's do; a moved message is counted afresh.
    pub fn accept(&mut self, mut message: Message, dead_letter_source: Option<Arc<str>>, now: u64) {
        self.advance(now);
        message.seq = self.take_seq();
        if dead_letter_source.is_none() {
            message.receive_count = 0;
            message.first_received_at = None;
        }
        message.receipt_key = None;
        message.state = MessageState::Visible { since: now };
        message.dead_letter_source = dead_letter_source;
        self.record(|_| Change::Sent(message.clone()));
        self.insert(message);
    }

    /// Takes back a message that left for a queue of another shard which
    /// turned out not to exist: visible again, in its old place (so a FIFO
    /// group keeps its order), with its receive count.
    pub fn put_back(&mut self, mut message: Message, now: u64) {
        self.advance(now);
        if message.seq >= self.next_seq || self.messages.contains_key(&message.seq) {
            // Not this queue's message any more (the queue was made again).
            message.seq = self.take_seq();
        }
        message.state = MessageState::Visible { since: now };
        self.record(|_| Change::Sent(message.clone()));
        self.insert(message);
    }

    /// The visible message a receive would take next.
    pub fn peek_visible(&mut self, now: u64) -> Option<&Message> {
        self.advance(now);
        let seq = self.next_visible()?;
        self.messages.get(&seq)
    }

    /// Removes up to `max` visible messages, in the order receives take
    /// them, while `select` accepts them, to move them to another queue.
    pub fn take_visible(&mut self, max: usize, now: u64, select: impl Fn(&Message) -> bool) -> Vec<Message> {
        self.advance(now);
        let mut taken = Vec::new();
        while taken.len() < max
            && let Some(seq) = self.next_visible()
            && select(&self.messages[&seq])
        {
            taken.extend(self.remove(seq));
            self.record(|_| Change::Removed(seq));
        }
        taken
    }

    /// Deletes the message if `handle` is its latest receipt. A stale handle
    /// (the message was received again, or is already gone) succeeds without
    /// deleting anything, as in SQS. On a FIFO queue a receipt whose
    /// visibility ran out has expired, as AWS answers. Returns whether a
    /// message was deleted.
    pub fn delete(&mut self, handle: ReceiptHandle, now: u64) -> Result<bool> {
        self.advance(now);
        let Some(message) = self
            .messages
            .get(&handle.seq)
            .filter(|m| m.issued(&handle) == Some(Issued::Latest))
        else {
            return Ok(false);
        };
        if self.is_fifo() && !matches!(message.state, MessageState::InFlight { .. }) {
            return Err(SqsError::invalid_parameter(format!(
                "Value {} for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired.",
                handle.encode()
            )));
        }
        let fifo = self.is_fifo();
        if let Some(removed) = self.remove(handle.seq) {
            charge_processing(&mut self.tenants, fifo, &removed, now);
        }
        self.record(|_| Change::Removed(handle.seq));
        self.activity.deleted += 1;
        Ok(true)
    }

    /// Sets a new visibility timeout, counted from now, for the message that
    /// `handle` received. Zero makes it visible at once.
    ///
    /// As recorded against AWS, on a standard queue any handle the message
    /// was given works, an earlier receive's too, and a message whose
    /// timeout already ran out (not received again) is hidden again: the
    /// consumer that asks for more time keeps the message. A FIFO queue
    /// takes only the latest handle, while its message is in flight.
    pub fn change_visibility(&mut self, handle: ReceiptHandle, timeout_seconds: u32, now: u64) -> Result<()> {
        if timeout_seconds > MAX_VISIBILITY_TIMEOUT_SECONDS {
            return Err(SqsError::invalid_parameter(format!(
                "Value {timeout_seconds} for parameter VisibilityTimeout is invalid. Reason: Must be between 0 and {MAX_VISIBILITY_TIMEOUT_SECONDS}, if provided."
            )));
        }
        self.advance(now);
        let is_fifo = self.is_fifo();
        let message = self
            .messages
            .get(&handle.seq)
            .filter(|m| match m.issued(&handle) {
                Some(Issued::Latest) => true,
                Some(Issued::Earlier) => !is_fifo,
                None => false,
            })
            .ok_or_else(|| {
                SqsError::invalid_parameter(format!(
                    "Value {} for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.",
                    handle.encode()
                ))
            })?;
        let received_at = match message.state {
            MessageState::InFlight { received_at, .. } => received_at,
            _ if is_fifo => {
                return Err(SqsError::new(
                    ErrorCode::MessageNotInflight,
                    "The message referred to isn't in flight: its visibility timeout has expired.",
                ));
            }
            // Visible again: hidden from now on, as if received now.
            _ if timeout_seconds > 0 => now,
            _ => return Ok(()),
        };
        let new_until = now + u64::from(timeout_seconds) * 1000;
        if new_until > received_at + MAX_VISIBILITY_MS {
            return Err(SqsError::invalid_parameter(format!(
                "Value {timeout_seconds} for parameter VisibilityTimeout is invalid. Reason: Total VisibilityTimeout for the message is beyond the limit [{MAX_VISIBILITY_TIMEOUT_SECONDS} seconds]."
            )));
        }
        let state = if timeout_seconds == 0 {
            charge_processing(&mut self.tenants, is_fifo, message, now);
            MessageState::Visible { since: now }
        } else {
            MessageState::InFlight {
                until: new_until,
                received_at,
            }
        };
        self.set_state(handle.seq, state);
        self.record_state(handle.seq);
        Ok(())
    }

    /// Deletes every message. SQS allows one purge per 60 seconds.
    pub fn purge(&mut self, now: u64) -> Result<()> {
        if let Some(last) = self.last_purge_at
            && now < last + PURGE_INTERVAL_MS
        {
            return Err(SqsError::new(
                ErrorCode::PurgeQueueInProgress,
                format!(
                    "Only one PurgeQueue operation on {} is allowed every 60 seconds; try again in {} seconds.",
                    self.name,
                    (last + PURGE_INTERVAL_MS - now).div_ceil(1000)
                ),
            ));
        }
        self.last_purge_at = Some(now);
        self.messages.clear();
        self.payload_bytes = 0;
        self.visible.clear();
        self.delayed.clear();
        self.in_flight.clear();
        self.by_sent.clear();
        self.groups = Groups::default();
        self.tenants = Tenants::default();
        self.attempts.clear();
        // AWS forgets the deduplication ids too: the same id sent again
        // after a purge is a new message.
        self.dedup = Dedup::default();
        self.record(|_| Change::Purged);
        self.record(|queue| Change::Meta(queue.meta()));
        Ok(())
    }

    pub(super) fn insert(&mut self, message: Message) {
        let seq = message.seq;
        self.payload_bytes += message.payload_size();
        match self.tenant_of(&message) {
            Some(tenant) => self.tenants.add(tenant, seq, message.sent_at),
            None => {
                self.by_sent.insert((message.sent_at, seq));
            }
        }
        self.messages.insert(seq, message);
        self.place(seq);
    }

    pub(super) fn remove(&mut self, seq: u64) -> Option<Message> {
        if !self.messages.contains_key(&seq) {
            return None;
        }
        self.unplace(seq);
        let message = self.messages.remove(&seq)?;
        self.payload_bytes -= message.payload_size();
        match self.tenant_of(&message) {
            Some(tenant) => self.tenants.remove(tenant, seq, message.sent_at),
            None => {
                self.by_sent.remove(&(message.sent_at, seq));
            }
        }
        Some(message)
    }

    pub(super) fn set_state(&mut self, seq: u64, state: MessageState) {
        self.unplace(seq);
        if let Some(message) = self.messages.get_mut(&seq) {
            message.state = state;
        }
        self.place(seq);
    }

    /// The message's state and where its visible index is, as it enters (or
    /// leaves) the index of its state. A standard queue's tenant is told
    /// here, and keeps its visible messages itself.
    fn reindex(&mut self, seq: u64, entering: bool) -> Option<(MessageState, Index)> {
        let message = self.messages.get(&seq)?;
        let (state, group) = (message.state, message.group_id.clone());
        let index = match (self.is_fifo(), group) {
            (true, group) => Index::Queue(group),
            (false, None) => Index::Queue(None),
            (false, Some(tenant)) => {
                match entering {
                    true => self.tenants.place(&tenant, seq, state),
                    false => self.tenants.unplace(&tenant, seq, state),
                }
                Index::Tenant
            }
        };
        Some((state, index))
    }

    /// Adds the message to the index of its state.
    fn place(&mut self, seq: u64) {
        let Some((state, index)) = self.reindex(seq, true) else {
            return;
        };
        match (state, index) {
            (MessageState::Visible { .. }, Index::Tenant) => {}
            (MessageState::Visible { since }, Index::Queue(group)) => {
                self.visible.insert(seq);
                if let Some(group) = group {
                    self.groups.update(&group, |g| {
                        g.visible.insert(seq, since);
                    });
                }
            }
            (MessageState::Delayed { until }, _) => {
                self.delayed.insert((until, seq));
            }
            (MessageState::InFlight { until, .. }, index) => {
                self.in_flight.insert((until, seq));
                if let Index::Queue(Some(group)) = index {
                    self.groups.update(&group, |g| {
                        g.in_flight.insert(seq);
                    });
                }
            }
        }
    }

    /// Removes the message from the index of its state.
    fn unplace(&mut self, seq: u64) {
        let Some((state, index)) = self.reindex(seq, false) else {
            return;
        };
        match (state, index) {
            (MessageState::Visible { .. }, Index::Tenant) => {}
            (MessageState::Visible { .. }, Index::Queue(group)) => {
                self.visible.remove(&seq);
                if let Some(group) = group {
                    self.groups.update(&group, |g| {
                        g.visible.remove(&seq);
                    });
                }
            }
            (MessageState::Delayed { until }, _) => {
                self.delayed.remove(&(until, seq));
            }
            (MessageState::InFlight { until, .. }, index) => {
                self.in_flight.remove(&(until, seq));
                if let Index::Queue(Some(group)) = index {
                    self.groups.update(&group, |g| {
                        g.in_flight.remove(&seq);
                    });
                }
            }
        }
    }

    /// The message's tenant, which keeps its visible index and sent order:
    /// its group on a standard queue. None: the queue's own keep them.
    fn tenant_of<'m>(&self, message: &'m Message) -> Option<&'m Arc<str>> {
        match self.is_fifo() {
            true => None,
            false => message.group_id.as_ref(),
        }
    }

    /// The visible message a receive would take next (on a FIFO queue, the
    /// oldest visible, whatever its group).
    pub(super) fn next_visible(&self) -> Option<u64> {
        let own = self.visible.first().copied();
        match self.is_fifo() {
            true => own,
            false => self.tenants.next(own),
        }
    }

    /// (sent at, sequence number) of the oldest message held, in any state.
    fn oldest_held(&self) -> Option<(u64, u64)> {
        let own = self.by_sent.first().copied();
        own.into_iter().chain(self.tenants.oldest_held()).min()
    }
}

/// Where a message's visible index is.
enum Index {
    /// The queue's own `visible` (with its FIFO group, if any).
    Queue(Option<Arc<str>>),
    /// Its tenant's (fair queues).
    Tenant,
}

/// A standard queue's message in flight is done with at `at` (deleted, made
/// visible, or its visibility timeout ran out): its tenant is charged the
/// processing time (fair queues).
fn charge_processing(tenants: &mut Tenants, fifo: bool, message: &Message, at: u64) {
    if let (false, MessageState::InFlight { received_at, .. }) = (fifo, message.state) {
        tenants.processed(message.group_id.as_ref(), at.saturating_sub(received_at), at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::test_support::*;

    #[test]
    fn a_queue_of_another_region_takes_new_attributes() {
        // Its key carries its region (`queue::key`); the name checked is
        // the queue's own.
        let mut q = Queue::new(
            "eu-west-1/orders".into(),
            QueueAttributes::default(),
            BTreeMap::new(),
            T0,
        );
        let changes = BTreeMap::from([("Policy".to_string(), r#"{"Statement":[]}"#.to_string())]);
        q.set_attributes(&changes, T0).unwrap();
        assert!(q.attributes.policy.is_some());
    }

    #[test]
    fn only_the_latest_receipt_deletes() {
        let mut q = queue();
        q.send(msg("a"), T0).unwrap();
        let old = q.receive(1, Some(1), None, None, T0)[0].receipt_handle;
        let new = q.receive(1, None, None, None, T0 + 1_000)[0].receipt_handle;
        assert!(
            !q.delete(old, T0 + 1_000).unwrap(),
            "a stale handle deletes nothing"
        );
        assert_eq!(q.counts(T0 + 1_000).in_flight, 1);
        assert!(q.delete(new, T0 + 1_000).unwrap());
        assert_eq!(q.counts(T0 + 1_000), Counts::default());
        assert!(!q.delete(new, T0 + 1_000).unwrap(), "deleting twice is a no-op");
    }

    #[test]
    fn delays_hold_messages_back_per_message_and_per_queue() {
        let mut q = queue();
        q.attributes.delay_seconds = 5;
        q.send(msg("queue-delay"), T0).unwrap();
        q.send(delayed("own-delay", 2), T0).unwrap();
        q.send(delayed("no-delay", 0), T0).unwrap();
        assert_eq!(
            q.counts(T0),
            Counts {
                visible: 1,
                in_flight: 0,
                delayed: 2,
                oldest_sent_at: Some(T0),
            }
        );
        assert_eq!(q.next_wakeup(), Some(T0 + 2_000));
        assert_eq!(bodies(&q.receive(10, None, None, None, T0 + 1_999)), ["no-delay"]);
        assert_eq!(
            bodies(&q.receive(10, None, None, None, T0 + 2_000)),
            ["own-delay"]
        );
        assert_eq!(
            bodies(&q.receive(10, None, None, None, T0 + 5_000)),
            ["queue-delay"]
        );
    }

    #[test]
    fn activity_counts_new_sends_messages_handed_out_and_deletes() {
        let mut q = fifo_queue();
        q.send(grouped("a", "g"), T0).unwrap();
        q.send(grouped("a", "g"), T0).unwrap(); // a duplicate: not sent again
        q.send(grouped("b", "h"), T0).unwrap();
        let received = q.receive(10, None, None, None, T0);
        q.delete(received[0].receipt_handle, T0).unwrap();
        q.delete(received[0].receipt_handle, T0).unwrap(); // gone already
        assert_eq!(
            q.activity(),
            Activity {
                sent: 2,
                received: 2,
                deleted: 1
            }
        );
    }

    #[test]
    fn retention_drops_expired_messages_even_in_flight() {
        let mut q = queue();
        q.attributes.message_retention_period = 60;
        q.send(msg("old"), T0).unwrap();
        q.send(msg("young"), T0 + 30_000).unwrap();
        q.receive(1, Some(3_600), None, None, T0 + 30_000);
        assert_eq!(
            q.counts(T0 + 59_999),
            Counts {
                visible: 1,
                in_flight: 1,
                delayed: 0,
                oldest_sent_at: Some(T0),
            }
        );
        assert_eq!(
            q.counts(T0 + 60_000),
            Counts {
                visible: 1,
                in_flight: 0,
                delayed: 0,
                oldest_sent_at: Some(T0 + 30_000),
            }
        );
        assert_eq!(q.counts(T0 + 90_000), Counts::default());
    }

    #[test]
    fn change_visibility_extends_shortens_and_releases() {
        let mut q = queue();
        q.send(msg("a"), T0).unwrap();
        let handle = q.receive(1, None, None, None, T0)[0].receipt_handle;
        q.change_visibility(handle, 100, T0 + 10_000).unwrap();
        assert!(q.receive(1, None, None, None, T0 + 109_999).is_empty());
        q.change_visibility(handle, 0, T0 + 50_000).unwrap();
        let again = q.receive(1, None, None, None, T0 + 50_000);
        assert_eq!(bodies(&again), ["a"]);
        // As recorded against AWS: an earlier receive's handle still
        // changes the visibility on a standard queue (it deletes nothing).
        q.change_visibility(handle, 0, T0 + 51_000).unwrap();
        assert!(
            !q.delete(handle, T0 + 51_000).unwrap(),
            "only the latest handle deletes"
        );
        assert_eq!(bodies(&q.receive(1, None, None, None, T0 + 51_000)), ["a"]);
        let forged = ReceiptHandle { receive: 9, ..handle };
        let err = q.change_visibility(forged, 10, T0 + 51_000).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidParameterValue, "never issued: {err}");
    }

    #[test]
    fn on_a_fifo_queue_only_the_latest_handle_changes_visibility() {
        let mut q = fifo_queue();
        q.send(grouped("a", "g"), T0).unwrap();
        let first = q.receive(1, Some(1), None, None, T0)[0].receipt_handle;
        let err = q.change_visibility(first, 5, T0 + 1_000).unwrap_err();
        assert_eq!(err.code, ErrorCode::MessageNotInflight, "{err}");
        q.receive(1, Some(30), None, None, T0 + 1_000);
        let err = q.change_visibility(first, 0, T0 + 2_000).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidParameterValue, "{err}");
    }

    #[test]
    fn change_visibility_respects_the_twelve_hour_cap_and_hides_an_expired_message_again() {
        let mut q = queue();
        q.send(msg("a"), T0).unwrap();
        let handle = q.receive(1, Some(10), None, None, T0)[0].receipt_handle;
        q.change_visibility(handle, 43_200, T0).unwrap();
        let err = q.change_visibility(handle, 43_200, T0 + 1_000).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidParameterValue);
        assert!(q.change_visibility(handle, 43_201, T0).is_err());
        // As recorded against AWS, a message whose timeout ran out takes a
        // new one all the same: it is hidden again, the cap counted afresh.
        q.change_visibility(handle, 1, T0 + 1_000).unwrap();
        assert_eq!(q.counts(T0 + 2_000).visible, 1);
        q.change_visibility(handle, 5, T0 + 2_000).unwrap();
        assert!(
            q.receive(1, None, None, None, T0 + 6_999).is_empty(),
            "hidden again"
        );
        q.change_visibility(handle, 43_200, T0 + 2_000).unwrap();
        assert_eq!(
            bodies(&q.receive(1, None, None, None, T0 + 2_000 + 43_200_000)),
            ["a"]
        );
    }

    #[test]
    fn purge_empties_the_queue_once_a_minute() {
        let mut q = queue();
        q.send(msg("a"), T0).unwrap();
        q.send(delayed("b", 10), T0).unwrap();
        q.purge(T0).unwrap();
        assert_eq!(q.counts(T0 + 20_000), Counts::default());
        assert_eq!(
            q.purge(T0 + 59_999).unwrap_err().code,
            ErrorCode::PurgeQueueInProgress
        );
        q.purge(T0 + 60_000).unwrap();
    }

    #[test]
    fn visible_messages_come_out_oldest_first() {
        let mut q = queue();
        for body in ["1", "2", "3"] {
            q.send(msg(body), T0).unwrap();
        }
        let first = q.receive(1, Some(5), None, None, T0);
        assert_eq!(bodies(&q.receive(10, None, None, None, T0)), ["2", "3"]);
        q.delete(first[0].receipt_handle, T0).unwrap();
        assert!(q.receive(10, None, None, None, T0 + 60_000).len() == 2);
    }

    #[test]
    fn the_journal_records_each_change_once_and_only_when_enabled() {
        let mut q = queue();
        q.send(msg("untracked"), T0).unwrap();
        assert!(q.take_changes().is_empty(), "memory-only queues record nothing");

        q.enable_journal();
        q.record_meta();
        assert!(matches!(q.take_changes()[..], [Change::Meta(_)]));
        q.send(msg("a"), T0).unwrap();
        let handle = q.receive(1, None, None, None, T0)[0].receipt_handle;
        q.change_visibility(handle, 100, T0).unwrap();
        q.delete(handle, T0).unwrap();
        let kinds: Vec<&str> = q
            .take_changes()
            .iter()
            .map(|c| match c {
                Change::Meta(_) => "meta",
                Change::Sent(_) => "sent",
                Change::State(_) => "state",
                Change::Removed(_) => "removed",
                Change::Purged => "purged",
                Change::Deduplicated(..) | Change::DedupExpired(_) => "dedup",
                Change::Attempt(..) | Change::AttemptExpired(_) => "attempt",
                Change::SequencesReserved(_) => "sequences",
            })
            .collect();
        assert_eq!(kinds, ["sequences", "sent", "state", "state", "removed"]);
        assert!(q.take_changes().is_empty());
    }

    /// The store's counter is written once per block of sequence numbers;
    /// a restored queue continues from the stored ceiling, above every
    /// number the last leader could have handed out.
    #[test]
    fn sequence_numbers_are_reserved_a_block_at_a_time() {
        let mut q = queue();
        q.enable_journal();
        for _ in 0..=SEQUENCE_BLOCK {
            q.send(msg("m"), T0).unwrap();
        }
        let reserved: Vec<u64> = q
            .take_changes()
            .iter()
            .filter_map(|c| match c {
                Change::SequencesReserved(ceiling) => Some(*ceiling),
                _ => None,
            })
            .collect();
        assert_eq!(reserved, [1 + SEQUENCE_BLOCK, 1 + 2 * SEQUENCE_BLOCK]);
        // A new leader finds the ceiling and a message sent below it.
        let ceiling = reserved[1];
        let first = q.messages.values().take(1).cloned().collect::<Vec<_>>();
        let mut restored = Queue::restore(q.meta(), ceiling, first, []);
        restored.enable_journal();
        restored.send(msg("after the failover"), T0).unwrap();
        let changes = restored.take_changes();
        assert!(matches!(changes[0], Change::SequencesReserved(c) if c == ceiling + SEQUENCE_BLOCK));
        assert!(matches!(&changes[1], Change::Sent(m) if m.seq == ceiling));
    }

    #[test]
    fn expiry_is_recorded_but_turning_visible_is_not() {
        let mut q = queue();
        q.attributes.message_retention_period = 60;
        q.enable_journal();
        q.send(msg("a"), T0).unwrap();
        q.send(delayed("b", 5), T0).unwrap();
        q.receive(1, Some(1), None, None, T0);
        q.take_changes();
        q.counts(T0 + 10_000); // the delay and the visibility timeout pass
        assert!(q.take_changes().is_empty());
        q.counts(T0 + 60_000); // both expire
        let removed = q
            .take_changes()
            .iter()
            .filter(|c| matches!(c, Change::Removed(_)))
            .count();
        assert_eq!(removed, 2);
    }

    #[test]
    fn a_restored_queue_continues_where_the_stored_one_stopped() {
        let mut q = queue();
        q.send(msg("visible"), T0).unwrap();
        q.send(msg("in flight"), T0).unwrap();
        q.send(delayed("delayed", 50), T0).unwrap();
        let taken = q.receive(1, Some(30), None, None, T0 + 1_000);
        let stored: Vec<Message> = q.messages.values().cloned().collect();
        let mut restored = Queue::restore(q.meta(), 0, stored, []);
        assert_eq!(
            restored.counts(T0 + 2_000),
            Counts {
                visible: 1,
                in_flight: 1,
                delayed: 1,
                oldest_sent_at: Some(T0),
            }
        );
        assert!(
            restored.delete(taken[0].receipt_handle, T0 + 2_000).unwrap(),
            "receipt handles survive"
        );
        let sent = restored.send(msg("new"), T0 + 2_000).unwrap();
        let new_seq = restored
            .messages
            .values()
            .find(|m| m.id == sent.message_id)
            .unwrap()
            .seq;
        assert_eq!(new_seq, 4, "sequence numbers continue");
    }

    #[test]
    fn a_fifo_receipt_expires_with_its_visibility_and_a_standard_one_does_not() {
        let mut fifo = fifo_queue();
        fifo.send(grouped("m", "g"), T0).unwrap();
        let handle = fifo.receive(1, Some(1), None, None, T0)[0].receipt_handle;
        let error = fifo.delete(handle, T0 + 1_000).unwrap_err();
        assert!(
            error.message.contains("The receipt handle has expired."),
            "{error}"
        );
        assert_eq!(fifo.counts(T0 + 1_000).visible, 1, "nothing was deleted");

        let mut standard = queue();
        standard.send(msg("m"), T0).unwrap();
        let handle = standard.receive(1, Some(1), None, None, T0)[0].receipt_handle;
        assert!(standard.delete(handle, T0 + 1_000).unwrap());
    }

    /// As recorded against AWS: a purge forgets the deduplication ids.
    #[test]
    fn a_purge_forgets_deduplication_ids() {
        let mut q = fifo_queue();
        let before = q.send(grouped("x", "g"), T0).unwrap();
        q.purge(T0 + 1).unwrap();
        let after = q.send(grouped("x", "g"), T0 + 2).unwrap();
        assert_ne!(after.message_id, before.message_id, "a new message");
        assert_eq!(bodies(&q.receive(10, None, None, None, T0 + 3)), ["x"]);
    }
}
