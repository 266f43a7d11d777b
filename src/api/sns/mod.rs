//! The SNS API, beside SQS's on the same address: each action reads its
//! members from the request's [`Form`], runs against the shard's topics
//! (and, for a Publish, its queues) and answers an [`Answer`] tree
//! (`form.rs`), which `protocol::sns` writes as SNS's XML.
//!
//! The actions live by area: [`topics`] (create, delete, list,
//! attributes), [`subscriptions`], [`publish`] (Publish and PublishBatch)
//! and [`tags`] (tags and permissions).

mod form;
mod publish;
mod subscriptions;
mod tags;
mod topics;

pub use self::form::{Answer, Form};
use crate::api::{Api, RequestContext};
use crate::service::Fanout;
use crate::topic::envelope::Sign;
use crate::topic::{Result, SnsError, TopicArn};

/// Every SNS action ssq serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    CreateTopic,
    DeleteTopic,
    ListTopics,
    GetTopicAttributes,
    SetTopicAttributes,
    Subscribe,
    ConfirmSubscription,
    Unsubscribe,
    ListSubscriptions,
    ListSubscriptionsByTopic,
    GetSubscriptionAttributes,
    SetSubscriptionAttributes,
    Publish,
    PublishBatch,
    TagResource,
    UntagResource,
    ListTagsForResource,
    AddPermission,
    RemovePermission,
    GetDataProtectionPolicy,
    PutDataProtectionPolicy,
}

const ACTIONS: &[Action] = &[
    Action::CreateTopic,
    Action::DeleteTopic,
    Action::ListTopics,
    Action::GetTopicAttributes,
    Action::SetTopicAttributes,
    Action::Subscribe,
    Action::ConfirmSubscription,
    Action::Unsubscribe,
    Action::ListSubscriptions,
    Action::ListSubscriptionsByTopic,
    Action::GetSubscriptionAttributes,
    Action::SetSubscriptionAttributes,
    Action::Publish,
    Action::PublishBatch,
    Action::TagResource,
    Action::UntagResource,
    Action::ListTagsForResource,
    Action::AddPermission,
    Action::RemovePermission,
    Action::GetDataProtectionPolicy,
    Action::PutDataProtectionPolicy,
];

/// SNS actions ssq knows but has nothing to serve with (platform
/// applications, SMS): answered with a clear refusal
/// rather than taken for SQS calls.
const NOT_SERVED: &[&str] = &[
    "CheckIfPhoneNumberIsOptedOut",
    "CreatePlatformApplication",
    "CreatePlatformEndpoint",
    "CreateSMSSandboxPhoneNumber",
    "DeleteEndpoint",
    "DeletePlatformApplication",
    "DeleteSMSSandboxPhoneNumber",
    "GetEndpointAttributes",
    "GetPlatformApplicationAttributes",
    "GetSMSAttributes",
    "GetSMSSandboxAccountStatus",
    "ListEndpointsByPlatformApplication",
    "ListOriginationNumbers",
    "ListPhoneNumbersOptedOut",
    "ListPlatformApplications",
    "ListSMSSandboxPhoneNumbers",
    "OptInPhoneNumber",
    "SetEndpointAttributes",
    "SetPlatformApplicationAttributes",
    "SetSMSAttributes",
    "VerifySMSSandboxPhoneNumber",
];

impl Action {
    pub fn name(self) -> &'static str {
        match self {
            Action::CreateTopic => "CreateTopic",
            Action::DeleteTopic => "DeleteTopic",
            Action::ListTopics => "ListTopics",
            Action::GetTopicAttributes => "GetTopicAttributes",
            Action::SetTopicAttributes => "SetTopicAttributes",
            Action::Subscribe => "Subscribe",
            Action::ConfirmSubscription => "ConfirmSubscription",
            Action::Unsubscribe => "Unsubscribe",
            Action::ListSubscriptions => "ListSubscriptions",
            Action::ListSubscriptionsByTopic => "ListSubscriptionsByTopic",
            Action::GetSubscriptionAttributes => "GetSubscriptionAttributes",
            Action::SetSubscriptionAttributes => "SetSubscriptionAttributes",
            Action::Publish => "Publish",
            Action::PublishBatch => "PublishBatch",
            Action::TagResource => "TagResource",
            Action::UntagResource => "UntagResource",
            Action::ListTagsForResource => "ListTagsForResource",
            Action::AddPermission => "AddPermission",
            Action::RemovePermission => "RemovePermission",
            Action::GetDataProtectionPolicy => "GetDataProtectionPolicy",
            Action::PutDataProtectionPolicy => "PutDataProtectionPolicy",
        }
    }

    pub fn from_name(name: &str) -> Option<Action> {
        ACTIONS.iter().copied().find(|action| action.name() == name)
    }

    /// The permission that governs the action, as policies name it
    /// (`sns:Publish`): PublishBatch has none of its own, Publish's governs
    /// it, as SQS's batch actions are their single actions'.
    pub fn policy_name(self) -> String {
        match self {
            Action::PublishBatch => "sns:Publish".to_string(),
            action => format!("sns:{}", action.name()),
        }
    }

    /// Whether a Query request naming `action` is for SNS. Two names are
    /// SQS's too: AddPermission and RemovePermission are SNS's when they
    /// name a topic.
    pub fn claims(action: &str, form_has_topic: bool) -> bool {
        match action {
            "AddPermission" | "RemovePermission" => form_has_topic,
            name => Action::from_name(name).is_some() || NOT_SERVED.contains(&name),
        }
    }
}

/// What an action runs with beside its form.
pub struct Call<'a> {
    pub api: &'a Api,
    pub ctx: &'a RequestContext,
    pub signer: &'a dyn Sign,
}

impl Call<'_> {
    fn fanout(&self) -> Fanout<'_> {
        Fanout {
            base_url: &self.ctx.base_url,
            home: &self.ctx.home,
            trace_header: self.ctx.trace_id.as_deref(),
            signer: self.signer,
        }
    }

    /// The topic a member names: AWS's errors for a malformed ARN or one
    /// of another region, and NotFound for a topic of another account
    /// (none is here).
    fn topic_arn(&self, form: &Form, member: &str) -> Result<TopicArn> {
        let arn = TopicArn::parse(member, form.required(member)?)?;
        // A topic is reached only from its own region, as in AWS.
        if arn.region != self.ctx.region.get() {
            return Err(SnsError::parameter(member));
        }
        if arn.account != self.ctx.account_id {
            return Err(SnsError::topic_not_found());
        }
        Ok(arn)
    }
}

/// Runs an SNS action. The name is one [`Action::claims`]; those ssq does
/// not serve are refused.
pub async fn dispatch(call: &Call<'_>, action_name: &str, form: &Form) -> Result<Option<Answer>> {
    let Some(action) = Action::from_name(action_name) else {
        return Err(SnsError::new(
            "InvalidAction",
            400,
            format!(
                "ssq does not serve the SNS action {action_name}: it has no platform applications or SMS; \
                 topics, subscriptions and publishing are served."
            ),
        ));
    };
    let answer = match action {
        Action::CreateTopic => topics::create(call, form).await?,
        Action::DeleteTopic => topics::delete(call, form).await?,
        Action::ListTopics => topics::list(call, form)?,
        Action::GetTopicAttributes => topics::attributes(call, form)?,
        Action::SetTopicAttributes => topics::set_attribute(call, form).await?,
        Action::Subscribe => subscriptions::subscribe(call, form).await?,
        Action::ConfirmSubscription => subscriptions::confirm(call, form).await?,
        Action::Unsubscribe => subscriptions::unsubscribe(call, form).await?,
        Action::ListSubscriptions => subscriptions::list(call, form)?,
        Action::ListSubscriptionsByTopic => subscriptions::list_by_topic(call, form)?,
        Action::GetSubscriptionAttributes => subscriptions::attributes(call, form)?,
        Action::SetSubscriptionAttributes => subscriptions::set_attribute(call, form).await?,
        Action::Publish => publish::publish(call, form).await?,
        Action::PublishBatch => publish::publish_batch(call, form).await?,
        Action::TagResource => tags::tag(call, form).await?,
        Action::UntagResource => tags::untag(call, form).await?,
        Action::ListTagsForResource => tags::list(call, form)?,
        Action::AddPermission => tags::add_permission(call, form).await?,
        Action::RemovePermission => tags::remove_permission(call, form).await?,
        Action::GetDataProtectionPolicy => topics::data_protection_policy(call, form)?,
        Action::PutDataProtectionPolicy => topics::put_data_protection_policy(call, form).await?,
    };
    Ok(answer)
}

/// The `AttributeName` and `AttributeValue` of a Set…Attributes call (a
/// value left out is empty: it unsets the attribute).
fn attribute_to_set(form: &Form) -> Result<(&str, &str)> {
    let name = form.required("AttributeName")?;
    if name.is_empty() {
        return Err(SnsError::parameter("AttributeName"));
    }
    Ok((name, form.get("AttributeValue").unwrap_or_default()))
}

/// An attribute map as answers carry it.
fn attribute_map(attributes: std::collections::BTreeMap<String, String>) -> Answer {
    Answer::Map(attributes.into_iter().collect())
}
