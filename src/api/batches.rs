//! The batch actions, and the rules every batch shares: 1 to 10 entries
//! with distinct, well-formed ids, each failing or succeeding on its own.

use std::collections::HashSet;

use super::model::*;
use super::params::{in_range, required};
use super::wire::{new_message, sent_output};
use super::{Api, RequestContext};
use crate::error::{ErrorCode, Result, SqsError};
use crate::queue::ReceiptHandle;
use crate::queue::limits::{MAX_MESSAGE_BYTES, MAX_VISIBILITY_TIMEOUT_SECONDS};

/// A batch may hold at most this many entries.
pub(super) const MAX_BATCH_ENTRIES: usize = 10;

/// The payload of a SendMessageBatch (bodies and attributes) may not exceed 1 MiB.
pub(super) const MAX_BATCH_PAYLOAD: usize = MAX_MESSAGE_BYTES as usize;

/// Checks the batch rules common to every batch action and returns the
/// entries with their ids.
pub(super) fn check_batch<E>(
    entries: Option<Vec<E>>,
    id: impl Fn(&E) -> Option<&String>,
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
    let mut seen = HashSet::new();
    entries
        .into_iter()
        .map(|entry| {
            let entry_id = id(&entry).cloned().ok_or_else(|| SqsError::missing_parameter("Id"))?;
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
    let entries = check_batch(input.entries, |e| e.id.as_ref(), "SendMessageBatchRequestEntry")?;
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
    let entries = check_batch(input.entries, |e| e.id.as_ref(), "DeleteMessageBatchRequestEntry")?;
    let results = api
        .service
        .with_queue(name, |queue, now| {
            entries
                .into_iter()
                .map(|(id, entry)| {
                    let result = required(entry.receipt_handle, "ReceiptHandle")
                        .and_then(|text| ReceiptHandle::decode(&text))
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
    let entries = check_batch(
        input.entries,
        |e| e.id.as_ref(),
        "ChangeMessageVisibilityBatchRequestEntry",
    )?;
    let results = api
        .service
        .with_queue(name, |queue, now| {
            entries
                .into_iter()
                .map(|(id, entry)| {
                    let result = (|| {
                        let handle =
                            ReceiptHandle::decode(&required(entry.receipt_handle, "ReceiptHandle")?)?;
                        let timeout = in_range(
                            required(entry.visibility_timeout, "VisibilityTimeout")?,
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
        let check = |entries| check_batch(entries, |e: &Option<String>| e.as_ref(), "Entry").map(|v| v.len());
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
}
