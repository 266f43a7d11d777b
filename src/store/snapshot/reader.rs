//! Reading a snapshot ([`read`]) whole: each line checked as the API
//! checks what it carries (CreateQueue, SendMessage, CreateTopic,
//! Subscribe), and the end line's counts against what was read; any line
//! wrong refuses the whole file, naming the line.

use std::collections::HashSet;
use std::io::BufRead;
use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;

use super::{
    Counted, Line, MAX_LINE_BYTES, MessageLine, MessageProblem, OLDEST, Problem, QueueLine, SnapshotError,
    StateLine, SubscriptionLine, TopicLine, VERSION,
};
use crate::queue::key::Home;
use crate::queue::limits::MAX_SEQUENCE;
use crate::queue::message::{self, MessageState};
use crate::queue::{
    AttributeValue, Message, MessageAttribute, MessageAttributes, Queue, QueueAttributes, QueueMeta, key,
};
use crate::topic::{Protocol, SnsError, SubscriptionSnapshot, TopicArn, TopicSnapshot};

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
    pub(super) fn home(&self) -> Home {
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
