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

mod reader;
mod writer;

pub use self::reader::{Defaults, Snapshot, read};
pub use self::writer::Writer;

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::queue::limits::MAX_SEQUENCE;
use crate::topic::archive::{Archived, ArchivedAttribute};

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

#[cfg(test)]
mod tests;
