//! Topic attributes: which a client may set, the checks AWS makes on them,
//! and the attributes GetTopicAttributes shows beside them (the owner, the
//! default policy, the effective delivery policy, the subscription counts).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::arn::TopicArn;
use super::error::{Result, SnsError};
use super::publish::{DEFAULT_MAX_MESSAGE_BYTES, LARGEST_MAX_MESSAGE_BYTES, SMALLEST_MAX_MESSAGE_BYTES};
use super::subscription::Protocol;

/// The attributes a client may set on a topic, at creation or later.
/// (`FifoTopic` only at creation.)
const SETTABLE: &[&str] = &[
    "ApplicationFailureFeedbackRoleArn",
    "ApplicationSuccessFeedbackRoleArn",
    "ApplicationSuccessFeedbackSampleRate",
    "ArchivePolicy",
    "ContentBasedDeduplication",
    "DataProtectionPolicy",
    "DeliveryPolicy",
    "DisplayName",
    "FifoThroughputScope",
    "FirehoseFailureFeedbackRoleArn",
    "FirehoseSuccessFeedbackRoleArn",
    "FirehoseSuccessFeedbackSampleRate",
    "HTTPFailureFeedbackRoleArn",
    "HTTPSuccessFeedbackRoleArn",
    "HTTPSuccessFeedbackSampleRate",
    "KmsMasterKeyId",
    "LambdaFailureFeedbackRoleArn",
    "LambdaSuccessFeedbackRoleArn",
    "LambdaSuccessFeedbackSampleRate",
    "MaximumMessageSize",
    "Policy",
    "SQSFailureFeedbackRoleArn",
    "SQSSuccessFeedbackRoleArn",
    "SQSSuccessFeedbackSampleRate",
    "SignatureVersion",
    "TracingConfig",
];

/// The longest value of a topic's or a subscription's attribute (but a
/// filter policy's, 256 KB): AWS's bound on a topic's Policy and its
/// DataProtectionPolicy, 30,720 bytes, held for every one, so that no
/// topic or subscription outgrows what a snapshot line carries.
pub const MAX_ATTRIBUTE_BYTES: usize = 30_720;

/// Topic names: 1 to 256 of `A-Z a-z 0-9 _ -`, and `.fifo` at the end of
/// a FIFO topic's.
pub fn valid_topic_name(name: &str) -> bool {
    let stem = name.strip_suffix(".fifo").unwrap_or(name);
    !stem.is_empty()
        && name.len() <= 256
        && stem
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Checks one attribute a client sets; `creating` allows `FifoTopic`.
pub fn check(name: &str, value: &str, fifo: bool, creating: bool) -> Result<()> {
    let known = SETTABLE.contains(&name) || (creating && name == "FifoTopic");
    if !known {
        return Err(SnsError::parameter("AttributeName"));
    }
    let invalid = |reason: &str| SnsError::parameter(format!("Attributes Reason: {name}: {reason}"));
    if value.len() > MAX_ATTRIBUTE_BYTES {
        return Err(invalid(&format!(
            "{} bytes, more than the {MAX_ATTRIBUTE_BYTES} an attribute may have",
            value.len()
        )));
    }
    match name {
        "FifoTopic" | "ContentBasedDeduplication" if !matches!(value, "true" | "false") => Err(invalid(
            &format!("Invalid value [{value}]. Must be true or false."),
        )),
        "ContentBasedDeduplication" if !fifo && value == "true" => Err(SnsError::parameter(
            "ContentBasedDeduplication Reason: Content based deduplication can only be set for FIFO topics",
        )),
        "SignatureVersion" if !matches!(value, "1" | "2") => Err(SnsError::parameter(
            "SignatureVersion Reason: must be one of 1 or 2",
        )),
        "DisplayName" if value.chars().count() > 100 => Err(SnsError::parameter("DisplayName")),
        "Policy" | "DeliveryPolicy" | "DataProtectionPolicy" | "ArchivePolicy"
            if serde_json::from_str::<serde_json::Map<String, Value>>(value).is_err() =>
        {
            Err(SnsError::parameter(format!("{name}: failed to parse JSON.")))
        }
        "ArchivePolicy" if !fifo => Err(SnsError::parameter(
            "ArchivePolicy Reason: The archive policy can only be set for FIFO topics",
        )),
        "ArchivePolicy" if !value.is_empty() => super::archive::retention(value).map(|_| ()),
        "MaximumMessageSize" if !value.is_empty() && max_message_bytes_of(value).is_none() => {
            Err(invalid(&format!(
                "Invalid value [{value}]. Must be an integer from {SMALLEST_MAX_MESSAGE_BYTES} to {LARGEST_MAX_MESSAGE_BYTES}."
            )))
        }
        "FifoThroughputScope" if !fifo => Err(SnsError::parameter(
            "FifoThroughputScope Reason: The FIFO throughput scope can only be set for FIFO topics",
        )),
        "FifoThroughputScope" if !matches!(value, "Topic" | "MessageGroup") => Err(invalid(&format!(
            "Invalid value [{value}]. Must be Topic or MessageGroup."
        ))),
        _ => Ok(()),
    }
}

/// A MaximumMessageSize's bytes, if the text is one AWS takes.
fn max_message_bytes_of(value: &str) -> Option<usize> {
    value
        .parse::<usize>()
        .ok()
        .filter(|bytes| (SMALLEST_MAX_MESSAGE_BYTES..=LARGEST_MAX_MESSAGE_BYTES).contains(bytes))
}

/// The most bytes a topic with `attributes` takes in a publication
/// (its MaximumMessageSize; 256 KiB unless it sets one).
pub fn max_message_bytes(attributes: &BTreeMap<String, String>) -> usize {
    attributes
        .get("MaximumMessageSize")
        .and_then(|value| max_message_bytes_of(value))
        .unwrap_or(DEFAULT_MAX_MESSAGE_BYTES)
}

/// The most subscriptions a topic that takes messages above 256 KiB may
/// have; and they must be SQS queues (AWS also allows Lambda and Firehose,
/// which ssq does not serve): "Publishing large messages with Amazon SNS".
pub const MAX_LARGE_MESSAGE_SUBSCRIPTIONS: usize = 100;

/// Refuses a subscription of `protocol` beside `held` others to a topic
/// whose MaximumMessageSize is `max_bytes`, where AWS refuses it.
pub fn check_large_message_room(max_bytes: usize, held: usize, protocol: Protocol) -> Result<()> {
    if max_bytes <= DEFAULT_MAX_MESSAGE_BYTES {
        return Ok(());
    }
    if protocol != Protocol::Sqs {
        return Err(SnsError::parameter(format!(
            "Protocol Reason: a topic whose MaximumMessageSize is above {DEFAULT_MAX_MESSAGE_BYTES} takes sqs, lambda and \
             firehose subscriptions only, not {}",
            protocol.as_str()
        )));
    }
    if held >= MAX_LARGE_MESSAGE_SUBSCRIPTIONS {
        return Err(SnsError::parameter(format!(
            "Topic Reason: a topic whose MaximumMessageSize is above {DEFAULT_MAX_MESSAGE_BYTES} has at most \
             {MAX_LARGE_MESSAGE_SUBSCRIPTIONS} subscriptions"
        )));
    }
    Ok(())
}

/// The default policy AWS gives a new topic: its account may do everything.
pub fn default_policy(arn: &TopicArn) -> String {
    json!({
        "Version": "2008-10-17",
        "Id": "__default_policy_ID",
        "Statement": [{
            "Sid": "__default_statement_ID",
            "Effect": "Allow",
            "Principal": {"AWS": "*"},
            "Action": [
                "SNS:GetTopicAttributes",
                "SNS:SetTopicAttributes",
                "SNS:AddPermission",
                "SNS:RemovePermission",
                "SNS:DeleteTopic",
                "SNS:Subscribe",
                "SNS:ListSubscriptionsByTopic",
                "SNS:Publish"
            ],
            "Resource": arn.to_string(),
            "Condition": {"StringEquals": {"AWS:SourceOwner": arn.account}}
        }]
    })
    .to_string()
}

/// AWS's default HTTP delivery policy, which GetTopicAttributes shows as
/// `EffectiveDeliveryPolicy` until a topic sets its own.
pub fn default_delivery_policy() -> Value {
    json!({
        "http": {
            "defaultHealthyRetryPolicy": {
                "minDelayTarget": 20,
                "maxDelayTarget": 20,
                "numRetries": 3,
                "numMaxDelayRetries": 0,
                "numNoDelayRetries": 0,
                "numMinDelayRetries": 0,
                "backoffFunction": "linear"
            },
            "disableSubscriptionOverrides": false,
            "defaultRequestPolicy": {"headerContentType": "text/plain; charset=UTF-8"}
        }
    })
}

/// The effective delivery policy: the default with the topic's own laid
/// over it.
pub fn effective_delivery_policy(own: Option<&str>) -> Value {
    let mut policy = default_delivery_policy();
    if let Some(own) = own.and_then(|text| serde_json::from_str::<Value>(text).ok()) {
        merge(&mut policy, own);
    }
    policy
}

fn merge(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Object(base), Value::Object(over)) => {
            for (key, value) in over {
                merge(base.entry(key).or_insert(Value::Null), value);
            }
        }
        (base, over) => *base = over,
    }
}

/// Whether the attributes a CreateTopic gives agree with the topic's: AWS
/// answers with the existing topic only then.
pub fn agree(stored: &BTreeMap<String, String>, fifo: bool, given: &BTreeMap<String, String>) -> bool {
    given.iter().all(|(name, value)| match name.as_str() {
        "FifoTopic" => (value == "true") == fifo,
        "ContentBasedDeduplication" => stored.get(name).map_or("false", String::as_str) == value,
        _ => stored.get(name) == Some(value),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_aws_rules() {
        assert!(valid_topic_name("a-b_C9"));
        assert!(valid_topic_name("t.fifo"));
        assert!(!valid_topic_name(".fifo"));
        assert!(!valid_topic_name("a.b"));
        assert!(!valid_topic_name(&"a".repeat(257)));
    }

    #[test]
    fn only_known_attributes_and_values_are_taken() {
        assert!(check("DisplayName", "x", false, false).is_ok());
        assert_eq!(
            check("InvalidKey", "x", false, true).unwrap_err().message,
            "Invalid parameter: AttributeName"
        );
        assert!(check("FifoTopic", "true", true, false).is_err());
        assert!(check("ContentBasedDeduplication", "true", false, true).is_err());
        assert!(check("ContentBasedDeduplication", "true", true, true).is_ok());
    }

    #[test]
    fn a_delivery_policy_lays_over_the_default() {
        let policy =
            effective_delivery_policy(Some(r#"{"http":{"defaultHealthyRetryPolicy":{"numRetries":1}}}"#));
        assert_eq!(policy["http"]["defaultHealthyRetryPolicy"]["numRetries"], 1);
        assert_eq!(policy["http"]["defaultHealthyRetryPolicy"]["minDelayTarget"], 20);
    }
}
