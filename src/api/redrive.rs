//! Dead-letter queues: the rules a RedrivePolicy must meet, the listing of
//! a dead-letter queue's sources, and message move tasks.

use super::model::*;
use super::params::{Page, in_range, required};
use super::{Action, Api, RequestContext};
use crate::error::{ErrorCode, Result, SqsError};
use crate::queue::move_task::MoveStatus;
use crate::queue::{QueueArn, key};
use crate::queue::{QueueAttributes, attributes};
use crate::service::move_tasks::{MAX_RATE, MoveRequest};

/// A RedrivePolicy may only name an existing queue of the same type (FIFO
/// or standard) whose RedriveAllowPolicy lets this queue in.
pub(super) async fn check_redrive_target(
    api: &Api,
    ctx: &RequestContext,
    source: &str,
    attributes: &StringMap,
) -> Result<()> {
    let Some(value) = attributes.get("RedrivePolicy").filter(|v| !v.is_empty()) else {
        return Ok(());
    };
    let mut probe = crate::queue::QueueAttributes::default();
    probe.set("RedrivePolicy", value)?;
    let policy = probe.redrive_policy.expect("a non-empty policy parses to Some");
    let invalid = |why: &str| {
        SqsError::new(
            ErrorCode::InvalidParameterValue,
            format!("Value {value} for parameter RedrivePolicy is invalid. Reason: {why}"),
        )
    };
    let target = key::sibling(source, policy.target_name());
    if policy.dead_letter_target_arn != ctx.queue_arn(&target) {
        return Err(invalid(
            "Dead-letter target does not exist (it must be a queue of this account and region).",
        ));
    }
    let target_attributes = settings_of(api, &target)
        .await?
        .ok_or_else(|| invalid("Dead-letter target does not exist."))?;
    let (target_fifo, allow_policy) = (
        target_attributes.fifo_queue,
        target_attributes.redrive_allow_policy,
    );
    if target_fifo != source.ends_with(".fifo") {
        return Err(invalid(
            "The dead-letter queue of a FIFO queue must be a FIFO queue, and of a standard queue a standard queue.",
        ));
    }
    if !attributes::redrive_allowed(allow_policy.as_deref(), &ctx.queue_arn(source)) {
        return Err(invalid(
            "The dead-letter queue's RedriveAllowPolicy does not allow this queue as a source.",
        ));
    }
    Ok(())
}

/// The settings of queue `key` wherever it is: in this shard's memory, or
/// in a sharded group, another shard's record in Redis.
async fn settings_of(api: &Api, key: &str) -> Result<Option<QueueAttributes>> {
    match &api.catalog {
        Some(catalog) if api.service.is_elsewhere(key) => {
            Ok(catalog.queue(key).await?.map(|meta| meta.attributes))
        }
        _ => Ok(api.service.inspect(key, |queue, _| queue.attributes.clone()).ok()),
    }
}

/// The queues whose RedrivePolicy names the queue `arn`, in key order: in
/// a sharded group, those of every shard.
async fn dead_letter_sources(api: &Api, arn: &str) -> Result<Vec<String>> {
    let names_it = |attributes: &QueueAttributes| {
        attributes
            .redrive_policy
            .as_ref()
            .is_some_and(|p| p.dead_letter_target_arn == arn)
    };
    Ok(match &api.catalog {
        None => api.service.queues_where(|queue| names_it(&queue.attributes)),
        Some(catalog) => catalog
            .queues()
            .await?
            .into_iter()
            .filter(|meta| names_it(&meta.attributes))
            .map(|meta| meta.name)
            .collect(),
    })
}

pub(super) async fn list_dead_letter_source_queues(
    api: &Api,
    ctx: &RequestContext,
    name: &str,
    input: ListDeadLetterSourceQueuesInput,
) -> Result<ListDeadLetterSourceQueuesOutput> {
    if !api.service.queue_exists(name) {
        return Err(SqsError::queue_does_not_exist());
    }
    let sources = dead_letter_sources(api, &ctx.queue_arn(name)).await?;
    let page = Page::parse(input.max_results, input.next_token.as_deref())?;
    let after = page.after.clone();
    let (names, next_token) = page.cut(
        sources
            .into_iter()
            .filter(|n| after.as_ref().is_none_or(|a| n > a))
            .collect(),
    );
    Ok(ListDeadLetterSourceQueuesOutput {
        queue_urls: names.iter().map(|n| ctx.queue_url(n)).collect(),
        next_token,
    })
}

/// The key of the queue a queue ARN names, of whichever account; `None`
/// for a text that is not one.
pub(super) fn key_of_arn(ctx: &RequestContext, arn: &str) -> Option<String> {
    QueueArn::parse(arn)
        .filter(|parsed| key::is_account(&parsed.account) && key::is_region(&parsed.region))
        .map(|parsed| key::of(&ctx.home, &parsed.account, &parsed.region, &parsed.name))
}

/// The key of the queue a move task's ARN `parameter` names, once the
/// caller may take `action` on it: as every call on a queue, one of another
/// account is refused (AccessDenied, whether it exists or not) unless its
/// policy grants the call, and a Deny in the queue's policy binds its own
/// account too.
fn queue_of_arn(
    api: &Api,
    ctx: &RequestContext,
    arn: &str,
    parameter: &str,
    action: Action,
) -> Result<String> {
    let name = key_of_arn(ctx, arn).ok_or_else(|| no_such_resource(parameter))?;
    ctx.authorize_queue(api, action, &name)?;
    Ok(name)
}

/// The queue a move task's ARN parameter names, if it exists.
fn existing_queue_of_arn(
    api: &Api,
    ctx: &RequestContext,
    arn: &str,
    parameter: &str,
    action: Action,
) -> Result<String> {
    let name = queue_of_arn(api, ctx, arn, parameter, action)?;
    match api.service.queue_exists(&name) {
        true => Ok(name),
        false => Err(no_such_resource(parameter)),
    }
}

/// AWS's words (and 404) for an ARN parameter naming no queue.
fn no_such_resource(parameter: &str) -> SqsError {
    SqsError::new(
        ErrorCode::ResourceNotFound,
        format!("The resource that you specified for the {parameter} parameter doesn't exist."),
    )
}

pub(super) async fn start_message_move_task(
    api: &Api,
    ctx: &RequestContext,
    input: StartMessageMoveTaskInput,
) -> Result<TaskHandleOutput> {
    let source_arn = required(input.source_arn, "SourceArn")?;
    let source = existing_queue_of_arn(api, ctx, &source_arn, "SourceArn", Action::StartMessageMoveTask)?;
    let to_move = api
        .service
        .with_queue(&source, |q, now| q.counts(now).visible)
        .await
        .map_err(|_| no_such_resource("SourceArn"))?;
    if dead_letter_sources(api, &source_arn).await?.is_empty() {
        return Err(SqsError::invalid_parameter(
            "Source queue must be configured as a Dead Letter Queue.",
        ));
    }
    let destination = match input.destination_arn {
        Some(arn) => {
            let name = queue_of_arn(api, ctx, &arn, "DestinationArn", Action::StartMessageMoveTask)?;
            // What a queue sends on stays in its own account.
            if ctx.account_of(&name) != ctx.account_of(&source) {
                return Err(SqsError::new(
                    ErrorCode::AccessDenied,
                    format!("Access to the resource {} is denied.", ctx.queue_url(&name)),
                ));
            }
            if settings_of(api, &name).await?.is_none() {
                return Err(no_such_resource("DestinationArn"));
            }
            Some((name, arn))
        }
        None => None,
    };
    let rate = input
        .max_number_of_messages_per_second
        .map(|r| in_range(r, "MaxNumberOfMessagesPerSecond", 1, i64::from(MAX_RATE)))
        .transpose()?;
    let task = api
        .move_tasks
        .start(MoveRequest {
            source,
            source_arn,
            destination,
            rate,
            to_move: to_move as u64,
            now: api.service.now(),
        })
        .await?;
    Ok(TaskHandleOutput {
        task_handle: task.handle,
    })
}

pub(super) async fn cancel_message_move_task(
    api: &Api,
    ctx: &RequestContext,
    input: CancelMessageMoveTaskInput,
) -> Result<CancelMessageMoveTaskOutput> {
    let handle = required(input.task_handle, "TaskHandle")?;
    // AWS's words: a handle that is not one, then its source queue's.
    let source_arn = crate::service::move_tasks::source_arn_of(&handle)
        .ok_or_else(|| SqsError::invalid_parameter("Value for parameter TaskHandle is invalid."))?;
    let source = existing_queue_of_arn(api, ctx, &source_arn, "SourceArn", Action::CancelMessageMoveTask)?;
    let task = api
        .move_tasks
        .cancel(&source, &handle)
        .await
        .map_err(|error| match error.code {
            ErrorCode::QueueDoesNotExist => no_such_resource("SourceArn"),
            _ => error,
        })?;
    Ok(CancelMessageMoveTaskOutput {
        approximate_number_of_messages_moved: task.moved,
    })
}

pub(super) async fn list_message_move_tasks(
    api: &Api,
    ctx: &RequestContext,
    input: ListMessageMoveTasksInput,
) -> Result<ListMessageMoveTasksOutput> {
    let source_arn = required(input.source_arn, "SourceArn")?;
    let source = existing_queue_of_arn(api, ctx, &source_arn, "SourceArn", Action::ListMessageMoveTasks)?;
    let max = input
        .max_results
        .map(|n| in_range(n, "MaxResults", 1, 10))
        .transpose()?
        .unwrap_or(1) as usize;
    let results = api
        .move_tasks
        .for_source(&source)?
        .into_iter()
        .take(max)
        .map(|task| MessageMoveTaskEntry {
            task_handle: (task.status == MoveStatus::Running).then(|| task.handle.clone()),
            status: task.status_name().to_string(),
            source_arn: task.source_arn,
            destination_arn: task.destination.map(|(_, arn)| arn),
            max_number_of_messages_per_second: task.rate,
            approximate_number_of_messages_moved: task.moved,
            approximate_number_of_messages_to_move: task.to_move,
            failure_reason: match task.status {
                MoveStatus::Failed(why) => Some(why),
                _ => None,
            },
            started_timestamp: task.started_at,
        })
        .collect();
    Ok(ListMessageMoveTasksOutput { results })
}
