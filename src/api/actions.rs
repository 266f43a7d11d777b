//! One function per SQS action: check the request the way SQS does, call the
//! service, and shape the answer.

use std::collections::{BTreeMap, HashSet};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;

use super::RequestContext;
use super::model::*;
use crate::error::{ErrorCode, Result, SqsError};
use crate::queue::attributes::{self, READ_ONLY, SETTABLE};
use crate::queue::limits::{MAX_DELAY_SECONDS, MAX_VISIBILITY_TIMEOUT_SECONDS};
use crate::queue::message::{self, hex};
use crate::queue::{
    AttributeValue, MessageAttribute, MessageAttributes, NewMessage, ReceiptHandle, Received,
};
use crate::service::{ReceiveRequest, Service};

/// A batch may hold at most this many entries.
const MAX_BATCH_ENTRIES: usize = 10;
/// The payload of a SendMessageBatch (bodies and attributes) may not exceed 1 MiB.
const MAX_BATCH_PAYLOAD: usize = 1_048_576;
/// ListQueues answers at most this many URLs.
const MAX_LIST_RESULTS: usize = 1_000;

/// System attributes a receive may ask for. The FIFO and dead-letter ones are
/// accepted and returned where they apply.
const SYSTEM_ATTRIBUTES: &[&str] = &[
    "All",
    "ApproximateFirstReceiveTimestamp",
    "ApproximateReceiveCount",
    "AWSTraceHeader",
    "DeadLetterQueueSourceArn",
    "MessageDeduplicationId",
    "MessageGroupId",
    "SenderId",
    "SentTimestamp",
    "SequenceNumber",
];

fn required<T>(value: Option<T>, name: &str) -> Result<T> {
    value.ok_or_else(|| SqsError::missing_parameter(name))
}

/// Checks an integer parameter against its range, as SQS words it.
fn in_range(value: i64, name: &str, min: i64, max: i64) -> Result<u32> {
    if (min..=max).contains(&value) {
        Ok(value as u32)
    } else {
        Err(SqsError::invalid_parameter(format!(
            "Value {value} for parameter {name} is invalid. Reason: Must be between {min} and {max}, if provided."
        )))
    }
}

pub(super) async fn create_queue(
    svc: &Service,
    ctx: &RequestContext,
    input: CreateQueueInput,
) -> Result<QueueUrlOutput> {
    let name = required(input.queue_name, "QueueName")?;
    check_redrive_target(
        svc,
        ctx,
        &name,
        input.attributes.as_ref().unwrap_or(&StringMap::new()),
    )
    .await?;
    svc.create_queue(
        &name,
        &input.attributes.unwrap_or_default(),
        input.tags.unwrap_or_default(),
    )
    .await?;
    Ok(QueueUrlOutput {
        queue_url: ctx.queue_url(&name),
    })
}

pub(super) async fn delete_queue(svc: &Service, ctx: &RequestContext, input: QueueUrlInput) -> Result<Empty> {
    svc.delete_queue(&ctx.queue_name(input.queue_url.as_deref())?)
        .await?;
    Ok(Empty {})
}

pub(super) fn get_queue_url(
    svc: &Service,
    ctx: &RequestContext,
    input: GetQueueUrlInput,
) -> Result<QueueUrlOutput> {
    let name = required(input.queue_name, "QueueName")?;
    let ours = input
        .queue_owner_aws_account_id
        .is_none_or(|account| account == ctx.account_id);
    if !ours || !svc.queue_exists(&name) {
        return Err(SqsError::queue_does_not_exist());
    }
    Ok(QueueUrlOutput {
        queue_url: ctx.queue_url(&name),
    })
}

pub(super) fn list_queues(
    svc: &Service,
    ctx: &RequestContext,
    input: ListQueuesInput,
) -> Result<ListQueuesOutput> {
    let prefix = input.queue_name_prefix.unwrap_or_default();
    let page = Page::parse(input.max_results, input.next_token.as_deref())?;
    // One more than the page holds tells whether another page follows.
    let names = svc.queue_names(&prefix, page.after.as_deref(), page.limit + 1);
    let (names, next_token) = page.cut(names);
    Ok(ListQueuesOutput {
        queue_urls: names.iter().map(|n| ctx.queue_url(n)).collect(),
        next_token,
    })
}

/// MaxResults and NextToken of the listing actions.
struct Page {
    limit: usize,
    /// The last name of the previous page.
    after: Option<String>,
    /// Whether the caller asked for pages (only then is a NextToken given).
    paged: bool,
}

impl Page {
    fn parse(max_results: Option<i64>, next_token: Option<&str>) -> Result<Page> {
        let limit = match max_results {
            Some(n) => in_range(n, "MaxResults", 1, MAX_LIST_RESULTS as i64)? as usize,
            None => MAX_LIST_RESULTS,
        };
        let after = next_token.map(decode_token).transpose()?;
        Ok(Page {
            limit,
            after,
            paged: max_results.is_some(),
        })
    }

    /// Cuts names in order, all after `after`, to the page, with the token
    /// for the next page if more follow.
    fn cut(&self, mut names: Vec<String>) -> (Vec<String>, Option<String>) {
        let more = names.len() > self.limit;
        names.truncate(self.limit);
        let token = (more && self.paged)
            .then(|| names.last().map(|last| BASE64.encode(last)))
            .flatten();
        (names, token)
    }
}

fn decode_token(token: &str) -> Result<String> {
    BASE64
        .decode(token)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or_else(|| {
            SqsError::invalid_parameter(
                "Invalid NextToken value: pass the token a previous ListQueues returned.",
            )
        })
}

pub(super) async fn get_queue_attributes(
    svc: &Service,
    ctx: &RequestContext,
    input: GetQueueAttributesInput,
) -> Result<AttributesOutput> {
    let name = ctx.queue_name(input.queue_url.as_deref())?;
    let requested = input.attribute_names.unwrap_or_default();
    for attribute in &requested {
        attributes::check_readable(attribute)?;
    }
    let all = requested.iter().any(|n| n == "All");
    let wanted = |n: &str| all || requested.iter().any(|r| r == n);
    let arn = ctx.queue_arn(&name);
    svc.with_queue(&name, |queue, now| {
        let counts = queue.counts(now);
        let mut out = StringMap::new();
        for &attribute in SETTABLE.iter().chain(READ_ONLY) {
            if !wanted(attribute) {
                continue;
            }
            let value = match attribute {
                "ApproximateNumberOfMessages" => Some(counts.visible.to_string()),
                "ApproximateNumberOfMessagesDelayed" => Some(counts.delayed.to_string()),
                "ApproximateNumberOfMessagesNotVisible" => Some(counts.in_flight.to_string()),
                "CreatedTimestamp" => Some((queue.created_at / 1000).to_string()),
                "LastModifiedTimestamp" => Some((queue.last_modified_at / 1000).to_string()),
                "QueueArn" => Some(arn.clone()),
                settable => queue.attributes.get(settable),
            };
            if let Some(value) = value {
                out.insert(attribute.to_string(), value);
            }
        }
        AttributesOutput { attributes: out }
    })
    .await
}

pub(super) async fn set_queue_attributes(
    svc: &Service,
    ctx: &RequestContext,
    input: SetQueueAttributesInput,
) -> Result<Empty> {
    let name = ctx.queue_name(input.queue_url.as_deref())?;
    let changes = required(input.attributes, "Attributes")?;
    check_redrive_target(svc, ctx, &name, &changes).await?;
    svc.with_queue(&name, |queue, now| queue.set_attributes(&changes, now))
        .await??;
    Ok(Empty {})
}

pub(super) async fn purge_queue(svc: &Service, ctx: &RequestContext, input: QueueUrlInput) -> Result<Empty> {
    let name = ctx.queue_name(input.queue_url.as_deref())?;
    svc.with_queue(&name, |queue, now| queue.purge(now)).await??;
    Ok(Empty {})
}

pub(super) async fn tag_queue(svc: &Service, ctx: &RequestContext, input: TagQueueInput) -> Result<Empty> {
    let name = ctx.queue_name(input.queue_url.as_deref())?;
    let new = required(input.tags, "Tags")?;
    svc.with_queue(&name, |queue, _| queue.tag(new)).await??;
    Ok(Empty {})
}

pub(super) async fn untag_queue(
    svc: &Service,
    ctx: &RequestContext,
    input: UntagQueueInput,
) -> Result<Empty> {
    let name = ctx.queue_name(input.queue_url.as_deref())?;
    let keys = required(input.tag_keys, "TagKeys")?;
    svc.with_queue(&name, |queue, _| queue.untag(&keys)).await?;
    Ok(Empty {})
}

pub(super) async fn list_queue_tags(
    svc: &Service,
    ctx: &RequestContext,
    input: QueueUrlInput,
) -> Result<TagsOutput> {
    let name = ctx.queue_name(input.queue_url.as_deref())?;
    svc.with_queue(&name, |queue, _| TagsOutput {
        tags: queue.tags.clone(),
    })
    .await
}

/// Turns the wire form of a message into the core's, checking what the
/// core cannot see (wire encodings, parameters of other queue types).
fn new_message(ctx: &RequestContext, fields: SendMessageFields) -> Result<(NewMessage, usize)> {
    let body = required(fields.message_body, "MessageBody")?;
    let delay_seconds = match fields.delay_seconds {
        Some(delay) => Some(in_range(delay, "DelaySeconds", 0, MAX_DELAY_SECONDS.into())?),
        None => None,
    };
    let attributes = message_attributes_from_wire(fields.message_attributes.unwrap_or_default())?;
    let trace_header = trace_header_from_wire(fields.message_system_attributes.unwrap_or_default())?;
    let payload = body.len() + message::attributes_size(&attributes);
    let message = NewMessage {
        body,
        attributes,
        delay_seconds,
        sender_id: ctx.sender_id.clone(),
        trace_header,
        group_id: fields.message_group_id,
        dedup_id: fields.message_deduplication_id,
    };
    Ok((message, payload))
}

fn message_attributes_from_wire(wire: MessageAttributeMap) -> Result<MessageAttributes> {
    wire.into_iter()
        .map(|(name, value)| {
            let data_type = value.data_type.ok_or_else(|| {
                SqsError::invalid_parameter(format!("The message attribute '{name}' must contain a non-empty attribute type."))
            })?;
            let lists_used = value.string_list_values.is_some_and(|l| !l.is_empty())
                || value.binary_list_values.is_some_and(|l| !l.is_empty());
            if lists_used {
                return Err(SqsError::invalid_parameter(format!(
                    "The message attribute '{name}' uses StringListValues or BinaryListValues, which SQS reserves and does not support."
                )));
            }
            let value = match (value.string_value, value.binary_value) {
                (Some(s), None) => AttributeValue::String(s),
                (None, Some(b)) => AttributeValue::Binary(BASE64.decode(b).map_err(|_| {
                    SqsError::invalid_parameter(format!("The BinaryValue of message attribute '{name}' is not valid base64."))
                })?),
                (None, None) => {
                    return Err(SqsError::invalid_parameter(format!(
                        "The message attribute '{name}' must contain a non-empty message attribute value."
                    )));
                }
                (Some(_), Some(_)) => {
                    return Err(SqsError::invalid_parameter(format!(
                        "The message attribute '{name}' must have either a StringValue or a BinaryValue, not both."
                    )));
                }
            };
            Ok((name, MessageAttribute { data_type, value }))
        })
        .collect()
}

/// The only message system attribute SQS defines is AWSTraceHeader (String).
fn trace_header_from_wire(wire: MessageAttributeMap) -> Result<Option<String>> {
    let mut trace_header = None;
    for (name, value) in wire {
        match (name.as_str(), value.data_type.as_deref(), value.string_value) {
            ("AWSTraceHeader", Some("String"), Some(header)) if !header.is_empty() => {
                trace_header = Some(header)
            }
            ("AWSTraceHeader", ..) => {
                return Err(SqsError::invalid_parameter(
                    "The message system attribute AWSTraceHeader must be of type String with a non-empty StringValue.",
                ));
            }
            _ => {
                return Err(SqsError::invalid_parameter(format!(
                    "Message system attribute name '{name}' is invalid: the only supported one is AWSTraceHeader."
                )));
            }
        }
    }
    Ok(trace_header)
}

/// FIFO sequence numbers: zero-padded so that text order is number order.
fn sequence_number(seq: u64) -> String {
    format!("{seq:020}")
}

fn sent_output(sent: crate::queue::Sent) -> SendMessageOutput {
    SendMessageOutput {
        message_id: sent.message_id.to_string(),
        md5_of_message_body: hex(&sent.md5_of_body),
        md5_of_message_attributes: sent.md5_of_attributes.as_ref().map(hex),
        md5_of_message_system_attributes: sent.md5_of_system_attributes.as_ref().map(hex),
        sequence_number: sent.sequence_number.map(sequence_number),
    }
}

pub(super) async fn send_message(
    svc: &Service,
    ctx: &RequestContext,
    input: SendMessageInput,
) -> Result<SendMessageOutput> {
    let name = ctx.queue_name(input.queue_url.as_deref())?;
    let (message, _) = new_message(ctx, input.message)?;
    let mut results = svc.send(&name, vec![message]).await?;
    Ok(sent_output(results.pop().expect("one result per message")?))
}

/// Checks the batch rules common to every batch action and returns the
/// entries with their ids.
fn check_batch<E>(
    entries: Option<Vec<E>>,
    id: impl Fn(&E) -> Option<&String>,
    entry_kind: &str,
) -> Result<Vec<(String, E)>> {
    let entries = entries.unwrap_or_default();
    if entries.is_empty() {
        return Err(SqsError::new(
            ErrorCode::EmptyBatchRequest,
            format!("There should be at least one {entry_kind} in the request."),
        ));
    }
    if entries.len() > MAX_BATCH_ENTRIES {
        return Err(SqsError::new(
            ErrorCode::TooManyEntriesInBatchRequest,
            format!(
                "Maximum number of entries per request are {MAX_BATCH_ENTRIES}. You have sent {}.",
                entries.len()
            ),
        ));
    }
    let mut seen = HashSet::new();
    entries
        .into_iter()
        .map(|entry| {
            let entry_id = id(&entry).cloned().ok_or_else(|| SqsError::missing_parameter("Id"))?;
            let valid = (1..=80).contains(&entry_id.len())
                && entry_id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
            if !valid {
                return Err(SqsError::new(
                    ErrorCode::InvalidBatchEntryId,
                    "A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long.",
                ));
            }
            if !seen.insert(entry_id.clone()) {
                return Err(SqsError::new(
                    ErrorCode::BatchEntryIdsNotDistinct,
                    format!("Id {entry_id} repeated."),
                ));
            }
            Ok((entry_id, entry))
        })
        .collect()
}

/// Splits per-entry outcomes into SQS's Successful and Failed lists.
fn batch_output<S>(results: impl IntoIterator<Item = (String, Result<S>)>) -> BatchOutput<S> {
    let mut output = BatchOutput {
        successful: Vec::new(),
        failed: Vec::new(),
    };
    for (id, result) in results {
        match result {
            Ok(success) => output.successful.push(success),
            Err(error) => output.failed.push(BatchResultErrorEntry {
                id,
                sender_fault: error.code.is_sender_fault(),
                code: error.code.code().to_string(),
                message: error.message,
            }),
        }
    }
    output
}

pub(super) async fn send_message_batch(
    svc: &Service,
    ctx: &RequestContext,
    input: BatchInput<SendMessageBatchEntry>,
) -> Result<BatchOutput<SendMessageBatchResultEntry>> {
    let name = ctx.queue_name(input.queue_url.as_deref())?;
    let entries = check_batch(input.entries, |e| e.id.as_ref(), "SendMessageBatchRequestEntry")?;
    let mut payload = 0;
    let mut results = Vec::with_capacity(entries.len());
    let mut to_send = Vec::new();
    for (id, entry) in entries {
        match new_message(ctx, entry.message) {
            Ok((message, size)) => {
                payload += size;
                results.push((id, None));
                to_send.push(message);
            }
            Err(error) => results.push((id, Some(Err(error)))),
        }
    }
    if payload > MAX_BATCH_PAYLOAD {
        return Err(SqsError::new(
            ErrorCode::BatchRequestTooLong,
            format!(
                "Batch requests cannot be longer than {MAX_BATCH_PAYLOAD} bytes. You have sent {payload} bytes."
            ),
        ));
    }
    let mut sent = svc.send(&name, to_send).await?.into_iter();
    Ok(batch_output(results.into_iter().map(|(id, early)| {
        let outcome = early.unwrap_or_else(|| sent.next().expect("one result per message sent"));
        let result = outcome.map(|s| SendMessageBatchResultEntry {
            id: id.clone(),
            result: sent_output(s),
        });
        (id, result)
    })))
}

pub(super) async fn receive_message(
    svc: &Service,
    ctx: &RequestContext,
    input: ReceiveMessageInput,
) -> Result<ReceiveMessageOutput> {
    let name = ctx.queue_name(input.queue_url.as_deref())?;
    let max = in_range(
        input.max_number_of_messages.unwrap_or(1),
        "MaxNumberOfMessages",
        1,
        10,
    )?;
    let visibility = input
        .visibility_timeout
        .map(|v| in_range(v, "VisibilityTimeout", 0, MAX_VISIBILITY_TIMEOUT_SECONDS.into()))
        .transpose()?;
    let wait = input
        .wait_time_seconds
        .map(|w| in_range(w, "WaitTimeSeconds", 0, 20))
        .transpose()?;
    let system_names: Vec<String> = input
        .attribute_names
        .into_iter()
        .chain(input.message_system_attribute_names)
        .flatten()
        .collect();
    if let Some(unknown) = system_names
        .iter()
        .find(|n| !SYSTEM_ATTRIBUTES.contains(&n.as_str()))
    {
        return Err(attributes::unknown_attribute(unknown));
    }
    let attribute_filter = input.message_attribute_names.unwrap_or_default();
    let request = ReceiveRequest {
        max: max as usize,
        visibility_timeout: visibility,
        wait_seconds: wait,
        attempt_id: input.receive_request_attempt_id.as_deref(),
    };
    if let Some(id) = request.attempt_id {
        message::validate_fifo_id("ReceiveRequestAttemptId", id)?;
    }
    let received = svc.receive(&name, request).await?;
    let messages = received
        .into_iter()
        .map(|r| received_message(r, &system_names, &attribute_filter))
        .collect();
    Ok(ReceiveMessageOutput { messages })
}

fn received_message(
    received: Received,
    system_names: &[String],
    attribute_filter: &[String],
) -> ReceivedMessage {
    let m = &received.message;
    let wants = |n: &str| system_names.iter().any(|s| s == "All" || s == n);
    let mut system = StringMap::new();
    if wants("SenderId") {
        system.insert("SenderId".into(), m.sender_id.to_string());
    }
    if wants("SentTimestamp") {
        system.insert("SentTimestamp".into(), m.sent_at.to_string());
    }
    if wants("ApproximateReceiveCount") {
        system.insert("ApproximateReceiveCount".into(), m.receive_count.to_string());
    }
    if wants("ApproximateFirstReceiveTimestamp")
        && let Some(first) = m.first_received_at
    {
        system.insert("ApproximateFirstReceiveTimestamp".into(), first.to_string());
    }
    let optional = [
        ("AWSTraceHeader", m.trace_header.as_deref().map(str::to_string)),
        ("MessageGroupId", m.group_id.as_deref().map(str::to_string)),
        (
            "MessageDeduplicationId",
            m.dedup_id.as_deref().map(str::to_string),
        ),
        // Every FIFO message has a deduplication id; standard ones never do.
        (
            "SequenceNumber",
            m.dedup_id.is_some().then(|| sequence_number(m.seq)),
        ),
        (
            "DeadLetterQueueSourceArn",
            m.dead_letter_source.as_deref().map(str::to_string),
        ),
    ];
    for (name, value) in optional {
        if let Some(value) = value.filter(|_| wants(name)) {
            system.insert(name.into(), value);
        }
    }
    let selected: BTreeMap<&String, &MessageAttribute> = m
        .attributes
        .iter()
        .filter(|(name, _)| attribute_selected(name, attribute_filter))
        .collect();
    let md5_of_message_attributes = (!selected.is_empty()).then(|| {
        hex(&message::md5_of_attributes(
            selected.iter().map(|(n, a)| (*n, *a)),
        ))
    });
    let message_attributes = selected
        .into_iter()
        .map(|(name, attribute)| (name.clone(), attribute_to_wire(attribute)))
        .collect();
    ReceivedMessage {
        message_id: m.id.to_string(),
        receipt_handle: received.receipt_handle.encode(),
        md5_of_body: hex(&m.md5_of_body),
        body: m.body.clone(),
        attributes: system,
        md5_of_message_attributes,
        message_attributes,
    }
}

/// MessageAttributeNames: `All` or `.*`, exact names, or `prefix.*`.
fn attribute_selected(name: &str, filter: &[String]) -> bool {
    filter.iter().any(|f| {
        f == "All"
            || f == ".*"
            || f == name
            || f.strip_suffix(".*").is_some_and(|prefix| {
                name.strip_prefix(prefix)
                    .is_some_and(|rest| rest.starts_with('.'))
            })
    })
}

fn attribute_to_wire(attribute: &MessageAttribute) -> MessageAttributeValue {
    let (string_value, binary_value) = match &attribute.value {
        AttributeValue::String(s) => (Some(s.clone()), None),
        AttributeValue::Binary(b) => (None, Some(BASE64.encode(b))),
    };
    MessageAttributeValue {
        data_type: Some(attribute.data_type.clone()),
        string_value,
        binary_value,
        ..Default::default()
    }
}

pub(super) async fn delete_message(
    svc: &Service,
    ctx: &RequestContext,
    input: DeleteMessageInput,
) -> Result<Empty> {
    let name = ctx.queue_name(input.queue_url.as_deref())?;
    let handle = ReceiptHandle::decode(&required(input.receipt_handle, "ReceiptHandle")?)?;
    if svc
        .with_queue(&name, |queue, now| queue.delete(handle, now))
        .await?
    {
        svc.metrics.messages_deleted.inc();
    }
    Ok(Empty {})
}

pub(super) async fn delete_message_batch(
    svc: &Service,
    ctx: &RequestContext,
    input: BatchInput<DeleteMessageBatchEntry>,
) -> Result<BatchOutput<BatchResultEntry>> {
    let name = ctx.queue_name(input.queue_url.as_deref())?;
    let entries = check_batch(input.entries, |e| e.id.as_ref(), "DeleteMessageBatchRequestEntry")?;
    let results = svc
        .with_queue(&name, |queue, now| {
            entries
                .into_iter()
                .map(|(id, entry)| {
                    let result = required(entry.receipt_handle, "ReceiptHandle")
                        .and_then(|text| ReceiptHandle::decode(&text))
                        .map(|handle| {
                            if queue.delete(handle, now) {
                                svc.metrics.messages_deleted.inc();
                            }
                            BatchResultEntry { id: id.clone() }
                        });
                    (id, result)
                })
                .collect::<Vec<_>>()
        })
        .await?;
    Ok(batch_output(results))
}

pub(super) async fn change_message_visibility(
    svc: &Service,
    ctx: &RequestContext,
    input: ChangeMessageVisibilityInput,
) -> Result<Empty> {
    let name = ctx.queue_name(input.queue_url.as_deref())?;
    let handle = ReceiptHandle::decode(&required(input.receipt_handle, "ReceiptHandle")?)?;
    let timeout = in_range(
        required(input.visibility_timeout, "VisibilityTimeout")?,
        "VisibilityTimeout",
        0,
        MAX_VISIBILITY_TIMEOUT_SECONDS.into(),
    )?;
    svc.with_queue(&name, |queue, now| queue.change_visibility(handle, timeout, now))
        .await??;
    Ok(Empty {})
}

pub(super) async fn change_message_visibility_batch(
    svc: &Service,
    ctx: &RequestContext,
    input: BatchInput<ChangeMessageVisibilityBatchEntry>,
) -> Result<BatchOutput<BatchResultEntry>> {
    let name = ctx.queue_name(input.queue_url.as_deref())?;
    let entries = check_batch(
        input.entries,
        |e| e.id.as_ref(),
        "ChangeMessageVisibilityBatchRequestEntry",
    )?;
    let results = svc
        .with_queue(&name, |queue, now| {
            entries
                .into_iter()
                .map(|(id, entry)| {
                    let result = (|| {
                        let handle =
                            ReceiptHandle::decode(&required(entry.receipt_handle, "ReceiptHandle")?)?;
                        let timeout = in_range(
                            required(entry.visibility_timeout, "VisibilityTimeout")?,
                            "VisibilityTimeout",
                            0,
                            MAX_VISIBILITY_TIMEOUT_SECONDS.into(),
                        )?;
                        queue.change_visibility(handle, timeout, now)?;
                        Ok(BatchResultEntry { id: id.clone() })
                    })();
                    (id, result)
                })
                .collect::<Vec<_>>()
        })
        .await?;
    Ok(batch_output(results))
}

/// A RedrivePolicy may only name an existing queue of the same type (FIFO
/// or standard) whose RedriveAllowPolicy lets this queue in.
async fn check_redrive_target(
    svc: &Service,
    ctx: &RequestContext,
    source: &str,
    attributes: &StringMap,
) -> Result<()> {
    let Some(value) = attributes.get("RedrivePolicy").filter(|v| !v.is_empty()) else {
        return Ok(());
    };
    let mut probe = crate::queue::QueueAttributes::default();
    probe.set("RedrivePolicy", value)?;
    let policy = probe.redrive_policy.expect("a non-empty policy parses to Some");
    let invalid = |why: &str| {
        SqsError::new(
            ErrorCode::InvalidParameterValue,
            format!("Value {value} for parameter RedrivePolicy is invalid. Reason: {why}"),
        )
    };
    if policy.dead_letter_target_arn != ctx.queue_arn(policy.target_name()) {
        return Err(invalid(
            "Dead-letter target does not exist (it must be a queue of this account and region).",
        ));
    }
    let (target_fifo, allow_policy) = svc
        .with_queue(policy.target_name(), |q, _| {
            (q.is_fifo(), q.attributes.redrive_allow_policy.clone())
        })
        .await
        .map_err(|_| invalid("Dead-letter target does not exist."))?;
    if target_fifo != source.ends_with(".fifo") {
        return Err(invalid(
            "The dead-letter queue of a FIFO queue must be a FIFO queue, and of a standard queue a standard queue.",
        ));
    }
    if !attributes::redrive_allowed(allow_policy.as_deref(), &ctx.queue_arn(source)) {
        return Err(invalid(
            "The dead-letter queue's RedriveAllowPolicy does not allow this queue as a source.",
        ));
    }
    Ok(())
}

pub(super) async fn list_dead_letter_source_queues(
    svc: &Service,
    ctx: &RequestContext,
    input: ListDeadLetterSourceQueuesInput,
) -> Result<ListDeadLetterSourceQueuesOutput> {
    let name = ctx.queue_name(input.queue_url.as_deref())?;
    if !svc.queue_exists(&name) {
        return Err(SqsError::queue_does_not_exist());
    }
    let arn = ctx.queue_arn(&name);
    let sources = svc.queues_where(|q| {
        q.attributes
            .redrive_policy
            .as_ref()
            .is_some_and(|p| p.dead_letter_target_arn == arn)
    });
    let page = Page::parse(input.max_results, input.next_token.as_deref())?;
    let after = page.after.clone();
    let (names, next_token) = page.cut(
        sources
            .into_iter()
            .filter(|n| after.as_ref().is_none_or(|a| n > a))
            .collect(),
    );
    Ok(ListDeadLetterSourceQueuesOutput {
        queue_urls: names.iter().map(|n| ctx.queue_url(n)).collect(),
        next_token,
    })
}

/// SQS actions a permission may grant (AddPermission's ActionName).
const PERMISSION_ACTIONS: &[&str] = &[
    "*",
    "ChangeMessageVisibility",
    "DeleteMessage",
    "GetQueueAttributes",
    "GetQueueUrl",
    "ListDeadLetterSourceQueues",
    "ListMessageMoveTasks",
    "ListQueueTags",
    "PurgeQueue",
    "ReceiveMessage",
    "SendMessage",
    "StartMessageMoveTask",
    "CancelMessageMoveTask",
];

pub(super) async fn add_permission(
    svc: &Service,
    ctx: &RequestContext,
    input: AddPermissionInput,
) -> Result<Empty> {
    let name = ctx.queue_name(input.queue_url.as_deref())?;
    let label = required(input.label, "Label")?;
    let valid_label = (1..=80).contains(&label.len())
        && label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !valid_label {
        return Err(SqsError::invalid_parameter(format!(
            "Value {label} for parameter Label is invalid. Reason: 1 to 80 letters, digits, '-' and '_'."
        )));
    }
    let accounts = required(input.aws_account_ids, "AWSAccountIds")?;
    let actions = required(input.actions, "Actions")?;
    if accounts.is_empty() || actions.is_empty() {
        return Err(SqsError::invalid_parameter(
            "AWSAccountIds and Actions must each name at least one.",
        ));
    }
    if let Some(bad) = actions.iter().find(|a| !PERMISSION_ACTIONS.contains(&a.as_str())) {
        return Err(SqsError::invalid_parameter(format!(
            "Value SQS:{bad} for parameter ActionName is invalid."
        )));
    }
    let arn = ctx.queue_arn(&name);
    let statement = serde_json::json!({
        "Sid": label,
        "Effect": "Allow",
        "Principal": {"AWS": accounts.iter().map(|a| format!("arn:aws:iam::{a}:root")).collect::<Vec<_>>()},
        "Action": actions.iter().map(|a| format!("SQS:{a}")).collect::<Vec<_>>(),
        "Resource": arn,
    });
    svc.with_queue(&name, |queue, now| {
        let mut policy = policy_document(queue.attributes.policy.as_deref(), &arn);
        let statements = policy["Statement"]
            .as_array_mut()
            .expect("a policy document has statements");
        if statements.iter().any(|s| s["Sid"] == label.as_str()) {
            return Err(SqsError::invalid_parameter(format!(
                "Value {label} for parameter Label is invalid. Reason: Already exists."
            )));
        }
        statements.push(statement);
        queue.set_policy(Some(policy.to_string()), now);
        Ok(Empty {})
    })
    .await?
}

pub(super) async fn remove_permission(
    svc: &Service,
    ctx: &RequestContext,
    input: RemovePermissionInput,
) -> Result<Empty> {
    let name = ctx.queue_name(input.queue_url.as_deref())?;
    let label = required(input.label, "Label")?;
    let arn = ctx.queue_arn(&name);
    svc.with_queue(&name, |queue, now| {
        let mut policy = policy_document(queue.attributes.policy.as_deref(), &arn);
        let statements = policy["Statement"]
            .as_array_mut()
            .expect("a policy document has statements");
        let before = statements.len();
        statements.retain(|s| s["Sid"] != label.as_str());
        if statements.len() == before {
            return Err(SqsError::invalid_parameter(format!(
                "Value {label} for parameter Label is invalid. Reason: can't find label."
            )));
        }
        let empty = statements.is_empty();
        queue.set_policy((!empty).then(|| policy.to_string()), now);
        Ok(Empty {})
    })
    .await?
}

/// The queue's policy document, or a new one with no statements.
fn policy_document(policy: Option<&str>, arn: &str) -> serde_json::Value {
    policy
        .and_then(|p| serde_json::from_str::<serde_json::Value>(p).ok())
        .filter(|p| p["Statement"].is_array())
        .unwrap_or_else(|| serde_json::json!({"Version": "2012-10-17", "Id": format!("{arn}/SQSDefaultPolicy"), "Statement": []}))
}

/// The queue an ARN of this account and region names.
fn queue_of_arn(ctx: &RequestContext, arn: &str, parameter: &str) -> Result<String> {
    let name = arn.rsplit(':').next().unwrap_or_default();
    if arn != ctx.queue_arn(name) {
        return Err(SqsError::new(
            ErrorCode::ResourceNotFound,
            format!("The resource that {parameter} {arn} names does not exist."),
        ));
    }
    Ok(name.to_string())
}

pub(super) async fn start_message_move_task(
    svc: &std::sync::Arc<Service>,
    ctx: &RequestContext,
    input: StartMessageMoveTaskInput,
) -> Result<TaskHandleOutput> {
    let source_arn = required(input.source_arn, "SourceArn")?;
    let source = queue_of_arn(ctx, &source_arn, "SourceArn")?;
    let to_move = svc
        .with_queue(&source, |q, now| q.counts(now).visible)
        .await
        .map_err(|_| {
            SqsError::new(
                ErrorCode::ResourceNotFound,
                format!("The source queue {source_arn} does not exist."),
            )
        })?;
    let is_dead_letter_queue = !svc
        .queues_where(|q| {
            q.attributes
                .redrive_policy
                .as_ref()
                .is_some_and(|p| p.dead_letter_target_arn == source_arn)
        })
        .is_empty();
    if !is_dead_letter_queue {
        return Err(SqsError::invalid_parameter(format!(
            "Source queue {source_arn} is not a dead-letter queue: no queue's RedrivePolicy names it."
        )));
    }
    let destination = match input.destination_arn {
        Some(arn) => {
            let name = queue_of_arn(ctx, &arn, "DestinationArn")?;
            if !svc.queue_exists(&name) {
                return Err(SqsError::new(
                    ErrorCode::ResourceNotFound,
                    format!("The destination queue {arn} does not exist."),
                ));
            }
            Some((name, arn))
        }
        None => None,
    };
    let rate = input
        .max_number_of_messages_per_second
        .map(|r| {
            in_range(
                r,
                "MaxNumberOfMessagesPerSecond",
                1,
                i64::from(crate::move_tasks::MAX_RATE),
            )
        })
        .transpose()?;
    let task = svc.move_tasks.start(
        svc.clone(),
        crate::move_tasks::MoveRequest {
            source,
            source_arn,
            destination,
            rate,
            to_move: to_move as u64,
            now: svc.now(),
        },
    )?;
    Ok(TaskHandleOutput {
        task_handle: task.handle.clone(),
    })
}

pub(super) fn cancel_message_move_task(
    svc: &Service,
    input: CancelMessageMoveTaskInput,
) -> Result<CancelMessageMoveTaskOutput> {
    let handle = required(input.task_handle, "TaskHandle")?;
    let task = svc.move_tasks.cancel(&handle)?;
    Ok(CancelMessageMoveTaskOutput {
        approximate_number_of_messages_moved: task.moved.load(std::sync::atomic::Ordering::Acquire),
    })
}

pub(super) fn list_message_move_tasks(
    svc: &Service,
    ctx: &RequestContext,
    input: ListMessageMoveTasksInput,
) -> Result<ListMessageMoveTasksOutput> {
    let source_arn = required(input.source_arn, "SourceArn")?;
    let source = queue_of_arn(ctx, &source_arn, "SourceArn")?;
    if !svc.queue_exists(&source) {
        return Err(SqsError::new(
            ErrorCode::ResourceNotFound,
            format!("The source queue {source_arn} does not exist."),
        ));
    }
    let max = input
        .max_results
        .map(|n| in_range(n, "MaxResults", 1, 10))
        .transpose()?
        .unwrap_or(1) as usize;
    let results = svc
        .move_tasks
        .for_source(&source_arn)
        .into_iter()
        .take(max)
        .map(|task| {
            let status = task.status_name().to_string();
            let failure_reason = match task.status() {
                crate::move_tasks::Status::Failed(why) => Some(why),
                _ => None,
            };
            MessageMoveTaskEntry {
                task_handle: (status == "RUNNING").then(|| task.handle.clone()),
                status,
                source_arn: task.source_arn.clone(),
                destination_arn: task.destination.as_ref().map(|(_, arn)| arn.clone()),
                max_number_of_messages_per_second: task.rate,
                approximate_number_of_messages_moved: task.moved.load(std::sync::atomic::Ordering::Acquire),
                approximate_number_of_messages_to_move: task.to_move,
                failure_reason,
                started_timestamp: task.started_at,
            }
        })
        .collect();
    Ok(ListMessageMoveTasksOutput { results })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attribute_filters_match_names_prefixes_and_all() {
        let filter = |f: &[&str], name: &str| {
            attribute_selected(name, &f.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        };
        assert!(filter(&["All"], "x"));
        assert!(filter(&[".*"], "x"));
        assert!(filter(&["x"], "x"));
        assert!(!filter(&["x"], "xy"));
        assert!(filter(&["bar.*"], "bar.baz"));
        assert!(!filter(&["bar.*"], "barbaz"));
        assert!(!filter(&[], "x"));
    }

    #[test]
    fn batches_are_checked_for_size_ids_and_emptiness() {
        let ids = |ids: &[&str]| Some(ids.iter().map(|s| Some(s.to_string())).collect::<Vec<_>>());
        let check = |entries| check_batch(entries, |e: &Option<String>| e.as_ref(), "Entry").map(|v| v.len());
        assert_eq!(check(ids(&["a", "b"])).unwrap(), 2);
        assert_eq!(check(ids(&[])).unwrap_err().code, ErrorCode::EmptyBatchRequest);
        assert_eq!(check(None).unwrap_err().code, ErrorCode::EmptyBatchRequest);
        let eleven: Vec<String> = (0..11).map(|i| i.to_string()).collect();
        let eleven: Vec<&str> = eleven.iter().map(String::as_str).collect();
        assert_eq!(
            check(ids(&eleven)).unwrap_err().code,
            ErrorCode::TooManyEntriesInBatchRequest
        );
        assert_eq!(
            check(ids(&["a", "a"])).unwrap_err().code,
            ErrorCode::BatchEntryIdsNotDistinct
        );
        assert_eq!(
            check(ids(&["a.b"])).unwrap_err().code,
            ErrorCode::InvalidBatchEntryId
        );
        assert_eq!(
            check(ids(&[&"x".repeat(81)])).unwrap_err().code,
            ErrorCode::InvalidBatchEntryId
        );
    }
}
