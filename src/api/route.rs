//! Which queue a request is for, read before it runs: in a sharded group
//! the request goes to the leader of that queue's shard.
//!
//! Only the members that name the queue are read (QueueUrl, QueueName, a
//! move task's SourceArn or TaskHandle), and every reading is lenient: a
//! request whose queue cannot be told is run where it arrived, and the
//! action itself answers with the error the missing or bad member deserves.

use std::borrow::Cow;

use serde::Deserialize;

use super::{Action, Input, RequestContext, redrive};

/// Where a request must run.
#[derive(Debug, PartialEq, Eq)]
pub enum Route {
    /// On the shard of the queue keyed so.
    Queue(String),
    /// Where it arrived: it names no queue (ListQueues reads every shard's
    /// names itself), or its queue cannot be told.
    Here,
}

/// The members that name a request's queue, borrowed from a JSON body.
#[derive(Deserialize, Default)]
struct Names<'a> {
    #[serde(rename = "QueueUrl", borrow)]
    queue_url: Option<Cow<'a, str>>,
    #[serde(rename = "QueueName", borrow)]
    queue_name: Option<Cow<'a, str>>,
    #[serde(rename = "QueueOwnerAWSAccountId", borrow)]
    queue_owner: Option<Cow<'a, str>>,
    #[serde(rename = "SourceArn", borrow)]
    source_arn: Option<Cow<'a, str>>,
    #[serde(rename = "TaskHandle", borrow)]
    task_handle: Option<Cow<'a, str>>,
}

/// The route of `action` with `input`.
pub fn route(ctx: &RequestContext, action: Action, input: &Input) -> Route {
    let names = match input {
        Input::Json(body) => serde_json::from_slice::<Names>(body).unwrap_or_default(),
        Input::Tree(tree) => {
            let member = |name: &str| tree.get(name).and_then(|v| v.as_str()).map(Cow::Borrowed);
            Names {
                queue_url: member("QueueUrl"),
                queue_name: member("QueueName"),
                queue_owner: member("QueueOwnerAWSAccountId"),
                source_arn: member("SourceArn"),
                task_handle: member("TaskHandle"),
            }
        }
    };
    let key = match action {
        Action::ListQueues => None,
        Action::CreateQueue => names
            .queue_name
            .filter(|name| !name.is_empty() && !name.contains('/'))
            .map(|name| ctx.queue_key(&name)),
        Action::GetQueueUrl => names
            .queue_name
            .filter(|name| !name.is_empty() && !name.contains('/'))
            .map(|name| ctx.owned_queue_key(names.queue_owner.as_deref(), &name)),
        Action::StartMessageMoveTask | Action::ListMessageMoveTasks => {
            names.source_arn.and_then(|arn| redrive::key_of_arn(ctx, &arn))
        }
        Action::CancelMessageMoveTask => names
            .task_handle
            .and_then(|handle| crate::service::move_tasks::source_arn_of(&handle))
            .and_then(|arn| redrive::key_of_arn(ctx, &arn)),
        _ => names.queue_url.and_then(|url| ctx.queue_name(Some(&url)).ok()),
    };
    key.map_or(Route::Here, Route::Queue)
}
