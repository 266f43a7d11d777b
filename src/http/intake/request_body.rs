//! Reading request bodies under one memory budget for the whole process
//! (which large answers draw on too: `http/large_answers.rs`).
//!
//! A body has to be read whole before its signature can be checked (the
//! signature covers the body's hash) and before it can be parsed, so every
//! request in flight holds its body in memory. Each one is capped
//! ([`MAX_REQUEST_BODY`]) and timed (`--request-timeout`), but many
//! connections stalling after sending most of a large body would still add
//! up without bound. So all bodies being read or handled draw on one budget
//! of bytes (`--max-body-buffer`): a request that would go past it is
//! refused at once with a retryable 503, and memory stays bounded whatever
//! clients do. With `--credentials`, requests that are not signed with a
//! known key never get this far (see [`crate::http::sigv4::Credentials::check_head`]).

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use http_body_util::BodyExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::config::MAX_REQUEST_BODY;
use crate::error::{ErrorCode, SqsError};

/// The bytes all request bodies in memory may take together.
pub struct BodyBudget {
    bytes: Arc<Semaphore>,
    total: usize,
}

/// A body's share of the budget, given back when dropped.
pub struct BodyPermit {
    _permit: Option<OwnedSemaphorePermit>,
}

impl BodyBudget {
    pub fn new(total: usize) -> BodyBudget {
        let total = total.min(Semaphore::MAX_PERMITS);
        BodyBudget {
            bytes: Arc::new(Semaphore::new(total)),
            total,
        }
    }

    /// Bytes of the budget in use now.
    #[cfg(test)]
    fn in_use(&self) -> usize {
        self.total - self.bytes.available_permits()
    }

    fn take(&self, bytes: usize, permit: &mut Option<OwnedSemaphorePermit>) -> Result<(), SqsError> {
        let Some(more) = u32::try_from(bytes)
            .ok()
            .and_then(|n| self.bytes.clone().try_acquire_many_owned(n).ok())
        else {
            return Err(SqsError::new(
                ErrorCode::ServiceUnavailable,
                format!(
                    "ssq is already holding its limit of {} bytes of request bodies and answers not yet written \
                     (--max-body-buffer); retry.",
                    self.total
                ),
            ));
        };
        match permit {
            Some(held) => held.merge(more),
            None => *permit = Some(more),
        }
        Ok(())
    }

    /// Takes `bytes` from the budget for something already in memory (an
    /// answer being written: `http/large_answers.rs`).
    pub fn hold(&self, bytes: usize) -> Result<BodyPermit, SqsError> {
        let mut permit = None;
        self.take(bytes, &mut permit)?;
        Ok(BodyPermit { _permit: permit })
    }

    /// Reads a whole body within `timeout`, taking its bytes from the budget
    /// as they arrive.
    pub async fn read(&self, body: Body, timeout: Duration) -> Result<(Bytes, BodyPermit), SqsError> {
        match tokio::time::timeout(timeout, self.collect(body)).await {
            Ok(read) => read,
            Err(_) => Err(SqsError::new(
                ErrorCode::RequestTimeout,
                format!(
                    "The request body did not arrive within {timeout:?}; send it faster or raise --request-timeout."
                ),
            )),
        }
    }

    async fn collect(&self, mut body: Body) -> Result<(Bytes, BodyPermit), SqsError> {
        let mut permit = None;
        let mut chunks: Vec<Bytes> = Vec::new();
        let mut length = 0usize;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|error| {
                SqsError::new(
                    ErrorCode::SerializationException,
                    format!("The request body could not be read: {error}."),
                )
            })?;
            let Ok(data) = frame.into_data() else {
                continue; // trailers
            };
            length += data.len();
            if length > MAX_REQUEST_BODY {
                return Err(SqsError::new(
                    ErrorCode::RequestTooLarge,
                    format!("The request body is larger than the {MAX_REQUEST_BODY} bytes ssq reads."),
                ));
            }
            self.take(data.len(), &mut permit)?;
            chunks.push(data);
        }
        let bytes = match chunks.len() {
            0 => Bytes::new(),
            1 => chunks.pop().unwrap_or_default(),
            _ => {
                let mut whole = Vec::with_capacity(length);
                for chunk in chunks {
                    whole.extend_from_slice(&chunk);
                }
                Bytes::from(whole)
            }
        };
        Ok((bytes, BodyPermit { _permit: permit }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bodies_draw_on_the_budget_until_dropped() {
        let budget = BodyBudget::new(1_000);
        let (first, held) = budget
            .read(Body::from(vec![b'a'; 600]), Duration::from_secs(1))
            .await
            .unwrap();
        assert_eq!(first.len(), 600);
        assert_eq!(budget.in_use(), 600);
        let refused = budget
            .read(Body::from(vec![b'b'; 600]), Duration::from_secs(1))
            .await
            .err()
            .expect("over the budget");
        assert_eq!(refused.code, ErrorCode::ServiceUnavailable);
        assert!(refused.message.contains("--max-body-buffer"), "{refused}");
        assert_eq!(budget.in_use(), 600, "a refused body gives back what it took");
        drop(held);
        assert_eq!(budget.in_use(), 0);
        assert!(
            budget
                .read(Body::from(vec![b'c'; 600]), Duration::from_secs(1))
                .await
                .is_ok()
        );
    }

    #[tokio::test]
    async fn bodies_over_the_request_cap_are_refused() {
        let budget = BodyBudget::new(64 * 1024 * 1024);
        let refused = budget
            .read(
                Body::from(vec![0u8; MAX_REQUEST_BODY + 1]),
                Duration::from_secs(1),
            )
            .await
            .err()
            .expect("too large");
        assert_eq!(refused.code, ErrorCode::RequestTooLarge);
    }
}
