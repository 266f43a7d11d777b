//! AddPermission and RemovePermission: statements in the queue's policy.

use super::model::*;
use super::params::required;
use super::{Api, RequestContext};
use crate::error::{Result, SqsError};

/// SQS actions a permission may grant (AddPermission's ActionName).
pub(super) const PERMISSION_ACTIONS: &[&str] = &[
    "*",
    "ChangeMessageVisibility",
    "DeleteMessage",
    "GetQueueAttributes",
    "GetQueueUrl",
    "ListDeadLetterSourceQueues",
    "ListMessageMoveTasks",
    "ListQueueTags",
    "PurgeQueue",
    "ReceiveMessage",
    "SendMessage",
    "StartMessageMoveTask",
    "CancelMessageMoveTask",
];

pub(super) async fn add_permission(
    api: &Api,
    ctx: &RequestContext,
    name: &str,
    input: AddPermissionInput,
) -> Result<Empty> {
    let label = required(input.label, "Label")?;
    let valid_label = (1..=80).contains(&label.len())
        && label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !valid_label {
        return Err(SqsError::invalid_parameter(format!(
            "Value {label} for parameter Label is invalid. Reason: 1 to 80 letters, digits, '-' and '_'."
        )));
    }
    let accounts = required(input.aws_account_ids, "AWSAccountIds")?;
    let actions = required(input.actions, "Actions")?;
    if accounts.is_empty() || actions.is_empty() {
        return Err(SqsError::invalid_parameter(
            "AWSAccountIds and Actions must each name at least one.",
        ));
    }
    if let Some(bad) = actions.iter().find(|a| !PERMISSION_ACTIONS.contains(&a.as_str())) {
        return Err(SqsError::invalid_parameter(format!(
            "Value SQS:{bad} for parameter ActionName is invalid."
        )));
    }
    let statement = serde_json::json!({
        "Sid": label,
        "Effect": "Allow",
        "Principal": {"AWS": one_or_many(accounts.iter().map(|a| format!("arn:aws:iam::{a}:root")).collect())},
        "Action": one_or_many(actions.iter().map(|a| format!("SQS:{a}")).collect()),
        "Resource": ctx.queue_arn(name),
    });
    edit_statements(api, ctx, name, |statements| {
        if statements.iter().any(|s| s["Sid"] == label.as_str()) {
            return Err(SqsError::invalid_parameter(format!(
                "Value {label} for parameter Label is invalid. Reason: Already exists."
            )));
        }
        statements.push(statement);
        Ok(())
    })
    .await
}

pub(super) async fn remove_permission(
    api: &Api,
    ctx: &RequestContext,
    name: &str,
    input: RemovePermissionInput,
) -> Result<Empty> {
    let label = required(input.label, "Label")?;
    edit_statements(api, ctx, name, |statements| {
        let before = statements.len();
        statements.retain(|s| s["Sid"] != label.as_str());
        if statements.len() == before {
            return Err(SqsError::invalid_parameter(format!(
                "Value {label} for parameter Label is invalid. Reason: can't find label."
            )));
        }
        Ok(())
    })
    .await
}

/// A policy value as AWS writes it: a single value as a string, several as
/// a list.
fn one_or_many(mut values: Vec<String>) -> serde_json::Value {
    if values.len() == 1 {
        serde_json::Value::String(values.remove(0))
    } else {
        values.into()
    }
}

/// Runs `edit` on the statements of the queue's policy and stores what it
/// leaves; a policy left with no statements is removed.
async fn edit_statements(
    api: &Api,
    ctx: &RequestContext,
    name: &str,
    edit: impl FnOnce(&mut Vec<serde_json::Value>) -> Result<()>,
) -> Result<Empty> {
    let arn = ctx.queue_arn(name);
    api.service
        .with_queue(name, |queue, now| {
            let mut policy = policy_document(
                queue
                    .attributes
                    .policy
                    .as_ref()
                    .map(|policy| policy.text.as_str()),
                &arn,
            );
            let statements = policy["Statement"]
                .as_array_mut()
                .expect("a policy document has statements");
            edit(statements)?;
            let empty = statements.is_empty();
            queue.set_policy((!empty).then(|| policy.to_string()), now);
            Ok(Empty {})
        })
        .await?
}

/// The queue's policy document, or a new one with no statements.
pub(super) fn policy_document(policy: Option<&str>, arn: &str) -> serde_json::Value {
    policy
        .and_then(|p| serde_json::from_str::<serde_json::Value>(p).ok())
        .filter(|p| p["Statement"].is_array())
        .unwrap_or_else(|| serde_json::json!({"Version": "2008-10-17", "Id": format!("{arn}/SQSDefaultPolicy"), "Statement": []}))
}
