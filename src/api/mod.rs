//! The SQS API, independent of wire format.
//!
//! A wire format ([`crate::protocol`]) names an [`Action`] and hands over the
//! request as an [`Input`]; [`dispatch`] decodes it into the action's shape
//! from [`model`], runs the action against the [`Service`] and returns the
//! response as a JSON tree, which the wire format then renders.

mod actions;
pub mod model;

use serde::de::DeserializeOwned;

use crate::error::{ErrorCode, Result, SqsError};
use crate::service::Service;

/// Who is asking and how to address queues in the answer.
pub struct RequestContext {
    /// Scheme and authority that queue URLs start with, e.g. `http://127.0.0.1:9324`.
    pub base_url: String,
    pub account_id: String,
    pub region: String,
    /// The SenderId attribute of messages this request sends.
    pub sender_id: std::sync::Arc<str>,
}

impl RequestContext {
    pub fn queue_url(&self, name: &str) -> String {
        format!("{}/{}/{}", self.base_url, self.account_id, name)
    }

    pub fn queue_arn(&self, name: &str) -> String {
        format!("arn:aws:sqs:{}:{}:{}", self.region, self.account_id, name)
    }

    /// The queue name a QueueUrl points at. The host is ignored, so a client
    /// may reach ssq under any name; the account must be ours.
    pub fn queue_name(&self, url: Option<&str>) -> Result<String> {
        let url = url.ok_or_else(|| SqsError::missing_parameter("QueueUrl"))?;
        let path = match url.split_once("://") {
            Some((_, rest)) => rest.split_once('/').map_or("", |(_, path)| path),
            None => url,
        };
        let path = path.split(['?', '#']).next().unwrap_or_default();
        let mut segments = path.split('/').filter(|s| !s.is_empty());
        match (segments.next(), segments.next(), segments.next()) {
            (Some(account), Some(name), None) if account == self.account_id => Ok(name.to_string()),
            (Some(_), Some(_), None) => Err(SqsError::queue_does_not_exist()),
            _ => Err(SqsError::new(
                ErrorCode::InvalidAddress,
                format!(
                    "The address {url} is not valid for this endpoint: a queue URL has the form {}/{{account}}/{{queue}}.",
                    self.base_url
                ),
            )),
        }
    }
}

/// A request body, in the shape its wire format produced.
pub enum Input<'a> {
    /// An AWS JSON 1.0 body.
    Json(&'a [u8]),
    /// A tree built from another wire format (the Query protocol's form).
    Tree(serde_json::Value),
}

impl Input<'_> {
    fn decode<T: DeserializeOwned>(self) -> Result<T> {
        let unreadable = |why: String| {
            SqsError::new(
                ErrorCode::SerializationException,
                format!("The request body could not be read: {why}."),
            )
        };
        match self {
            Input::Json(bytes) => match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
                None => serde_json::from_slice(b"{}").map_err(|e| unreadable(e.to_string())),
                // serde would also read a struct from an array; SQS takes objects only.
                Some(b'{') => serde_json::from_slice(bytes).map_err(|e| unreadable(e.to_string())),
                Some(_) => Err(unreadable("the input must be a JSON object".into())),
            },
            Input::Tree(value) => serde_json::from_value(value).map_err(|e| unreadable(e.to_string())),
        }
    }
}

macro_rules! actions {
    ($($name:ident),* $(,)?) => {
        /// Every action of the SQS API.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Action { $($name),* }

        impl Action {
            pub const ALL: &[Action] = &[$(Action::$name),*];

            pub fn from_name(name: &str) -> Option<Action> {
                match name { $(stringify!($name) => Some(Action::$name),)* _ => None }
            }

            pub fn name(self) -> &'static str {
                match self { $(Action::$name => stringify!($name)),* }
            }
        }
    };
}

actions!(
    AddPermission,
    CancelMessageMoveTask,
    ChangeMessageVisibility,
    ChangeMessageVisibilityBatch,
    CreateQueue,
    DeleteMessage,
    DeleteMessageBatch,
    DeleteQueue,
    GetQueueAttributes,
    GetQueueUrl,
    ListDeadLetterSourceQueues,
    ListMessageMoveTasks,
    ListQueueTags,
    ListQueues,
    PurgeQueue,
    ReceiveMessage,
    RemovePermission,
    SendMessage,
    SendMessageBatch,
    SetQueueAttributes,
    StartMessageMoveTask,
    TagQueue,
    UntagQueue,
);

/// Runs one action and returns its response as a JSON tree.
pub async fn dispatch(
    service: &std::sync::Arc<Service>,
    ctx: &RequestContext,
    action: Action,
    input: Input<'_>,
) -> Result<serde_json::Value> {
    use actions::*;
    match action {
        Action::CreateQueue => to_tree(create_queue(service, ctx, input.decode()?).await),
        Action::DeleteQueue => to_tree(delete_queue(service, ctx, input.decode()?).await),
        Action::GetQueueUrl => to_tree(get_queue_url(service, ctx, input.decode()?)),
        Action::ListQueues => to_tree(list_queues(service, ctx, input.decode()?)),
        Action::GetQueueAttributes => to_tree(get_queue_attributes(service, ctx, input.decode()?).await),
        Action::SetQueueAttributes => to_tree(set_queue_attributes(service, ctx, input.decode()?).await),
        Action::PurgeQueue => to_tree(purge_queue(service, ctx, input.decode()?).await),
        Action::TagQueue => to_tree(tag_queue(service, ctx, input.decode()?).await),
        Action::UntagQueue => to_tree(untag_queue(service, ctx, input.decode()?).await),
        Action::ListQueueTags => to_tree(list_queue_tags(service, ctx, input.decode()?).await),
        Action::SendMessage => to_tree(send_message(service, ctx, input.decode()?).await),
        Action::SendMessageBatch => to_tree(send_message_batch(service, ctx, input.decode()?).await),
        Action::ReceiveMessage => to_tree(receive_message(service, ctx, input.decode()?).await),
        Action::DeleteMessage => to_tree(delete_message(service, ctx, input.decode()?).await),
        Action::DeleteMessageBatch => to_tree(delete_message_batch(service, ctx, input.decode()?).await),
        Action::ChangeMessageVisibility => {
            to_tree(change_message_visibility(service, ctx, input.decode()?).await)
        }
        Action::ChangeMessageVisibilityBatch => {
            to_tree(change_message_visibility_batch(service, ctx, input.decode()?).await)
        }
        Action::AddPermission => to_tree(add_permission(service, ctx, input.decode()?).await),
        Action::RemovePermission => to_tree(remove_permission(service, ctx, input.decode()?).await),
        Action::ListDeadLetterSourceQueues => {
            to_tree(list_dead_letter_source_queues(service, ctx, input.decode()?).await)
        }
        Action::StartMessageMoveTask => to_tree(start_message_move_task(service, ctx, input.decode()?).await),
        Action::CancelMessageMoveTask => to_tree(cancel_message_move_task(service, input.decode()?)),
        Action::ListMessageMoveTasks => to_tree(list_message_move_tasks(service, ctx, input.decode()?)),
    }
}

fn to_tree<T: serde::Serialize>(output: Result<T>) -> Result<serde_json::Value> {
    let output = output?;
    serde_json::to_value(output).map_err(|e| {
        SqsError::new(
            ErrorCode::InternalError,
            format!("could not render the response: {e}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> RequestContext {
        RequestContext {
            base_url: "http://localhost:9324".into(),
            account_id: "000000000000".into(),
            region: "us-east-1".into(),
            sender_id: "000000000000".into(),
        }
    }

    #[test]
    fn queue_urls_resolve_by_account_and_name_whatever_the_host() {
        let ctx = ctx();
        for url in [
            "http://localhost:9324/000000000000/orders",
            "https://sqs.us-east-1.amazonaws.com/000000000000/orders",
            "http://elsewhere/000000000000/orders/",
            "/000000000000/orders",
        ] {
            assert_eq!(ctx.queue_name(Some(url)).unwrap(), "orders", "{url}");
        }
        assert_eq!(
            ctx.queue_name(Some("http://h/123456789012/orders"))
                .unwrap_err()
                .code,
            ErrorCode::QueueDoesNotExist
        );
        for bad in ["http://h/", "http://h/orders", "x/y/z"] {
            assert_eq!(
                ctx.queue_name(Some(bad)).unwrap_err().code,
                ErrorCode::InvalidAddress
            );
        }
        assert_eq!(
            ctx.queue_name(None).unwrap_err().code,
            ErrorCode::MissingParameter
        );
    }

    #[test]
    fn action_names_round_trip() {
        assert_eq!(Action::ALL.len(), 23);
        for action in Action::ALL {
            assert_eq!(Action::from_name(action.name()), Some(*action));
        }
        assert_eq!(Action::from_name("Nope"), None);
    }
}
