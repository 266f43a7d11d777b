//! A Publish, checked as AWS checks it (message, subject, structure,
//! message attributes, the FIFO rules), and what it delivers: one copy for
//! each confirmed subscription whose filter policy lets it through.

use std::collections::BTreeMap;

use serde_json::Value;
use sha2::Digest as _;

use super::error::{Result, SnsError};
use super::filter::Scope;
use super::filter::matching::Subject;
use super::subscription::{Protocol, Subscription};
use crate::queue::{AttributeValue, MessageAttribute, MessageAttributes};

/// A topic's MaximumMessageSize unless it sets one: 256 KiB of message and
/// attributes together.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 262_144;
/// The largest MaximumMessageSize a topic may set, and the smallest.
pub const LARGEST_MAX_MESSAGE_BYTES: usize = 1_048_576;
pub const SMALLEST_MAX_MESSAGE_BYTES: usize = 1_024;
const MAX_SUBJECT_CHARS: usize = 100;
const MAX_ATTRIBUTE_NAME_BYTES: usize = 256;

/// A message attribute as the request gave it, before it is checked.
#[derive(Debug, Default, Clone)]
pub struct AttributeInput {
    pub data_type: Option<String>,
    pub string_value: Option<String>,
    pub binary_value: Option<Vec<u8>>,
}

/// What a client publishes.
#[derive(Debug, Default, Clone)]
pub struct PublishInput {
    pub message: Option<String>,
    pub subject: Option<String>,
    pub message_structure: Option<String>,
    pub attributes: BTreeMap<String, AttributeInput>,
    pub group_id: Option<String>,
    pub dedup_id: Option<String>,
}

/// What a publication is checked against: its topic's kind and size.
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    pub fifo: bool,
    /// FIFO topics: deduplication ids made from the message when none is
    /// given (ContentBasedDeduplication).
    pub content_dedup: bool,
    /// The topic's MaximumMessageSize.
    pub max_bytes: usize,
}

impl Rules {
    /// What an archived publication was checked against once: it is
    /// taken again as it was kept, up to the largest size a topic allows.
    pub fn archived() -> Rules {
        Rules {
            fifo: true,
            content_dedup: false,
            max_bytes: LARGEST_MAX_MESSAGE_BYTES,
        }
    }
}

/// A checked publication.
#[derive(Debug, Clone)]
pub struct Publication {
    /// The message sent where the structure names no protocol.
    pub message: String,
    /// With `MessageStructure=json`: the message for each protocol.
    pub by_protocol: Option<serde_json::Map<String, Value>>,
    pub subject: Option<String>,
    pub attributes: MessageAttributes,
    pub group_id: Option<String>,
    /// FIFO topics: the deduplication id, given or made from the message.
    pub dedup_id: Option<String>,
    /// The body read as JSON once, for body-scope filter policies.
    body: Option<Value>,
    /// The bytes the message (as given) and its attributes count for.
    pub size: usize,
}

impl Publication {
    /// Checks a publication against its topic's `rules`; `member` names the entry's parameters in
    /// errors (empty for Publish, `publishBatchRequestEntries.N.member.`
    /// for a batch).
    pub fn check(input: PublishInput, rules: Rules, member: &str) -> Result<Publication> {
        let Rules {
            fifo,
            content_dedup,
            max_bytes,
        } = rules;
        let attributes = check_attributes(input.attributes, member)?;
        let message = input
            .message
            .ok_or_else(|| SnsError::missing(&format!("{member}message")))?;
        if message.is_empty() {
            return Err(SnsError::parameter("Empty message"));
        }
        // SNS counts attributes as SQS does: name, data type and value.
        let size = message.len() + crate::queue::message::attributes_size(&attributes);
        if size > max_bytes {
            return Err(SnsError::parameter("Message too long"));
        }
        if let Some(subject) = &input.subject {
            let fine = !subject.is_empty()
                && subject.chars().count() <= MAX_SUBJECT_CHARS
                && subject.chars().all(|c| c.is_ascii() && !c.is_ascii_control());
            if !fine {
                return Err(SnsError::parameter("Subject"));
            }
        }
        let by_protocol = match input.message_structure.as_deref() {
            None => None,
            Some("json") => {
                let Ok(Value::Object(structure)) = serde_json::from_str::<Value>(&message) else {
                    return Err(SnsError::parameter(
                        "Message Structure - JSON message body failed to parse",
                    ));
                };
                if !structure.get("default").is_some_and(Value::is_string) {
                    return Err(SnsError::parameter(
                        "Message Structure - No default entry in JSON message body",
                    ));
                }
                Some(structure)
            }
            Some(_) => return Err(SnsError::parameter("MessageStructure")),
        };
        let default = match &by_protocol {
            Some(structure) => structure["default"].as_str().unwrap_or_default().to_string(),
            None => message,
        };
        if fifo {
            let Some(group) = &input.group_id else {
                return Err(SnsError::parameter(
                    "The MessageGroupId parameter is required for FIFO topics",
                ));
            };
            check_fifo_id("MessageGroupId", group)?;
        } else if input.dedup_id.is_some() {
            return Err(SnsError::parameter(
                "MessageDeduplicationId Reason: The request includes MessageDeduplicationId parameter that is not valid for this topic type",
            ));
        }
        if let Some(group) = input.group_id.as_deref().filter(|_| !fifo) {
            check_fifo_id("MessageGroupId", group)?;
        }
        let dedup_id = match (fifo, input.dedup_id) {
            (false, _) => None,
            (true, Some(id)) => {
                check_fifo_id("MessageDeduplicationId", &id)?;
                Some(id)
            }
            (true, None) if content_dedup => Some(hex::encode(sha2::Sha256::digest(default.as_bytes()))),
            (true, None) => {
                return Err(SnsError::parameter(
                    "The topic should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly",
                ));
            }
        };
        let body = serde_json::from_str(&default).ok();
        Ok(Publication {
            message: default,
            by_protocol,
            subject: input.subject,
            attributes,
            group_id: input.group_id,
            dedup_id,
            body,
            size,
        })
    }

    /// The message for a protocol: its own entry of a JSON structure, or
    /// the default.
    pub fn message_for(&self, protocol: Protocol) -> &str {
        self.by_protocol
            .as_ref()
            .and_then(|structure| structure.get(protocol.as_str()))
            .and_then(Value::as_str)
            .unwrap_or(&self.message)
    }

    /// Whether `subscription`'s filter policy lets this publication through.
    pub fn passes(&self, subscription: &Subscription) -> bool {
        let Some(policy) = &subscription.filter else {
            return true;
        };
        match subscription.scope() {
            Scope::MessageAttributes => policy.matches(&Subject::Attributes(&self.attributes)),
            Scope::MessageBody => policy.matches(&Subject::Body(self.body.as_ref())),
        }
    }
}

/// Group and deduplication ids: 1 to 128 of the printable ASCII characters.
fn check_fifo_id(name: &str, value: &str) -> Result<()> {
    let fine = !value.is_empty() && value.len() <= 128 && value.bytes().all(|b| (33..=126).contains(&b));
    match fine {
        true => Ok(()),
        false => Err(SnsError::parameter(format!(
            "{name} Reason: must be 1 to 128 printable ASCII characters"
        ))),
    }
}

/// Checks message attributes in AWS's words (SNS words them apart from SQS).
pub fn check_attributes(input: BTreeMap<String, AttributeInput>, member: &str) -> Result<MessageAttributes> {
    let mut attributes = MessageAttributes::new();
    for (name, attribute) in input {
        check_attribute_name(&name)?;
        let Some(data_type) = attribute.data_type else {
            return Err(SnsError::missing(&format!(
                "{member}messageAttributes.{name}.member.dataType"
            )));
        };
        let (kind, custom) = match data_type.split_once('.') {
            Some((kind, custom)) => (kind, Some(custom)),
            None => (data_type.as_str(), None),
        };
        let known = matches!(kind, "String" | "Number" | "Binary");
        if !known || custom.is_some_and(|custom| custom.trim().is_empty()) {
            return Err(SnsError::value_invalid(format!(
                "The message attribute '{name}' has an invalid message attribute type, the set of supported type prefixes is Binary, Number, and String."
            )));
        }
        let wrong_field = |field: &str| {
            SnsError::value_invalid(format!(
                "The message attribute '{name}' with type '{kind}' must use field '{field}'."
            ))
        };
        let empty = || {
            SnsError::value_invalid(format!(
                "The message attribute '{name}' must contain non-empty message attribute value for message attribute type '{kind}'."
            ))
        };
        let value = match kind {
            "String" | "Number" => match (attribute.string_value, attribute.binary_value) {
                (Some(text), _) if text.is_empty() => return Err(empty()),
                (Some(text), _) => {
                    if kind == "Number" && text.trim().parse::<f64>().is_err() {
                        return Err(SnsError::value_invalid(format!(
                            "Could not cast message attribute '{name}' value to number."
                        )));
                    }
                    AttributeValue::String(text)
                }
                (None, Some(_)) => return Err(wrong_field("String")),
                (None, None) => return Err(empty()),
            },
            "Binary" => match (attribute.binary_value, attribute.string_value) {
                (Some(bytes), _) if bytes.is_empty() => return Err(empty()),
                (Some(bytes), _) => AttributeValue::Binary(bytes),
                (None, Some(_)) => return Err(wrong_field("Binary")),
                (None, None) => return Err(empty()),
            },
            _ => {
                return Err(SnsError::value_invalid(format!(
                    "The message attribute '{name}' has an invalid message attribute type, the set of supported type prefixes is Binary, Number, and String."
                )));
            }
        };
        attributes.insert(name, MessageAttribute { data_type, value });
    }
    Ok(attributes)
}

fn check_attribute_name(name: &str) -> Result<()> {
    if name.len() >= MAX_ATTRIBUTE_NAME_BYTES {
        return Err(SnsError::value_invalid(
            "Length of message attribute name must be less than 256 bytes.",
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Err(SnsError::value_invalid(format!(
            "Invalid non-alphanumeric character '#x{:X}' was found in the message attribute name. Can only include alphanumeric characters, hyphens, underscores, or dots.",
            bad as u32
        )));
    }
    if name.starts_with('.') {
        return Err(SnsError::value_invalid(
            "Invalid message attribute name starting with character '.' was found.",
        ));
    }
    if name.ends_with('.') {
        return Err(SnsError::value_invalid(
            "Invalid message attribute name ending with character '.' was found.",
        ));
    }
    if name.contains("..") {
        return Err(SnsError::value_invalid(
            "Message attribute name can not have successive '.' character.",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(text: &str) -> PublishInput {
        PublishInput {
            message: Some(text.into()),
            ..PublishInput::default()
        }
    }

    fn rules(fifo: bool, content_dedup: bool) -> Rules {
        Rules {
            fifo,
            content_dedup,
            max_bytes: DEFAULT_MAX_MESSAGE_BYTES,
        }
    }

    fn text_attribute(kind: &str, value: &str) -> AttributeInput {
        AttributeInput {
            data_type: Some(kind.into()),
            string_value: Some(value.into()),
            binary_value: None,
        }
    }

    #[test]
    fn messages_subjects_and_structures_are_checked_as_aws_does() {
        let error = |input, fifo| {
            Publication::check(input, rules(fifo, false), "")
                .unwrap_err()
                .message
        };
        assert_eq!(error(message(""), false), "Invalid parameter: Empty message");
        assert_eq!(
            error(message(&"x".repeat(DEFAULT_MAX_MESSAGE_BYTES + 1)), false),
            "Invalid parameter: Message too long"
        );
        let mut subject = message("m");
        subject.subject = Some("a\nb".into());
        assert_eq!(error(subject, false), "Invalid parameter: Subject");
        let mut structure = message(r#"{"sqs": "x"}"#);
        structure.message_structure = Some("json".into());
        assert!(error(structure, false).contains("No default entry"));
        let mut structure = message(r#"{"default": "d", "sqs": "q"}"#);
        structure.message_structure = Some("json".into());
        let publication = Publication::check(structure, rules(false, false), "").unwrap();
        assert_eq!(publication.message_for(Protocol::Sqs), "q");
        assert_eq!(publication.message_for(Protocol::Http), "d");
    }

    #[test]
    fn fifo_topics_need_a_group_and_a_deduplication_id_or_content_deduplication() {
        let error = |input, fifo, content| {
            Publication::check(input, rules(fifo, content), "")
                .unwrap_err()
                .message
        };
        assert!(error(message("m"), true, false).contains("MessageGroupId parameter is required"));
        let mut grouped = message("m");
        grouped.group_id = Some("g".into());
        assert!(error(grouped.clone(), true, false).contains("ContentBasedDeduplication"));
        let publication = Publication::check(grouped.clone(), rules(true, true), "").unwrap();
        assert_eq!(publication.dedup_id.unwrap().len(), 64);
        grouped.dedup_id = Some("d".into());
        assert!(error(grouped, false, false).contains("not valid for this topic type"));
    }

    #[test]
    fn message_attributes_get_sns_words() {
        let check = |name: &str, attribute: AttributeInput| {
            check_attributes(BTreeMap::from([(name.to_string(), attribute)]), "")
        };
        assert!(check("ok.name-1_x", text_attribute("String", "v")).is_ok());
        assert!(
            check(".a", text_attribute("String", "v"))
                .unwrap_err()
                .message
                .contains("starting with")
        );
        assert!(
            check("a..b", text_attribute("String", "v"))
                .unwrap_err()
                .message
                .contains("successive")
        );
        assert!(
            check("a^", text_attribute("String", "v"))
                .unwrap_err()
                .message
                .contains("'#x5E'")
        );
        assert!(
            check("a", text_attribute("Int", "v"))
                .unwrap_err()
                .message
                .contains("invalid message attribute type")
        );
        assert!(
            check("a", text_attribute("String", ""))
                .unwrap_err()
                .message
                .contains("non-empty")
        );
        let binary_as_text = AttributeInput {
            data_type: Some("Binary".into()),
            string_value: Some("x".into()),
            binary_value: None,
        };
        assert!(
            check("a", binary_as_text)
                .unwrap_err()
                .message
                .contains("must use field 'Binary'")
        );
        let untyped = AttributeInput::default();
        assert_eq!(check("a", untyped).unwrap_err().code, "ValidationError");
    }
}
