//! Publish and PublishBatch: the publication read and checked, stored in
//! every subscribed queue, and recorded for every HTTP/S subscription, in
//! one commit before the answer.

use std::collections::{BTreeMap, HashSet};

use base64::Engine as _;

use super::Call;
use super::{Answer, Form};
use crate::topic::publish::Rules;
use crate::topic::{AttributeInput, Publication, PublishInput, Result, SnsError, TopicArn};

/// At most ten entries in a PublishBatch.
const MAX_BATCH_ENTRIES: usize = 10;
/// Batch entry ids: at most 80 of `A-Z a-z 0-9 - _`.
const MAX_ENTRY_ID_CHARS: usize = 80;

pub(super) async fn publish(call: &Call<'_>, form: &Form) -> Result<Option<Answer>> {
    let arn = target(call, form)?;
    let input = read_input(form)?;
    let rules = publish_rules(call, &arn)?;
    let publication = Publication::check(input, rules, "")?;
    let (message_id, sequence) = run(call, &arn, &publication).await?;
    let mut fields = vec![("MessageId", Answer::Text(message_id))];
    if let Some(sequence) = sequence {
        fields.push(("SequenceNumber", Answer::Text(sequence)));
    }
    Ok(Some(Answer::Fields(fields)))
}

pub(super) async fn publish_batch(call: &Call<'_>, form: &Form) -> Result<Option<Answer>> {
    let arn = call.topic_arn(form, "TopicArn")?;
    let entries = form.structures("PublishBatchRequestEntries");
    if entries.is_empty() {
        return Err(SnsError::new(
            "EmptyBatchRequest",
            400,
            "The batch request doesn't contain any entries.",
        ));
    }
    if entries.len() > MAX_BATCH_ENTRIES {
        return Err(SnsError::new(
            "TooManyEntriesInBatchRequest",
            400,
            "The batch request contains more entries than permissible.",
        ));
    }
    let mut ids = HashSet::new();
    for entry in &entries {
        let id = entry.get("Id").map(String::as_str).unwrap_or_default();
        if id.chars().count() > MAX_ENTRY_ID_CHARS {
            return Err(SnsError::new(
                "InvalidBatchEntryId",
                400,
                format!("The Id of a batch entry in the batch request is too long: {id}"),
            ));
        }
        if id.is_empty()
            || !id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(SnsError::new(
                "InvalidBatchEntryId",
                400,
                format!(
                    "The Id of a batch entry in the batch request contains an impermissible character: {id}"
                ),
            ));
        }
        if !ids.insert(id.to_string()) {
            return Err(SnsError::new(
                "BatchEntryIdsNotDistinct",
                400,
                "Two or more batch entries in the request have the same Id.",
            ));
        }
    }
    let rules = publish_rules(call, &arn)?;
    let mut publications = Vec::with_capacity(entries.len());
    let mut total = 0;
    for (index, entry) in entries.into_iter().enumerate() {
        let id = entry.get("Id").cloned().unwrap_or_default();
        let entry_form = Form::from_fields(entry);
        let member = format!("publishBatchRequestEntries.{}.member.", index + 1);
        let input = read_input(&entry_form)?;
        let publication = Publication::check(input, rules, &member)?;
        total += publication.size;
        publications.push((id, publication));
    }
    // The batch's messages together, within the topic's MaximumMessageSize.
    if total > rules.max_bytes {
        return Err(SnsError::new(
            "BatchRequestTooLong",
            400,
            "The length of all the messages put together is more than the limit.",
        ));
    }
    let mut successful = Vec::new();
    for (id, publication) in publications {
        let (message_id, sequence) = run(call, &arn, &publication).await?;
        let mut fields = vec![("Id", Answer::Text(id)), ("MessageId", Answer::Text(message_id))];
        if let Some(sequence) = sequence {
            fields.push(("SequenceNumber", Answer::Text(sequence)));
        }
        successful.push(Answer::Fields(fields));
    }
    let answer = Answer::Fields(vec![
        ("Successful", Answer::List(successful)),
        ("Failed", Answer::List(Vec::new())),
    ]);
    Ok(Some(answer))
}

/// The topic a Publish names (`TopicArn`, or `TargetArn` naming a topic);
/// a phone number is refused, there is no SMS here.
fn target(call: &Call<'_>, form: &Form) -> Result<TopicArn> {
    if form.get("TopicArn").is_some() {
        return call.topic_arn(form, "TopicArn");
    }
    if let Some(target) = form.get("TargetArn") {
        let parts: Vec<&str> = target.split(':').collect();
        if parts.len() == 6 && parts[2] == "sns" && !parts[5].contains('/') {
            return call.topic_arn(form, "TargetArn");
        }
        return Err(SnsError::parameter(
            "TargetArn Reason: No endpoint found for the target arn specified",
        ));
    }
    if let Some(number) = form.get("PhoneNumber") {
        return Err(SnsError::parameter(format!(
            "PhoneNumber Reason: ssq sends no SMS; {number} is not valid to publish to"
        )));
    }
    Err(SnsError::parameter(
        "TopicArn or TargetArn Reason: no value for required parameter",
    ))
}

fn publish_rules(call: &Call<'_>, arn: &TopicArn) -> Result<Rules> {
    Ok(call.api.service.topics().topic(arn)?.publish_rules())
}

fn read_input(form: &Form) -> Result<PublishInput> {
    let mut attributes = BTreeMap::new();
    for (name, value) in form.map("MessageAttributes") {
        let binary_value = match value.get("BinaryValue") {
            None => None,
            Some(text) => Some(
                base64::engine::general_purpose::STANDARD
                    .decode(text)
                    .map_err(|_| {
                        SnsError::value_invalid(format!(
                            "The message attribute '{name}' has an invalid binary value."
                        ))
                    })?,
            ),
        };
        let attribute = AttributeInput {
            data_type: value.get("DataType").cloned(),
            string_value: value.get("StringValue").cloned(),
            binary_value,
        };
        attributes.insert(name, attribute);
    }
    Ok(PublishInput {
        message: form.get("Message").map(str::to_string),
        subject: form.get("Subject").map(str::to_string),
        message_structure: form.get("MessageStructure").map(str::to_string),
        attributes,
        group_id: form.get("MessageGroupId").map(str::to_string),
        dedup_id: form.get("MessageDeduplicationId").map(str::to_string),
    })
}

/// Publishes one checked publication; its id and sequence number.
async fn run(call: &Call<'_>, arn: &TopicArn, publication: &Publication) -> Result<(String, Option<String>)> {
    let (published, _) = call.api.service.publish(arn, publication, &call.fanout()).await?;
    Ok((published.message_id, published.sequence_number))
}
