//! Shapes of the queue actions: CreateQueue, GetQueueUrl, ListQueues,
//! DeleteQueue and PurgeQueue (a queue URL alone), attributes and tags.

use serde::{Deserialize, Serialize};

use super::*;

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
