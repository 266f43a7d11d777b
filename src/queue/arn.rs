//! Queue ARNs: `arn:aws:sqs:<region>:<account>:<name>`, the one place that
//! builds and reads them.

use std::fmt;

/// A queue's Amazon Resource Name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueArn {
    pub region: String,
    pub account: String,
    pub name: String,
}

impl QueueArn {
    pub fn new(region: &str, account: &str, name: &str) -> QueueArn {
        QueueArn {
            region: region.to_string(),
            account: account.to_string(),
            name: name.to_string(),
        }
    }

    /// The ARN of queue `name` of `account` in `region`, as text, made
    /// without an allocation per part (checked on every call of a key
    /// with a policy).
    pub fn text(region: &str, account: &str, name: &str) -> String {
        ["arn:aws:sqs:", region, ":", account, ":", name].concat()
    }

    /// Reads an SQS queue ARN; `None` for anything else.
    pub fn parse(text: &str) -> Option<QueueArn> {
        let mut parts = text.splitn(6, ':');
        let (Some("arn"), Some(_partition), Some("sqs"), Some(region), Some(account), Some(name)) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return None;
        };
        Some(QueueArn::new(region, account, name))
    }

    /// The queue name at the end of an ARN, without parsing the rest: for
    /// ARNs ssq wrote itself (dead-letter sources, redrive targets).
    pub fn name_of(text: &str) -> &str {
        text.rsplit(':').next().unwrap_or_default()
    }
}

impl fmt::Display for QueueArn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&QueueArn::text(&self.region, &self.account, &self.name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arns_round_trip_and_only_sqs_arns_parse() {
        let arn = QueueArn::new("eu-west-1", "123456789012", "orders.fifo");
        assert_eq!(arn.to_string(), "arn:aws:sqs:eu-west-1:123456789012:orders.fifo");
        assert_eq!(QueueArn::parse(&arn.to_string()), Some(arn));
        assert_eq!(QueueArn::name_of("arn:aws:sqs:r:a:dlq"), "dlq");
        for bad in ["arn:aws:sns:r:a:q", "arn:aws:sqs:r:a", "q", ""] {
            assert_eq!(QueueArn::parse(bad), None, "{bad}");
        }
    }
}
