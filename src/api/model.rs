//! The SQS API's request and response shapes.
//!
//! These follow AWS's service model: field names are the JSON protocol's, and
//! the Query protocol maps its form fields and XML elements onto the same
//! shapes, so that every action is implemented once for both wire formats.
//! Each shape's [`Shape`] table, next to it, tells the Query protocol its
//! members' names and kinds.
//! Inputs accept missing fields (each action checks what it requires, to give
//! SQS's MissingParameter error rather than a parse failure).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::shape::{Kind, Member, Shape};

pub type StringMap = BTreeMap<String, String>;

// Members several shapes share.
const QUEUE_URL: Member = Member::text("QueueUrl");
const ENTRY_ID: Member = Member::text("Id");
const RECEIPT_HANDLE: Member = Member::text("ReceiptHandle");
const VISIBILITY_TIMEOUT: Member = Member::integer("VisibilityTimeout");
const TEXT_LIST: Kind = Kind::List(&Kind::Text);
const TAG_MAP: Kind = Kind::Map {
    key: "Key",
    value: "Value",
    of: &Kind::Text,
};
/// Queue attributes, and a message's system attributes when received.
const ATTRIBUTES: Member = Member::renamed(
    "Attributes",
    &["Attribute"],
    Kind::Map {
        key: "Name",
        value: "Value",
        of: &Kind::Text,
    },
);
const MESSAGE_ATTRIBUTE_MAP: Kind = Kind::Map {
    key: "Name",
    value: "Value",
    of: &Kind::Structure(MessageAttributeValue::MEMBERS),
};
const MESSAGE_ATTRIBUTES: Member =
    Member::renamed("MessageAttributes", &["MessageAttribute"], MESSAGE_ATTRIBUTE_MAP);
const MESSAGE_SYSTEM_ATTRIBUTES: Member = Member::renamed(
    "MessageSystemAttributes",
    &["MessageSystemAttribute"],
    MESSAGE_ATTRIBUTE_MAP,
);

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct CreateQueueInput {
    pub queue_name: Option<String>,
    pub attributes: Option<StringMap>,
    #[serde(rename = "tags")]
    pub tags: Option<StringMap>,
}

impl Shape for CreateQueueInput {
    const MEMBERS: &'static [Member] = &[
        Member::text("QueueName"),
        ATTRIBUTES,
        Member::renamed("tags", &["Tag", "Tags"], TAG_MAP),
    ];
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct QueueUrlInput {
    pub queue_url: Option<String>,
}

impl Shape for QueueUrlInput {
    const MEMBERS: &'static [Member] = &[QUEUE_URL];
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct GetQueueUrlInput {
    pub queue_name: Option<String>,
    #[serde(rename = "QueueOwnerAWSAccountId")]
    pub queue_owner_aws_account_id: Option<String>,
}

impl Shape for GetQueueUrlInput {
    const MEMBERS: &'static [Member] = &[Member::text("QueueName"), Member::text("QueueOwnerAWSAccountId")];
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct ListQueuesInput {
    pub queue_name_prefix: Option<String>,
    pub next_token: Option<String>,
    pub max_results: Option<i64>,
}

impl Shape for ListQueuesInput {
    const MEMBERS: &'static [Member] = &[
        Member::text("QueueNamePrefix"),
        Member::text("NextToken"),
        Member::integer("MaxResults"),
    ];
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct GetQueueAttributesInput {
    pub queue_url: Option<String>,
    pub attribute_names: Option<Vec<String>>,
}

impl Shape for GetQueueAttributesInput {
    const MEMBERS: &'static [Member] = &[
        QUEUE_URL,
        Member::renamed("AttributeNames", &["AttributeName"], TEXT_LIST),
    ];
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct SetQueueAttributesInput {
    pub queue_url: Option<String>,
    pub attributes: Option<StringMap>,
}

impl Shape for SetQueueAttributesInput {
    const MEMBERS: &'static [Member] = &[QUEUE_URL, ATTRIBUTES];
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct TagQueueInput {
    pub queue_url: Option<String>,
    pub tags: Option<StringMap>,
}

impl Shape for TagQueueInput {
    const MEMBERS: &'static [Member] = &[QUEUE_URL, Member::renamed("Tags", &["Tag", "Tags"], TAG_MAP)];
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct UntagQueueInput {
    pub queue_url: Option<String>,
    pub tag_keys: Option<Vec<String>>,
}

impl Shape for UntagQueueInput {
    const MEMBERS: &'static [Member] = &[QUEUE_URL, Member::renamed("TagKeys", &["TagKey"], TEXT_LIST)];
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

impl Shape for MessageAttributeValue {
    const MEMBERS: &'static [Member] = &[
        Member::text("DataType"),
        Member::text("StringValue"),
        Member::text("BinaryValue"),
        Member::renamed("StringListValues", &["StringListValue"], TEXT_LIST),
        Member::renamed("BinaryListValues", &["BinaryListValue"], TEXT_LIST),
    ];
}

pub type MessageAttributeMap = BTreeMap<String, MessageAttributeValue>;

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct SendMessageInput {
    pub queue_url: Option<String>,
    #[serde(flatten)]
    pub message: SendMessageFields,
}

impl Shape for SendMessageInput {
    const MEMBERS: &'static [Member] = &[QUEUE_URL, Member::flattened(SendMessageFields::MEMBERS)];
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

impl Shape for SendMessageFields {
    const MEMBERS: &'static [Member] = &[
        Member::text("MessageBody"),
        Member::integer("DelaySeconds"),
        MESSAGE_ATTRIBUTES,
        MESSAGE_SYSTEM_ATTRIBUTES,
        Member::text("MessageDeduplicationId"),
        Member::text("MessageGroupId"),
    ];
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

impl Shape for SendMessageOutput {
    const MEMBERS: &'static [Member] = &[
        Member::text("MessageId"),
        Member::text("MD5OfMessageBody"),
        Member::text("MD5OfMessageAttributes"),
        Member::text("MD5OfMessageSystemAttributes"),
        Member::text("SequenceNumber"),
    ];
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct SendMessageBatchEntry {
    pub id: Option<String>,
    #[serde(flatten)]
    pub message: SendMessageFields,
}

impl Shape for SendMessageBatchEntry {
    const MEMBERS: &'static [Member] = &[ENTRY_ID, Member::flattened(SendMessageFields::MEMBERS)];
}

#[derive(Debug, Serialize)]
pub struct SendMessageBatchResultEntry {
    #[serde(rename = "Id")]
    pub id: String,
    #[serde(flatten)]
    pub result: SendMessageOutput,
}

impl Shape for SendMessageBatchResultEntry {
    const MEMBERS: &'static [Member] = &[ENTRY_ID, Member::flattened(SendMessageOutput::MEMBERS)];
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct BatchInput<E> {
    pub queue_url: Option<String>,
    pub entries: Option<Vec<E>>,
}

/// The batch shapes: each batch action names its entries and its result
/// entries after itself in the Query protocol.
macro_rules! batch_shapes {
    ($($entry:ty => $entry_name:literal, $result:ty => $result_name:literal;)*) => {
        $(
            impl Shape for BatchInput<$entry> {
                const MEMBERS: &'static [Member] = &[
                    QUEUE_URL,
                    Member::renamed("Entries", &[$entry_name], Kind::List(&Kind::Structure(<$entry>::MEMBERS))),
                ];
            }

            impl Shape for BatchOutput<$result> {
                const MEMBERS: &'static [Member] = &[
                    Member::renamed("Successful", &[$result_name], Kind::List(&Kind::Structure(<$result>::MEMBERS))),
                    Member::renamed(
                        "Failed",
                        &["BatchResultErrorEntry"],
                        Kind::List(&Kind::Structure(BatchResultErrorEntry::MEMBERS)),
                    ),
                ];
            }
        )*
    };
}

batch_shapes! {
    SendMessageBatchEntry => "SendMessageBatchRequestEntry",
        SendMessageBatchResultEntry => "SendMessageBatchResultEntry";
    DeleteMessageBatchEntry => "DeleteMessageBatchRequestEntry",
        DeleteMessageBatchResultEntry => "DeleteMessageBatchResultEntry";
    ChangeMessageVisibilityBatchEntry => "ChangeMessageVisibilityBatchRequestEntry",
        ChangeMessageVisibilityBatchResultEntry => "ChangeMessageVisibilityBatchResultEntry";
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct BatchResultErrorEntry {
    pub id: String,
    pub sender_fault: bool,
    pub code: String,
    pub message: String,
}

impl Shape for BatchResultErrorEntry {
    const MEMBERS: &'static [Member] = &[
        ENTRY_ID,
        Member::named("SenderFault", Kind::Boolean),
        Member::text("Code"),
        Member::text("Message"),
    ];
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct BatchOutput<S> {
    pub successful: Vec<S>,
    /// Left out when empty, as AWS's JSON answers leave it out.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<BatchResultErrorEntry>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct DeleteMessageBatchResultEntry {
    pub id: String,
}

impl Shape for DeleteMessageBatchResultEntry {
    const MEMBERS: &'static [Member] = &[ENTRY_ID];
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct ChangeMessageVisibilityBatchResultEntry {
    pub id: String,
}

impl Shape for ChangeMessageVisibilityBatchResultEntry {
    const MEMBERS: &'static [Member] = &[ENTRY_ID];
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

impl Shape for ReceiveMessageInput {
    const MEMBERS: &'static [Member] = &[
        QUEUE_URL,
        Member::renamed("AttributeNames", &["AttributeName"], TEXT_LIST),
        Member::renamed(
            "MessageSystemAttributeNames",
            &["MessageSystemAttributeName"],
            TEXT_LIST,
        ),
        Member::renamed("MessageAttributeNames", &["MessageAttributeName"], TEXT_LIST),
        Member::integer("MaxNumberOfMessages"),
        Member::integer("VisibilityTimeout"),
        Member::integer("WaitTimeSeconds"),
        Member::text("ReceiveRequestAttemptId"),
    ];
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

impl Shape for ReceivedMessage {
    const MEMBERS: &'static [Member] = &[
        Member::text("MessageId"),
        Member::text("ReceiptHandle"),
        Member::text("MD5OfBody"),
        Member::text("Body"),
        ATTRIBUTES,
        Member::text("MD5OfMessageAttributes"),
        MESSAGE_ATTRIBUTES,
    ];
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct ReceiveMessageOutput {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<ReceivedMessage>,
}

impl Shape for ReceiveMessageOutput {
    const MEMBERS: &'static [Member] = &[Member::renamed(
        "Messages",
        &["Message"],
        Kind::List(&Kind::Structure(ReceivedMessage::MEMBERS)),
    )];
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct DeleteMessageInput {
    pub queue_url: Option<String>,
    pub receipt_handle: Option<String>,
}

impl Shape for DeleteMessageInput {
    const MEMBERS: &'static [Member] = &[QUEUE_URL, RECEIPT_HANDLE];
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct DeleteMessageBatchEntry {
    pub id: Option<String>,
    pub receipt_handle: Option<String>,
}

impl Shape for DeleteMessageBatchEntry {
    const MEMBERS: &'static [Member] = &[ENTRY_ID, RECEIPT_HANDLE];
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct ChangeMessageVisibilityInput {
    pub queue_url: Option<String>,
    pub receipt_handle: Option<String>,
    pub visibility_timeout: Option<i64>,
}

impl Shape for ChangeMessageVisibilityInput {
    const MEMBERS: &'static [Member] = &[QUEUE_URL, RECEIPT_HANDLE, VISIBILITY_TIMEOUT];
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct ChangeMessageVisibilityBatchEntry {
    pub id: Option<String>,
    pub receipt_handle: Option<String>,
    pub visibility_timeout: Option<i64>,
}

impl Shape for ChangeMessageVisibilityBatchEntry {
    const MEMBERS: &'static [Member] = &[ENTRY_ID, RECEIPT_HANDLE, VISIBILITY_TIMEOUT];
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct QueueUrlOutput {
    pub queue_url: String,
}

impl Shape for QueueUrlOutput {
    const MEMBERS: &'static [Member] = &[QUEUE_URL];
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct ListQueuesOutput {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub queue_urls: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_token: Option<String>,
}

impl Shape for ListQueuesOutput {
    const MEMBERS: &'static [Member] = &[
        Member::renamed("QueueUrls", &["QueueUrl"], TEXT_LIST),
        Member::text("NextToken"),
    ];
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct AttributesOutput {
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: StringMap,
}

impl Shape for AttributesOutput {
    const MEMBERS: &'static [Member] = &[ATTRIBUTES];
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct TagsOutput {
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: StringMap,
}

impl Shape for TagsOutput {
    const MEMBERS: &'static [Member] = &[Member::renamed("Tags", &["Tag"], TAG_MAP)];
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

impl Shape for ListDeadLetterSourceQueuesInput {
    const MEMBERS: &'static [Member] = &[
        QUEUE_URL,
        Member::text("NextToken"),
        Member::integer("MaxResults"),
    ];
}

impl Shape for Empty {
    const MEMBERS: &'static [Member] = &[];
}

#[derive(Debug, Serialize)]
pub struct ListDeadLetterSourceQueuesOutput {
    #[serde(rename = "queueUrls")]
    pub queue_urls: Vec<String>,
    #[serde(rename = "NextToken", skip_serializing_if = "Option::is_none")]
    pub next_token: Option<String>,
}

impl Shape for ListDeadLetterSourceQueuesOutput {
    const MEMBERS: &'static [Member] = &[
        Member::renamed("queueUrls", &["QueueUrl"], TEXT_LIST),
        Member::text("NextToken"),
    ];
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

impl Shape for AddPermissionInput {
    const MEMBERS: &'static [Member] = &[
        QUEUE_URL,
        Member::text("Label"),
        Member::renamed("AWSAccountIds", &["AWSAccountId"], TEXT_LIST),
        Member::renamed("Actions", &["ActionName"], TEXT_LIST),
    ];
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct RemovePermissionInput {
    pub queue_url: Option<String>,
    pub label: Option<String>,
}

impl Shape for RemovePermissionInput {
    const MEMBERS: &'static [Member] = &[QUEUE_URL, Member::text("Label")];
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct StartMessageMoveTaskInput {
    pub source_arn: Option<String>,
    pub destination_arn: Option<String>,
    pub max_number_of_messages_per_second: Option<i64>,
}

impl Shape for StartMessageMoveTaskInput {
    const MEMBERS: &'static [Member] = &[
        Member::text("SourceArn"),
        Member::text("DestinationArn"),
        Member::integer("MaxNumberOfMessagesPerSecond"),
    ];
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct TaskHandleOutput {
    pub task_handle: String,
}

impl Shape for TaskHandleOutput {
    const MEMBERS: &'static [Member] = &[Member::text("TaskHandle")];
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct CancelMessageMoveTaskInput {
    pub task_handle: Option<String>,
}

impl Shape for CancelMessageMoveTaskInput {
    const MEMBERS: &'static [Member] = &[Member::text("TaskHandle")];
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct CancelMessageMoveTaskOutput {
    pub approximate_number_of_messages_moved: u64,
}

impl Shape for CancelMessageMoveTaskOutput {
    const MEMBERS: &'static [Member] = &[Member::integer("ApproximateNumberOfMessagesMoved")];
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct ListMessageMoveTasksInput {
    pub source_arn: Option<String>,
    pub max_results: Option<i64>,
}

impl Shape for ListMessageMoveTasksInput {
    const MEMBERS: &'static [Member] = &[Member::text("SourceArn"), Member::integer("MaxResults")];
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

impl Shape for MessageMoveTaskEntry {
    const MEMBERS: &'static [Member] = &[
        Member::text("TaskHandle"),
        Member::text("Status"),
        Member::text("SourceArn"),
        Member::text("DestinationArn"),
        Member::integer("MaxNumberOfMessagesPerSecond"),
        Member::integer("ApproximateNumberOfMessagesMoved"),
        Member::integer("ApproximateNumberOfMessagesToMove"),
        Member::text("FailureReason"),
        Member::integer("StartedTimestamp"),
    ];
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct ListMessageMoveTasksOutput {
    pub results: Vec<MessageMoveTaskEntry>,
}

impl Shape for ListMessageMoveTasksOutput {
    const MEMBERS: &'static [Member] = &[Member::renamed(
        "Results",
        &["ListMessageMoveTasksResultEntry"],
        Kind::List(&Kind::Structure(MessageMoveTaskEntry::MEMBERS)),
    )];
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
