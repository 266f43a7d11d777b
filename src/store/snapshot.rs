//! Snapshots: the whole state of an instance in one portable, versioned
//! file, whichever store keeps it (memory, disk, Redis). docs/snapshots.md
//! describes the format for the people who write or read one.
//!
//! A snapshot is JSON Lines: a header naming the format's version, then
//! each queue followed by its messages, then each SNS topic followed by
//! its subscriptions and archived publications, then an end line that
//! counts them, so that a file cut short (an export interrupted) is
//! refused rather than imported in part. Every line is bounded by the
//! largest object it carries (a message, a subscription with a 256 KB
//! filter policy), never by how many a queue or topic has: whatever ssq
//! exports, it imports. Fields are named for people, not for
//! Redis (`codec.rs` keeps the store's own compact records, free to
//! change), and everything but a queue's name and a message's body has a
//! default, so that a test fixture can be written by hand.
//!
//! What is kept: queues with their attributes and tags, and messages with
//! their state (delay, visibility deadline, receive count, the key of
//! their receipt handles, so that a handle received before an export
//! still deletes after the import), and topics with their attributes,
//! tags, subscriptions and archived publications (see `topic/snapshot.rs`).
//! What is not: FIFO deduplication ids and receive attempt ids, of queues
//! and of topics, which live five minutes, and message move tasks and
//! replays, which belong to the instance that runs them.
//!
//! Version 1 wrote a topic's subscriptions inside its line, which a topic
//! with many large filter policies could push past any bound: it is still
//! read.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};
use std::io::BufRead;
use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Deserialize, Serialize};

use crate::queue::key::Home;
use crate::queue::limits::MAX_SEQUENCE;
use crate::queue::message::{self, MessageState};
use crate::queue::{
    AttributeValue, Message, MessageAttribute, MessageAttributes, Queue, QueueAttributes, QueueMeta, key,
};
use crate::topic::archive::{Archived, ArchivedAttribute};
use crate::topic::{Protocol, SnsError, SubscriptionSnapshot, TopicArn, TopicSnapshot};

/// The version this ssq writes. It reads it and the versions before it
/// (from [`OLDEST`]); a later one is refused by name rather than misread.
pub const VERSION: u32 = 2;
const OLDEST: u32 = 1;

/// The longest line read: the largest line ssq writes (a message or an
/// archived publication of 1 MiB with every character escaped, twice its
/// size; a subscription with a 256 KB filter policy) fits several times
/// over. A longer line is not read into memory.
const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Line<'a> {
    Snapshot(Header),
    Queue(QueueLine),
    #[serde(borrow)]
    Message(MessageLine<'a>),
    Topic(TopicLine),
    Subscription(SubscriptionLine),
    Archived(ArchivedLine),
    End(EndLine),
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    version: u32,
    /// Wall-clock milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    exported_at: Option<u64>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct QueueLine {
    name: String,
    /// The instance's own region when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    region: Option<String>,
    /// The instance's own account when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    account: Option<String>,
    /// As CreateQueue takes them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    attributes: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    tags: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    created_at: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_modified_at: Option<u64>,
    /// FIFO sequence numbers continue from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    next_sequence_number: Option<u64>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct MessageLine<'a> {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    message_id: Option<uuid::Uuid>,
    /// Its place in the queue; the next one after the previous message's
    /// when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sequence_number: Option<u64>,
    #[serde(borrow)]
    body: Cow<'a, str>,
    /// As the SQS JSON protocol writes them: `DataType` and a
    /// `StringValue` or a base64 `BinaryValue`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    attributes: BTreeMap<String, AttributeLine>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sender_id: Option<String>,
    /// The AWSTraceHeader system attribute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    trace_header: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    group_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    deduplication_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dead_letter_source_arn: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sent_at: Option<u64>,
    #[serde(default, skip_serializing_if = "is_zero")]
    receive_count: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    first_received_at: Option<u64>,
    /// The key its receipt handles are made from (with the receive count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    receipt_key: Option<u64>,
    /// Visible since it was sent when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    state: Option<StateLine>,
}

fn is_zero(count: &u32) -> bool {
    *count == 0
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum StateLine {
    Visible { since: u64 },
    Delayed { until: u64 },
    InFlight { until: u64, received_at: u64 },
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AttributeLine {
    #[serde(rename = "DataType")]
    data_type: String,
    #[serde(rename = "StringValue", default, skip_serializing_if = "Option::is_none")]
    string_value: Option<String>,
    #[serde(rename = "BinaryValue", default, skip_serializing_if = "Option::is_none")]
    binary_value: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TopicLine {
    /// `.fifo` at the end for a FIFO topic.
    name: String,
    /// The instance's own region when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    region: Option<String>,
    /// The instance's own account when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    account: Option<String>,
    /// As CreateTopic takes them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    attributes: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    tags: BTreeMap<String, String>,
    /// A FIFO topic's sequence numbers continue from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    next_sequence_number: Option<u64>,
    /// With an ArchivePolicy: since when it archives (wall-clock
    /// milliseconds); the import's time when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    archive_since: Option<u64>,
    /// Version 1 only: its subscriptions (version 2 writes each on a line
    /// of its own after the topic's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    subscriptions: Vec<SubscriptionLine>,
}

/// A publication a FIFO topic's archive keeps.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ArchivedLine {
    sequence_number: u64,
    message_id: String,
    /// Wall-clock milliseconds.
    published_at: u64,
    message: String,
    /// `json` when the message is a structure of a message per protocol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    message_structure: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    subject: Option<String>,
    /// As a message's: `DataType` and a `StringValue` or a base64 `BinaryValue`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    attributes: BTreeMap<String, AttributeLine>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    group_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    deduplication_id: Option<String>,
}

impl ArchivedLine {
    fn of(archived: &Archived) -> ArchivedLine {
        let attributes = archived
            .attributes
            .iter()
            .map(|(name, attribute)| {
                let line = AttributeLine {
                    data_type: attribute.data_type.clone(),
                    string_value: attribute.text.clone(),
                    binary_value: attribute.binary.clone(),
                };
                (name.clone(), line)
            })
            .collect();
        ArchivedLine {
            sequence_number: archived.sequence,
            message_id: archived.message_id.clone(),
            published_at: archived.at,
            message: archived.message.clone(),
            message_structure: archived.structured.then(|| "json".to_string()),
            subject: archived.subject.clone(),
            attributes,
            group_id: archived.group_id.clone(),
            deduplication_id: archived.dedup_id.clone(),
        }
    }

    fn archived(self) -> Result<Archived, UnknownStructure> {
        let structured = match self.message_structure.as_deref() {
            None => false,
            Some("json") => true,
            Some(other) => return Err(UnknownStructure(other.to_string())),
        };
        let attributes = self
            .attributes
            .into_iter()
            .map(|(name, line)| {
                let attribute = ArchivedAttribute {
                    data_type: line.data_type,
                    text: line.string_value,
                    binary: line.binary_value,
                };
                (name, attribute)
            })
            .collect();
        Ok(Archived {
            sequence: self.sequence_number,
            message_id: self.message_id,
            at: self.published_at,
            message: self.message,
            structured,
            subject: self.subject,
            attributes,
            group_id: self.group_id,
            dedup_id: self.deduplication_id,
        })
    }
}

/// An archived publication's `message_structure` other than `json`.
#[derive(Debug, thiserror::Error)]
#[error("message_structure {0}: only json is one")]
struct UnknownStructure(String);

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SubscriptionLine {
    /// The part of its ARN after the topic's; a new one when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    /// `sqs`, `http`, `https`, `email`, `email-json` or `sms`.
    protocol: String,
    endpoint: String,
    /// The account that subscribed; the topic's when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    owner: Option<String>,
    /// As Subscribe takes them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    attributes: BTreeMap<String, String>,
    /// Not yet confirmed (protocols that confirm).
    #[serde(default, skip_serializing_if = "is_false")]
    pending_confirmation: bool,
    /// The token that confirms a pending subscription; a new one when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    confirmation_token: Option<String>,
}

fn is_false(value: &bool) -> bool {
    !*value
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct EndLine {
    queues: u64,
    messages: u64,
    /// Left out when there are none, so that a snapshot without topics is
    /// read by an ssq from before topics.
    #[serde(default, skip_serializing_if = "is_zero_count")]
    topics: u64,
    /// Subscription and archived publication lines (version 2).
    #[serde(default, skip_serializing_if = "is_zero_count")]
    subscriptions: u64,
    #[serde(default, skip_serializing_if = "is_zero_count")]
    archived: u64,
}

fn is_zero_count(count: &u64) -> bool {
    *count == 0
}

/// Writes a snapshot's lines, counting what the end line must say.
pub struct Writer {
    home: Home,
    queues: u64,
    messages: u64,
    topics: u64,
    subscriptions: u64,
    archived: u64,
}

impl Writer {
    /// A snapshot of an instance of `home`'s account and region, taken at
    /// `now`; its header goes into `out`.
    pub fn start(home: &Home, now: u64, out: &mut Vec<u8>) -> Writer {
        put(
            out,
            &Line::Snapshot(Header {
                version: VERSION,
                exported_at: Some(now),
            }),
        );
        Writer {
            home: home.clone(),
            queues: 0,
            messages: 0,
            topics: 0,
            subscriptions: 0,
            archived: 0,
        }
    }

    /// A queue's line; its messages follow it.
    pub fn queue(&mut self, meta: &QueueMeta, next_sequence_number: u64, out: &mut Vec<u8>) {
        self.queues += 1;
        let parts = key::split(&meta.name);
        let attributes = crate::queue::attributes::SETTABLE
            .iter()
            .filter_map(|name| meta.attributes.get(name).map(|value| (name.to_string(), value)))
            .collect();
        let line = QueueLine {
            name: parts.name.to_string(),
            region: Some(parts.region_or(&self.home).to_string()),
            account: parts.account.map(str::to_string),
            attributes,
            tags: meta.tags.clone(),
            created_at: Some(meta.created_at),
            last_modified_at: Some(meta.last_modified_at),
            next_sequence_number: Some(next_sequence_number),
        };
        put(out, &Line::Queue(line));
    }

    pub fn message(&mut self, message: &Message, out: &mut Vec<u8>) {
        self.messages += 1;
        let attributes = message
            .attributes
            .iter()
            .map(|(name, attribute)| {
                let (string_value, binary_value) = match &attribute.value {
                    AttributeValue::String(text) => (Some(text.clone()), None),
                    AttributeValue::Binary(bytes) => (None, Some(BASE64.encode(bytes))),
                };
                let line = AttributeLine {
                    data_type: attribute.data_type.clone(),
                    string_value,
                    binary_value,
                };
                (name.clone(), line)
            })
            .collect();
        let text = |value: &Option<Arc<str>>| value.as_deref().map(str::to_string);
        let line = MessageLine {
            message_id: Some(message.id),
            sequence_number: Some(message.seq),
            body: Cow::Borrowed(&message.body),
            attributes,
            sender_id: Some(message.sender_id.to_string()),
            trace_header: text(&message.trace_header),
            group_id: text(&message.group_id),
            deduplication_id: text(&message.dedup_id),
            dead_letter_source_arn: text(&message.dead_letter_source),
            sent_at: Some(message.sent_at),
            receive_count: message.receive_count,
            first_received_at: message.first_received_at,
            receipt_key: message.receipt_key,
            state: Some(match message.state {
                MessageState::Visible { since } => StateLine::Visible { since },
                MessageState::Delayed { until } => StateLine::Delayed { until },
                MessageState::InFlight { until, received_at } => StateLine::InFlight { until, received_at },
            }),
        };
        put(out, &Line::Message(line));
    }

    /// A topic's line (its subscriptions and archived publications
    /// follow it); topics follow the queues.
    pub fn topic(&mut self, topic: &TopicSnapshot, out: &mut Vec<u8>) {
        self.topics += 1;
        let line = TopicLine {
            name: topic.arn.name.clone(),
            region: Some(topic.arn.region.clone()),
            account: Some(topic.arn.account.clone()).filter(|account| *account != self.home.account),
            attributes: topic.attributes.clone(),
            tags: topic.tags.clone(),
            next_sequence_number: topic.arn.is_fifo().then_some(topic.sequence + 1),
            archive_since: topic.archive_since,
            subscriptions: Vec::new(),
        };
        put(out, &Line::Topic(line));
    }

    /// A subscription of the topic whose line came last.
    pub fn subscription(&mut self, sub: &SubscriptionSnapshot, out: &mut Vec<u8>) {
        self.subscriptions += 1;
        let line = SubscriptionLine {
            id: sub.id.clone(),
            protocol: sub.protocol.as_str().to_string(),
            endpoint: sub.endpoint.clone(),
            owner: sub.owner.clone(),
            attributes: sub.attributes.clone(),
            pending_confirmation: sub.pending,
            confirmation_token: sub.token.clone(),
        };
        put(out, &Line::Subscription(line));
    }

    /// An archived publication of the topic whose line came last.
    pub fn archived(&mut self, archived: &Archived, out: &mut Vec<u8>) {
        self.archived += 1;
        put(out, &Line::Archived(ArchivedLine::of(archived)));
    }

    /// The end line, which tells a whole snapshot from one cut short.
    pub fn end(self, out: &mut Vec<u8>) {
        put(
            out,
            &Line::End(EndLine {
                queues: self.queues,
                messages: self.messages,
                topics: self.topics,
                subscriptions: self.subscriptions,
                archived: self.archived,
            }),
        );
    }
}

fn put(out: &mut Vec<u8>, line: &Line<'_>) {
    serde_json::to_writer(&mut *out, line).expect("a snapshot line serializes");
    out.push(b'\n');
}

/// Why a snapshot cannot be imported: nothing of it is.
#[derive(Debug, thiserror::Error)]
#[error("line {line}: {problem}")]
pub struct SnapshotError {
    /// 1-based; 0 when the file could not be read at all.
    pub line: usize,
    pub problem: Problem,
}

#[derive(Debug, thiserror::Error)]
pub enum Problem {
    #[error("cannot read the file: {0}")]
    Io(#[from] std::io::Error),
    #[error("longer than {MAX_LINE_BYTES} bytes")]
    TooLong,
    #[error("not a snapshot line: {0}")]
    Unreadable(#[from] serde_json::Error),
    #[error("a snapshot starts with its header, {{\"snapshot\": {{\"version\": {VERSION}}}}}")]
    NoHeader,
    #[error(
        "the snapshot is of version {0}, and this ssq reads versions {OLDEST} to {VERSION}: import it with a later ssq"
    )]
    Version(u32),
    #[error("a message comes before any queue: messages follow the line of their queue")]
    MessageBeforeQueue,
    #[error("a {0} line comes where no topic's does: it follows the line of its topic")]
    BeforeTopic(&'static str),
    #[error("queue {0} comes twice")]
    QueueTwice(String),
    #[error("topic {0} comes twice")]
    TopicTwice(String),
    #[error("topic {name}: {reason}")]
    Topic { name: String, reason: String },
    #[error("queue {name}: {reason}")]
    Queue { name: String, reason: String },
    #[error("message of queue {queue}: {reason}")]
    Message { queue: String, reason: MessageProblem },
    #[error("the end line counts {said}, the snapshot holds {held}")]
    Counts { said: Counted, held: Counted },
    #[error("a line follows the end line")]
    AfterEnd,
    #[error("the snapshot has no end line: it was cut short (an export interrupted?); export it again")]
    Incomplete,
}

/// What an end line counts, or a snapshot holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counted {
    queues: u64,
    messages: u64,
    topics: u64,
    subscriptions: u64,
    archived: u64,
}

impl std::fmt::Display for Counted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} queues, {} messages, {} topics, {} subscription lines and {} archived publications",
            self.queues, self.messages, self.topics, self.subscriptions, self.archived
        )
    }
}

/// Why a message line is refused.
#[derive(Debug, thiserror::Error)]
pub enum MessageProblem {
    /// What SendMessage would answer for it.
    #[error("{}", .0.message)]
    Refused(crate::error::SqsError),
    #[error("attribute {0}: BinaryValue is not base64")]
    NotBase64(String),
    #[error("attribute {0}: give one of StringValue and BinaryValue")]
    NotOneValue(String),
    #[error("body and attributes are longer than the queue's MaximumMessageSize, {0} bytes")]
    TooLong(usize),
    #[error("a message of a FIFO queue needs a group_id")]
    NoGroup,
    #[error("only messages of FIFO queues have a deduplication_id")]
    DeduplicationOnStandard,
    #[error("a message in flight has been received: give its receive_count")]
    InFlightNeverReceived,
    #[error("sequence_number 0: sequence numbers start at 1")]
    SequenceZero,
    #[error("sequence number {0} is past the highest a queue can go on from, {MAX_SEQUENCE}")]
    SequencePast(u64),
    #[error("sequence number {0} comes twice")]
    SequenceTwice(u64),
}

/// What the messages and queues a snapshot leaves out take by default.
pub struct Defaults<'a> {
    /// The region of a queue whose line names none.
    pub home_region: &'a str,
    /// The sender of a message whose line names none.
    pub account_id: &'a str,
    /// When a queue was created and a message sent, where its line does not say.
    pub now: u64,
}

impl Defaults<'_> {
    /// The account and region of queues and topics whose lines name none.
    fn home(&self) -> Home {
        Home {
            account: self.account_id.to_string(),
            region: self.home_region.to_string(),
        }
    }
}

/// What a snapshot holds.
#[derive(Default)]
pub struct Snapshot {
    pub queues: Vec<Queue>,
    pub topics: Vec<TopicSnapshot>,
}

/// Reads a whole snapshot, each queue and topic checked as CreateQueue,
/// SendMessage, CreateTopic and Subscribe check theirs: a snapshot with
/// any line wrong is refused whole, naming the line.
pub fn read(input: impl BufRead, defaults: &Defaults<'_>) -> Result<Snapshot, SnapshotError> {
    let mut reader = Reader {
        defaults,
        queues: Vec::new(),
        names: HashSet::new(),
        current: None,
        messages: 0,
        topics: crate::topic::Topics::default(),
        topic_lines: Vec::new(),
        in_topic: false,
        subscription_lines: 0,
        archived_lines: 0,
        ended: false,
    };
    let mut input = input.take(0);
    let mut buffer = Vec::new();
    let mut number = 0;
    loop {
        number += 1;
        let at = |problem: Problem| SnapshotError {
            line: number,
            problem,
        };
        buffer.clear();
        input.set_limit(MAX_LINE_BYTES as u64 + 1);
        let read = input.read_until(b'\n', &mut buffer).map_err(|e| at(e.into()))?;
        if read == 0 {
            break;
        }
        if buffer.len() > MAX_LINE_BYTES {
            return Err(at(Problem::TooLong));
        }
        if buffer.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let line: Line<'_> = serde_json::from_slice(&buffer).map_err(|e| at(e.into()))?;
        reader.take(number, line).map_err(at)?;
    }
    if number == 1 && reader.queues.is_empty() && !reader.ended {
        return Err(SnapshotError {
            line: 1,
            problem: Problem::NoHeader,
        });
    }
    reader.finish().map_err(|problem| SnapshotError {
        line: number,
        problem,
    })
}

struct Reader<'d, 'a> {
    defaults: &'d Defaults<'a>,
    queues: Vec<Queue>,
    names: HashSet<String>,
    /// The queue whose messages follow, and the messages read so far.
    current: Option<(Queue, Vec<Message>, HashSet<u64>)>,
    messages: u64,
    /// The topics read so far, taken in as an import would take them, so
    /// that a wrong one is refused at its line.
    topics: crate::topic::Topics,
    topic_lines: Vec<TopicSnapshot>,
    /// Whether the lines read since the last topic's may be its
    /// subscriptions and archived publications.
    in_topic: bool,
    subscription_lines: u64,
    archived_lines: u64,
    ended: bool,
}

impl Reader<'_, '_> {
    fn take(&mut self, number: usize, line: Line<'_>) -> Result<(), Problem> {
        if self.ended {
            return Err(Problem::AfterEnd);
        }
        match (number, line) {
            (1, Line::Snapshot(header)) if (OLDEST..=VERSION).contains(&header.version) => Ok(()),
            (1, Line::Snapshot(header)) => Err(Problem::Version(header.version)),
            (1, _) | (_, Line::Snapshot(_)) => Err(Problem::NoHeader),
            (_, Line::Queue(line)) => {
                self.close_queue();
                self.in_topic = false;
                let queue = self.queue(line)?;
                if !self.names.insert(queue.name.clone()) {
                    return Err(Problem::QueueTwice(queue.name));
                }
                self.current = Some((queue, Vec::new(), HashSet::new()));
                Ok(())
            }
            (_, Line::Message(line)) => {
                let defaults = self.defaults;
                let Some((queue, messages, seqs)) = &mut self.current else {
                    return Err(Problem::MessageBeforeQueue);
                };
                let after = messages.last().map_or(0, |message: &Message| message.seq);
                let message = message(queue, line, after, defaults).map_err(|reason| Problem::Message {
                    queue: queue.name.clone(),
                    reason,
                })?;
                if !seqs.insert(message.seq) {
                    return Err(Problem::Message {
                        queue: queue.name.clone(),
                        reason: MessageProblem::SequenceTwice(message.seq),
                    });
                }
                messages.push(message);
                self.messages += 1;
                Ok(())
            }
            (_, Line::Topic(line)) => {
                self.close_queue();
                let topic = self.topic(line)?;
                let name = topic.arn.to_string();
                match self.topics.import(vec![topic.clone()]) {
                    Ok(skipped) if skipped.is_empty() => {}
                    Ok(_) => return Err(Problem::TopicTwice(name)),
                    Err(error) => {
                        return Err(Problem::Topic {
                            name,
                            reason: error.message,
                        });
                    }
                }
                self.topic_lines.push(topic);
                self.in_topic = true;
                Ok(())
            }
            (_, Line::Subscription(line)) => {
                let topic = self.current_topic("subscription")?;
                let sub = subscription(line).map_err(|error| Problem::Topic {
                    name: topic.arn.to_string(),
                    reason: error.message,
                })?;
                let arn = topic.arn.clone();
                self.topics
                    .import_subscription(&arn, sub.clone())
                    .map_err(|error| Problem::Topic {
                        name: arn.to_string(),
                        reason: error.message,
                    })?;
                self.current_topic("subscription")?.subscriptions.push(sub);
                self.subscription_lines += 1;
                Ok(())
            }
            (_, Line::Archived(line)) => {
                let arn = self.current_topic("archived")?.arn.clone();
                let refused = |reason: String| Problem::Topic {
                    name: arn.to_string(),
                    reason,
                };
                let archived = line.archived().map_err(|problem| refused(problem.to_string()))?;
                self.topics
                    .import_archived(&arn, archived.clone())
                    .map_err(|error| refused(error.message))?;
                self.current_topic("archived")?.archived.push(archived);
                self.archived_lines += 1;
                Ok(())
            }
            (_, Line::End(end)) => {
                self.close_queue();
                let held = Counted {
                    queues: self.queues.len() as u64,
                    messages: self.messages,
                    topics: self.topic_lines.len() as u64,
                    subscriptions: self.subscription_lines,
                    archived: self.archived_lines,
                };
                let said = Counted {
                    queues: end.queues,
                    messages: end.messages,
                    topics: end.topics,
                    subscriptions: end.subscriptions,
                    archived: end.archived,
                };
                if said != held {
                    return Err(Problem::Counts { said, held });
                }
                self.ended = true;
                Ok(())
            }
        }
    }

    fn queue(&self, line: QueueLine) -> Result<Queue, Problem> {
        let home = self.defaults.home();
        let region = line.region.as_deref().unwrap_or(&home.region);
        let account = line.account.as_deref().unwrap_or(&home.account);
        let name = key::of(&home, account, region, &line.name);
        let invalid = |reason: String| Problem::Queue {
            name: name.clone(),
            reason,
        };
        if !key::is_region(region) {
            return Err(invalid(format!("{region} is not a region")));
        }
        if !key::is_account(account) {
            return Err(invalid(format!("{account} is not an account id (12 digits)")));
        }
        crate::queue::validate_name(&line.name, QueueAttributes::request_fifo(&line.attributes))
            .map_err(|e| invalid(e.message))?;
        let attributes =
            QueueAttributes::for_new_queue(&line.name, &line.attributes).map_err(|e| invalid(e.message))?;
        crate::queue::tags::validate(&line.tags).map_err(|e| invalid(e.message))?;
        let next_sequence_number = line.next_sequence_number.unwrap_or(1);
        if !(1..=MAX_SEQUENCE + 1).contains(&next_sequence_number) {
            return Err(invalid(format!(
                "next_sequence_number {next_sequence_number} is not between 1 and {}",
                MAX_SEQUENCE + 1
            )));
        }
        let created_at = line.created_at.unwrap_or(self.defaults.now);
        let meta = QueueMeta {
            name: name.clone(),
            dedup_scope: attributes.deduplication_scope,
            attributes,
            tags: line.tags,
            created_at,
            last_modified_at: line.last_modified_at.unwrap_or(created_at),
            last_purge_at: None,
            move_tasks: Vec::new(),
        };
        Ok(Queue::restore(meta, next_sequence_number, [], []))
    }

    fn topic(&self, line: TopicLine) -> Result<TopicSnapshot, Problem> {
        let region = line.region.as_deref().unwrap_or(self.defaults.home_region);
        let invalid = |reason: String| Problem::Topic {
            name: line.name.clone(),
            reason,
        };
        if !key::is_region(region) {
            return Err(invalid(format!("{region} is not a region")));
        }
        let account = line.account.as_deref().unwrap_or(self.defaults.account_id);
        if !key::is_account(account) {
            return Err(invalid(format!("{account} is not an account id (12 digits)")));
        }
        if !crate::topic::attributes::valid_topic_name(&line.name) {
            return Err(invalid(
                "a topic's name is 1 to 256 letters, digits, hyphens and underscores, with .fifo at the end of a FIFO topic's"
                    .into(),
            ));
        }
        let arn = TopicArn::new(region, account, &line.name);
        let sequence = match line.next_sequence_number {
            None => 0,
            Some(next) if arn.is_fifo() && (1..=MAX_SEQUENCE + 1).contains(&next) => next - 1,
            Some(next) => {
                return Err(invalid(format!(
                    "next_sequence_number {next}: only a FIFO topic has one, between 1 and {}",
                    MAX_SEQUENCE + 1
                )));
            }
        };
        let subscriptions = line
            .subscriptions
            .into_iter()
            .map(subscription)
            .collect::<Result<_, _>>()
            .map_err(|error| invalid(error.message))?;
        Ok(TopicSnapshot {
            arn,
            attributes: line.attributes,
            tags: line.tags,
            sequence,
            archive_since: line.archive_since,
            subscriptions,
            archived: Vec::new(),
        })
    }

    /// The topic whose line came last, which a `what` line belongs to.
    fn current_topic(&mut self, what: &'static str) -> Result<&mut TopicSnapshot, Problem> {
        match self.in_topic {
            true => self.topic_lines.last_mut().ok_or(Problem::BeforeTopic(what)),
            false => Err(Problem::BeforeTopic(what)),
        }
    }

    /// The queue being read is complete: its messages go in.
    fn close_queue(&mut self) {
        if let Some((queue, messages, _)) = self.current.take() {
            let next = queue.next_sequence_number();
            self.queues.push(Queue::restore(queue.meta(), next, messages, []));
        }
    }

    fn finish(self) -> Result<Snapshot, Problem> {
        match self.ended {
            true => Ok(Snapshot {
                queues: self.queues,
                topics: self.topic_lines,
            }),
            false => Err(Problem::Incomplete),
        }
    }
}

/// A subscription from its line (its protocol read; the rest is checked
/// as Subscribe checks it, by the topics taking it in).
fn subscription(line: SubscriptionLine) -> Result<SubscriptionSnapshot, SnsError> {
    Ok(SubscriptionSnapshot {
        protocol: Protocol::parse(&line.protocol)?,
        id: line.id,
        endpoint: line.endpoint,
        owner: line.owner,
        attributes: line.attributes,
        pending: line.pending_confirmation,
        token: line.confirmation_token,
    })
}

/// A message of `queue` from its line, checked as SendMessage checks one;
/// `after` is the sequence number of the message before it.
fn message(
    queue: &Queue,
    line: MessageLine<'_>,
    after: u64,
    defaults: &Defaults<'_>,
) -> Result<Message, MessageProblem> {
    let reason = MessageProblem::Refused;
    let body = line.body.into_owned();
    message::validate_body(&body).map_err(reason)?;
    let mut attributes = MessageAttributes::new();
    for (name, attribute) in line.attributes {
        let value = match (attribute.string_value, attribute.binary_value) {
            (Some(text), None) => AttributeValue::String(text),
            (None, Some(base64)) => AttributeValue::Binary(
                BASE64
                    .decode(base64)
                    .map_err(|_| MessageProblem::NotBase64(name.clone()))?,
            ),
            _ => return Err(MessageProblem::NotOneValue(name)),
        };
        attributes.insert(
            name,
            MessageAttribute {
                data_type: attribute.data_type,
                value,
            },
        );
    }
    message::validate_attributes(&attributes).map_err(reason)?;
    let max = queue.attributes.maximum_message_size as usize;
    if body.len() + message::attributes_size(&attributes) > max {
        return Err(MessageProblem::TooLong(max));
    }
    match (queue.is_fifo(), &line.group_id, &line.deduplication_id) {
        (true, None, _) => return Err(MessageProblem::NoGroup),
        (false, _, Some(_)) => return Err(MessageProblem::DeduplicationOnStandard),
        _ => {}
    }
    if let Some(group) = &line.group_id {
        message::validate_fifo_id("MessageGroupId", group).map_err(reason)?;
    }
    if let Some(id) = &line.deduplication_id {
        message::validate_fifo_id("MessageDeduplicationId", id).map_err(reason)?;
    }
    let sent_at = line.sent_at.unwrap_or(defaults.now);
    let state = match line.state {
        None => MessageState::Visible { since: sent_at },
        Some(StateLine::Visible { since }) => MessageState::Visible { since },
        Some(StateLine::Delayed { until }) => MessageState::Delayed { until },
        Some(StateLine::InFlight { until, received_at }) => {
            if line.receive_count == 0 {
                return Err(MessageProblem::InFlightNeverReceived);
            }
            MessageState::InFlight { until, received_at }
        }
    };
    // Without a key, no handle matches the message until its next receive
    // draws one (as after a move to a dead-letter queue).
    let receipt_key = line.receipt_key;
    let seq = match line.sequence_number {
        Some(0) => return Err(MessageProblem::SequenceZero),
        Some(seq) => seq,
        None => after.saturating_add(1),
    };
    if seq > MAX_SEQUENCE {
        return Err(MessageProblem::SequencePast(seq));
    }
    let arc = |text: Option<String>| text.map(Arc::<str>::from);
    Ok(Message {
        seq,
        id: line.message_id.unwrap_or_else(crate::queue::random::uuid),
        md5_of_body: message::md5_of_body(&body),
        body: body.into(),
        attributes: Arc::new(attributes),
        sender_id: line.sender_id.as_deref().unwrap_or(defaults.account_id).into(),
        trace_header: arc(line.trace_header),
        group_id: arc(line.group_id),
        dedup_id: arc(line.deduplication_id),
        dead_letter_source: arc(line.dead_letter_source_arn),
        sent_at,
        receive_count: line.receive_count,
        first_received_at: line.first_received_at,
        receipt_key,
        state,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::{NewMessage, ReceiptHandle};

    const DEFAULTS: Defaults<'static> = Defaults {
        home_region: "us-east-1",
        account_id: "000000000000",
        now: 5_000,
    };

    fn send(queue: &mut Queue, body: &str, group: Option<&str>, now: u64) {
        let mut attributes = MessageAttributes::new();
        attributes.insert(
            "kind".into(),
            MessageAttribute {
                data_type: "String".into(),
                value: AttributeValue::String("order".into()),
            },
        );
        attributes.insert(
            "blob".into(),
            MessageAttribute {
                data_type: "Binary".into(),
                value: AttributeValue::Binary(vec![0, 1, 2, 255]),
            },
        );
        let new = NewMessage {
            body: body.into(),
            attributes,
            delay_seconds: None,
            sender_id: "AIDAEXAMPLE".into(),
            trace_header: Some("Root=1-5759e988-bd862e3fe1be46a994272793".into()),
            group_id: group.map(str::to_string),
            dedup_id: (group.is_some() && queue.is_fifo()).then(|| format!("d-{body}")),
        };
        queue.send(new, now).unwrap();
    }

    fn export(queues: &[&Queue]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut writer = Writer::start(&DEFAULTS.home(), 9_000, &mut out);
        for queue in queues {
            writer.queue(&queue.meta(), queue.next_sequence_number(), &mut out);
            for message in queue.messages_after(0, usize::MAX, u64::MAX) {
                writer.message(&message, &mut out);
            }
        }
        writer.end(&mut out);
        out
    }

    fn fields(message: &Message) -> impl PartialEq + std::fmt::Debug + use<> {
        (
            (
                message.seq,
                message.id,
                message.body.clone(),
                message.attributes.clone(),
            ),
            (
                message.md5_of_body,
                message.sender_id.clone(),
                message.trace_header.clone(),
            ),
            (
                message.group_id.clone(),
                message.dedup_id.clone(),
                message.sent_at,
            ),
            (
                message.receive_count,
                message.first_received_at,
                message.receipt_key,
                message.state,
            ),
        )
    }

    #[test]
    fn an_exported_state_reads_back_the_same() {
        let mut attributes = BTreeMap::new();
        attributes.insert("VisibilityTimeout".to_string(), "45".to_string());
        let mut standard = Queue::restore(
            Queue::new(
                "jobs".into(),
                QueueAttributes::for_new_queue("jobs", &attributes).unwrap(),
                BTreeMap::from([("team".into(), "a".into())]),
                1_000,
            )
            .meta(),
            1,
            [],
            [],
        );
        send(&mut standard, "one", None, 1_000);
        send(&mut standard, "two", Some("tenant-a"), 1_001);
        let received = standard.receive(1, None, None, None, 2_000);
        assert_eq!(received.len(), 1);
        let mut fifo_attributes = BTreeMap::new();
        fifo_attributes.insert("FifoQueue".to_string(), "true".to_string());
        let fifo_meta = Queue::new(
            "eu-west-1/orders.fifo".into(),
            QueueAttributes::for_new_queue("orders.fifo", &fifo_attributes).unwrap(),
            BTreeMap::new(),
            1_000,
        )
        .meta();
        let mut fifo = Queue::restore(fifo_meta, 1, [], []);
        send(&mut fifo, "a", Some("g1"), 1_000);
        send(&mut fifo, "b", Some("g1"), 1_000);
        // Another account's queue, in the home region.
        let mut other = Queue::new(
            "111122223333/us-east-1/jobs".into(),
            QueueAttributes::for_new_queue("jobs", &BTreeMap::new()).unwrap(),
            BTreeMap::new(),
            1_000,
        );
        send(&mut other, "theirs", None, 1_000);

        let text = export(&[&standard, &fifo, &other]);
        let lines = String::from_utf8(text.clone()).unwrap();
        assert!(
            lines.contains(r#""name":"jobs","region":"us-east-1","account":"111122223333""#),
            "{lines}"
        );
        assert_eq!(
            lines.matches(r#""account""#).count(),
            1,
            "the home account's queues name none"
        );
        let read = read(&text[..], &DEFAULTS).unwrap().queues;
        assert_eq!(read.len(), 3);
        for (original, copy) in [&standard, &fifo, &other].into_iter().zip(&read) {
            assert_eq!(copy.meta(), original.meta());
            assert_eq!(copy.next_sequence_number(), original.next_sequence_number());
            let messages = |queue: &Queue| {
                queue
                    .messages_after(0, usize::MAX, u64::MAX)
                    .iter()
                    .map(fields)
                    .collect::<Vec<_>>()
            };
            assert_eq!(messages(copy), messages(original));
        }
        // The handle received before the export deletes after the import.
        let handle = ReceiptHandle::decode(&received[0].receipt_handle.encode()).unwrap();
        let mut copy = read.into_iter().next().unwrap();
        assert!(copy.delete(handle, 2_500).unwrap());
    }

    #[test]
    fn a_hand_written_fixture_takes_defaults() {
        let text = br#"{"snapshot":{"version":1}}
{"queue":{"name":"orders"}}
{"message":{"body":"first"}}
{"message":{"body":"second","attributes":{"n":{"DataType":"Number","StringValue":"7"}}}}

{"end":{"queues":1,"messages":2}}
"#;
        let queues = read(&text[..], &DEFAULTS).unwrap().queues;
        let queue = &queues[0];
        assert_eq!(queue.name, "orders");
        assert_eq!(queue.created_at, 5_000);
        let messages = queue.messages_after(0, 10, u64::MAX);
        let seqs: Vec<u64> = messages.iter().map(|message| message.seq).collect();
        assert_eq!(seqs, vec![1, 2]);
        assert_eq!(&*messages[0].body, "first");
        assert_eq!(messages[0].state, MessageState::Visible { since: 5_000 });
        assert_eq!(&*messages[1].sender_id, "000000000000");
        assert_eq!(messages[0].md5_of_body, message::md5_of_body("first"));
        assert_eq!(queue.next_sequence_number(), 3);
    }

    #[test]
    fn topic_lines_are_read_with_defaults_and_refused_naming_their_line() {
        let text = r#"{"snapshot":{"version":1}}
{"queue":{"name":"paid"}}
{"topic":{"name":"orders","subscriptions":[{"protocol":"sqs","endpoint":"arn:aws:sqs:us-east-1:000000000000:paid","attributes":{"RawMessageDelivery":"true"}}]}}
{"topic":{"name":"jobs.fifo","next_sequence_number":10}}
{"end":{"queues":1,"messages":0,"topics":2}}
"#;
        let snapshot = read(text.as_bytes(), &DEFAULTS).unwrap();
        assert_eq!(snapshot.queues.len(), 1);
        let arns: Vec<String> = snapshot
            .topics
            .iter()
            .map(|topic| topic.arn.to_string())
            .collect();
        assert_eq!(
            arns,
            vec![
                "arn:aws:sns:us-east-1:000000000000:orders",
                "arn:aws:sns:us-east-1:000000000000:jobs.fifo"
            ]
        );
        assert_eq!(snapshot.topics[1].sequence, 9);
        // Written out again, the lines read the same.
        let mut out = Vec::new();
        let mut writer = Writer::start(&DEFAULTS.home(), 1, &mut out);
        for topic in &snapshot.topics {
            writer.topic(topic, &mut out);
            for subscription in &topic.subscriptions {
                writer.subscription(subscription, &mut out);
            }
        }
        writer.end(&mut out);
        let text = String::from_utf8(out.clone()).unwrap();
        assert!(text.starts_with(r#"{"snapshot":{"version":2"#), "{text}");
        assert!(
            text.contains(r#"{"subscription":{"protocol":"sqs""#),
            "a line of its own: {text}"
        );
        let again = read(&out[..], &DEFAULTS).unwrap();
        assert_eq!(again.topics, snapshot.topics);

        let header = r#"{"snapshot":{"version":1}}"#;
        let cases = [
            (
                r#"{"topic":{"name":"orders","subscriptions":[{"protocol":"lambda","endpoint":"x"}]}}"#,
                "does not deliver to lambda",
            ),
            (
                r#"{"topic":{"name":"orders","attributes":{"Nope":"1"}}}"#,
                "AttributeName",
            ),
            (r#"{"topic":{"name":"bad name"}}"#, "topic bad name"),
            (
                r#"{"topic":{"name":"orders","next_sequence_number":5}}"#,
                "only a FIFO topic",
            ),
            (
                r#"{"topic":{"name":"orders","subscriptions":[{"protocol":"sqs","endpoint":"arn:aws:sqs:us-east-1:000000000000:q","attributes":{"FilterPolicy":"{\"a\":\"b\"}"}}]}}"#,
                "FilterPolicy",
            ),
        ];
        for (line, expected) in cases {
            let text =
                format!("{header}\n{line}\n{{\"end\":{{\"queues\":0,\"messages\":0,\"topics\":1}}}}\n");
            let (number, message) = problem(&text);
            assert_eq!(number, 2, "{line}: {message}");
            assert!(message.contains(expected), "{line}: {message}");
        }
        let twice = format!("{header}\n{{\"topic\":{{\"name\":\"t\"}}}}\n{{\"topic\":{{\"name\":\"t\"}}}}\n");
        assert_eq!(
            problem(&twice),
            (3, "topic arn:aws:sns:us-east-1:000000000000:t comes twice".into())
        );
        let miscounted = format!(
            "{header}\n{{\"topic\":{{\"name\":\"t\"}}}}\n{{\"end\":{{\"queues\":0,\"messages\":0}}}}\n"
        );
        let (number, message) = problem(&miscounted);
        assert_eq!(number, 3);
        assert!(message.contains("0 topics"), "{message}");

        let header = r#"{"snapshot":{"version":2}}"#;
        let stray = format!(
            "{header}\n{{\"queue\":{{\"name\":\"q\"}}}}\n{{\"subscription\":{{\"protocol\":\"sqs\",\"endpoint\":\"arn:aws:sqs:us-east-1:000000000000:q\"}}}}\n"
        );
        let (number, message) = problem(&stray);
        assert_eq!(
            (number, message.contains("follows the line of its topic")),
            (3, true),
            "{message}"
        );
        let archiving = r#"{"topic":{"name":"a.fifo","next_sequence_number":3,"attributes":{"ArchivePolicy":"{\"MessageRetentionPeriod\":\"2\"}"}}}"#;
        let archived = |sequence: u64| {
            format!(
                r#"{{"archived":{{"sequence_number":{sequence},"message_id":"m","published_at":5,"message":"hi","group_id":"g","deduplication_id":"d"}}}}"#
            )
        };
        let beyond = format!("{header}\n{archiving}\n{}\n", archived(3));
        let (number, message) = problem(&beyond);
        assert_eq!(
            (
                number,
                message.contains("sequence number must be one the topic handed out")
            ),
            (3, true),
            "{message}"
        );
        let twice = format!("{header}\n{archiving}\n{}\n{}\n", archived(2), archived(2));
        assert_eq!(problem(&twice).0, 4);
        let kept = format!(
            "{header}\n{archiving}\n{}\n{{\"end\":{{\"queues\":0,\"messages\":0,\"topics\":1,\"archived\":1}}}}\n",
            archived(2)
        );
        let read_back = read(kept.as_bytes(), &DEFAULTS).unwrap();
        assert_eq!(read_back.topics[0].archived[0].message, "hi");

        // A filter policy larger than Subscribe takes is refused at its line.
        let large = format!(r#"{{\"k\":[\"{}\"]}}"#, "v".repeat(300 * 1024));
        let oversized = format!(
            "{header}\n{{\"topic\":{{\"name\":\"t\"}}}}\n{{\"subscription\":{{\"protocol\":\"sqs\",\"endpoint\":\"arn:aws:sqs:us-east-1:000000000000:q\",\"attributes\":{{\"FilterPolicy\":\"{large}\"}}}}}}\n"
        );
        let (number, message) = problem(&oversized);
        assert_eq!(
            (number, message.contains("Filter policy is too large")),
            (3, true),
            "{message}"
        );
    }

    fn problem(text: &str) -> (usize, String) {
        let Err(error) = read(text.as_bytes(), &DEFAULTS) else {
            panic!("{text:?} was read");
        };
        (error.line, error.problem.to_string())
    }

    #[test]
    fn a_bad_snapshot_is_refused_naming_its_line() {
        let header = "{\"snapshot\":{\"version\":1}}\n";
        let queue = "{\"queue\":{\"name\":\"q\"}}\n";
        let end = |queues: u32, messages: u32| {
            format!("{{\"end\":{{\"queues\":{queues},\"messages\":{messages}}}}}\n")
        };
        let cases = [
            ("{\"queue\":{\"name\":\"q\"}}\n".to_string(), 1, "header"),
            ("{\"snapshot\":{\"version\":3}}\n".to_string(), 1, "version 3"),
            (
                format!("{header}{{\"message\":{{\"body\":\"x\"}}}}\n"),
                2,
                "before any queue",
            ),
            (format!("{header}{queue}{queue}"), 3, "comes twice"),
            (
                format!("{header}{{\"queue\":{{\"name\":\"bad name\"}}}}\n"),
                2,
                "queue bad name",
            ),
            (
                format!("{header}{{\"queue\":{{\"name\":\"q\",\"account\":\"12\"}}}}\n"),
                2,
                "12 is not an account id",
            ),
            (
                format!(
                    "{header}{{\"queue\":{{\"name\":\"q\",\"attributes\":{{\"DelaySeconds\":\"901\"}}}}}}\n"
                ),
                2,
                "DelaySeconds",
            ),
            (
                format!("{header}{queue}{{\"message\":{{\"body\":\"\\u0000\"}}}}\n"),
                3,
                "message of queue q",
            ),
            (
                format!(
                    "{header}{{\"queue\":{{\"name\":\"q.fifo\",\"attributes\":{{\"FifoQueue\":\"true\"}}}}}}\n{{\"message\":{{\"body\":\"x\"}}}}\n"
                ),
                3,
                "group_id",
            ),
            (
                format!(
                    "{header}{queue}{{\"message\":{{\"body\":\"x\",\"sequence_number\":4}}}}\n{{\"message\":{{\"body\":\"y\",\"sequence_number\":4}}}}\n"
                ),
                4,
                "comes twice",
            ),
            (
                format!("{header}{queue}{{\"message\":{{\"body\":\"x\",\"colour\":\"red\"}}}}\n"),
                3,
                "unknown field",
            ),
            (
                format!("{header}{queue}{}", end(1, 1)),
                3,
                "counts 1 queues, 1 messages, 0 topics",
            ),
            (
                format!("{header}{queue}{}{queue}", end(1, 0)),
                4,
                "follows the end",
            ),
            (
                format!("{header}{queue}{{\"message\":{{\"body\":\"x\"}}}}\n"),
                4,
                "cut short",
            ),
            (String::new(), 1, "header"),
        ];
        for (text, line, words) in cases {
            let (at, said) = problem(&text);
            assert_eq!(at, line, "{text:?}: {said}");
            assert!(said.contains(words), "{text:?}: {said:?} does not say {words:?}");
        }
    }

    #[test]
    fn a_line_past_the_limit_is_not_read_whole() {
        let mut text = b"{\"snapshot\":{\"version\":1}}\n{\"queue\":{\"name\":\"".to_vec();
        text.resize(text.len() + MAX_LINE_BYTES + 10, b'a');
        let Err(error) = read(&text[..], &DEFAULTS) else {
            panic!("a line past the limit was read");
        };
        assert_eq!(error.line, 2);
        assert!(matches!(error.problem, Problem::TooLong));
    }

    /// A snapshot with one queue line (`queue`, its JSON fields) and the
    /// messages given, as a file would hold it.
    fn file_with(queue: &str, messages: &[&str]) -> String {
        let mut text =
            format!("{{\"snapshot\":{{\"version\":1}}}}\n{{\"queue\":{{\"name\":\"q\"{queue}}}}}\n");
        for message in messages {
            text.push_str(&format!("{{\"message\":{{\"body\":\"x\"{message}}}}}\n"));
        }
        text.push_str(&format!(
            "{{\"end\":{{\"queues\":1,\"messages\":{}}}}}\n",
            messages.len()
        ));
        text
    }

    #[test]
    fn sequence_numbers_a_queue_cannot_go_on_from_are_refused_naming_the_line() {
        let past = MAX_SEQUENCE + 1;
        let (at_past, at_highest) = (
            format!(r#","sequence_number":{past}"#),
            format!(r#","sequence_number":{MAX_SEQUENCE}"#),
        );
        let next_max = format!(r#","next_sequence_number":{}"#, u64::MAX);
        let cases: [(&str, Vec<&str>, usize, &str); 5] = [
            ("", vec![r#","sequence_number":0"#], 3, "start at 1"),
            ("", vec![&at_past], 3, "past the highest"),
            ("", vec![&at_highest, ""], 4, "past the highest"),
            (&next_max, vec![], 2, "next_sequence_number"),
            (r#","next_sequence_number":0"#, vec![], 2, "next_sequence_number"),
        ];
        for (queue, messages, line, said) in cases {
            let text = file_with(queue, &messages);
            let Err(error) = read(text.as_bytes(), &DEFAULTS) else {
                panic!("read: {text}");
            };
            assert_eq!(error.line, line, "{text}: {error}");
            assert!(error.to_string().contains(said), "{text}: {error}");
        }
        // The highest number itself is taken, and the queue goes on: its
        // sends are refused, not wrapped.
        let text = file_with(
            &format!(r#","next_sequence_number":{past}"#),
            &[&format!(r#","sequence_number":{MAX_SEQUENCE}"#)],
        );
        let mut queue = read(text.as_bytes(), &DEFAULTS).unwrap().queues.remove(0);
        assert_eq!(queue.messages_after(0, usize::MAX, u64::MAX)[0].seq, MAX_SEQUENCE);
        let refused = queue.send(NewMessage::plain("more"), 6_000).unwrap_err();
        assert!(
            refused.message.contains("every sequence number"),
            "{}",
            refused.message
        );
        assert_eq!(queue.holding().0, 1);
    }

    #[test]
    fn the_first_sequence_number_is_exported_and_imported_again() {
        let text = file_with("", &[r#","sequence_number":1"#, ""]);
        let queue = read(text.as_bytes(), &DEFAULTS).unwrap().queues.remove(0);
        let again = export(&[&queue]);
        let seqs: Vec<u64> = read(&again[..], &DEFAULTS).unwrap().queues[0]
            .messages_after(0, usize::MAX, u64::MAX)
            .iter()
            .map(|m| m.seq)
            .collect();
        assert_eq!(seqs, [1, 2]);
    }

    /// A queue in a state drawn by `rng`: standard or FIFO, in this region
    /// or another, its messages in every state, with sequence numbers from
    /// the first to the highest a queue may hold.
    fn drawn_queue(rng: &mut rand::rngs::StdRng, n: usize) -> Queue {
        use rand::Rng;
        let fifo = rng.gen_bool(0.5);
        let name = format!("q{n}{}", if fifo { ".fifo" } else { "" });
        let mut attributes = BTreeMap::new();
        if fifo {
            attributes.insert("FifoQueue".to_string(), "true".to_string());
            if rng.gen_bool(0.5) {
                attributes.insert("ContentBasedDeduplication".to_string(), "true".to_string());
            }
        }
        attributes.insert(
            "VisibilityTimeout".to_string(),
            rng.gen_range(0..=43_200).to_string(),
        );
        let key = match rng.gen_bool(0.3) {
            true => format!("eu-west-1/{name}"),
            false => name.clone(),
        };
        let created_at = rng.gen_range(0..2_000_000_000_000);
        let meta = QueueMeta {
            name: key,
            dedup_scope: crate::queue::attributes::DeduplicationScope::Queue,
            attributes: QueueAttributes::for_new_queue(&name, &attributes).unwrap(),
            tags: (0..rng.gen_range(0..3))
                .map(|t| (format!("t{t}"), format!("v{}", rng.r#gen::<u16>())))
                .collect(),
            created_at,
            last_modified_at: created_at + rng.gen_range(0..1_000),
            last_purge_at: None,
            move_tasks: Vec::new(),
        };
        let count = rng.gen_range(0..12);
        let mut seq = match rng.gen_range(0..3) {
            0 => 1,
            1 => MAX_SEQUENCE - rng.gen_range(0..count as u64 * 3 + 1).min(MAX_SEQUENCE - 1),
            _ => rng.gen_range(1..1 << 40),
        };
        let texts = [
            "plain",
            "ünïcödé",
            "中文",
            "emoji 😀",
            "tab\tnew\nline",
            "<xml & \"quotes\">",
        ];
        let mut messages = Vec::new();
        for m in 0..count {
            if m > 0 {
                seq += rng.gen_range(1..4);
            }
            if seq > MAX_SEQUENCE {
                break;
            }
            let sent_at = rng.gen_range(1..4_000_000_000_000);
            let receive_count = if rng.gen_bool(0.5) { 0 } else { rng.gen_range(1..5) };
            let state = match (rng.gen_range(0..3), receive_count) {
                (0, _) | (1, 1..) => MessageState::Visible {
                    since: sent_at + rng.gen_range(0..9),
                },
                (1, 0) => MessageState::Delayed {
                    until: sent_at + rng.gen_range(1..900_000),
                },
                (_, 0) => MessageState::Visible { since: sent_at },
                _ => MessageState::InFlight {
                    until: sent_at + rng.gen_range(1..43_200_000),
                    received_at: sent_at,
                },
            };
            let mut message_attributes = MessageAttributes::new();
            if rng.gen_bool(0.4) {
                message_attributes.insert(
                    "n".into(),
                    MessageAttribute {
                        data_type: "Number.int".into(),
                        value: AttributeValue::String(rng.r#gen::<i32>().to_string()),
                    },
                );
                message_attributes.insert(
                    "b".into(),
                    MessageAttribute {
                        data_type: "Binary".into(),
                        value: AttributeValue::Binary(
                            (0..rng.gen_range(1..8)).map(|_| rng.r#gen()).collect(),
                        ),
                    },
                );
            }
            let body = texts[rng.gen_range(0..texts.len())].repeat(rng.gen_range(1..4));
            let group =
                (fifo || rng.gen_bool(0.3)).then(|| Arc::<str>::from(format!("g{}", rng.gen_range(0..3))));
            messages.push(Message {
                seq,
                id: crate::queue::random::uuid(),
                md5_of_body: message::md5_of_body(&body),
                body: body.into(),
                attributes: Arc::new(message_attributes),
                sender_id: "AIDAEXAMPLE".into(),
                trace_header: rng
                    .gen_bool(0.2)
                    .then(|| "Root=1-5759e988-bd862e3fe1be46a994272793".into()),
                group_id: group,
                dedup_id: fifo.then(|| format!("d{seq}").into()),
                dead_letter_source: rng
                    .gen_bool(0.2)
                    .then(|| "arn:aws:sqs:us-east-1:000000000000:source".into()),
                sent_at,
                receive_count,
                first_received_at: (receive_count > 0).then_some(sent_at + 1),
                receipt_key: (receive_count > 0 && rng.gen_bool(0.8)).then(|| rng.r#gen()),
                state,
            });
        }
        let last = messages.last().map_or(0, |m: &Message| m.seq);
        let next = match rng.gen_bool(0.5) {
            true => last + 1,
            false => rng.gen_range(last + 1..=MAX_SEQUENCE + 1),
        };
        Queue::restore(meta, next, messages, [])
    }

    /// Property: a snapshot of any state the queues can hold, imported and
    /// exported again, gives the same file.
    #[test]
    fn export_import_export_gives_the_same_file_for_drawn_states() {
        use rand::SeedableRng;
        for seed in 0..400 {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let queues: Vec<Queue> = (0..1 + seed as usize % 3)
                .map(|n| drawn_queue(&mut rng, n))
                .collect();
            let first = export(&queues.iter().collect::<Vec<_>>());
            let imported = read(&first[..], &DEFAULTS)
                .unwrap_or_else(|error| panic!("seed {seed}: {error}\n{}", String::from_utf8_lossy(&first)))
                .queues;
            let second = export(&imported.iter().collect::<Vec<_>>());
            assert_eq!(
                String::from_utf8_lossy(&second),
                String::from_utf8_lossy(&first),
                "seed {seed}"
            );
        }
    }
}
