//! Topic and subscription ARNs, `arn:aws:sns:<region>:<account>:<name>` and
//! `…:<name>:<id>`, read with AWS's errors for each way one can be wrong.

use std::fmt;

use super::error::{Result, SnsError};

/// A topic's Amazon Resource Name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TopicArn {
    pub region: String,
    pub account: String,
    pub name: String,
}

impl TopicArn {
    pub fn new(region: &str, account: &str, name: &str) -> TopicArn {
        TopicArn {
            region: region.into(),
            account: account.into(),
            name: name.into(),
        }
    }

    /// Reads the ARN given as `member`: fewer than six parts is AWS's
    /// "An ARN must have at least 6 elements", anything else that is not a
    /// topic's ARN is "Invalid parameter: {member}".
    pub fn parse(member: &str, text: &str) -> Result<TopicArn> {
        let parts = split(member, text)?;
        match parts.as_slice() {
            ["arn", _partition, "sns", region, account, name]
                if !region.is_empty() && !account.is_empty() && super::attributes::valid_topic_name(name) =>
            {
                Ok(TopicArn::new(region, account, name))
            }
            _ => Err(SnsError::parameter(member)),
        }
    }

    pub fn is_fifo(&self) -> bool {
        self.name.ends_with(".fifo")
    }
}

impl fmt::Display for TopicArn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "arn:aws:sns:{}:{}:{}", self.region, self.account, self.name)
    }
}

/// The topic of a subscription ARN (`<topic arn>:<id>`), checked as AWS
/// checks it.
pub fn subscription_topic(text: &str) -> Result<TopicArn> {
    const MEMBER: &str = "SubscriptionArn";
    if text.is_empty() {
        return Err(SnsError::parameter(format!(
            "{MEMBER} Reason: no value for required parameter"
        )));
    }
    let parts = split(MEMBER, text)?;
    match parts.as_slice() {
        ["arn", _, "sns", region, account, name, id] if !id.is_empty() => {
            Ok(TopicArn::new(region, account, name))
        }
        _ => Err(SnsError::parameter("SubscriptionId")),
    }
}

fn split<'a>(member: &str, text: &'a str) -> Result<Vec<&'a str>> {
    let parts: Vec<&str> = text.split(':').collect();
    if parts.len() < 6 {
        return Err(SnsError::parameter(format!(
            "{member} Reason: An ARN must have at least 6 elements, not {}",
            parts.len()
        )));
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_arns_round_trip_and_bad_ones_get_aws_words() {
        let arn = TopicArn::new("eu-west-1", "123456789012", "orders.fifo");
        assert_eq!(TopicArn::parse("TopicArn", &arn.to_string()), Ok(arn.clone()));
        assert!(arn.is_fifo());
        assert_eq!(
            TopicArn::parse("TopicArn", "test-topic").unwrap_err().message,
            "Invalid parameter: TopicArn Reason: An ARN must have at least 6 elements, not 1"
        );
        assert_eq!(
            TopicArn::parse("TopicArn", "arn:aws:sqs:eu-west-1:1:q")
                .unwrap_err()
                .message,
            "Invalid parameter: TopicArn"
        );
    }

    #[test]
    fn a_subscription_arn_names_its_topic() {
        let topic = subscription_topic("arn:aws:sns:us-east-1:000000000000:t:0b3c").unwrap();
        assert_eq!(topic.name, "t");
        assert_eq!(
            subscription_topic("arn:aws:sns:us-east-1:000000000000:t")
                .unwrap_err()
                .message,
            "Invalid parameter: SubscriptionId"
        );
        assert!(subscription_topic("x").unwrap_err().message.ends_with("not 1"));
    }
}
