//! The batch actions, and the rules every batch shares: 1 to 10 entries
//! with distinct, well-formed ids, each failing or succeeding on its own.

use std::collections::HashSet;

use super::convert::{new_message, sent_output};
use super::model::*;
use super::params::in_range;
use super::{Api, RequestContext};
use crate::error::{ErrorCode, Result, SqsError};
use crate::queue::ReceiptHandle;
use crate::queue::limits::{MAX_MESSAGE_BYTES, MAX_VISIBILITY_TIMEOUT_SECONDS};

/// A batch may hold at most this many entries.
pub(super) const MAX_BATCH_ENTRIES: usize = 10;

/// The payload of a SendMessageBatch (bodies and attributes) may not exceed 1 MiB.
pub(super) const MAX_BATCH_PAYLOAD: usize = MAX_MESSAGE_BYTES as usize;

/// Checks the batch rules common to every batch action and returns the
/// entries with their ids. An entry without a member the action requires
/// (its Id, or what `missing` names) fails the whole request, naming the
/// entry as the Query protocol does (`DeleteMessageBatchRequestEntry.2.Id`),
/// as AWS answers it.
pub(super) fn check_batch<E>(
    entries: Option<Vec<E>>,
    id: impl Fn(&E) -> Option<&String>,
    missing: impl Fn(&E) -> Option<&'static str>,
    entry_kind: &str,
) -> Result<Vec<(String, E)>> {
    let entries = entries.unwrap_or_default();
    if entries.is_empty() {
        return Err(SqsError::new(
            ErrorCode::EmptyBatchRequest,
            format!("There should be at least one {entry_kind} in the request."),
        ));
    }
    if entries.len() > MAX_BATCH_ENTRIES {
        return Err(SqsError::new(
            ErrorCode::TooManyEntriesInBatchRequest,
            format!(
                "Maximum number of entries per request are {MAX_BATCH_ENTRIES}. You have sent {}.",
                entries.len()
            ),
        ));
    }
    let missing_member =
        |at: usize, member: &str| SqsError::missing_parameter(&format!("{entry_kind}.{}.{member}", at + 1));
    if let Some((at, member)) = entries.iter().enumerate().find_map(|(at, entry)| {
        let member = if id(entry).is_none() {
            Some("Id")
        } else {
            missing(entry)
        };
        member.map(|member| (at, member))
    }) {
        return Err(missing_member(at, member));
    }
    let mut seen = HashSet::new();
    entries
        .into_iter()
        .map(|entry| {
            let entry_id = id(&entry).cloned().unwrap_or_default();
            let valid = (1..=80).contains(&entry_id.len())
                && entry_id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
            if !valid {
                return Err(SqsError::new(
                    ErrorCode::InvalidBatchEntryId,
                    "A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long.",
                ));
            }
            if !seen.insert(entry_id.clone()) {
                return Err(SqsError::new(
                    ErrorCode::BatchEntryIdsNotDistinct,
                    format!("Id {entry_id} repeated."),
                ));
            }
            Ok((entry_id, entry))
        })
        .collect()
}

/// Splits per-entry outcomes into SQS's Successful and Failed lists.
pub(super) fn batch_output<S>(results: impl IntoIterator<Item = (String, Result<S>)>) -> BatchOutput<S> {
    let mut output = BatchOutput {
        successful: Vec::new(),
        failed: Vec::new(),
    };
    for (id, result) in results {
        match result {
            Ok(success) => output.successful.push(success),
            Err(error) => output.failed.push(BatchResultErrorEntry {
                id,
                sender_fault: error.code.is_sender_fault(),
                code: error.code.code().to_string(),
                message: error.message,
            }),
        }
    }
    output
}

pub(super) async fn send_message_batch(
    api: &Api,
    ctx: &RequestContext,
    name: &str,
    input: BatchInput<SendMessageBatchEntry>,
) -> Result<BatchOutput<SendMessageBatchResultEntry>> {
    let entries = check_batch(
        input.entries,
        |e| e.id.as_ref(),
        |e| e.message.message_body.is_none().then_some("MessageBody"),
        "SendMessageBatchRequestEntry",
    )?;
    let mut payload = 0;
    let mut results = Vec::with_capacity(entries.len());
    let mut to_send = Vec::new();
    for (id, entry) in entries {
        match new_message(ctx, entry.message) {
            Ok((message, size)) => {
                payload += size;
                results.push((id, None));
                to_send.push(message);
            }
            Err(error) => results.push((id, Some(Err(error)))),
        }
    }
    if payload > MAX_BATCH_PAYLOAD {
        return Err(SqsError::new(
            ErrorCode::BatchRequestTooLong,
            format!(
                "Batch requests cannot be longer than {MAX_BATCH_PAYLOAD} bytes. You have sent {payload} bytes."
            ),
        ));
    }
    let mut sent = api.service.send_batch(name, to_send).await?.into_iter();
    Ok(batch_output(results.into_iter().map(|(id, early)| {
        let outcome = early.unwrap_or_else(|| sent.next().expect("one result per message sent"));
        let result = outcome.map(|s| SendMessageBatchResultEntry {
            id: id.clone(),
            result: sent_output(s),
        });
        (id, result)
    })))
}

pub(super) async fn delete_message_batch(
    api: &Api,
    _: &RequestContext,
    name: &str,
    input: BatchInput<DeleteMessageBatchEntry>,
) -> Result<BatchOutput<DeleteMessageBatchResultEntry>> {
    let entries = check_batch(
        input.entries,
        |e| e.id.as_ref(),
        |e| e.receipt_handle.is_none().then_some("ReceiptHandle"),
        "DeleteMessageBatchRequestEntry",
    )?;
    let results = api
        .service
        .with_queue(name, |queue, now| {
            entries
                .into_iter()
                .map(|(id, entry)| {
                    // Present: check_batch refused entries without one.
                    let result = ReceiptHandle::decode(&entry.receipt_handle.unwrap_or_default())
                        .and_then(|handle| queue.delete(handle, now))
                        .map(|deleted| {
                            if deleted {
                                api.service.metrics.messages_deleted.inc();
                            }
                            DeleteMessageBatchResultEntry { id: id.clone() }
                        });
                    (id, result)
                })
                .collect::<Vec<_>>()
        })
        .await?;
    Ok(batch_output(results))
}

pub(super) async fn change_message_visibility_batch(
    api: &Api,
    _: &RequestContext,
    name: &str,
    input: BatchInput<ChangeMessageVisibilityBatchEntry>,
) -> Result<BatchOutput<ChangeMessageVisibilityBatchResultEntry>> {
    // AWS's model requires an entry's Id and ReceiptHandle only, and an
    // entry without them fails the call. One without VisibilityTimeout
    // fails alone: AWS answers it in Failed as MissingParameter (its answer
    // is quoted in aws/aws-sdk-go-v2#2250, whose SDK has since sent the
    // member always, #2767).
    let entries = check_batch(
        input.entries,
        |e| e.id.as_ref(),
        |e| e.receipt_handle.is_none().then_some("ReceiptHandle"),
        "ChangeMessageVisibilityBatchRequestEntry",
    )?;
    let results = api
        .service
        .with_queue(name, |queue, now| {
            entries
                .into_iter()
                .enumerate()
                .map(|(at, (id, entry))| {
                    let result = (|| {
                        let Some(timeout) = entry.visibility_timeout else {
                            return Err(SqsError::missing_parameter(&format!(
                                "ChangeMessageVisibilityBatchRequestEntry.{}.VisibilityTimeout",
                                at + 1
                            )));
                        };
                        // Present: check_batch refused entries without one.
                        let handle = ReceiptHandle::decode(&entry.receipt_handle.unwrap_or_default())?;
                        let timeout = in_range(
                            timeout,
                            "VisibilityTimeout",
                            0,
                            MAX_VISIBILITY_TIMEOUT_SECONDS.into(),
                        )?;
                        queue.change_visibility(handle, timeout, now)?;
                        Ok(ChangeMessageVisibilityBatchResultEntry { id: id.clone() })
                    })();
                    (id, result)
                })
                .collect::<Vec<_>>()
        })
        .await?;
    Ok(batch_output(results))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_are_checked_for_size_ids_and_emptiness() {
        let ids = |ids: &[&str]| Some(ids.iter().map(|s| Some(s.to_string())).collect::<Vec<_>>());
        let check = |entries| {
            check_batch(entries, |e: &Option<String>| e.as_ref(), |_| None, "Entry").map(|v| v.len())
        };
        assert_eq!(check(ids(&["a", "b"])).unwrap(), 2);
        assert_eq!(check(ids(&[])).unwrap_err().code, ErrorCode::EmptyBatchRequest);
        assert_eq!(check(None).unwrap_err().code, ErrorCode::EmptyBatchRequest);
        let eleven: Vec<String> = (0..11).map(|i| i.to_string()).collect();
        let eleven: Vec<&str> = eleven.iter().map(String::as_str).collect();
        assert_eq!(
            check(ids(&eleven)).unwrap_err().code,
            ErrorCode::TooManyEntriesInBatchRequest
        );
        assert_eq!(
            check(ids(&["a", "a"])).unwrap_err().code,
            ErrorCode::BatchEntryIdsNotDistinct
        );
        assert_eq!(
            check(ids(&["a.b"])).unwrap_err().code,
            ErrorCode::InvalidBatchEntryId
        );
        assert_eq!(
            check(ids(&[&"x".repeat(81)])).unwrap_err().code,
            ErrorCode::InvalidBatchEntryId
        );
    }

    #[test]
    fn an_entry_without_a_required_member_fails_the_batch_naming_the_entry() {
        /// An entry: its id and one more member.
        type Entry = (Option<String>, Option<u32>);
        let entry = |id: Option<&str>, member: Option<u32>| (id.map(String::from), member);
        let check = |entries: Vec<Entry>, missing: fn(&Entry) -> Option<&'static str>| {
            check_batch(
                Some(entries),
                |e: &Entry| e.0.as_ref(),
                missing,
                "KindRequestEntry",
            )
            .unwrap_err()
        };
        let mixed = || {
            vec![
                entry(Some("a"), Some(1)),
                entry(None, Some(2)),
                entry(Some("c"), None),
            ]
        };
        let no_id = check(mixed(), |_| None);
        assert_eq!(no_id.code, ErrorCode::MissingParameter);
        assert_eq!(
            no_id.message,
            "The request must contain the parameter KindRequestEntry.2.Id."
        );
        let first = check(mixed(), |e| e.1.is_none().then_some("Timeout"));
        assert_eq!(
            first.message, "The request must contain the parameter KindRequestEntry.2.Id.",
            "the first entry that lacks a member is named"
        );
        let member = check(vec![entry(Some("a"), Some(1)), entry(Some("b"), None)], |e| {
            e.1.is_none().then_some("Timeout")
        });
        assert_eq!(
            member.message,
            "The request must contain the parameter KindRequestEntry.2.Timeout."
        );
    }
}
