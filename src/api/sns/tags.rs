//! TagResource, UntagResource, ListTagsForResource; AddPermission and
//! RemovePermission (statements in the topic's policy).

use super::Call;
use super::{Answer, Form};
use crate::topic::{Result, SnsError, TopicArn, check_tags};

/// The `Tags` of a request, each with a key.
pub(super) fn read_tags(form: &Form) -> Result<Vec<(String, String)>> {
    form.structures("Tags")
        .into_iter()
        .map(|mut tag| {
            let key = tag
                .remove("Key")
                .ok_or_else(|| SnsError::missing("tags.member.key"))?;
            Ok((key, tag.remove("Value").unwrap_or_default()))
        })
        .collect()
}

fn resource(call: &Call<'_>, form: &Form) -> Result<TopicArn> {
    let arn = TopicArn::parse("ResourceArn", form.required("ResourceArn")?)?;
    if arn.account != call.ctx.account_id {
        return Err(SnsError::new("ResourceNotFound", 404, "Resource does not exist"));
    }
    Ok(arn)
}

pub(super) async fn tag(call: &Call<'_>, form: &Form) -> Result<Option<Answer>> {
    let arn = resource(call, form)?;
    let tags = read_tags(form)?;
    check_tags(&tags)?;
    call.api
        .service
        .change_topics(|topics| topics.tag(&arn, tags))
        .await?;
    Ok(Some(Answer::Fields(Vec::new())))
}

pub(super) async fn untag(call: &Call<'_>, form: &Form) -> Result<Option<Answer>> {
    let arn = resource(call, form)?;
    let keys = form.list("TagKeys");
    call.api
        .service
        .change_topics(|topics| topics.untag(&arn, &keys))
        .await?;
    Ok(Some(Answer::Fields(Vec::new())))
}

pub(super) fn list(call: &Call<'_>, form: &Form) -> Result<Option<Answer>> {
    let arn = resource(call, form)?;
    let topics = call.api.service.topics();
    let tags = topics
        .tags(&arn)?
        .iter()
        .map(|(key, value)| Answer::Fields(vec![("Key", Answer::text(key)), ("Value", Answer::text(value))]))
        .collect();
    Ok(Some(Answer::Fields(vec![("Tags", Answer::List(tags))])))
}

pub(super) async fn add_permission(call: &Call<'_>, form: &Form) -> Result<Option<Answer>> {
    let arn = call.topic_arn(form, "TopicArn")?;
    let label = form.required("Label")?;
    let accounts = form.list("AWSAccountId");
    let actions = form.list("ActionName");
    if accounts.is_empty() {
        return Err(SnsError::missing("aWSAccountId"));
    }
    if actions.is_empty() {
        return Err(SnsError::missing("actionName"));
    }
    call.api
        .service
        .change_topics(|topics| topics.add_permission(&arn, label, &accounts, &actions))
        .await?;
    Ok(None)
}

pub(super) async fn remove_permission(call: &Call<'_>, form: &Form) -> Result<Option<Answer>> {
    let arn = call.topic_arn(form, "TopicArn")?;
    let label = form.required("Label")?;
    call.api
        .service
        .change_topics(|topics| topics.remove_permission(&arn, label))
        .await?;
    Ok(None)
}
