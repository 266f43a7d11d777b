//! Queue attributes: their names, defaults, valid ranges and text forms.
//!
//! SQS speaks of attributes as a map of strings; the core keeps them typed.
//! This module is the one place that turns one into the other, so the range
//! checks of CreateQueue and SetQueueAttributes cannot drift apart.

use std::collections::BTreeMap;

use super::limits::{MAX_DELAY_SECONDS, MAX_MESSAGE_BYTES, MAX_VISIBILITY_TIMEOUT_SECONDS, MAX_WAIT_SECONDS};
use crate::error::{ErrorCode, Result, SqsError};

/// Attributes that a client sets (CreateQueue, SetQueueAttributes).
pub const SETTABLE: &[&str] = &[
    "ContentBasedDeduplication",
    "DeduplicationScope",
    "DelaySeconds",
    "FifoQueue",
    "FifoThroughputLimit",
    "KmsDataKeyReusePeriodSeconds",
    "KmsMasterKeyId",
    "MaximumMessageSize",
    "MessageRetentionPeriod",
    "Policy",
    "ReceiveMessageWaitTimeSeconds",
    "RedriveAllowPolicy",
    "RedrivePolicy",
    "SqsManagedSseEnabled",
    "VisibilityTimeout",
];

/// The largest queue policy AWS takes (SQS's quota: 8,192 bytes); the
/// redrive documents are held to it too.
pub const MAX_POLICY_BYTES: usize = 8_192;

/// The longest KMS key id, alias or key ARN (KMS's own limit).
const MAX_KMS_KEY_ID_BYTES: usize = 2_048;

/// Longer than any queue ARN: partition, region, account and an 80-character name.
const MAX_QUEUE_ARN_BYTES: usize = 256;

/// Attributes that only FIFO queues have.
const FIFO_ONLY: &[&str] = &[
    "ContentBasedDeduplication",
    "DeduplicationScope",
    "FifoThroughputLimit",
];

/// Attributes that the queue reports but a client cannot set.
pub const READ_ONLY: &[&str] = &[
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesDelayed",
    "ApproximateNumberOfMessagesNotVisible",
    "CreatedTimestamp",
    "LastModifiedTimestamp",
    "QueueArn",
];

/// Where a dead-letter queue takes messages received too often.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedrivePolicy {
    pub dead_letter_target_arn: String,
    pub max_receive_count: u32,
}

impl RedrivePolicy {
    /// The dead-letter queue's name: the last part of its ARN.
    pub fn target_name(&self) -> &str {
        super::QueueArn::name_of(&self.dead_letter_target_arn)
    }
}

/// A queue's `Policy`: its text as set, and the resource policy it reads
/// as, read once when it is set (a text that does not read as one grants
/// nothing).
#[derive(Debug, Clone)]
pub struct QueuePolicy {
    pub text: String,
    pub read: Option<std::sync::Arc<crate::policy::Policy>>,
}

impl QueuePolicy {
    pub fn new(text: String) -> QueuePolicy {
        let read = crate::policy::Policy::parse_resource(&text)
            .ok()
            .map(std::sync::Arc::new);
        QueuePolicy { text, read }
    }
}

/// Two policies are the same when their texts are: what is read follows.
impl PartialEq for QueuePolicy {
    fn eq(&self, other: &QueuePolicy) -> bool {
        self.text == other.text
    }
}

impl Eq for QueuePolicy {}

/// The settable attributes of a queue, typed. Durations are in seconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueAttributes {
    pub content_based_deduplication: bool,
    pub deduplication_scope: DeduplicationScope,
    pub delay_seconds: u32,
    pub fifo_queue: bool,
    pub fifo_throughput_limit: FifoThroughputLimit,
    pub kms_data_key_reuse_period_seconds: u32,
    pub kms_master_key_id: Option<String>,
    pub maximum_message_size: u32,
    pub message_retention_period: u32,
    pub policy: Option<QueuePolicy>,
    pub receive_message_wait_time_seconds: u32,
    pub redrive_allow_policy: Option<String>,
    pub redrive_policy: Option<RedrivePolicy>,
    pub sqs_managed_sse_enabled: bool,
    pub visibility_timeout: u32,
}

impl Default for QueueAttributes {
    /// AWS's defaults for a new standard queue.
    fn default() -> Self {
        QueueAttributes {
            content_based_deduplication: false,
            deduplication_scope: DeduplicationScope::Queue,
            delay_seconds: 0,
            fifo_queue: false,
            fifo_throughput_limit: FifoThroughputLimit::PerQueue,
            kms_data_key_reuse_period_seconds: 300,
            kms_master_key_id: None,
            maximum_message_size: MAX_MESSAGE_BYTES,
            message_retention_period: 345_600,
            policy: None,
            receive_message_wait_time_seconds: 0,
            redrive_allow_policy: None,
            redrive_policy: None,
            sqs_managed_sse_enabled: true,
            visibility_timeout: 30,
        }
    }
}

impl QueueAttributes {
    /// Sets one attribute from its text form, checking name and range.
    pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
        if !crate::queue::message::is_xml_text(value) {
            return Err(invalid_value(name, "it contains characters SQS does not allow"));
        }
        match name {
            "ContentBasedDeduplication" => self.content_based_deduplication = parse_bool(name, value)?,
            "DeduplicationScope" => {
                self.deduplication_scope = DeduplicationScope::parse(name, value)?;
            }
            "DelaySeconds" => self.delay_seconds = parse_in_range(name, value, 0, MAX_DELAY_SECONDS)?,
            "FifoQueue" => self.fifo_queue = parse_bool(name, value)?,
            "FifoThroughputLimit" => {
                self.fifo_throughput_limit = FifoThroughputLimit::parse(name, value)?;
            }
            "KmsDataKeyReusePeriodSeconds" => {
                self.kms_data_key_reuse_period_seconds = parse_in_range(name, value, 60, 86_400)?
            }
            "KmsMasterKeyId" => {
                if value.len() > MAX_KMS_KEY_ID_BYTES {
                    return Err(invalid_value(
                        name,
                        &format!("a KMS key id, alias or ARN is at most {MAX_KMS_KEY_ID_BYTES} characters"),
                    ));
                }
                self.kms_master_key_id = non_empty(value);
                // SSE-KMS takes the place of SSE-SQS, which stays off when
                // the key is removed again (as recorded against AWS).
                if self.kms_master_key_id.is_some() {
                    self.sqs_managed_sse_enabled = false;
                }
            }
            "MaximumMessageSize" => {
                self.maximum_message_size = parse_in_range(name, value, 1_024, MAX_MESSAGE_BYTES)?
            }
            "MessageRetentionPeriod" => {
                self.message_retention_period = parse_in_range(name, value, 60, 1_209_600)?
            }
            "Policy" => {
                if value.len() > MAX_POLICY_BYTES {
                    return Err(invalid_value(
                        name,
                        &format!(
                            "the policy is {} bytes, more than the {MAX_POLICY_BYTES} bytes a queue policy may have",
                            value.len()
                        ),
                    ));
                }
                if !value.is_empty() && serde_json::from_str::<serde_json::Value>(value).is_err() {
                    return Err(invalid_value(name, "it must be a JSON policy document"));
                }
                self.policy = non_empty(value).map(QueuePolicy::new);
            }
            "ReceiveMessageWaitTimeSeconds" => {
                self.receive_message_wait_time_seconds = parse_in_range(name, value, 0, MAX_WAIT_SECONDS)?
            }
            "RedriveAllowPolicy" => self.redrive_allow_policy = parse_redrive_allow_policy(value)?,
            "RedrivePolicy" => self.redrive_policy = parse_redrive_policy(value)?,
            "SqsManagedSseEnabled" => self.sqs_managed_sse_enabled = parse_bool(name, value)?,
            "VisibilityTimeout" => {
                self.visibility_timeout = parse_in_range(name, value, 0, MAX_VISIBILITY_TIMEOUT_SECONDS)?
            }
            _ => return Err(unknown_attribute(name)),
        }
        Ok(())
    }

    /// The bytes of the attributes' own texts (policies, key id), which
    /// count toward `--max-bytes` as message payloads do.
    pub fn held_bytes(&self) -> u64 {
        [
            self.kms_master_key_id.as_deref(),
            self.policy.as_ref().map(|policy| policy.text.as_str()),
            self.redrive_allow_policy.as_deref(),
        ]
        .into_iter()
        .flatten()
        .map(|text| text.len() as u64)
        .sum::<u64>()
            + self
                .redrive_policy
                .as_ref()
                .map_or(0, |policy| policy.dead_letter_target_arn.len() as u64)
    }

    /// The text form of a settable attribute; `None` when it is unset.
    pub fn get(&self, name: &str) -> Option<String> {
        if FIFO_ONLY.contains(&name) && !self.fifo_queue {
            return None;
        }
        Some(match name {
            "ContentBasedDeduplication" => self.content_based_deduplication.to_string(),
            "DeduplicationScope" => self.deduplication_scope.text().to_string(),
            "DelaySeconds" => self.delay_seconds.to_string(),
            "FifoQueue" if self.fifo_queue => "true".into(),
            "KmsDataKeyReusePeriodSeconds" => self.kms_data_key_reuse_period_seconds.to_string(),
            "KmsMasterKeyId" => self.kms_master_key_id.clone()?,
            "MaximumMessageSize" => self.maximum_message_size.to_string(),
            "MessageRetentionPeriod" => self.message_retention_period.to_string(),
            "Policy" => self.policy.as_ref()?.text.clone(),
            "FifoThroughputLimit" => self.fifo_throughput_limit.text().to_string(),
            "ReceiveMessageWaitTimeSeconds" => self.receive_message_wait_time_seconds.to_string(),
            "RedriveAllowPolicy" => self.redrive_allow_policy.clone()?,
            "RedrivePolicy" => {
                let policy = self.redrive_policy.as_ref()?;
                serde_json::json!({
                    "deadLetterTargetArn": policy.dead_letter_target_arn,
                    "maxReceiveCount": policy.max_receive_count,
                })
                .to_string()
            }
            "SqsManagedSseEnabled" => self.sqs_managed_sse_enabled.to_string(),
            "VisibilityTimeout" => self.visibility_timeout.to_string(),
            _ => return None,
        })
    }

    /// The attributes of a new queue named `queue_name`, from their text
    /// (CreateQueue's, or a snapshot's): each checked as SetQueueAttributes
    /// checks it, then the rules that tie them together.
    pub fn for_new_queue(queue_name: &str, attributes: &BTreeMap<String, String>) -> Result<QueueAttributes> {
        let mut parsed = QueueAttributes::default();
        for (key, value) in attributes {
            parsed.set(key, value)?;
        }
        let given: Vec<&str> = attributes.keys().map(String::as_str).collect();
        parsed.check_consistency(queue_name, &given)?;
        Ok(parsed)
    }

    /// Whether CreateQueue's `attributes` ask for a FIFO queue: the name
    /// rules to check a queue's name by, before the attributes are read.
    pub fn request_fifo(attributes: &BTreeMap<String, String>) -> bool {
        attributes
            .get("FifoQueue")
            .is_some_and(|value| value.eq_ignore_ascii_case("true"))
    }

    /// Checks the rules that tie attributes to each other and to the queue's
    /// name: FIFO queues end in `.fifo` and only they have FIFO attributes.
    pub fn check_consistency(&self, queue_name: &str, given: &[&str]) -> Result<()> {
        super::key::validate_name(queue_name, self.fifo_queue)?;
        if !self.fifo_queue
            && let Some(name) = given.iter().find(|n| FIFO_ONLY.contains(n) || **n == "FifoQueue")
        {
            // AWS's words differ by attribute.
            return Err(match *name {
                "DeduplicationScope" | "FifoThroughputLimit" => SqsError::new(
                    ErrorCode::InvalidAttributeName,
                    format!("You can specify the {name} only when FifoQueue is set to true."),
                ),
                _ => unknown_attribute(name),
            });
        }
        if self.fifo_throughput_limit == FifoThroughputLimit::PerMessageGroupId
            && self.deduplication_scope != DeduplicationScope::MessageGroup
        {
            return Err(invalid_value(
                "FifoThroughputLimit",
                "perMessageGroupId needs DeduplicationScope messageGroup",
            ));
        }
        Ok(())
    }

    /// The text form GetQueueAttributes reports: as [`Self::get`], except
    /// that the data key reuse period, which only means something with a
    /// KMS key, is reported only while one is set (as AWS does).
    pub fn reported(&self, name: &str) -> Option<String> {
        if name == "KmsDataKeyReusePeriodSeconds" && self.kms_master_key_id.is_none() {
            return None;
        }
        self.get(name)
    }

    /// Whether setting `name` to `value` would leave these attributes as they
    /// are: CreateQueue on an existing queue succeeds only if it would.
    pub fn agrees_with(&self, name: &str, value: &str) -> Result<bool> {
        let mut probe = self.clone();
        probe.set(name, value)?;
        Ok(probe == *self)
    }
}

/// Checks a name given to GetQueueAttributes.
pub fn check_readable(name: &str) -> Result<()> {
    if name == "All" || SETTABLE.contains(&name) || READ_ONLY.contains(&name) {
        Ok(())
    } else {
        Err(unknown_attribute(name))
    }
}

/// `true` or `false` in any case, as SQS reads them (`"True"`, `"FALSE"`).
fn parse_bool(name: &str, value: &str) -> Result<bool> {
    if value.eq_ignore_ascii_case("true") {
        Ok(true)
    } else if value.eq_ignore_ascii_case("false") {
        Ok(false)
    } else {
        Err(invalid_value(name, "it must be true or false"))
    }
}

/// An attribute whose value is one of a few words.
macro_rules! one_of {
    ($(#[$doc:meta])* $name:ident { $($variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name { $($variant),+ }

        impl $name {
            pub fn text(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            pub fn parse(attribute: &str, value: &str) -> Result<$name> {
                match value {
                    $($text => Ok($name::$variant),)+
                    _ => Err(invalid_value(
                        attribute,
                        &format!("it must be one of {}", [$($text),+].join(", ")),
                    )),
                }
            }
        }
    };
}

one_of!(
    /// Whether FIFO deduplication ids are unique per queue or per message group.
    DeduplicationScope { Queue = "queue", MessageGroup = "messageGroup" }
);

one_of!(
    /// Whether a FIFO queue's throughput quota applies per queue or per group.
    FifoThroughputLimit { PerQueue = "perQueue", PerMessageGroupId = "perMessageGroupId" }
);

/// `{"deadLetterTargetArn": "arn:aws:sqs:…:name", "maxReceiveCount": 1..1000}`;
/// an empty value removes the policy.
fn parse_redrive_policy(value: &str) -> Result<Option<RedrivePolicy>> {
    if value.is_empty() {
        return Ok(None);
    }
    let invalid = |why: &str| invalid_value("RedrivePolicy", why);
    // Only the two members are kept, so others cost nothing but their size.
    let json = policy_document("RedrivePolicy", value, None)?;
    let arn = json["deadLetterTargetArn"]
        .as_str()
        .filter(|arn| is_queue_arn(arn))
        .ok_or_else(|| invalid("deadLetterTargetArn must be a queue ARN"))?;
    // SDKs send the count as a number or as a string.
    let count = match &json["maxReceiveCount"] {
        serde_json::Value::Number(n) => n.as_u64(),
        serde_json::Value::String(s) => s.parse().ok(),
        _ => None,
    }
    .filter(|n| (1..=1000).contains(n))
    .ok_or_else(|| invalid("maxReceiveCount must be a whole number from 1 to 1000"))?;
    Ok(Some(RedrivePolicy {
        dead_letter_target_arn: arn.to_string(),
        max_receive_count: count as u32,
    }))
}

/// `{"redrivePermission": "allowAll" | "denyAll" | "byQueue", "sourceQueueArns": [...]}`.
fn parse_redrive_allow_policy(value: &str) -> Result<Option<String>> {
    if value.is_empty() {
        return Ok(None);
    }
    let invalid = |why: &str| invalid_value("RedriveAllowPolicy", why);
    // Kept as given: a member it does not have would be held too.
    let json = policy_document(
        "RedriveAllowPolicy",
        value,
        Some(&["redrivePermission", "sourceQueueArns"]),
    )?;
    let sources = match &json["sourceQueueArns"] {
        serde_json::Value::Null => 0,
        serde_json::Value::Array(arns) if arns.iter().all(|arn| arn.as_str().is_some_and(is_queue_arn)) => {
            arns.len()
        }
        _ => return Err(invalid("sourceQueueArns must be a list of queue ARNs")),
    };
    match json["redrivePermission"].as_str() {
        Some("allowAll" | "denyAll") if sources == 0 => Ok(Some(value.to_string())),
        Some("byQueue") if (1..=10).contains(&sources) => Ok(Some(value.to_string())),
        Some("byQueue") => Err(invalid("byQueue needs 1 to 10 sourceQueueArns")),
        Some("allowAll" | "denyAll") => Err(invalid("sourceQueueArns goes only with byQueue")),
        _ => Err(invalid("redrivePermission must be allowAll, denyAll or byQueue")),
    }
}

/// A redrive document: a JSON object of at most [`MAX_POLICY_BYTES`], with
/// no members but `members` when given.
fn policy_document(name: &str, value: &str, members: Option<&[&str]>) -> Result<serde_json::Value> {
    if value.len() > MAX_POLICY_BYTES {
        return Err(invalid_value(
            name,
            &format!("it is more than {MAX_POLICY_BYTES} bytes"),
        ));
    }
    let json: serde_json::Value =
        serde_json::from_str(value).map_err(|_| invalid_value(name, "it must be a JSON object"))?;
    let Some(object) = json.as_object() else {
        return Err(invalid_value(name, "it must be a JSON object"));
    };
    if let Some(members) = members
        && let Some(unknown) = object.keys().find(|key| !members.contains(&key.as_str()))
    {
        return Err(invalid_value(
            name,
            &format!("{unknown} is not one of its members ({})", members.join(", ")),
        ));
    }
    Ok(json)
}

/// `arn:<partition>:sqs:<region>:<account>:<name>`, of a length a queue's can have.
fn is_queue_arn(arn: &str) -> bool {
    arn.len() <= MAX_QUEUE_ARN_BYTES && arn.starts_with("arn:") && arn.split(':').count() == 6
}

/// Whether a dead-letter queue with this RedriveAllowPolicy accepts `source_arn`.
pub fn redrive_allowed(allow_policy: Option<&str>, source_arn: &str) -> bool {
    let Some(policy) = allow_policy.and_then(|p| serde_json::from_str::<serde_json::Value>(p).ok()) else {
        return true;
    };
    match policy["redrivePermission"].as_str() {
        Some("denyAll") => false,
        Some("byQueue") => policy["sourceQueueArns"]
            .as_array()
            .is_some_and(|arns| arns.iter().any(|a| a.as_str() == Some(source_arn))),
        _ => true,
    }
}

fn non_empty(value: &str) -> Option<String> {
    (!value.is_empty()).then(|| value.to_string())
}

fn parse_in_range(name: &str, value: &str, min: u32, max: u32) -> Result<u32> {
    // Digits only: SQS rejects signs, spaces and decimals here.
    let parsed = if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        value.parse::<u64>().ok()
    } else {
        None
    };
    match parsed {
        Some(n) if (min as u64..=max as u64).contains(&n) => Ok(n as u32),
        _ => Err(invalid_value(
            name,
            &format!("it must be a whole number from {min} to {max}"),
        )),
    }
}

fn invalid_value(name: &str, why: &str) -> SqsError {
    SqsError::new(
        ErrorCode::InvalidAttributeValue,
        format!("Invalid value for the parameter {name}: {why}."),
    )
}

pub fn unknown_attribute(name: &str) -> SqsError {
    SqsError::new(
        ErrorCode::InvalidAttributeName,
        format!("Unknown Attribute {name}."),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_enforced() {
        let mut attrs = QueueAttributes::default();
        for (name, low, high) in [
            ("VisibilityTimeout", "0", "43200"),
            ("DelaySeconds", "0", "900"),
            ("MessageRetentionPeriod", "60", "1209600"),
            ("MaximumMessageSize", "1024", "1048576"),
            ("ReceiveMessageWaitTimeSeconds", "0", "20"),
        ] {
            attrs.set(name, low).unwrap();
            attrs.set(name, high).unwrap();
            assert_eq!(attrs.get(name).unwrap(), high);
            let above = (high.parse::<u64>().unwrap() + 1).to_string();
            for bad in [above.as_str(), "-1", "", "1.5", " 5", "99999999999999999999"] {
                let err = attrs.set(name, bad).unwrap_err();
                assert_eq!(err.code, ErrorCode::InvalidAttributeValue, "{name}={bad}");
            }
        }
        assert!(attrs.set("MessageRetentionPeriod", "59").is_err());
    }

    #[test]
    fn unknown_and_read_only_names_cannot_be_set() {
        let mut attrs = QueueAttributes::default();
        for name in ["Nope", "QueueArn", "ApproximateNumberOfMessages"] {
            assert_eq!(
                attrs.set(name, "1").unwrap_err().code,
                ErrorCode::InvalidAttributeName
            );
        }
        assert!(check_readable("QueueArn").is_ok());
        assert!(check_readable("All").is_ok());
        assert!(check_readable("Nope").is_err());
    }

    #[test]
    fn fifo_attributes_belong_to_fifo_queues() {
        let mut attrs = QueueAttributes::default();
        attrs.set("FifoQueue", "true").unwrap();
        attrs.set("ContentBasedDeduplication", "true").unwrap();
        attrs
            .check_consistency("jobs.fifo", &["FifoQueue", "ContentBasedDeduplication"])
            .unwrap();
        assert!(attrs.check_consistency("jobs", &["FifoQueue"]).is_err());
        let standard = QueueAttributes::default();
        assert!(standard.check_consistency("jobs.fifo", &[]).is_err());
        let err = standard
            .check_consistency("jobs", &["ContentBasedDeduplication"])
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidAttributeName);
        assert_eq!(
            standard.get("DeduplicationScope"),
            None,
            "standard queues do not show FIFO attributes"
        );
        attrs.set("FifoThroughputLimit", "perMessageGroupId").unwrap();
        assert!(attrs.check_consistency("jobs.fifo", &[]).is_err());
        attrs.set("DeduplicationScope", "messageGroup").unwrap();
        attrs.check_consistency("jobs.fifo", &[]).unwrap();
    }

    #[test]
    fn redrive_policies_are_parsed_and_rendered() {
        let mut attrs = QueueAttributes::default();
        attrs
            .set(
                "RedrivePolicy",
                r#"{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq","maxReceiveCount":"3"}"#,
            )
            .unwrap();
        let policy = attrs.redrive_policy.clone().unwrap();
        assert_eq!((policy.target_name(), policy.max_receive_count), ("dlq", 3));
        assert!(
            attrs
                .get("RedrivePolicy")
                .unwrap()
                .contains("\"maxReceiveCount\":3")
        );
        for bad in [
            r#"{"maxReceiveCount":3}"#,
            r#"{"deadLetterTargetArn":"x","maxReceiveCount":3}"#,
            r#"{"deadLetterTargetArn":"arn:aws:sqs:r:a:q","maxReceiveCount":0}"#,
            "nope",
        ] {
            assert!(attrs.set("RedrivePolicy", bad).is_err(), "{bad}");
        }
        attrs.set("RedrivePolicy", "").unwrap();
        assert!(attrs.redrive_policy.is_none());
        assert!(
            attrs
                .set(
                    "RedriveAllowPolicy",
                    r#"{"redrivePermission":"byQueue","sourceQueueArns":["arn:aws:sqs:r:a:src"]}"#
                )
                .is_ok()
        );
        assert!(redrive_allowed(
            attrs.redrive_allow_policy.as_deref(),
            "arn:aws:sqs:r:a:src"
        ));
        assert!(!redrive_allowed(
            attrs.redrive_allow_policy.as_deref(),
            "arn:aws:sqs:r:a:other"
        ));
        assert!(redrive_allowed(None, "anything"));
    }

    #[test]
    fn agreement_compares_parsed_values() {
        let attrs = QueueAttributes::default();
        assert!(attrs.agrees_with("VisibilityTimeout", "30").unwrap());
        assert!(!attrs.agrees_with("VisibilityTimeout", "31").unwrap());
        assert!(attrs.agrees_with("VisibilityTimeout", "x").is_err());
    }
}
