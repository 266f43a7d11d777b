//! How queues and messages are written in Redis: small JSON records.
//!
//! A message is split in two records: its body record never changes once
//! written; its state record (receive count, receipt, visibility deadline)
//! is rewritten by every receive and visibility change. A receive therefore
//! writes a few dozen bytes, not the body again, and a send writes no state
//! record at all: a message waiting for its first receive has the state its
//! body record implies. Queue settings are stored in
//! their SQS text form, so that loading them runs the same checks as
//! SetQueueAttributes.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::ops::Range;
use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use fred::bytes::{BufMut, BytesMut};
use serde::{Deserialize, Serialize};

use crate::cluster::transfers::Stored;
use crate::journal::Transfer;
use crate::queue::attributes::{DeduplicationScope, SETTABLE};
use crate::queue::message::MessageState;
use crate::queue::move_task::MoveTaskRecord;
use crate::queue::{
    Attempt, AttributeValue, DedupEntry, Message, MessageAttribute, QueueAttributes, QueueMeta, ReceiptHandle,
};

#[derive(Serialize, Deserialize)]
struct QueueRecord {
    attributes: BTreeMap<String, String>,
    tags: BTreeMap<String, String>,
    created_at: u64,
    last_modified_at: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_purge_at: Option<u64>,
    /// The deduplication scope in effect, when it is not the attribute's
    /// (see `Queue::dedup_scope`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dedup_scope: Option<String>,
    /// Message move tasks from the queue (`queue::move_task`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    move_tasks: Vec<MoveTaskRecord>,
}

pub fn write_queue(meta: &QueueMeta, out: &mut BytesMut) {
    let attributes = SETTABLE
        .iter()
        .filter_map(|name| meta.attributes.get(name).map(|value| (name.to_string(), value)))
        .collect();
    let record = QueueRecord {
        attributes,
        tags: meta.tags.clone(),
        created_at: meta.created_at,
        last_modified_at: meta.last_modified_at,
        last_purge_at: meta.last_purge_at,
        dedup_scope: (meta.dedup_scope != meta.attributes.deduplication_scope)
            .then(|| meta.dedup_scope.text().to_string()),
        move_tasks: meta.move_tasks.clone(),
    };
    serde_json::to_writer(out.writer(), &record).expect("a queue record serializes")
}

/// A stored record that cannot be read back: the loader logs it and
/// leaves the queue or message out.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// Not the JSON the record's kind has.
    #[error("{record}: unreadable {}: {error}", record.part())]
    Unreadable {
        record: Record,
        error: serde_json::Error,
    },
    /// A queue attribute ssq no longer accepts.
    #[error("queue {queue}: {error}")]
    Attribute {
        queue: String,
        error: crate::error::SqsError,
    },
    /// A message attribute with neither or both of a text and a binary value,
    /// or binary that is not base64.
    #[error("message {seq}: attribute {name} {why}")]
    MessageAttribute { seq: u64, name: String, why: String },
    /// A state record missing the deadline or receive time its state needs.
    #[error("message {seq}: state {state:?} is incomplete")]
    IncompleteState { seq: u64, state: char },
    /// A transfer's stream entry without one of its fields.
    #[error("a transfer between shards has no {missing:?} field")]
    IncompleteTransfer { missing: &'static str },
}

/// Which record could not be read.
#[derive(Debug)]
pub enum Record {
    Queue(String),
    Body(u64),
    State(u64),
}

impl Record {
    /// What part of the record could not be read.
    fn part(&self) -> &'static str {
        match self {
            Record::Queue(_) => "record",
            Record::Body(_) => "body",
            Record::State(_) => "state",
        }
    }
}

impl std::fmt::Display for Record {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Record::Queue(name) => write!(f, "queue {name}"),
            Record::Body(seq) | Record::State(seq) => write!(f, "message {seq}"),
        }
    }
}

pub fn decode_queue(name: &str, text: &str) -> Result<QueueMeta, DecodeError> {
    let record: QueueRecord = serde_json::from_str(text).map_err(|error| DecodeError::Unreadable {
        record: Record::Queue(name.to_string()),
        error,
    })?;
    let mut attributes = QueueAttributes::default();
    for (key, value) in &record.attributes {
        attributes
            .set(key, value)
            .map_err(|error| DecodeError::Attribute {
                queue: name.to_string(),
                error,
            })?;
    }
    let dedup_scope = match &record.dedup_scope {
        Some(scope) => DeduplicationScope::parse("DeduplicationScope", scope).map_err(|error| {
            DecodeError::Attribute {
                queue: name.to_string(),
                error,
            }
        })?,
        None => attributes.deduplication_scope,
    };
    Ok(QueueMeta {
        name: name.to_string(),
        attributes,
        tags: record.tags,
        created_at: record.created_at,
        last_modified_at: record.last_modified_at,
        last_purge_at: record.last_purge_at,
        dedup_scope,
        move_tasks: record.move_tasks,
    })
}

/// Written from borrowed fields (a body is not copied to be stored) and
/// read into owned ones.
#[derive(Serialize, Deserialize)]
struct AttributeRecord<S> {
    t: S,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    s: Option<S>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    b: Option<String>,
}

/// `B` is the body's type apart: read, it borrows from the record where
/// it can ([`Text`]), so that a load copies each body once, into memory.
#[derive(Serialize, Deserialize)]
struct BodyRecord<S: Ord, B = S> {
    id: uuid::Uuid,
    body: B,
    #[serde(default = "BTreeMap::new", skip_serializing_if = "BTreeMap::is_empty")]
    attrs: BTreeMap<S, AttributeRecord<S>>,
    sender: S,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    trace: Option<S>,
    /// MessageGroupId.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    g: Option<S>,
    /// MessageDeduplicationId.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    d: Option<S>,
    /// DeadLetterQueueSourceArn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dl: Option<S>,
    sent: u64,
    /// The body's MD5 in hex, so that a load does not hash every body again
    /// (a gigabyte of bodies took two seconds to hash); computed when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    m: Option<S>,
    /// Delayed until (ms), for a message sent with a delay: its state while
    /// it has no state record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    du: Option<u64>,
}

/// A string read from a record without a copy when it has no escapes
/// (most bodies), and unescaped into a copy when it has.
struct Text<'a>(std::borrow::Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Text<'a>, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(std::borrow::Cow::Borrowed(text)))
            }
            fn visit_str<E>(self, text: &str) -> Result<Text<'de>, E> {
                Ok(Text(std::borrow::Cow::Owned(text.to_string())))
            }
            fn visit_string<E>(self, text: String) -> Result<Text<'de>, E> {
                Ok(Text(std::borrow::Cow::Owned(text)))
            }
        }
        deserializer.deserialize_str(Visitor)
    }
}

/// The changing part of a message. `st`: `v` visible since `u`, `d`
/// delayed until `u`, `f` in flight until `u` since `ra`.
#[derive(Serialize, Deserialize)]
struct StateRecord {
    rc: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fr: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rh: Option<u64>,
    st: char,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    u: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ra: Option<u64>,
}

pub fn write_body(message: &Message, out: &mut BytesMut) {
    let md5 = format!("{:032x}", u128::from_be_bytes(message.md5_of_body));
    let attrs = message
        .attributes
        .iter()
        .map(|(name, attribute)| {
            let (s, b) = match &attribute.value {
                AttributeValue::String(s) => (Some(s.as_str()), None),
                AttributeValue::Binary(b) => (None, Some(BASE64.encode(b))),
            };
            (
                name.as_str(),
                AttributeRecord {
                    t: attribute.data_type.as_str(),
                    s,
                    b,
                },
            )
        })
        .collect();
    let record = BodyRecord {
        id: message.id,
        body: &*message.body,
        attrs,
        sender: &*message.sender_id,
        trace: message.trace_header.as_deref(),
        g: message.group_id.as_deref(),
        d: message.dedup_id.as_deref(),
        dl: message.dead_letter_source.as_deref(),
        sent: message.sent_at,
        m: Some(md5.as_str()),
        du: match message.state {
            MessageState::Delayed { until } => Some(until),
            _ => None,
        },
    };
    serde_json::to_writer(out.writer(), &record).expect("a body record serializes")
}

/// Whether the message's state is the one its body record implies (never
/// received, visible or still in its send delay), so that no state record
/// is needed: most messages are sent and deleted without one, which saves
/// Redis a hash entry per message.
pub fn state_implied_by_body(message: &Message) -> bool {
    message.receive_count == 0
        && message.first_received_at.is_none()
        && message.receipt_key.is_none()
        && match message.state {
            MessageState::Visible { since } => since == message.sent_at,
            MessageState::Delayed { .. } => true,
            MessageState::InFlight { .. } => false,
        }
}

pub fn write_state(message: &Message, out: &mut BytesMut) {
    let (st, u, ra) = match message.state {
        MessageState::Visible { since } => ('v', Some(since), None),
        MessageState::Delayed { until } => ('d', Some(until), None),
        MessageState::InFlight { until, received_at } => ('f', Some(until), Some(received_at)),
    };
    let record = StateRecord {
        rc: message.receive_count,
        fr: message.first_received_at,
        rh: message.receipt_key,
        st,
        u,
        ra,
    };
    serde_json::to_writer(out.writer(), &record).expect("a state record serializes")
}

/// The fields of a transfer's stream entry (see `transfers.rs`), their
/// values written into `out`. `to` comes first: the delivery script reads
/// the target queue there.
pub fn write_transfer(transfer: &Transfer, out: &mut BytesMut) -> Vec<(&'static str, Range<usize>)> {
    let mut put = |write: &dyn Fn(&mut BytesMut)| {
        let start = out.len();
        write(out);
        start..out.len()
    };
    let mut fields = vec![
        ("to", put(&|out| out.put_slice(transfer.to.as_bytes()))),
        ("from", put(&|out| out.put_slice(transfer.from.as_bytes()))),
        (
            "seq",
            put(&|out| out.put_slice(transfer.message.seq.to_string().as_bytes())),
        ),
        ("body", put(&|out| write_body(&transfer.message, out))),
        ("state", put(&|out| write_state(&transfer.message, out))),
    ];
    if let Some(source) = &transfer.dead_letter_source {
        fields.push(("dls", put(&|out| out.put_slice(source.as_bytes()))));
    }
    fields
}

/// A queue record of another shard, as a catalog reads it; one that
/// cannot be read is left out, as the loader leaves it out of memory.
pub fn queue_of_another_shard(key: &str, record: &str) -> Option<QueueMeta> {
    decode_queue(key, record)
        .inspect_err(|error| tracing::warn!(%error, "a queue record of another shard cannot be read"))
        .ok()
}

/// Reads a transfer back from its stream entry's fields.
/// A mailbox entry as a backend read it: `fields` decoded.
pub fn stored_transfer(id: String, fields: HashMap<String, String>) -> Stored {
    let transfer = decode_transfer(&fields).map_err(Into::into);
    Stored { id, fields, transfer }
}

pub fn decode_transfer(fields: &HashMap<String, String>) -> Result<Transfer, DecodeError> {
    let field = |name: &'static str| {
        fields
            .get(name)
            .ok_or(DecodeError::IncompleteTransfer { missing: name })
    };
    let seq = field("seq")?
        .parse()
        .map_err(|_| DecodeError::IncompleteTransfer { missing: "seq" })?;
    Ok(Transfer {
        to: field("to")?.clone(),
        from: field("from")?.clone(),
        message: decode_message(seq, field("body")?, Some(field("state")?))?,
        dead_letter_source: fields.get("dls").map(|arn| Arc::from(arn.as_str())),
    })
}

/// Rebuilds a message from its body record and its state record, if it
/// has one (see [`state_implied_by_body`]).
pub fn decode_message(seq: u64, body: &str, state: Option<&str>) -> Result<Message, DecodeError> {
    let body: BodyRecord<String, Text<'_>> =
        serde_json::from_str(body).map_err(|error| DecodeError::Unreadable {
            record: Record::Body(seq),
            error,
        })?;
    let state: StateRecord = match state {
        Some(state) => serde_json::from_str(state).map_err(|error| DecodeError::Unreadable {
            record: Record::State(seq),
            error,
        })?,
        None => StateRecord {
            rc: 0,
            fr: None,
            rh: None,
            st: if body.du.is_some() { 'd' } else { 'v' },
            u: body.du,
            ra: None,
        },
    };
    let attributes = body
        .attrs
        .into_iter()
        .map(|(name, record)| {
            let value = match (record.s, record.b) {
                (Some(s), None) => AttributeValue::String(s),
                (None, Some(b)) => {
                    AttributeValue::Binary(BASE64.decode(b).map_err(|e| DecodeError::MessageAttribute {
                        seq,
                        name: name.clone(),
                        why: format!("is not base64: {e}"),
                    })?)
                }
                _ => {
                    return Err(DecodeError::MessageAttribute {
                        seq,
                        name,
                        why: "has no single value".into(),
                    });
                }
            };
            Ok((
                name,
                MessageAttribute {
                    data_type: record.t,
                    value,
                },
            ))
        })
        .collect::<Result<_, DecodeError>>()?;
    let message_state = match (state.st, state.u, state.ra) {
        // Records written before `since` was kept have none: the sent time
        // is the best guess, and only orders FIFO groups.
        ('v', since, _) => MessageState::Visible {
            since: since.unwrap_or(body.sent),
        },
        ('d', Some(until), _) => MessageState::Delayed { until },
        ('f', Some(until), Some(received_at)) => MessageState::InFlight { until, received_at },
        _ => return Err(DecodeError::IncompleteState { seq, state: state.st }),
    };
    Ok(Message {
        seq,
        id: body.id,
        md5_of_body: body
            .m
            .as_deref()
            .and_then(|hex| u128::from_str_radix(hex, 16).ok())
            .map_or_else(
                || crate::queue::message::md5_of_body(&body.body.0),
                u128::to_be_bytes,
            ),
        body: Arc::from(&*body.body.0),
        attributes: Arc::new(attributes),
        sender_id: body.sender.into(),
        trace_header: body.trace.map(Arc::from),
        group_id: body.g.map(Arc::from),
        dedup_id: body.d.map(Arc::from),
        dead_letter_source: body.dl.map(Arc::from),
        sent_at: body.sent,
        receive_count: state.rc,
        first_received_at: state.fr,
        receipt_key: state.rh,
        state: message_state,
    })
}

/// A remembered FIFO deduplication id: `message id|sequence|expires at`.
pub fn write_dedup(entry: &DedupEntry, out: &mut BytesMut) {
    write!(out, "{}|{}|{}", entry.message_id, entry.seq, entry.expires_at)
        .expect("writing to memory succeeds")
}

pub fn decode_dedup(text: &str) -> Option<DedupEntry> {
    let mut parts = text.split('|');
    let entry = DedupEntry {
        message_id: parts.next()?.parse().ok()?,
        seq: parts.next()?.parse().ok()?,
        expires_at: parts.next()?.parse().ok()?,
    };
    parts.next().is_none().then_some(entry)
}

/// A remembered ReceiveRequestAttemptId: `expires at|handle handle …`.
pub fn write_attempt(attempt: &Attempt, out: &mut BytesMut) {
    write!(out, "{}|", attempt.expires_at).expect("writing to memory succeeds");
    for (i, handle) in attempt.handles.iter().enumerate() {
        if i > 0 {
            out.put_u8(b' ');
        }
        out.put_slice(handle.encode().as_bytes());
    }
}

pub fn decode_attempt(text: &str) -> Option<Attempt> {
    let (expires_at, handles) = text.split_once('|')?;
    Some(Attempt {
        expires_at: expires_at.parse().ok()?,
        handles: handles
            .split(' ')
            .filter(|h| !h.is_empty())
            .map(|h| ReceiptHandle::decode(h).ok())
            .collect::<Option<_>>()?,
    })
}

/// What a `write_*` function writes, as text, for tests.
#[cfg(test)]
pub(super) fn text(write: impl FnOnce(&mut BytesMut)) -> String {
    let mut out = BytesMut::new();
    write(&mut out);
    String::from_utf8(out.to_vec()).expect("records are UTF-8")
}

/// When [`sample_message`] was sent.
#[cfg(test)]
pub(super) const SAMPLE_SENT_AT: u64 = 1_700_000_000_123;

/// Visible since it was sent, as a message never received is.
#[cfg(test)]
pub(super) const SAMPLE_VISIBLE: MessageState = MessageState::Visible {
    since: SAMPLE_SENT_AT,
};

/// A message with every optional part set, for tests.
#[cfg(test)]
pub(super) fn sample_message(seq: u64, state: MessageState) -> Message {
    use crate::queue::MessageAttributes;

    let mut attributes = MessageAttributes::new();
    attributes.insert(
        "s".into(),
        MessageAttribute {
            data_type: "String.x".into(),
            value: AttributeValue::String("välue".into()),
        },
    );
    attributes.insert(
        "b".into(),
        MessageAttribute {
            data_type: "Binary".into(),
            value: AttributeValue::Binary(vec![0, 255]),
        },
    );
    Message {
        seq,
        id: crate::queue::random::uuid(),
        body: "body \" with json ✓".into(),
        md5_of_body: crate::queue::message::md5_of_body("body \" with json ✓"),
        attributes: Arc::new(attributes),
        sender_id: "000000000000".into(),
        trace_header: Some("Root=1-abc".into()),
        group_id: Some("group-1".into()),
        dedup_id: Some("dedup-1".into()),
        dead_letter_source: Some("arn:aws:sqs:us-east-1:000000000000:src".into()),
        sent_at: SAMPLE_SENT_AT,
        receive_count: 3,
        first_received_at: Some(1_700_000_001_000),
        receipt_key: Some(u64::MAX),
        state,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stored_md5_is_read_and_a_record_without_one_is_hashed() {
        let original = sample_message(
            3,
            MessageState::Visible {
                since: SAMPLE_SENT_AT,
            },
        );
        let written = text(|out| write_body(&original, out));
        let mut record: serde_json::Value = serde_json::from_str(&written).unwrap();
        assert_eq!(
            record["m"],
            format!("{:032x}", u128::from_be_bytes(original.md5_of_body))
        );
        // The stored digest is what a load takes, without hashing the body.
        record["m"] = serde_json::json!(format!("{:032x}", 1u128));
        let taken = decode_message(3, &record.to_string(), None).unwrap();
        assert_eq!(taken.md5_of_body, 1u128.to_be_bytes());
        // A record written before digests were stored.
        record.as_object_mut().unwrap().remove("m");
        let hashed = decode_message(3, &record.to_string(), None).unwrap();
        assert_eq!(hashed.md5_of_body, original.md5_of_body);
    }

    #[test]
    fn messages_round_trip_in_every_state() {
        for state in [
            MessageState::Visible {
                since: 1_700_000_002_000,
            },
            MessageState::Delayed { until: 5 },
            MessageState::InFlight {
                until: 9,
                received_at: 8,
            },
        ] {
            let original = sample_message(7, state);
            let decoded = decode_message(
                7,
                &text(|out| write_body(&original, out)),
                Some(&text(|out| write_state(&original, out))),
            )
            .unwrap();
            assert_eq!(decoded.id, original.id);
            assert_eq!(decoded.body, original.body);
            assert_eq!(decoded.attributes, original.attributes);
            assert_eq!(decoded.md5_of_body, original.md5_of_body);
            assert_eq!(decoded.trace_header, original.trace_header);
            assert_eq!(
                (&decoded.group_id, &decoded.dedup_id, &decoded.dead_letter_source),
                (
                    &original.group_id,
                    &original.dedup_id,
                    &original.dead_letter_source
                )
            );
            assert_eq!(
                (
                    decoded.sent_at,
                    decoded.receive_count,
                    decoded.first_received_at,
                    decoded.receipt_key,
                    decoded.state
                ),
                (
                    original.sent_at,
                    original.receive_count,
                    original.first_received_at,
                    original.receipt_key,
                    original.state
                )
            );
        }
    }

    #[test]
    fn transfers_round_trip_and_name_their_journey() {
        for dead_letter_source in [None, Some(Arc::from("arn:aws:sqs:us-east-1:000000000000:a"))] {
            let original = Transfer {
                from: "eu-west-1/a".into(),
                to: "eu-west-1/dlq".into(),
                message: sample_message(42, SAMPLE_VISIBLE),
                dead_letter_source,
            };
            let mut out = BytesMut::new();
            let fields = write_transfer(&original, &mut out);
            assert_eq!(fields[0].0, "to", "deliver.lua reads the target queue first");
            let fields: HashMap<String, String> = fields
                .into_iter()
                .map(|(name, range)| (name.to_string(), String::from_utf8(out[range].to_vec()).unwrap()))
                .collect();
            let decoded = decode_transfer(&fields).unwrap();
            assert_eq!((&decoded.from, &decoded.to), (&original.from, &original.to));
            assert_eq!(decoded.dead_letter_source, original.dead_letter_source);
            assert_eq!(
                (decoded.message.seq, decoded.message.id),
                (42, original.message.id)
            );
            assert_eq!(decoded.message.receive_count, original.message.receive_count);
            assert_eq!(decoded.marker(), original.marker());
            assert!(original.marker().starts_with("eu-west-1/a#42#"));
        }
        assert!(matches!(
            decode_transfer(&HashMap::new()),
            Err(DecodeError::IncompleteTransfer { .. })
        ));
    }

    /// A message received and back to visible, stored before state records
    /// kept when it turned visible, loads as visible since it was sent.
    #[test]
    fn an_older_visible_state_record_loads_as_visible_since_sent() {
        let message = sample_message(4, SAMPLE_VISIBLE);
        let body = text(|out| write_body(&message, out));
        let decoded =
            decode_message(4, &body, Some(r#"{"rc":2,"fr":1700000001000,"rh":7,"st":"v"}"#)).unwrap();
        assert_eq!((decoded.state, decoded.receive_count), (SAMPLE_VISIBLE, 2));
    }

    #[test]
    fn a_message_never_received_needs_no_state_record() {
        for state in [
            MessageState::Visible {
                since: SAMPLE_SENT_AT,
            },
            MessageState::Delayed {
                until: 1_700_000_900_000,
            },
        ] {
            let mut fresh = sample_message(3, state);
            (fresh.receive_count, fresh.first_received_at, fresh.receipt_key) = (0, None, None);
            assert!(state_implied_by_body(&fresh));
            let decoded = decode_message(3, &text(|out| write_body(&fresh, out)), None).unwrap();
            assert_eq!(
                (
                    decoded.state,
                    decoded.receive_count,
                    decoded.first_received_at,
                    decoded.receipt_key
                ),
                (state, 0, None, None)
            );
        }
        let received = sample_message(3, SAMPLE_VISIBLE);
        assert!(
            !state_implied_by_body(&received),
            "a receive count needs its record"
        );
        let in_flight = MessageState::InFlight {
            until: 9,
            received_at: 8,
        };
        let mut fresh_but_in_flight = sample_message(3, in_flight);
        (
            fresh_but_in_flight.receive_count,
            fresh_but_in_flight.first_received_at,
        ) = (0, None);
        fresh_but_in_flight.receipt_key = None;
        assert!(!state_implied_by_body(&fresh_but_in_flight));
    }

    #[test]
    fn queue_settings_round_trip_through_their_text_form() {
        let mut attributes = QueueAttributes::default();
        attributes.set("VisibilityTimeout", "77").unwrap();
        attributes.set("Policy", "{\"Version\":\"2012-10-17\"}").unwrap();
        let meta = QueueMeta {
            name: "q".into(),
            attributes,
            tags: BTreeMap::from([("team".into(), "core".into())]),
            created_at: 1,
            last_modified_at: 2,
            last_purge_at: Some(3),
            dedup_scope: DeduplicationScope::MessageGroup,
            move_tasks: vec![crate::queue::move_task::MoveTaskRecord {
                handle: "h".into(),
                source_arn: "arn:aws:sqs:us-east-1:000000000000:q".into(),
                destination: Some(("d".into(), "arn:aws:sqs:us-east-1:000000000000:d".into())),
                rate: Some(5),
                started_at: 4,
                to_move: 10,
                moved: 3,
                status: crate::queue::move_task::MoveStatus::Failed("why".into()),
            }],
        };
        assert_eq!(
            decode_queue("q", &text(|out| write_queue(&meta, out))).unwrap(),
            meta
        );
    }

    #[test]
    fn dedup_entries_round_trip() {
        let entry = DedupEntry {
            message_id: crate::queue::random::uuid(),
            seq: 42,
            expires_at: 1_700_000_300_000,
        };
        assert_eq!(decode_dedup(&text(|out| write_dedup(&entry, out))), Some(entry));
        assert_eq!(decode_dedup("x|1|2"), None);
        for handles in [
            vec![],
            vec![ReceiptHandle::issue(3, 1, 9), ReceiptHandle::issue(4, 2, 9)],
        ] {
            let attempt = Attempt {
                expires_at: 1_700_000_300_000,
                handles,
            };
            assert_eq!(
                decode_attempt(&text(|out| write_attempt(&attempt, out))),
                Some(attempt)
            );
        }
        assert_eq!(decode_attempt("12|not-a-handle"), None);
        assert_eq!(decode_dedup(&format!("{}|1|2|3", entry.message_id)), None);
    }

    #[test]
    fn damaged_records_are_reported_not_trusted() {
        assert!(decode_message(1, "{", Some("{}")).is_err());
        let ok = sample_message(1, SAMPLE_VISIBLE);
        assert!(decode_message(1, &text(|out| write_body(&ok, out)), Some(r#"{"rc":0,"st":"f"}"#)).is_err());
        assert!(decode_queue("q", r#"{"attributes":{"VisibilityTimeout":"99999"},"tags":{},"created_at":0,"last_modified_at":0}"#).is_err());
    }
}
