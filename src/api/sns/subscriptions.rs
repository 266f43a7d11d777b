//! Subscribe, ConfirmSubscription, Unsubscribe, the two subscription
//! listings, and Get/SetSubscriptionAttributes.

use std::collections::BTreeMap;

use super::{Answer, Form};
use super::{Call, attribute_map};
use crate::topic::envelope::{Confirmation, Envelope};
use crate::topic::{OutboundKind, Protocol, Result, Subscription, Topics, arn};

/// What Subscribe answers for a subscription its endpoint has yet to
/// confirm, unless the caller asked for the ARN.
const PENDING: &str = "pending confirmation";

pub(super) async fn subscribe(call: &Call<'_>, form: &Form) -> Result<Option<Answer>> {
    let topic = call.topic_arn(form, "TopicArn")?;
    let protocol = Protocol::parse(form.required("Protocol")?)?;
    let endpoint = form.get("Endpoint").unwrap_or_default();
    let attributes: BTreeMap<String, String> = form
        .map("Attributes")
        .into_iter()
        .map(|(key, value)| (key, value.get("").cloned().unwrap_or_default()))
        .collect();
    let return_arn = form
        .get("ReturnSubscriptionArn")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let account = &call.ctx.account_id;
    let replays = attributes.contains_key("ReplayPolicy");
    let (subscribed, subscription) = call
        .api
        .service
        .change_topics(|topics| {
            if let Some(policy) = attributes.get("ReplayPolicy") {
                topics.check_replay(&topic, policy)?;
            }
            let subscribed = topics.subscribe(&topic, protocol, endpoint, &attributes, account)?;
            if replays && subscribed.pending_token.is_none() {
                topics.start_replay(&subscribed.arn, &call.ctx.base_url, &call.ctx.home)?;
            }
            let subscription = topics.subscription(&subscribed.arn)?.clone();
            // The endpoint's SubscriptionConfirmation, in the same commit.
            if subscribed.pending_token.is_some() && is_webhook(protocol) {
                confirmation(
                    call,
                    topics,
                    &subscription,
                    OutboundKind::SubscriptionConfirmation,
                );
            }
            Ok((subscribed, subscription))
        })
        .await?;
    call.api.service.wake_deliveries(Vec::new());
    if subscription.replay.is_some() {
        call.api.replays.start(&subscription.arn);
    }
    let shown = match subscription.pending && !return_arn {
        true => PENDING.to_string(),
        false => subscribed.arn.clone(),
    };
    Ok(Some(Answer::Fields(vec![(
        "SubscriptionArn",
        Answer::Text(shown),
    )])))
}

fn is_webhook(protocol: Protocol) -> bool {
    matches!(protocol, Protocol::Http | Protocol::Https)
}

pub(super) async fn confirm(call: &Call<'_>, form: &Form) -> Result<Option<Answer>> {
    let topic = form.required("TopicArn")?;
    let token = form.required("Token")?;
    let arn = call
        .api
        .service
        .change_topics(|topics| topics.confirm(topic, token))
        .await?;
    Ok(Some(Answer::Fields(vec![("SubscriptionArn", Answer::Text(arn))])))
}

pub(super) async fn unsubscribe(call: &Call<'_>, form: &Form) -> Result<Option<Answer>> {
    let arn = form.get("SubscriptionArn").unwrap_or_default();
    arn::subscription_topic(arn)?;
    let removed = call
        .api
        .service
        .change_topics(|topics| {
            let removed = topics.unsubscribe(arn);
            // An HTTP endpoint's UnsubscribeConfirmation, in the same commit.
            if let Some(subscription) = removed.as_ref().filter(|sub| is_webhook(sub.protocol)) {
                confirmation(call, topics, subscription, OutboundKind::UnsubscribeConfirmation);
            }
            Ok(removed)
        })
        .await?;
    if let Some(subscription) = &removed {
        let topic = subscription.topic.to_string();
        call.api.service.metrics.sns_subscription_ended(&topic, arn);
        call.api.service.wake_deliveries(Vec::new());
    }
    Ok(None)
}

fn listed(subscription: &Subscription) -> Answer {
    // AWS lists an email address that has not confirmed without its ARN.
    let unconfirmed_mail =
        subscription.pending && matches!(subscription.protocol, Protocol::Email | Protocol::EmailJson);
    let arn = match unconfirmed_mail {
        true => "PendingConfirmation".to_string(),
        false => subscription.arn.clone(),
    };
    Answer::Fields(vec![
        ("SubscriptionArn", Answer::Text(arn)),
        ("Owner", Answer::text(&subscription.owner)),
        ("Protocol", Answer::text(subscription.protocol.as_str())),
        ("Endpoint", Answer::text(&subscription.endpoint)),
        ("TopicArn", Answer::text(subscription.topic.to_string())),
    ])
}

fn page(subscriptions: Vec<&Subscription>, next: Option<String>) -> Option<Answer> {
    let mut fields = vec![(
        "Subscriptions",
        Answer::List(subscriptions.into_iter().map(listed).collect()),
    )];
    if let Some(next) = next {
        fields.push(("NextToken", Answer::Text(next)));
    }
    Some(Answer::Fields(fields))
}

pub(super) fn list(call: &Call<'_>, form: &Form) -> Result<Option<Answer>> {
    let topics = call.api.service.topics();
    let (subscriptions, next) = topics.list_subscriptions(&call.ctx.account_id, form.get("NextToken"))?;
    Ok(page(subscriptions, next))
}

pub(super) fn list_by_topic(call: &Call<'_>, form: &Form) -> Result<Option<Answer>> {
    let topic = call.topic_arn(form, "TopicArn")?;
    let topics = call.api.service.topics();
    let (subscriptions, next) = topics.list_by_topic(&topic, form.get("NextToken"))?;
    Ok(page(subscriptions, next))
}

fn subscription_arn(form: &Form) -> Result<&str> {
    let arn = form.required("SubscriptionArn")?;
    arn::subscription_topic(arn)?;
    Ok(arn)
}

pub(super) fn attributes(call: &Call<'_>, form: &Form) -> Result<Option<Answer>> {
    let arn = subscription_arn(form)?;
    let attributes = call.api.service.topics().subscription(arn)?.describe();
    Ok(Some(Answer::Fields(vec![(
        "Attributes",
        attribute_map(attributes),
    )])))
}

pub(super) async fn set_attribute(call: &Call<'_>, form: &Form) -> Result<Option<Answer>> {
    let arn = subscription_arn(form)?;
    let (name, value) = super::attribute_to_set(form)?;
    let replays = name == "ReplayPolicy";
    call.api
        .service
        .change_topics(|topics| {
            if replays {
                let topic = topics.subscription(arn)?.topic.clone();
                topics.check_replay(&topic, value)?;
            }
            topics.set_subscription_attribute(arn, name, value)?;
            match replays {
                true => topics.start_replay(arn, &call.ctx.base_url, &call.ctx.home),
                false => Ok(()),
            }
        })
        .await?;
    if replays {
        call.api.replays.start(arn);
    }
    Ok(None)
}

/// Records the SubscriptionConfirmation an HTTP endpoint receives, or the
/// UnsubscribeConfirmation when it was unsubscribed: the document, signed,
/// with the URL that confirms.
fn confirmation(call: &Call<'_>, topics: &mut Topics, subscription: &Subscription, kind: OutboundKind) {
    let topic = subscription.topic.to_string();
    let token = subscription.token.clone().unwrap_or_default();
    let message_id = crate::queue::random::uuid().to_string();
    let subscribe_url = format!(
        "{}/?Action=ConfirmSubscription&TopicArn={topic}&Token={token}",
        call.ctx.base_url
    );
    let message = match kind {
        OutboundKind::UnsubscribeConfirmation => format!(
            "You have chosen to deactivate subscription {}.\nTo cancel this operation and restore the subscription, visit the SubscribeURL included in this message.",
            subscription.arn
        ),
        _ => format!(
            "You have chosen to subscribe to the topic {topic}.\nTo confirm the subscription, visit the SubscribeURL included in this message."
        ),
    };
    let now = call.api.service.now();
    let timestamp = crate::topic::envelope::timestamp(now);
    let signature_version = topics
        .topic(&subscription.topic)
        .map_or(1, |topic| topic.signature_version());
    let document = Confirmation {
        message_id: &message_id,
        token: &token,
        topic_arn: &topic,
        message: &message,
        subscribe_url: &subscribe_url,
        timestamp: &timestamp,
        signature_version,
    };
    let body = Envelope::confirmation(kind.name(), &document, call.signer, &call.ctx.base_url).to_json();
    topics.add_delivery(subscription, kind, &message_id, body, now);
}
