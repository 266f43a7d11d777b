//! Sending to a queue: SendMessage and the entries of SendMessageBatch,
//! with the checks that differ between standard and FIFO queues and FIFO
//! deduplication.

use std::sync::Arc;

use super::attributes::DeduplicationScope;
use super::fifo::DedupEntry;
use super::limits::{DEDUP_WINDOW_MS, MAX_DELAY_SECONDS, MAX_SEQUENCE};
use super::message::{self, Message, MessageAttributes, MessageState};
use super::{Change, Queue};
use crate::error::{ErrorCode, Result, SqsError};

/// AWS's words for a FIFO send with neither a deduplication id nor
/// content-based deduplication.
const MISSING_DEDUPLICATION_ID: &str = "The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly";

/// What a client sends; validated by [`Queue::send`].
pub struct NewMessage {
    pub body: String,
    pub attributes: MessageAttributes,
    /// Overrides the queue's DelaySeconds when given.
    pub delay_seconds: Option<u32>,
    pub sender_id: Arc<str>,
    pub trace_header: Option<String>,
    pub group_id: Option<String>,
    pub dedup_id: Option<String>,
}

impl NewMessage {
    /// The message as it travels to a queue of another shard, which takes
    /// it in with a sequence number of its own (`Queue::accept`).
    pub fn in_transit(self, now: u64) -> Message {
        Message {
            seq: 0,
            id: crate::queue::random::uuid(),
            md5_of_body: message::md5_of_body(&self.body),
            body: self.body.into(),
            attributes: Arc::new(self.attributes),
            sender_id: self.sender_id,
            trace_header: self.trace_header.map(Arc::from),
            group_id: self.group_id.map(Arc::from),
            dedup_id: self.dedup_id.map(Arc::from),
            dead_letter_source: None,
            sent_at: now,
            receive_count: 0,
            first_received_at: None,
            receipt_key: None,
            state: MessageState::Visible { since: now },
        }
    }
}

#[cfg(test)]
impl NewMessage {
    /// A message of `body` alone, as tests send them.
    pub(crate) fn plain(body: &str) -> NewMessage {
        NewMessage {
            body: body.into(),
            attributes: MessageAttributes::new(),
            delay_seconds: None,
            sender_id: "000000000000".into(),
            trace_header: None,
            group_id: None,
            dedup_id: None,
        }
    }
}

/// The answer to a send.
#[derive(Debug, Clone)]
pub struct Sent {
    pub message_id: uuid::Uuid,
    pub md5_of_body: [u8; 16],
    pub md5_of_attributes: Option<[u8; 16]>,
    pub md5_of_system_attributes: Option<[u8; 16]>,
    /// FIFO queues: the message's sequence number.
    pub sequence_number: Option<u64>,
}

impl Queue {
    pub fn send(&mut self, new: NewMessage, now: u64) -> Result<Sent> {
        message::validate_body(&new.body)?;
        message::validate_attributes(&new.attributes)?;
        self.check_size(&new, "are invalid")?;
        if let Some(group) = &new.group_id {
            message::validate_fifo_id("MessageGroupId", group)?;
        }
        let dedup_id = if self.is_fifo() {
            Some(self.check_fifo_send(&new)?)
        } else {
            self.check_standard_send(&new)?
        };
        // FIFO queues have no per-message delay: an explicit 0 there means
        // the queue's delay, as AWS treats it.
        let own_delay = new.delay_seconds.filter(|_| !self.is_fifo());
        let delay_seconds = own_delay.unwrap_or(self.attributes.delay_seconds);
        if delay_seconds > MAX_DELAY_SECONDS {
            return Err(SqsError::invalid_parameter(format!(
                "Value {delay_seconds} for parameter DelaySeconds is invalid. Reason: DelaySeconds must be >= 0 and <= {MAX_DELAY_SECONDS}."
            )));
        }
        self.advance(now);

        let md5_of_body = message::md5_of_body(&new.body);
        let md5_of_attributes =
            (!new.attributes.is_empty()).then(|| message::md5_of_attributes(&new.attributes));
        let md5_of_system_attributes = new.trace_header.as_deref().map(message::md5_of_trace_header);
        let dedup_key = dedup_id
            .as_deref()
            .map(|id| self.dedup_key(new.group_id.as_deref(), id));
        if let Some(entry) = dedup_key.as_ref().and_then(|key| self.dedup.entries.get(key)) {
            // A duplicate within the window: accepted, nothing new delivered.
            return Ok(Sent {
                message_id: entry.message_id,
                md5_of_body,
                md5_of_attributes,
                md5_of_system_attributes,
                sequence_number: Some(entry.seq),
            });
        }

        if self.next_seq > MAX_SEQUENCE {
            return Err(SqsError::new(
                ErrorCode::OverLimit,
                format!(
                    "Queue {} has handed out every sequence number it can ({MAX_SEQUENCE}); send to a new queue.",
                    self.name
                ),
            ));
        }
        let seq = self.take_seq();
        let message = Message {
            seq,
            id: crate::queue::random::uuid(),
            body: new.body.into(),
            attributes: Arc::new(new.attributes),
            md5_of_body,
            sender_id: new.sender_id,
            trace_header: new.trace_header.map(Arc::from),
            group_id: new.group_id.map(Arc::from),
            dedup_id: dedup_id.map(Arc::from),
            dead_letter_source: None,
            sent_at: now,
            receive_count: 0,
            first_received_at: None,
            receipt_key: None,
            state: if delay_seconds > 0 {
                MessageState::Delayed {
                    until: now + u64::from(delay_seconds) * 1000,
                }
            } else {
                MessageState::Visible { since: now }
            },
        };
        let sent = Sent {
            message_id: message.id,
            md5_of_body,
            md5_of_attributes,
            md5_of_system_attributes,
            sequence_number: self.is_fifo().then_some(seq),
        };
        if let Some(key) = dedup_key {
            let entry = DedupEntry {
                message_id: message.id,
                seq,
                expires_at: now + DEDUP_WINDOW_MS,
            };
            self.dedup.insert(key.clone(), entry);
            self.record(|_| Change::Deduplicated(key, entry));
        }
        self.record(|_| Change::Sent(message.clone()));
        self.insert(message);
        self.activity.sent += 1;
        Ok(sent)
    }

    /// FIFO sends need a group and a deduplication id, and take no delay of
    /// their own. Returns the deduplication id.
    fn check_fifo_send(&self, new: &NewMessage) -> Result<String> {
        if new.group_id.is_none() {
            return Err(SqsError::missing_parameter("MessageGroupId"));
        }
        if let Some(delay) = new.delay_seconds.filter(|&d| d > 0) {
            // AWS's wording, grammar included: FIFO queues take a delay per
            // queue only.
            return Err(SqsError::invalid_parameter(format!(
                "Value {delay} for parameter DelaySeconds is invalid. Reason: The request include parameter that is not valid for this queue type."
            )));
        }
        match (&new.dedup_id, self.attributes.content_based_deduplication) {
            (Some(id), _) => {
                message::validate_fifo_id("MessageDeduplicationId", id)?;
                Ok(id.clone())
            }
            (None, true) => Ok(message::content_dedup_id(&new.body)),
            (None, false) => Err(SqsError::invalid_parameter(MISSING_DEDUPLICATION_ID)),
        }
    }

    /// Sends one entry of a SendMessageBatch: as [`Queue::send`], except
    /// that an entry over the size limit fails in the batch's own words
    /// ("cannot be validated"), as recorded against AWS.
    pub fn send_batch_entry(&mut self, new: NewMessage, now: u64) -> Result<Sent> {
        self.check_size(&new, "cannot be validated")?;
        self.send(new, now)
    }

    /// MaximumMessageSize counts the body and the message attributes.
    fn check_size(&self, new: &NewMessage, parameters: &str) -> Result<()> {
        let max = self.attributes.maximum_message_size as usize;
        if new.body.len() + message::attributes_size(&new.attributes) > max {
            return Err(SqsError::invalid_parameter(format!(
                "One or more parameters {parameters}. Reason: Message must be shorter than {max} bytes."
            )));
        }
        Ok(())
    }

    /// What fails a whole SendMessageBatch on a FIFO queue rather than one
    /// entry (as recorded against AWS): an entry without a group, or without
    /// a deduplication id where content-based deduplication is off.
    pub fn check_fifo_batch(&self, messages: &[NewMessage]) -> Result<()> {
        if !self.is_fifo() {
            return Ok(());
        }
        if messages.iter().any(|m| m.group_id.is_none()) {
            return Err(SqsError::invalid_parameter(
                "The request must contain the parameter MessageGroupId.",
            ));
        }
        if !self.attributes.content_based_deduplication && messages.iter().any(|m| m.dedup_id.is_none()) {
            return Err(SqsError::invalid_parameter(MISSING_DEDUPLICATION_ID));
        }
        Ok(())
    }

    fn check_standard_send(&self, new: &NewMessage) -> Result<Option<String>> {
        if new.dedup_id.is_some() {
            return Err(SqsError::invalid_parameter(
                "The request includes the parameter MessageDeduplicationId, which is only valid for FIFO queues.",
            ));
        }
        Ok(None)
    }

    fn dedup_key(&self, group: Option<&str>, id: &str) -> String {
        let scope = if self.dedup_scope == DeduplicationScope::MessageGroup {
            group.unwrap_or_default()
        } else {
            ""
        };
        format!("{scope}\u{1f}{id}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::test_support::*;

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

    /// As recorded against AWS: the deduplication scope a queue was created
    /// with stays in effect when the attribute is changed, either way.
    #[test]
    fn the_deduplication_scope_stays_what_the_queue_was_created_with() {
        for (created, changed_to, duplicate) in
            [("queue", "messageGroup", true), ("messageGroup", "queue", false)]
        {
            let mut attributes = fifo_queue().attributes;
            attributes.set("DeduplicationScope", created).unwrap();
            let mut q = Queue::new("q.fifo".into(), attributes, BTreeMap::new(), T0);
            let first = q.send(grouped("x", "g1"), T0).unwrap();
            q.set_attributes(
                &BTreeMap::from([("DeduplicationScope".into(), changed_to.into())]),
                T0,
            )
            .unwrap();
            assert_eq!(
                q.attributes.get("DeduplicationScope").unwrap(),
                changed_to,
                "reported as set"
            );
            let second = q.send(grouped("x", "g2"), T0 + 1).unwrap();
            assert_eq!(
                second.message_id == first.message_id,
                duplicate,
                "created with {created}"
            );
            let restored = Queue::restore(q.meta(), 0, [], []);
            assert_eq!(restored.dedup_scope, q.dedup_scope, "kept through a restore");
        }
    }

    #[test]
    fn fifo_deduplicates_within_five_minutes() {
        let mut q = fifo_queue();
        let first = q.send(grouped("x", "g"), T0).unwrap();
        let again = q.send(grouped("x", "g"), T0 + 299_999).unwrap();
        assert_eq!(again.message_id, first.message_id);
        assert_eq!(again.sequence_number, first.sequence_number);
        assert_eq!(
            q.counts(T0 + 299_999).visible,
            1,
            "a duplicate delivers nothing new"
        );
        let later = q.send(grouped("x", "g"), T0 + 300_000).unwrap();
        assert_ne!(later.message_id, first.message_id);
        assert!(later.sequence_number > first.sequence_number);
    }

    #[test]
    fn deduplication_records_count_as_held_bytes_until_they_expire() {
        let mut q = fifo_queue();
        q.send(grouped("x", "g"), T0).unwrap();
        let (_, with_message) = q.holding();
        let received = q.receive(1, None, None, None, T0);
        assert!(q.delete(received[0].receipt_handle, T0).unwrap());
        let (messages, bytes) = q.holding();
        assert_eq!(messages, 0);
        assert!(bytes > 0, "the record outlives its message");
        assert!(bytes < with_message);
        q.counts(T0 + DEDUP_WINDOW_MS);
        assert_eq!(q.holding(), (0, 0), "expired records hold nothing");
    }

    #[test]
    fn content_based_deduplication_and_scopes() {
        let mut q = fifo_queue();
        q.attributes.content_based_deduplication = true;
        let no_id = |body: &str, group: &str| NewMessage {
            group_id: Some(group.into()),
            ..msg(body)
        };
        let a = q.send(no_id("same body", "g1"), T0).unwrap();
        assert_eq!(
            q.send(no_id("same body", "g2"), T0).unwrap().message_id,
            a.message_id,
            "queue scope"
        );
        let mut attributes = q.attributes.clone();
        attributes.deduplication_scope = DeduplicationScope::MessageGroup;
        let mut q = Queue::new("group.fifo".into(), attributes, BTreeMap::new(), T0);
        let b = q.send(no_id("other body", "g1"), T0).unwrap();
        assert_ne!(
            q.send(no_id("other body", "g2"), T0).unwrap().message_id,
            b.message_id,
            "group scope"
        );
    }

    #[test]
    fn fifo_sends_need_a_group_and_a_dedup_id_and_no_own_delay() {
        let mut q = fifo_queue();
        assert_eq!(
            q.send(msg("x"), T0).unwrap_err().code,
            ErrorCode::MissingParameter
        );
        let no_dedup = NewMessage {
            group_id: Some("g".into()),
            ..msg("x")
        };
        assert_eq!(
            q.send(no_dedup, T0).unwrap_err().code,
            ErrorCode::InvalidParameterValue
        );
        let delayed = NewMessage {
            delay_seconds: Some(5),
            ..grouped("x", "g")
        };
        assert!(q.send(delayed, T0).is_err());
        let mut standard = queue();
        let with_dedup = NewMessage {
            dedup_id: Some("d".into()),
            ..msg("x")
        };
        assert!(standard.send(with_dedup, T0).is_err());
        let fair = NewMessage {
            group_id: Some("tenant-1".into()),
            ..msg("x")
        };
        assert!(
            standard.send(fair, T0).is_ok(),
            "standard queues accept a group id"
        );
    }
}
