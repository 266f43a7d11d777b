//! The hand-off of each operation's changes to the store (write before
//! acknowledge): submitted while the queues' locks are held, so that the
//! store receives each queue's changes in the order memory applied them,
//! then waited for, locks released, before the operation answers.

use std::sync::atomic::Ordering;

use tokio::sync::{mpsc, oneshot};

use super::Service;
use crate::error::{ErrorCode, Result, SqsError};
use crate::journal::{Pending, Write};
use crate::queue::Queue;

/// A commit to wait for before answering; `None` when there was nothing
/// to write.
pub(super) type Commit = Option<Submitted>;

/// Writes handed to the store.
pub(super) struct Submitted {
    done: oneshot::Receiver<Result<()>>,
    /// Whether they put messages in the outbox, whose sender is woken once
    /// they are durable (see `transfers.rs`).
    fill_outbox: bool,
}

impl Service {
    /// Persists every change through `journal` from now on.
    pub fn persisting_to(mut self, journal: mpsc::UnboundedSender<Pending>) -> Service {
        self.journal = Some(journal);
        self
    }

    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Hands one request's writes to the store; call with the locks of the
    /// queues they touch held.
    pub(super) fn submit(&self, generation: u64, mut writes: Vec<Write>) -> Commit {
        let journal = self.journal.as_ref()?;
        writes.retain(|write| !matches!(write, Write::Queue { changes, .. } if changes.is_empty()));
        if writes.is_empty() {
            return None;
        }
        let fill_outbox = writes.iter().any(|write| matches!(write, Write::Outbox(_)));
        let (done, committed) = oneshot::channel();
        journal
            .send(Pending {
                generation,
                writes,
                done,
            })
            .ok()?;
        Some(Submitted {
            done: committed,
            fill_outbox,
        })
    }

    /// The changes `queue` recorded, as a write.
    pub(super) fn changes_of(queue: &mut Queue) -> Write {
        Write::Queue {
            name: queue.name.clone(),
            changes: queue.take_changes(),
        }
    }

    /// Waits until the store holds the change; then wakes the outbox's
    /// sender if the change put messages there.
    pub(super) async fn committed(&self, commit: Commit) -> Result<()> {
        let Some(Submitted { done, fill_outbox }) = commit else {
            return Ok(());
        };
        done.await.unwrap_or_else(|_| {
            Err(SqsError::new(
                ErrorCode::ServiceUnavailable,
                "ssq is shutting down and could not make this change durable; retry.",
            ))
        })?;
        if fill_outbox {
            self.outbox_ready.notify_one();
        }
        Ok(())
    }

    /// Commits a write that changes no queue (stream entries removed).
    pub async fn commit_alone(&self, write: Write) -> Result<()> {
        self.committed(self.submit(self.generation(), vec![write])).await
    }
}
