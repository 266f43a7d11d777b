//! Subscriptions: a topic, a protocol and an endpoint, and the attributes
//! that shape delivery (raw delivery, the filter policy and its scope, the
//! redrive and delivery policies), checked as AWS checks them; and where
//! its replay stands (`Replay`: what its ReplayPolicy asked, which the
//! topic's archive, `archive.rs`, feeds).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::arn::TopicArn;
use super::error::{Result, SnsError};
use super::filter::{FilterPolicy, Scope};
use crate::queue::arn::QueueArn;

/// Where a subscription delivers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// An SQS queue of this ssq: copies committed with the Publish.
    Sqs,
    /// A webhook.
    Http,
    Https,
    /// Kept, listed and confirmed as AWS keeps them; ssq has no mail or
    /// phone network to deliver to, so nothing is sent.
    Email,
    EmailJson,
    Sms,
}

/// The protocols AWS knows that ssq has nothing to deliver to.
const NOT_HERE: &[&str] = &["lambda", "application", "firehose"];

impl Protocol {
    pub fn parse(text: &str) -> Result<Protocol> {
        match text {
            "sqs" => Ok(Protocol::Sqs),
            "http" => Ok(Protocol::Http),
            "https" => Ok(Protocol::Https),
            "email" => Ok(Protocol::Email),
            "email-json" => Ok(Protocol::EmailJson),
            "sms" => Ok(Protocol::Sms),
            other if NOT_HERE.contains(&other) => Err(SnsError::parameter(format!(
                "Protocol Reason: ssq does not deliver to {other} endpoints; it delivers to sqs, http and https \
                 (email, email-json and sms subscriptions are kept but never sent)"
            ))),
            other => Err(SnsError::parameter(format!(
                "Amazon SNS does not support this protocol string: {other}"
            ))),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Sqs => "sqs",
            Protocol::Http => "http",
            Protocol::Https => "https",
            Protocol::Email => "email",
            Protocol::EmailJson => "email-json",
            Protocol::Sms => "sms",
        }
    }

    /// Whether a subscription must be confirmed by its endpoint first.
    pub fn needs_confirmation(self) -> bool {
        matches!(
            self,
            Protocol::Http | Protocol::Https | Protocol::Email | Protocol::EmailJson
        )
    }

    /// Checks an endpoint for this protocol.
    pub fn check_endpoint(self, endpoint: &str) -> Result<()> {
        let ok = match self {
            Protocol::Sqs => QueueArn::parse(endpoint).is_some_and(|arn| !arn.name.is_empty()),
            Protocol::Http => endpoint.starts_with("http://") && endpoint.len() > 7,
            Protocol::Https => endpoint.starts_with("https://") && endpoint.len() > 8,
            Protocol::Email | Protocol::EmailJson => endpoint.contains('@'),
            Protocol::Sms => !endpoint.is_empty(),
        };
        match (ok, self) {
            (true, _) => Ok(()),
            (false, Protocol::Sqs) => Err(SnsError::parameter("SQS endpoint ARN")),
            (false, Protocol::Http | Protocol::Https) => {
                Err(SnsError::parameter("Endpoint must match the specified protocol"))
            }
            (false, _) => Err(SnsError::parameter("Endpoint")),
        }
    }
}

/// The attributes a client may set on a subscription.
pub const SETTABLE: &[&str] = &[
    "DeliveryPolicy",
    "FilterPolicy",
    "FilterPolicyScope",
    "RawMessageDelivery",
    "RedrivePolicy",
    "ReplayPolicy",
    "SubscriptionRoleArn",
];

/// One subscription.
#[derive(Debug, Clone)]
pub struct Subscription {
    /// `<topic arn>:<id>`.
    pub arn: String,
    pub topic: TopicArn,
    pub protocol: Protocol,
    pub endpoint: String,
    pub owner: String,
    /// The attributes set, as given (`FilterPolicy` as its text).
    pub attributes: BTreeMap<String, String>,
    /// The compiled filter policy, when one is set.
    pub filter: Option<FilterPolicy>,
    /// Whether the endpoint has yet to confirm.
    pub pending: bool,
    /// The token that confirms it (protocols that confirm).
    pub token: Option<String>,
    /// The replay its ReplayPolicy started, if any (`archive.rs`).
    pub replay: Option<Replay>,
}

impl Subscription {
    /// Whether a new publication goes to it directly (not while a replay
    /// brings publications through the archive, nor after a replay that
    /// ended).
    pub fn takes_live(&self) -> bool {
        self.replay.as_ref().is_none_or(Replay::takes_live)
    }

    pub fn raw(&self) -> bool {
        self.attributes
            .get("RawMessageDelivery")
            .is_some_and(|v| v == "true")
    }

    pub fn scope(&self) -> Scope {
        match self.attributes.get("FilterPolicyScope").map(String::as_str) {
            Some("MessageBody") => Scope::MessageBody,
            _ => Scope::MessageAttributes,
        }
    }

    /// The SQS queue (its ARN) undeliverable copies go to, if any.
    pub fn dead_letter_queue(&self) -> Option<QueueArn> {
        let policy = self.attributes.get("RedrivePolicy")?;
        let value: serde_json::Value = serde_json::from_str(policy).ok()?;
        QueueArn::parse(value.get("deadLetterTargetArn")?.as_str()?)
    }

    /// Sets an attribute, checked; `member` is how AWS names the attribute
    /// in its errors ("Attributes Reason: " at Subscribe, nothing after).
    pub fn set(&mut self, name: &str, value: &str, topic_fifo: bool, in_attributes: bool) -> Result<()> {
        let prefix = if in_attributes { "Attributes Reason: " } else { "" };
        if !SETTABLE.contains(&name) {
            return Err(match in_attributes {
                true => SnsError::parameter(format!("Attributes Reason: Invalid attribute name: {name}")),
                false => SnsError::parameter("AttributeName"),
            });
        }
        if name != "FilterPolicy" && value.len() > super::attributes::MAX_ATTRIBUTE_BYTES {
            return Err(SnsError::parameter(format!(
                "{prefix}{name}: {} bytes, more than the {} an attribute may have",
                value.len(),
                super::attributes::MAX_ATTRIBUTE_BYTES
            )));
        }
        match name {
            "RawMessageDelivery" => {
                let lower = value.to_ascii_lowercase();
                if lower != "true" && lower != "false" {
                    return Err(SnsError::parameter(format!(
                        "{prefix}RawMessageDelivery: Invalid value [{value}]. Must be true or false."
                    )));
                }
                self.attributes.insert(name.into(), lower);
                return Ok(());
            }
            "FilterPolicy" if value.is_empty() => {
                self.filter = None;
                self.attributes.remove("FilterPolicy");
                return Ok(());
            }
            "FilterPolicy" => {
                super::filter::check_size(value, &format!("{prefix}FilterPolicy"))?;
                let policy = FilterPolicy::compile(value, self.scope(), &format!("{prefix}FilterPolicy"))?;
                self.filter = Some(policy);
                self.attributes
                    .entry("FilterPolicyScope".into())
                    .or_insert_with(|| Scope::MessageAttributes.as_str().into());
            }
            "FilterPolicyScope" => {
                let scope = Scope::parse(value)?;
                if let Some(policy) = &self.filter
                    && policy.is_nested()
                    && scope == Scope::MessageAttributes
                {
                    return Err(SnsError::parameter(
                        "Filter policy scope MessageAttributes does not support nested filter policy",
                    ));
                }
                if let Some(text) = self.attributes.get("FilterPolicy") {
                    self.filter = Some(FilterPolicy::compile(
                        text,
                        scope,
                        &format!("{prefix}FilterPolicy"),
                    )?);
                }
            }
            "RedrivePolicy" => self.check_redrive(value, topic_fifo)?,
            "ReplayPolicy" if !topic_fifo => {
                return Err(SnsError::parameter(format!(
                    "{prefix}ReplayPolicy: replay policies are only for subscriptions to FIFO topics"
                )));
            }
            "DeliveryPolicy" | "ReplayPolicy" => {
                serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(value)
                    .map_err(|error| SnsError::parameter(format!("{name}: failed to parse JSON. {error}")))?;
            }
            _ => {}
        }
        self.attributes.insert(name.into(), value.into());
        Ok(())
    }

    fn check_redrive(&self, value: &str, topic_fifo: bool) -> Result<()> {
        let policy: serde_json::Value = serde_json::from_str(value)
            .map_err(|error| SnsError::parameter(format!("RedrivePolicy: failed to parse JSON. {error}")))?;
        let target = policy
            .get("deadLetterTargetArn")
            .and_then(serde_json::Value::as_str)
            .and_then(QueueArn::parse)
            .ok_or_else(|| SnsError::parameter("RedrivePolicy: deadLetterTargetArn is an invalid arn"))?;
        let queue_fifo = target.name.ends_with(".fifo");
        if topic_fifo
            && self.protocol == Protocol::Sqs
            && QueueArn::parse(&self.endpoint).is_some_and(|q| q.name.ends_with(".fifo"))
            && !queue_fifo
        {
            return Err(SnsError::parameter(
                "RedrivePolicy: must use a FIFO queue as DLQ for a FIFO Subscription to a FIFO Topic.",
            ));
        }
        Ok(())
    }

    /// GetSubscriptionAttributes' attributes.
    pub fn describe(&self) -> BTreeMap<String, String> {
        let mut attributes = self.attributes.clone();
        let confirmed = !self.pending;
        attributes.insert("ConfirmationWasAuthenticated".into(), confirmed.to_string());
        attributes.insert("Endpoint".into(), self.endpoint.clone());
        attributes.insert("Owner".into(), self.owner.clone());
        attributes.insert("PendingConfirmation".into(), (!confirmed).to_string());
        attributes.insert("Protocol".into(), self.protocol.as_str().into());
        attributes
            .entry("RawMessageDelivery".into())
            .or_insert_with(|| "false".into());
        // The scope shows only beside a policy, as AWS shows it.
        match attributes.contains_key("FilterPolicy") {
            true => {
                attributes
                    .entry("FilterPolicyScope".into())
                    .or_insert_with(|| "MessageAttributes".into());
            }
            false => {
                attributes.remove("FilterPolicyScope");
            }
        }
        attributes.insert("SubscriptionArn".into(), self.arn.clone());
        attributes.insert(
            "SubscriptionPrincipal".into(),
            format!("arn:aws:iam::{}:user/ssq", self.owner),
        );
        attributes.insert("TopicArn".into(), self.topic.to_string());
        if let Some(replay) = &self.replay {
            attributes.insert("ReplayStatus".into(), replay.status.as_str().into());
        }
        if matches!(self.protocol, Protocol::Http | Protocol::Https) {
            let own = self.attributes.get("DeliveryPolicy").map(String::as_str);
            let effective = super::attributes::effective_delivery_policy(own);
            attributes.insert("EffectiveDeliveryPolicy".into(), effective["http"].to_string());
        }
        attributes
    }
}

/// Where a subscription's replay stands (ReplayStatus).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReplayStatus {
    Pending,
    #[serde(rename = "In progress")]
    InProgress,
    Completed,
}

impl ReplayStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ReplayStatus::Pending => "Pending",
            ReplayStatus::InProgress => "In progress",
            ReplayStatus::Completed => "Completed",
        }
    }
}

/// A subscription's replay: what its ReplayPolicy asked and how far it went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Replay {
    /// The publications from this time (milliseconds)…
    pub from: u64,
    /// …to this one, when the policy gives an ending point.
    pub to: Option<u64>,
    /// The last sequence number replayed.
    pub after: u64,
    pub status: ReplayStatus,
    /// Scheme and authority the client called, for the envelopes'
    /// UnsubscribeURL, and the instance's region and account, for the
    /// queue's key (a replay resumed after a failover has no request to
    /// read them from).
    pub base_url: String,
    pub home_region: String,
    /// Replays recorded before ssq had accounts lack it: the instance's
    /// account was then the topic's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub home_account: Option<String>,
}

impl Replay {
    /// Whether the subscription takes a new publication directly: not
    /// while a replay runs (the archive brings it, after the replayed
    /// ones), nor after a replay with an ending point completed.
    pub fn takes_live(&self) -> bool {
        self.status == ReplayStatus::Completed && self.to.is_none()
    }
}
