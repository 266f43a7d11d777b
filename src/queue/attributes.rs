//! Queue attributes: their names, defaults, valid ranges and text forms.
//!
//! SQS speaks of attributes as a map of strings; the core keeps them typed.
//! This module is the one place that turns one into the other, so the range
//! checks of CreateQueue and SetQueueAttributes cannot drift apart.

use crate::error::{ErrorCode, Result, SqsError};

/// Attributes that a client sets (CreateQueue, SetQueueAttributes).
pub const SETTABLE: &[&str] = &[
    "DelaySeconds",
    "KmsDataKeyReusePeriodSeconds",
    "KmsMasterKeyId",
    "MaximumMessageSize",
    "MessageRetentionPeriod",
    "Policy",
    "ReceiveMessageWaitTimeSeconds",
    "SqsManagedSseEnabled",
    "VisibilityTimeout",
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

/// The settable attributes of a queue, typed. Durations are in seconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueAttributes {
    pub delay_seconds: u32,
    pub kms_data_key_reuse_period_seconds: u32,
    pub kms_master_key_id: Option<String>,
    pub maximum_message_size: u32,
    pub message_retention_period: u32,
    pub policy: Option<String>,
    pub receive_message_wait_time_seconds: u32,
    pub sqs_managed_sse_enabled: bool,
    pub visibility_timeout: u32,
}

impl Default for QueueAttributes {
    /// AWS's defaults for a new standard queue.
    fn default() -> Self {
        QueueAttributes {
            delay_seconds: 0,
            kms_data_key_reuse_period_seconds: 300,
            kms_master_key_id: None,
            maximum_message_size: 1_048_576,
            message_retention_period: 345_600,
            policy: None,
            receive_message_wait_time_seconds: 0,
            sqs_managed_sse_enabled: true,
            visibility_timeout: 30,
        }
    }
}

impl QueueAttributes {
    /// Sets one attribute from its text form, checking name and range.
    pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
        match name {
            "DelaySeconds" => self.delay_seconds = parse_in_range(name, value, 0, 900)?,
            "KmsDataKeyReusePeriodSeconds" => {
                self.kms_data_key_reuse_period_seconds = parse_in_range(name, value, 60, 86_400)?
            }
            "KmsMasterKeyId" => self.kms_master_key_id = non_empty(value),
            "MaximumMessageSize" => {
                self.maximum_message_size = parse_in_range(name, value, 1_024, 1_048_576)?
            }
            "MessageRetentionPeriod" => {
                self.message_retention_period = parse_in_range(name, value, 60, 1_209_600)?
            }
            "Policy" => {
                if !value.is_empty() && serde_json::from_str::<serde_json::Value>(value).is_err() {
                    return Err(invalid_value(name, "it must be a JSON policy document"));
                }
                self.policy = non_empty(value);
            }
            "ReceiveMessageWaitTimeSeconds" => {
                self.receive_message_wait_time_seconds = parse_in_range(name, value, 0, 20)?
            }
            "SqsManagedSseEnabled" => {
                self.sqs_managed_sse_enabled = match value {
                    "true" => true,
                    "false" => false,
                    _ => return Err(invalid_value(name, "it must be true or false")),
                }
            }
            "VisibilityTimeout" => self.visibility_timeout = parse_in_range(name, value, 0, 43_200)?,
            _ => return Err(unknown_attribute(name)),
        }
        Ok(())
    }

    /// The text form of a settable attribute; `None` when it is unset.
    pub fn get(&self, name: &str) -> Option<String> {
        Some(match name {
            "DelaySeconds" => self.delay_seconds.to_string(),
            "KmsDataKeyReusePeriodSeconds" => self.kms_data_key_reuse_period_seconds.to_string(),
            "KmsMasterKeyId" => self.kms_master_key_id.clone()?,
            "MaximumMessageSize" => self.maximum_message_size.to_string(),
            "MessageRetentionPeriod" => self.message_retention_period.to_string(),
            "Policy" => self.policy.clone()?,
            "ReceiveMessageWaitTimeSeconds" => self.receive_message_wait_time_seconds.to_string(),
            "SqsManagedSseEnabled" => self.sqs_managed_sse_enabled.to_string(),
            "VisibilityTimeout" => self.visibility_timeout.to_string(),
            _ => return None,
        })
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
    fn agreement_compares_parsed_values() {
        let attrs = QueueAttributes::default();
        assert!(attrs.agrees_with("VisibilityTimeout", "30").unwrap());
        assert!(!attrs.agrees_with("VisibilityTimeout", "31").unwrap());
        assert!(attrs.agrees_with("VisibilityTimeout", "x").is_err());
    }
}
