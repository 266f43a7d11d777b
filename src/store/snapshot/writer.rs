//! Writing a snapshot ([`Writer`]): its lines in order, each bounded by the
//! largest object it carries, and the end line that counts them.

use std::borrow::Cow;
use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;

use super::{
    ArchivedLine, AttributeLine, EndLine, Header, Line, MessageLine, QueueLine, StateLine, SubscriptionLine,
    TopicLine, VERSION,
};
use crate::queue::key::{self, Home};
use crate::queue::message::MessageState;
use crate::queue::{AttributeValue, Message, QueueMeta};
use crate::topic::archive::Archived;
use crate::topic::{SubscriptionSnapshot, TopicSnapshot};

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
