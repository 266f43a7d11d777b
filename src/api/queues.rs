//! The queue actions: create, delete, find, list, attributes, purge, tags.

use super::model::*;
use super::params::{Page, required};
use super::redrive::check_redrive_target;
use super::{Action, Api, RequestContext};
use crate::error::{Result, SqsError};
use crate::queue::attributes::{self, READ_ONLY, SETTABLE};
use crate::queue::{QueueAttributes, key, validate_name};

pub(super) async fn create_queue(
    api: &Api,
    ctx: &RequestContext,
    input: CreateQueueInput,
) -> Result<QueueUrlOutput> {
    let name = required(input.queue_name, "QueueName")?;
    let attributes = input.attributes.unwrap_or_default();
    // Checked before it is keyed, so that a name cannot choose a region.
    validate_name(&name, QueueAttributes::request_fifo(&attributes))?;
    let name = ctx.queue_key(&name);
    check_redrive_target(api, ctx, &name, &attributes).await?;
    // In a sharded group, the account's queues are on every shard: counted
    // over the group's catalog (a create racing on another shard may pass).
    if let (Some(max), Some(catalog)) = (ctx.max_queues, &api.catalog) {
        let keys = catalog.queue_keys().await?;
        if !keys.contains(&name) {
            let held = keys
                .iter()
                .filter(|key| ctx.account_of(key) == ctx.account_id)
                .count();
            crate::service::check_account_room(held, max)?;
        }
    }
    api.service
        .create_queue_within(&name, &attributes, input.tags.unwrap_or_default(), ctx.max_queues)
        .await?;
    Ok(QueueUrlOutput {
        queue_url: ctx.queue_url(&name),
    })
}

pub(super) async fn delete_queue(
    api: &Api,
    _: &RequestContext,
    name: &str,
    _: QueueUrlInput,
) -> Result<Empty> {
    api.service.delete_queue(name).await?;
    Ok(Empty {})
}

pub(super) async fn get_queue_url(
    api: &Api,
    ctx: &RequestContext,
    input: GetQueueUrlInput,
) -> Result<QueueUrlOutput> {
    let name = required(input.queue_name, "QueueName")?;
    let owner = input.queue_owner_aws_account_id;
    let valid =
        owner.as_deref().is_none_or(key::is_account) && validate_name(&name, name.ends_with(".fifo")).is_ok();
    let name = ctx.owned_queue_key(owner.as_deref(), &name);
    ctx.authorize_queue(api, Action::GetQueueUrl, &name)?;
    if !valid || !api.service.queue_exists(&name) {
        return Err(SqsError::queue_does_not_exist());
    }
    Ok(QueueUrlOutput {
        queue_url: ctx.queue_url(&name),
    })
}

pub(super) async fn list_queues(
    api: &Api,
    ctx: &RequestContext,
    input: ListQueuesInput,
) -> Result<ListQueuesOutput> {
    let prefix = input.queue_name_prefix.unwrap_or_default();
    let page = Page::parse(input.max_results, input.next_token.as_deref())?;
    // One more than the page holds tells whether another page follows.
    let (region, after) = (ctx.listed_key_prefix(), page.after.as_deref());
    let names = match &api.catalog {
        None => api.service.queue_names(&region, &prefix, after, page.limit + 1),
        Some(catalog) => {
            let mut every = catalog.queue_keys().await?;
            every.sort_unstable();
            crate::service::select_names(every.iter(), &region, &prefix, after, page.limit + 1)
        }
    };
    let (names, next_token) = page.cut(names);
    Ok(ListQueuesOutput {
        queue_urls: names.iter().map(|n| ctx.queue_url(n)).collect(),
        next_token,
    })
}

pub(super) async fn get_queue_attributes(
    api: &Api,
    ctx: &RequestContext,
    name: &str,
    input: GetQueueAttributesInput,
) -> Result<AttributesOutput> {
    let requested = input.attribute_names.unwrap_or_default();
    for attribute in &requested {
        attributes::check_readable(attribute)?;
    }
    let all = requested.iter().any(|n| n == "All");
    let wanted = |n: &str| all || requested.iter().any(|r| r == n);
    let arn = ctx.queue_arn(name);
    api.service
        .with_queue(name, |queue, now| {
            let counts = queue.counts(now);
            let mut out = StringMap::new();
            for &attribute in SETTABLE.iter().chain(READ_ONLY) {
                if !wanted(attribute) {
                    continue;
                }
                let value = match attribute {
                    "ApproximateNumberOfMessages" => Some(counts.visible.to_string()),
                    "ApproximateNumberOfMessagesDelayed" => Some(counts.delayed.to_string()),
                    "ApproximateNumberOfMessagesNotVisible" => Some(counts.in_flight.to_string()),
                    "CreatedTimestamp" => Some((queue.created_at / 1000).to_string()),
                    "LastModifiedTimestamp" => Some((queue.last_modified_at / 1000).to_string()),
                    "QueueArn" => Some(arn.clone()),
                    settable => queue.attributes.reported(settable),
                };
                if let Some(value) = value {
                    out.insert(attribute.to_string(), value);
                }
            }
            AttributesOutput { attributes: out }
        })
        .await
}

pub(super) async fn set_queue_attributes(
    api: &Api,
    ctx: &RequestContext,
    name: &str,
    input: SetQueueAttributesInput,
) -> Result<Empty> {
    let changes = required(input.attributes, "Attributes")?;
    check_redrive_target(api, ctx, name, &changes).await?;
    api.service
        .with_queue(name, |queue, now| queue.set_attributes(&changes, now))
        .await??;
    Ok(Empty {})
}

pub(super) async fn purge_queue(
    api: &Api,
    _: &RequestContext,
    name: &str,
    _: QueueUrlInput,
) -> Result<Empty> {
    api.service
        .with_queue(name, |queue, now| queue.purge(now))
        .await??;
    Ok(Empty {})
}

pub(super) async fn tag_queue(
    api: &Api,
    _: &RequestContext,
    name: &str,
    input: TagQueueInput,
) -> Result<Empty> {
    let new = required(input.tags, "Tags")?;
    api.service.with_queue(name, |queue, _| queue.tag(new)).await??;
    Ok(Empty {})
}

pub(super) async fn untag_queue(
    api: &Api,
    _: &RequestContext,
    name: &str,
    input: UntagQueueInput,
) -> Result<Empty> {
    let keys = required(input.tag_keys, "TagKeys")?;
    api.service
        .with_queue(name, |queue, _| queue.untag(&keys))
        .await?;
    Ok(Empty {})
}

pub(super) async fn list_queue_tags(
    api: &Api,
    _: &RequestContext,
    name: &str,
    _: QueueUrlInput,
) -> Result<TagsOutput> {
    api.service
        .with_queue(name, |queue, _| TagsOutput {
            tags: queue.tags.clone(),
        })
        .await
}
