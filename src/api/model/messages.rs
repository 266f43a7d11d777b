//! Shapes of the single-message actions: SendMessage, ReceiveMessage,
//! DeleteMessage, ChangeMessageVisibility, and message attributes.

use serde::{Deserialize, Serialize};

use super::*;

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
pub struct ChangeMessageVisibilityInput {
    pub queue_url: Option<String>,
    pub receipt_handle: Option<String>,
    pub visibility_timeout: Option<i64>,
}

impl Shape for ChangeMessageVisibilityInput {
    const MEMBERS: &'static [Member] = &[QUEUE_URL, RECEIPT_HANDLE, VISIBILITY_TIMEOUT];
}
