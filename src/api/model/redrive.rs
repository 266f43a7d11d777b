//! Shapes of the dead-letter actions: ListDeadLetterSourceQueues and the
//! message move tasks.

use serde::{Deserialize, Serialize};

use super::*;

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
