//! The single-message actions: send, receive, delete, change visibility.

use super::convert::{SYSTEM_ATTRIBUTES, new_message, received_message, sent_output};
use super::model::*;
use super::params::{in_range, required, within};
use super::{Api, RequestContext};
use crate::error::Result;
use crate::queue::ReceiptHandle;
use crate::queue::attributes;
use crate::queue::limits::{MAX_VISIBILITY_TIMEOUT_SECONDS, MAX_WAIT_SECONDS};
use crate::queue::message;
use crate::service::ReceiveRequest;

pub(super) async fn send_message(
    api: &Api,
    ctx: &RequestContext,
    name: &str,
    input: SendMessageInput,
) -> Result<SendMessageOutput> {
    let (mut message, _) = new_message(ctx, input.message)?;
    if message.trace_header.is_none() {
        message.trace_header = ctx.trace_id.clone();
    }
    let mut results = api.service.send(name, vec![message]).await?;
    Ok(sent_output(results.pop().expect("one result per message")?))
}

pub(super) async fn receive_message(
    api: &Api,
    _: &RequestContext,
    name: &str,
    input: ReceiveMessageInput,
) -> Result<ReceiveMessageOutput> {
    let max = in_range(
        input.max_number_of_messages.unwrap_or(1),
        "MaxNumberOfMessages",
        1,
        10,
    )?;
    let visibility = input
        .visibility_timeout
        .map(|v| in_range(v, "VisibilityTimeout", 0, MAX_VISIBILITY_TIMEOUT_SECONDS.into()))
        .transpose()?;
    let wait = input
        .wait_time_seconds
        .map(|w| within(w, "WaitTimeSeconds", 0, MAX_WAIT_SECONDS.into()))
        .transpose()?;
    let system_names: Vec<String> = input
        .attribute_names
        .into_iter()
        .chain(input.message_system_attribute_names)
        .flatten()
        .collect();
    if let Some(unknown) = system_names
        .iter()
        .find(|n| !SYSTEM_ATTRIBUTES.contains(&n.as_str()))
    {
        return Err(attributes::unknown_attribute(unknown));
    }
    let attribute_filter = input.message_attribute_names.unwrap_or_default();
    let request = ReceiveRequest {
        max: max as usize,
        visibility_timeout: visibility,
        wait_seconds: wait,
        attempt_id: input.receive_request_attempt_id.as_deref(),
    };
    if let Some(id) = request.attempt_id {
        message::validate_fifo_id("ReceiveRequestAttemptId", id)?;
    }
    let received = api.service.receive(name, request).await?;
    let messages = received
        .into_iter()
        .map(|r| received_message(r, &system_names, &attribute_filter))
        .collect();
    Ok(ReceiveMessageOutput { messages })
}

pub(super) async fn delete_message(
    api: &Api,
    _: &RequestContext,
    name: &str,
    input: DeleteMessageInput,
) -> Result<Empty> {
    let handle = ReceiptHandle::decode(&required(input.receipt_handle, "ReceiptHandle")?)?;
    if api
        .service
        .with_queue(name, |queue, now| queue.delete(handle, now))
        .await??
    {
        api.service.metrics.messages_deleted.inc();
    }
    Ok(Empty {})
}

pub(super) async fn change_message_visibility(
    api: &Api,
    _: &RequestContext,
    name: &str,
    input: ChangeMessageVisibilityInput,
) -> Result<Empty> {
    let handle = ReceiptHandle::decode(&required(input.receipt_handle, "ReceiptHandle")?)?;
    let timeout = in_range(
        required(input.visibility_timeout, "VisibilityTimeout")?,
        "VisibilityTimeout",
        0,
        MAX_VISIBILITY_TIMEOUT_SECONDS.into(),
    )?;
    api.service
        .with_queue(name, |queue, now| queue.change_visibility(handle, timeout, now))
        .await??;
    Ok(Empty {})
}
