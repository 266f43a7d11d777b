//! One queue: its messages and the ordered indexes that keep every operation
//! cheap.
//!
//! A message is in exactly one of three indexes, matching its
//! [`MessageState`]: `visible` (ordered by sequence number), `delayed` or
//! `in_flight` (ordered by the deadline at which they turn visible). Time moves
//! messages between them lazily: every operation first calls [`Queue::advance`],
//! which pops only the entries whose deadline has passed. Receive, delete and
//! visibility changes therefore cost O(log n) in the number of messages, and a
//! queue with a million messages answers as fast as one with ten.
//!
//! With persistence on, every operation also records what it changed in a
//! journal of [`Change`]s, which the service hands to the store. Turning
//! visible by the clock is not recorded: the stored deadlines reproduce it.
//! Expiry by retention is, so that Redis does not keep what memory dropped.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use super::attributes::QueueAttributes;
use super::message::{self, Message, MessageAttributes, MessageState};
use super::receipt::ReceiptHandle;
use crate::error::{ErrorCode, Result, SqsError};

/// A visibility timeout cannot reach further than 12 hours after the receive.
const MAX_VISIBILITY_MS: u64 = 43_200 * 1000;
/// AWS allows one purge per queue every 60 seconds.
const PURGE_INTERVAL_MS: u64 = 60_000;

pub struct Queue {
    pub name: String,
    pub attributes: QueueAttributes,
    pub tags: BTreeMap<String, String>,
    /// Wall-clock milliseconds.
    pub created_at: u64,
    pub last_modified_at: u64,
    next_seq: u64,
    last_purge_at: Option<u64>,
    /// What changed since the service last took it; `None` when nothing is
    /// persisted (memory-only mode), so that nothing is recorded.
    journal: Option<Vec<Change>>,
    messages: HashMap<u64, Message>,
    visible: BTreeSet<u64>,
    delayed: BTreeSet<(u64, u64)>,
    in_flight: BTreeSet<(u64, u64)>,
    /// (sent_at, seq): retention expires the oldest first.
    by_sent: BTreeSet<(u64, u64)>,
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
    /// A message is gone (deleted or expired).
    Removed(u64),
    /// Every message is gone.
    Purged,
}

/// What a client sends; validated by [`Queue::send`].
pub struct NewMessage {
    pub body: String,
    pub attributes: MessageAttributes,
    /// Overrides the queue's DelaySeconds when given.
    pub delay_seconds: Option<u32>,
    pub sender_id: Arc<str>,
    pub trace_header: Option<String>,
}

/// The answer to a send.
#[derive(Debug, Clone)]
pub struct Sent {
    pub message_id: uuid::Uuid,
    pub md5_of_body: [u8; 16],
    pub md5_of_attributes: Option<[u8; 16]>,
    pub md5_of_system_attributes: Option<[u8; 16]>,
}

/// A message as handed to a receiver: a snapshot taken at the receive, with
/// the receipt handle of that receive.
#[derive(Debug, Clone)]
pub struct Received {
    pub message: Message,
    pub receipt_handle: ReceiptHandle,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub visible: usize,
    pub in_flight: usize,
    pub delayed: usize,
}

impl Queue {
    pub fn new(name: String, attributes: QueueAttributes, tags: BTreeMap<String, String>, now: u64) -> Queue {
        Queue {
            name,
            attributes,
            tags,
            created_at: now,
            last_modified_at: now,
            next_seq: 1,
            last_purge_at: None,
            journal: None,
            messages: HashMap::new(),
            visible: BTreeSet::new(),
            delayed: BTreeSet::new(),
            in_flight: BTreeSet::new(),
            by_sent: BTreeSet::new(),
        }
    }

    /// Rebuilds a queue from stored state. `next_seq` is at least one past
    /// the highest message, whatever was stored.
    pub fn restore(meta: QueueMeta, next_seq: u64, messages: impl IntoIterator<Item = Message>) -> Queue {
        let mut queue = Queue::new(meta.name, meta.attributes, meta.tags, meta.created_at);
        queue.last_modified_at = meta.last_modified_at;
        queue.last_purge_at = meta.last_purge_at;
        queue.next_seq = next_seq.max(1);
        for message in messages {
            queue.next_seq = queue.next_seq.max(message.seq + 1);
            queue.insert(message);
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
        }
    }

    /// Starts recording changes.
    pub fn enable_journal(&mut self) {
        self.journal = Some(Vec::new());
    }

    /// Records the queue's settings whole, as a new queue must be stored.
    pub fn record_meta(&mut self) {
        self.record(|queue| Change::Meta(queue.meta()));
    }

    /// The changes recorded since the last call.
    pub fn take_changes(&mut self) -> Vec<Change> {
        self.journal.as_mut().map(std::mem::take).unwrap_or_default()
    }

    fn record(&mut self, change: impl FnOnce(&Self) -> Change) {
        // Taken out for the moment, so that `change` may read the queue.
        if let Some(mut journal) = self.journal.take() {
            journal.push(change(self));
            self.journal = Some(journal);
        }
    }

    fn record_state(&mut self, seq: u64) {
        self.record(|queue| Change::State(queue.messages[&seq].clone()));
    }

    /// Applies SetQueueAttributes: all of `changes` or, on any bad one, none.
    pub fn set_attributes(&mut self, changes: &BTreeMap<String, String>, now: u64) -> Result<()> {
        let mut updated = self.attributes.clone();
        for (name, value) in changes {
            updated.set(name, value)?;
        }
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

    /// Moves every message whose deadline has passed: delayed and in-flight
    /// messages turn visible, and messages past the retention period are
    /// dropped. Costs O(log n) per message moved, nothing otherwise.
    pub fn advance(&mut self, now: u64) {
        for index in [&mut self.delayed, &mut self.in_flight] {
            while let Some(&(until, seq)) = index.first() {
                if until > now {
                    break;
                }
                index.pop_first();
                if let Some(message) = self.messages.get_mut(&seq) {
                    message.state = MessageState::Visible;
                    self.visible.insert(seq);
                }
            }
        }
        let retention_ms = u64::from(self.attributes.message_retention_period) * 1000;
        while let Some(&(sent_at, seq)) = self.by_sent.first() {
            if sent_at.saturating_add(retention_ms) > now {
                break;
            }
            self.remove(seq);
            self.record(|_| Change::Removed(seq));
        }
    }

    /// The earliest time at which a message will turn visible by itself, so
    /// that a long poll can sleep exactly until then.
    pub fn next_wakeup(&self) -> Option<u64> {
        let delayed = self.delayed.first().map(|&(until, _)| until);
        let in_flight = self.in_flight.first().map(|&(until, _)| until);
        delayed.into_iter().chain(in_flight).min()
    }

    pub fn counts(&mut self, now: u64) -> Counts {
        self.advance(now);
        Counts {
            visible: self.visible.len(),
            in_flight: self.in_flight.len(),
            delayed: self.delayed.len(),
        }
    }

    pub fn send(&mut self, new: NewMessage, now: u64) -> Result<Sent> {
        message::validate_body(&new.body)?;
        message::validate_attributes(&new.attributes)?;
        let attributes_size = message::attributes_size(&new.attributes);
        let max = self.attributes.maximum_message_size as usize;
        if new.body.len() + attributes_size > max {
            return Err(SqsError::invalid_parameter(format!(
                "One or more parameters are invalid. Reason: Message must be shorter than {max} bytes."
            )));
        }
        let delay_seconds = new.delay_seconds.unwrap_or(self.attributes.delay_seconds);
        if delay_seconds > 900 {
            return Err(SqsError::invalid_parameter(format!(
                "Value {delay_seconds} for parameter DelaySeconds is invalid. Reason: DelaySeconds must be >= 0 and <= 900."
            )));
        }
        self.advance(now);

        let seq = self.next_seq;
        self.next_seq += 1;
        let md5_of_body = message::md5_of_body(&new.body);
        let md5_of_attributes =
            (!new.attributes.is_empty()).then(|| message::md5_of_attributes(&new.attributes));
        let message = Message {
            seq,
            id: uuid::Uuid::new_v4(),
            body: new.body.into(),
            attributes: Arc::new(new.attributes),
            md5_of_body,
            sender_id: new.sender_id,
            trace_header: new.trace_header.map(Arc::from),
            sent_at: now,
            receive_count: 0,
            first_received_at: None,
            receipt: None,
            state: if delay_seconds > 0 {
                MessageState::Delayed {
                    until: now + u64::from(delay_seconds) * 1000,
                }
            } else {
                MessageState::Visible
            },
        };
        let sent = Sent {
            message_id: message.id,
            md5_of_body,
            md5_of_attributes,
            md5_of_system_attributes: message.trace_header.as_deref().map(message::md5_of_trace_header),
        };
        self.record(|_| Change::Sent(message.clone()));
        self.insert(message);
        Ok(sent)
    }

    /// Takes up to `max` visible messages, oldest first, and hides each for the
    /// visibility timeout (the queue's, or `visibility_timeout` seconds).
    pub fn receive(&mut self, max: usize, visibility_timeout: Option<u32>, now: u64) -> Vec<Received> {
        self.advance(now);
        let timeout_ms = u64::from(visibility_timeout.unwrap_or(self.attributes.visibility_timeout)) * 1000;
        let mut received = Vec::new();
        while received.len() < max {
            let Some(seq) = self.visible.pop_first() else {
                break;
            };
            let Some(message) = self.messages.get_mut(&seq) else {
                continue;
            };
            let nonce = uuid::Uuid::new_v4().as_u64_pair().0;
            message.receive_count += 1;
            message.first_received_at.get_or_insert(now);
            message.receipt = Some(nonce);
            let until = now + timeout_ms;
            message.state = MessageState::InFlight {
                until,
                received_at: now,
            };
            self.in_flight.insert((until, seq));
            let snapshot = message.clone();
            self.record(|_| Change::State(snapshot.clone()));
            received.push(Received {
                message: snapshot,
                receipt_handle: ReceiptHandle { seq, nonce },
            });
        }
        received
    }

    /// Deletes the message if `handle` is its latest receipt. A stale handle
    /// (the message was received again, or is already gone) succeeds without
    /// deleting anything, as in SQS. Returns whether a message was deleted.
    pub fn delete(&mut self, handle: ReceiptHandle, now: u64) -> bool {
        self.advance(now);
        let current = self
            .messages
            .get(&handle.seq)
            .is_some_and(|m| m.receipt == Some(handle.nonce));
        if current {
            self.remove(handle.seq);
            self.record(|_| Change::Removed(handle.seq));
        }
        current
    }

    /// Sets a new visibility timeout, counted from now, for the message that
    /// `handle` received. Zero makes it visible at once.
    pub fn change_visibility(&mut self, handle: ReceiptHandle, timeout_seconds: u32, now: u64) -> Result<()> {
        if timeout_seconds > 43_200 {
            return Err(SqsError::invalid_parameter(format!(
                "Value {timeout_seconds} for parameter VisibilityTimeout is invalid. Reason: Must be between 0 and 43200, if provided."
            )));
        }
        self.advance(now);
        let message = self
            .messages
            .get_mut(&handle.seq)
            .filter(|m| m.receipt == Some(handle.nonce))
            .ok_or_else(|| {
                SqsError::invalid_parameter(format!(
                    "Value {} for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.",
                    handle.encode()
                ))
            })?;
        let MessageState::InFlight { until, received_at } = message.state else {
            return Err(SqsError::new(
                ErrorCode::MessageNotInflight,
                "The message referred to isn't in flight: its visibility timeout has expired.",
            ));
        };
        let new_until = now + u64::from(timeout_seconds) * 1000;
        if new_until > received_at + MAX_VISIBILITY_MS {
            return Err(SqsError::invalid_parameter(format!(
                "Value {timeout_seconds} for parameter VisibilityTimeout is invalid. Reason: Total VisibilityTimeout for the message is beyond the limit [43200 seconds]."
            )));
        }
        self.in_flight.remove(&(until, handle.seq));
        if timeout_seconds == 0 {
            message.state = MessageState::Visible;
            self.visible.insert(handle.seq);
        } else {
            message.state = MessageState::InFlight {
                until: new_until,
                received_at,
            };
            self.in_flight.insert((new_until, handle.seq));
        }
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
        self.visible.clear();
        self.delayed.clear();
        self.in_flight.clear();
        self.by_sent.clear();
        self.record(|_| Change::Purged);
        self.record(|queue| Change::Meta(queue.meta()));
        Ok(())
    }

    fn insert(&mut self, message: Message) {
        let seq = message.seq;
        match message.state {
            MessageState::Visible => {
                self.visible.insert(seq);
            }
            MessageState::Delayed { until } => {
                self.delayed.insert((until, seq));
            }
            MessageState::InFlight { until, .. } => {
                self.in_flight.insert((until, seq));
            }
        }
        self.by_sent.insert((message.sent_at, seq));
        self.messages.insert(seq, message);
    }

    fn remove(&mut self, seq: u64) -> Option<Message> {
        let message = self.messages.remove(&seq)?;
        match message.state {
            MessageState::Visible => self.visible.remove(&seq),
            MessageState::Delayed { until } => self.delayed.remove(&(until, seq)),
            MessageState::InFlight { until, .. } => self.in_flight.remove(&(until, seq)),
        };
        self.by_sent.remove(&(message.sent_at, seq));
        Some(message)
    }
}

/// Queue names: 1 to 80 letters, digits, '-' and '_'.
pub fn validate_name(name: &str) -> Result<()> {
    let valid = (1..=80).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if valid {
        Ok(())
    } else {
        Err(SqsError::invalid_parameter(
            "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::message::{AttributeValue, MessageAttribute};

    const T0: u64 = 1_700_000_000_000;

    fn queue() -> Queue {
        Queue::new("q".into(), QueueAttributes::default(), BTreeMap::new(), T0)
    }

    fn msg(body: &str) -> NewMessage {
        NewMessage {
            body: body.into(),
            attributes: MessageAttributes::new(),
            delay_seconds: None,
            sender_id: "tester".into(),
            trace_header: None,
        }
    }

    fn delayed(body: &str, seconds: u32) -> NewMessage {
        NewMessage {
            delay_seconds: Some(seconds),
            ..msg(body)
        }
    }

    fn bodies(received: &[Received]) -> Vec<&str> {
        received.iter().map(|r| &*r.message.body).collect()
    }

    #[test]
    fn receive_hides_a_message_until_its_visibility_timeout_passes() {
        let mut q = queue();
        q.send(msg("a"), T0).unwrap();
        let first = q.receive(10, None, T0);
        assert_eq!(bodies(&first), ["a"]);
        assert_eq!(first[0].message.receive_count, 1);
        assert!(q.receive(10, None, T0 + 29_999).is_empty());
        let again = q.receive(10, None, T0 + 30_000);
        assert_eq!(bodies(&again), ["a"]);
        assert_eq!(again[0].message.receive_count, 2);
        assert_eq!(again[0].message.first_received_at, Some(T0));
        assert_ne!(again[0].receipt_handle, first[0].receipt_handle);
    }

    #[test]
    fn only_the_latest_receipt_deletes() {
        let mut q = queue();
        q.send(msg("a"), T0).unwrap();
        let old = q.receive(1, Some(1), T0)[0].receipt_handle;
        let new = q.receive(1, None, T0 + 1_000)[0].receipt_handle;
        assert!(!q.delete(old, T0 + 1_000), "a stale handle deletes nothing");
        assert_eq!(q.counts(T0 + 1_000).in_flight, 1);
        assert!(q.delete(new, T0 + 1_000));
        assert_eq!(q.counts(T0 + 1_000), Counts::default());
        assert!(!q.delete(new, T0 + 1_000), "deleting twice is a no-op");
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
                delayed: 2
            }
        );
        assert_eq!(q.next_wakeup(), Some(T0 + 2_000));
        assert_eq!(bodies(&q.receive(10, None, T0 + 1_999)), ["no-delay"]);
        assert_eq!(bodies(&q.receive(10, None, T0 + 2_000)), ["own-delay"]);
        assert_eq!(bodies(&q.receive(10, None, T0 + 5_000)), ["queue-delay"]);
    }

    #[test]
    fn retention_drops_expired_messages_even_in_flight() {
        let mut q = queue();
        q.attributes.message_retention_period = 60;
        q.send(msg("old"), T0).unwrap();
        q.send(msg("young"), T0 + 30_000).unwrap();
        q.receive(1, Some(3_600), T0 + 30_000);
        assert_eq!(
            q.counts(T0 + 59_999),
            Counts {
                visible: 1,
                in_flight: 1,
                delayed: 0
            }
        );
        assert_eq!(
            q.counts(T0 + 60_000),
            Counts {
                visible: 1,
                in_flight: 0,
                delayed: 0
            }
        );
        assert_eq!(q.counts(T0 + 90_000), Counts::default());
    }

    #[test]
    fn change_visibility_extends_shortens_and_releases() {
        let mut q = queue();
        q.send(msg("a"), T0).unwrap();
        let handle = q.receive(1, None, T0)[0].receipt_handle;
        q.change_visibility(handle, 100, T0 + 10_000).unwrap();
        assert!(q.receive(1, None, T0 + 109_999).is_empty());
        q.change_visibility(handle, 0, T0 + 50_000).unwrap();
        let again = q.receive(1, None, T0 + 50_000);
        assert_eq!(bodies(&again), ["a"]);
        let err = q.change_visibility(handle, 10, T0 + 50_000).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidParameterValue, "old handle: {err}");
    }

    #[test]
    fn change_visibility_respects_the_twelve_hour_cap_and_inflight_rule() {
        let mut q = queue();
        q.send(msg("a"), T0).unwrap();
        let handle = q.receive(1, Some(10), T0)[0].receipt_handle;
        q.change_visibility(handle, 43_200, T0).unwrap();
        let err = q.change_visibility(handle, 43_200, T0 + 1_000).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidParameterValue);
        assert!(q.change_visibility(handle, 43_201, T0).is_err());
        q.change_visibility(handle, 1, T0 + 1_000).unwrap();
        let err = q.change_visibility(handle, 5, T0 + 2_000).unwrap_err();
        assert_eq!(err.code, ErrorCode::MessageNotInflight);
    }

    #[test]
    fn size_limit_counts_body_and_attributes() {
        let mut q = queue();
        q.attributes.maximum_message_size = 1_024;
        q.send(msg(&"x".repeat(1_024)), T0).unwrap();
        assert!(q.send(msg(&"x".repeat(1_025)), T0).is_err());
        let mut with_attr = msg(&"x".repeat(1_000));
        with_attr.attributes.insert(
            "name".into(),
            MessageAttribute {
                data_type: "String".into(),
                value: AttributeValue::String("y".repeat(20)),
            },
        );
        let err = q.send(with_attr, T0).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidParameterValue);
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
        let first = q.receive(1, Some(5), T0);
        assert_eq!(bodies(&q.receive(10, None, T0)), ["2", "3"]);
        q.delete(first[0].receipt_handle, T0);
        assert!(q.receive(10, None, T0 + 60_000).len() == 2);
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
        let handle = q.receive(1, None, T0)[0].receipt_handle;
        q.change_visibility(handle, 100, T0).unwrap();
        q.delete(handle, T0);
        let kinds: Vec<&str> = q
            .take_changes()
            .iter()
            .map(|c| match c {
                Change::Meta(_) => "meta",
                Change::Sent(_) => "sent",
                Change::State(_) => "state",
                Change::Removed(_) => "removed",
                Change::Purged => "purged",
            })
            .collect();
        assert_eq!(kinds, ["sent", "state", "state", "removed"]);
        assert!(q.take_changes().is_empty());
    }

    #[test]
    fn expiry_is_recorded_but_turning_visible_is_not() {
        let mut q = queue();
        q.attributes.message_retention_period = 60;
        q.enable_journal();
        q.send(msg("a"), T0).unwrap();
        q.send(delayed("b", 5), T0).unwrap();
        q.receive(1, Some(1), T0);
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
        let taken = q.receive(1, Some(30), T0 + 1_000);
        let stored: Vec<Message> = q.messages.values().cloned().collect();
        let mut restored = Queue::restore(q.meta(), 0, stored);
        assert_eq!(
            restored.counts(T0 + 2_000),
            Counts {
                visible: 1,
                in_flight: 1,
                delayed: 1
            }
        );
        assert!(
            restored.delete(taken[0].receipt_handle, T0 + 2_000),
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
    fn names_are_validated() {
        for good in ["a", "A-b_9", &"n".repeat(80)] {
            assert!(validate_name(good).is_ok());
        }
        for bad in ["", "a.b", "sp ace", "é", &"n".repeat(81)] {
            assert!(validate_name(bad).is_err());
        }
    }
}
