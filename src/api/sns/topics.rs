//! CreateTopic, DeleteTopic, ListTopics, Get/SetTopicAttributes.

use std::collections::BTreeMap;

use super::{Answer, Form};
use super::{Call, attribute_map};
use crate::topic::{Result, TopicArn};

pub(super) async fn create(call: &Call<'_>, form: &Form) -> Result<Option<Answer>> {
    let name = form.required("Name")?;
    let mut attributes: BTreeMap<String, String> = form
        .map("Attributes")
        .into_iter()
        .map(|(key, value)| (key, value.get("").cloned().unwrap_or_default()))
        .collect();
    if let Some(policy) = form.get("DataProtectionPolicy") {
        attributes.insert("DataProtectionPolicy".into(), policy.into());
    }
    let tags = super::tags::read_tags(form)?;
    let arn = TopicArn::new(call.ctx.region.get(), &call.ctx.account_id, name);
    let arn = call
        .api
        .service
        .change_topics(|topics| topics.create(arn, attributes, tags))
        .await?;
    Ok(Some(Answer::Fields(vec![(
        "TopicArn",
        Answer::text(arn.to_string()),
    )])))
}

pub(super) async fn delete(call: &Call<'_>, form: &Form) -> Result<Option<Answer>> {
    let arn = call.topic_arn(form, "TopicArn")?;
    let removed = call
        .api
        .service
        .change_topics(|topics| Ok(topics.delete(&arn)))
        .await?;
    let (metrics, topic) = (&call.api.service.metrics, arn.to_string());
    metrics.sns_topic_deleted(&topic);
    for subscription in removed {
        metrics.sns_subscription_ended(&topic, &subscription.arn);
    }
    Ok(None)
}

pub(super) fn list(call: &Call<'_>, form: &Form) -> Result<Option<Answer>> {
    let topics = call.api.service.topics();
    let (page, next) = topics.list(call.ctx.region.get(), &call.ctx.account_id, form.get("NextToken"))?;
    let mut fields = vec![(
        "Topics",
        Answer::List(
            page.into_iter()
                .map(|arn| Answer::Fields(vec![("TopicArn", Answer::Text(arn))]))
                .collect(),
        ),
    )];
    if let Some(next) = next {
        fields.push(("NextToken", Answer::Text(next)));
    }
    Ok(Some(Answer::Fields(fields)))
}

pub(super) fn attributes(call: &Call<'_>, form: &Form) -> Result<Option<Answer>> {
    let arn = call.topic_arn(form, "TopicArn")?;
    let attributes = call
        .api
        .service
        .topics()
        .topic_attributes(&arn, call.api.service.now())?;
    Ok(Some(Answer::Fields(vec![(
        "Attributes",
        attribute_map(attributes),
    )])))
}

pub(super) async fn set_attribute(call: &Call<'_>, form: &Form) -> Result<Option<Answer>> {
    let arn = call.topic_arn(form, "TopicArn")?;
    let (name, value) = super::attribute_to_set(form)?;
    call.api
        .service
        .change_topics(|topics| topics.set_topic_attribute(&arn, name, value))
        .await?;
    Ok(None)
}

/// The data protection policy is kept and answered; ssq does not apply it
/// (it has no PII detection), as the docs say.
pub(super) fn data_protection_policy(call: &Call<'_>, form: &Form) -> Result<Option<Answer>> {
    let arn = TopicArn::parse("ResourceArn", form.required("ResourceArn")?)?;
    let topics = call.api.service.topics();
    let policy = topics
        .topic(&arn)?
        .attributes
        .get("DataProtectionPolicy")
        .cloned()
        .unwrap_or_default();
    Ok(Some(Answer::Fields(vec![(
        "DataProtectionPolicy",
        Answer::Text(policy),
    )])))
}

pub(super) async fn put_data_protection_policy(call: &Call<'_>, form: &Form) -> Result<Option<Answer>> {
    let arn = TopicArn::parse("ResourceArn", form.required("ResourceArn")?)?;
    let policy = form.required("DataProtectionPolicy")?;
    call.api
        .service
        .change_topics(|topics| topics.set_topic_attribute(&arn, "DataProtectionPolicy", policy))
        .await?;
    Ok(None)
}
