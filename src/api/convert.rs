//! Messages between their wire form (the model's shapes) and the core's:
//! message and system attributes in, received messages and their MD5
//! digests out.

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;

use super::RequestContext;
use super::model::*;
use super::params::{in_range, required};
use crate::error::{Result, SqsError};
use crate::queue::limits::MAX_DELAY_SECONDS;
use crate::queue::message;
use crate::queue::{AttributeValue, Message, MessageAttribute, MessageAttributes, NewMessage, Received};

/// System attributes a receive may ask for. The FIFO and dead-letter ones are
/// accepted and returned where they apply.
pub(super) const SYSTEM_ATTRIBUTES: &[&str] = &[
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

/// Turns the wire form of a message into the core's, checking what the
/// core cannot see (wire encodings, parameters of other queue types).
pub(super) fn new_message(ctx: &RequestContext, fields: SendMessageFields) -> Result<(NewMessage, usize)> {
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

pub(super) fn message_attributes_from_wire(wire: MessageAttributeMap) -> Result<MessageAttributes> {
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
pub(super) fn trace_header_from_wire(wire: MessageAttributeMap) -> Result<Option<String>> {
    let mut trace_header = None;
    for (name, value) in wire {
        match (name.as_str(), value.data_type.as_deref(), value.string_value) {
            ("AWSTraceHeader", Some("String"), Some(header))
                if !header.is_empty() && crate::queue::message::is_xml_text(&header) =>
            {
                trace_header = Some(header)
            }
            ("AWSTraceHeader", ..) => {
                return Err(SqsError::invalid_parameter(
                    "The message system attribute AWSTraceHeader must be of type String with a non-empty StringValue \
                     of characters SQS allows.",
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

/// FIFO sequence numbers: 20 digits, as AWS's are, so that text order is
/// number order. They start from a base with no run of zeros, so that no
/// sequence number reads like a padded account id.
pub(super) fn sequence_number(seq: u64) -> String {
    const BASE: u128 = 11_111_111_111_111_111_111;
    (BASE + u128::from(seq)).to_string()
}

pub(super) fn sent_output(sent: crate::queue::Sent) -> SendMessageOutput {
    SendMessageOutput {
        message_id: sent.message_id.to_string(),
        md5_of_message_body: hex::encode(sent.md5_of_body),
        md5_of_message_attributes: sent.md5_of_attributes.as_ref().map(hex::encode),
        md5_of_message_system_attributes: sent.md5_of_system_attributes.as_ref().map(hex::encode),
        sequence_number: sent.sequence_number.map(sequence_number),
    }
}

pub(super) fn received_message(
    received: Received,
    system_names: &[String],
    attribute_filter: &[String],
) -> ReceivedMessage {
    message_to_wire(
        &received.message,
        received.receipt_handle.encode(),
        system_names,
        attribute_filter,
    )
}

/// A message in ReceiveMessage's shape, with the system attributes named in
/// `system_names` and the message attributes `attribute_filter` selects.
pub(super) fn message_to_wire(
    m: &Message,
    receipt_handle: String,
    system_names: &[String],
    attribute_filter: &[String],
) -> ReceivedMessage {
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
    let md5_of_message_attributes = (!selected.is_empty())
        .then(|| hex::encode(message::md5_of_attributes(selected.iter().map(|(n, a)| (*n, *a)))));
    let message_attributes = selected
        .into_iter()
        .map(|(name, attribute)| (name.clone(), attribute_to_wire(attribute)))
        .collect();
    ReceivedMessage {
        message_id: m.id.to_string(),
        receipt_handle,
        md5_of_body: hex::encode(m.md5_of_body),
        body: m.body.clone(),
        attributes: system,
        md5_of_message_attributes,
        message_attributes,
    }
}

/// MessageAttributeNames: `All`, `.*` or `*`, exact names, or `prefix.*`
/// (every name that starts with the prefix: `Hel.*` selects `Hello`, as
/// recorded against AWS).
pub(super) fn attribute_selected(name: &str, filter: &[String]) -> bool {
    filter.iter().any(|f| {
        f == "All"
            || f == ".*"
            || f == "*"
            || f == name
            || f.strip_suffix(".*")
                .is_some_and(|prefix| name.starts_with(prefix))
    })
}

pub(super) fn attribute_to_wire(attribute: &MessageAttribute) -> MessageAttributeValue {
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
        assert!(filter(&["bar.*"], "barbaz"), "a plain prefix, as AWS matches it");
        assert!(!filter(&["baz.*"], "bar.baz"));
        assert!(!filter(&[], "x"));
    }
}
