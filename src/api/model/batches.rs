//! Shapes of the batch actions: their entries, their results, and the
//! failed entries they share.

use serde::{Deserialize, Serialize};

use super::*;

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
pub struct DeleteMessageBatchEntry {
    pub id: Option<String>,
    pub receipt_handle: Option<String>,
}

impl Shape for DeleteMessageBatchEntry {
    const MEMBERS: &'static [Member] = &[ENTRY_ID, RECEIPT_HANDLE];
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
