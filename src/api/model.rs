//! The SQS API's request and response shapes.
//!
//! These follow AWS's service model: field names are the JSON protocol's, and
//! the Query protocol maps its form fields and XML elements onto the same
//! shapes, so that every action is implemented once for both wire formats.
//! Inputs accept missing fields (each action checks what it requires, to give
//! SQS's MissingParameter error rather than a parse failure).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub type StringMap = BTreeMap<String, String>;

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct CreateQueueInput {
    pub queue_name: Option<String>,
    pub attributes: Option<StringMap>,
    #[serde(rename = "tags")]
    pub tags: Option<StringMap>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct QueueUrlInput {
    pub queue_url: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct GetQueueUrlInput {
    pub queue_name: Option<String>,
    #[serde(rename = "QueueOwnerAWSAccountId")]
    pub queue_owner_aws_account_id: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct ListQueuesInput {
    pub queue_name_prefix: Option<String>,
    pub next_token: Option<String>,
    pub max_results: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct GetQueueAttributesInput {
    pub queue_url: Option<String>,
    pub attribute_names: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct SetQueueAttributesInput {
    pub queue_url: Option<String>,
    pub attributes: Option<StringMap>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct TagQueueInput {
    pub queue_url: Option<String>,
    pub tags: Option<StringMap>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct UntagQueueInput {
    pub queue_url: Option<String>,
    pub tag_keys: Option<Vec<String>>,
}

/// A message attribute as it travels: BinaryValue is base64 in JSON.
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct MessageAttributeValue {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub string_value: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub binary_value: Option<String>,
    #[serde(skip_serializing)]
    pub string_list_values: Option<Vec<String>>,
    #[serde(skip_serializing)]
    pub binary_list_values: Option<Vec<String>>,
}

pub type MessageAttributeMap = BTreeMap<String, MessageAttributeValue>;

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct SendMessageInput {
    pub queue_url: Option<String>,
    #[serde(flatten)]
    pub message: SendMessageFields,
}

/// What SendMessage and each SendMessageBatch entry have in common.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct SendMessageFields {
    pub message_body: Option<String>,
    pub delay_seconds: Option<i64>,
    pub message_attributes: Option<MessageAttributeMap>,
    pub message_system_attributes: Option<MessageAttributeMap>,
    pub message_deduplication_id: Option<String>,
    pub message_group_id: Option<String>,
}

#[derive(Debug, Default, Serialize)]
pub struct SendMessageOutput {
    #[serde(rename = "MessageId")]
    pub message_id: String,
    #[serde(rename = "MD5OfMessageBody")]
    pub md5_of_message_body: String,
    #[serde(rename = "MD5OfMessageAttributes", skip_serializing_if = "Option::is_none")]
    pub md5_of_message_attributes: Option<String>,
    #[serde(
        rename = "MD5OfMessageSystemAttributes",
        skip_serializing_if = "Option::is_none"
    )]
    pub md5_of_message_system_attributes: Option<String>,
    #[serde(rename = "SequenceNumber", skip_serializing_if = "Option::is_none")]
    pub sequence_number: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct SendMessageBatchEntry {
    pub id: Option<String>,
    #[serde(flatten)]
    pub message: SendMessageFields,
}

#[derive(Debug, Serialize)]
pub struct SendMessageBatchResultEntry {
    #[serde(rename = "Id")]
    pub id: String,
    #[serde(flatten)]
    pub result: SendMessageOutput,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct BatchInput<E> {
    pub queue_url: Option<String>,
    pub entries: Option<Vec<E>>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct BatchResultErrorEntry {
    pub id: String,
    pub sender_fault: bool,
    pub code: String,
    pub message: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct BatchOutput<S> {
    pub successful: Vec<S>,
    pub failed: Vec<BatchResultErrorEntry>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct BatchResultEntry {
    pub id: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct ReceiveMessageInput {
    pub queue_url: Option<String>,
    pub attribute_names: Option<Vec<String>>,
    pub message_system_attribute_names: Option<Vec<String>>,
    pub message_attribute_names: Option<Vec<String>>,
    pub max_number_of_messages: Option<i64>,
    pub visibility_timeout: Option<i64>,
    pub wait_time_seconds: Option<i64>,
    pub receive_request_attempt_id: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct ReceivedMessage {
    #[serde(rename = "MessageId")]
    pub message_id: String,
    #[serde(rename = "ReceiptHandle")]
    pub receipt_handle: String,
    #[serde(rename = "MD5OfBody")]
    pub md5_of_body: String,
    #[serde(rename = "Body")]
    pub body: std::sync::Arc<str>,
    #[serde(rename = "Attributes", skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: StringMap,
    #[serde(rename = "MD5OfMessageAttributes", skip_serializing_if = "Option::is_none")]
    pub md5_of_message_attributes: Option<String>,
    #[serde(rename = "MessageAttributes", skip_serializing_if = "BTreeMap::is_empty")]
    pub message_attributes: MessageAttributeMap,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct ReceiveMessageOutput {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<ReceivedMessage>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct DeleteMessageInput {
    pub queue_url: Option<String>,
    pub receipt_handle: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct DeleteMessageBatchEntry {
    pub id: Option<String>,
    pub receipt_handle: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct ChangeMessageVisibilityInput {
    pub queue_url: Option<String>,
    pub receipt_handle: Option<String>,
    pub visibility_timeout: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct ChangeMessageVisibilityBatchEntry {
    pub id: Option<String>,
    pub receipt_handle: Option<String>,
    pub visibility_timeout: Option<i64>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct QueueUrlOutput {
    pub queue_url: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct ListQueuesOutput {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub queue_urls: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_token: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct AttributesOutput {
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: StringMap,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct TagsOutput {
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: StringMap,
}

#[derive(Debug, Serialize)]
pub struct Empty {}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct ListDeadLetterSourceQueuesInput {
    pub queue_url: Option<String>,
    pub next_token: Option<String>,
    pub max_results: Option<i64>,
}

#[derive(Debug, Serialize)]
pub struct ListDeadLetterSourceQueuesOutput {
    #[serde(rename = "queueUrls")]
    pub queue_urls: Vec<String>,
    #[serde(rename = "NextToken", skip_serializing_if = "Option::is_none")]
    pub next_token: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct AddPermissionInput {
    pub queue_url: Option<String>,
    pub label: Option<String>,
    #[serde(rename = "AWSAccountIds")]
    pub aws_account_ids: Option<Vec<String>>,
    pub actions: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct RemovePermissionInput {
    pub queue_url: Option<String>,
    pub label: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct StartMessageMoveTaskInput {
    pub source_arn: Option<String>,
    pub destination_arn: Option<String>,
    pub max_number_of_messages_per_second: Option<i64>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct TaskHandleOutput {
    pub task_handle: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct CancelMessageMoveTaskInput {
    pub task_handle: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct CancelMessageMoveTaskOutput {
    pub approximate_number_of_messages_moved: u64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct ListMessageMoveTasksInput {
    pub source_arn: Option<String>,
    pub max_results: Option<i64>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct MessageMoveTaskEntry {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_handle: Option<String>,
    pub status: String,
    pub source_arn: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destination_arn: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_number_of_messages_per_second: Option<u32>,
    pub approximate_number_of_messages_moved: u64,
    pub approximate_number_of_messages_to_move: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    pub started_timestamp: u64,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct ListMessageMoveTasksOutput {
    pub results: Vec<MessageMoveTaskEntry>,
}

/// The input of an action that acts on one queue, named by its QueueUrl:
/// the dispatcher resolves it before the action runs.
pub trait OnQueue {
    fn queue_url(&self) -> Option<&str>;
}

macro_rules! on_queue {
    ($($shape:ty),* $(,)?) => {
        $(impl OnQueue for $shape {
            fn queue_url(&self) -> Option<&str> {
                self.queue_url.as_deref()
            }
        })*
    };
}

on_queue!(
    QueueUrlInput,
    GetQueueAttributesInput,
    SetQueueAttributesInput,
    TagQueueInput,
    UntagQueueInput,
    SendMessageInput,
    ReceiveMessageInput,
    DeleteMessageInput,
    ChangeMessageVisibilityInput,
    ListDeadLetterSourceQueuesInput,
    AddPermissionInput,
    RemovePermissionInput,
);

impl<E> OnQueue for BatchInput<E> {
    fn queue_url(&self) -> Option<&str> {
        self.queue_url.as_deref()
    }
}
