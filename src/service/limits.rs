//! What one instance may hold (`--max-queues`, `--max-messages`,
//! `--max-bytes`), and the running totals every operation updates by the
//! difference it made, so that a check costs two atomic loads; each
//! account's share of them is kept in `accounts.rs`.

use std::sync::atomic::{AtomicU64, Ordering};

use super::Service;
use crate::error::{ErrorCode, Result, SqsError};

/// What one instance holds at most; beyond it, CreateQueue and sends answer
/// OverLimit rather than letting memory run out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_queues: usize,
    /// Messages held over all queues, in any state.
    pub max_messages: u64,
    /// Payload bytes (bodies and attributes) and FIFO deduplication records
    /// held over all queues.
    pub max_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_queues: 1_000_000,
            max_messages: u64::MAX,
            max_bytes: u64::MAX,
        }
    }
}

/// Moves running totals of messages and bytes by what one queue's
/// holding went from (`before`) and to (`after`).
pub(super) fn apply_difference(totals: (&AtomicU64, &AtomicU64), before: (u64, u64), after: (u64, u64)) {
    for (total, (old, new)) in [(totals.0, (before.0, after.0)), (totals.1, (before.1, after.1))] {
        if new >= old {
            total.fetch_add(new - old, Ordering::AcqRel);
        } else {
            total.fetch_sub(old - new, Ordering::AcqRel);
        }
    }
}

impl Service {
    /// Messages and payload bytes held over all queues.
    pub fn held(&self) -> (u64, u64) {
        (
            self.held_messages.load(Ordering::Acquire),
            self.held_bytes.load(Ordering::Acquire),
        )
    }

    /// Applies the change in what the queue keyed `key` holds to the totals,
    /// and to its account's (`accounts.rs`).
    pub(super) fn hold_queue(&self, key: &str, before: (u64, u64), after: (u64, u64)) {
        self.hold(before, after);
        if let Some(accounts) = &self.accounts {
            accounts.apply(accounts.of(key), before, after);
        }
    }

    /// Applies the change in what one queue, or the topics' archives, hold
    /// to the totals.
    pub(super) fn hold(&self, before: (u64, u64), after: (u64, u64)) {
        apply_difference((&self.held_messages, &self.held_bytes), before, after);
    }

    /// Refuses `bytes` more payload for the account of the queue keyed
    /// `key` beyond the account's limit (`accounts.rs`).
    pub(super) fn check_queue_account_bytes(&self, key: &str, bytes: u64) -> Result<()> {
        match &self.accounts {
            Some(accounts) => accounts.check_room(accounts.of(key), bytes),
            None => Ok(()),
        }
    }

    /// Refuses `messages` more messages of `bytes` payload beyond the limits.
    pub(super) fn check_room(&self, messages: u64, bytes: u64) -> Result<()> {
        let (held_messages, held_bytes) = self.held();
        if held_messages.saturating_add(messages) > self.limits.max_messages {
            return Err(SqsError::new(
                ErrorCode::OverLimit,
                format!(
                    "This server holds its maximum of {} messages (--max-messages); consume some or raise the limit.",
                    self.limits.max_messages
                ),
            ));
        }
        if held_bytes.saturating_add(bytes) > self.limits.max_bytes {
            return Err(SqsError::new(
                ErrorCode::OverLimit,
                format!(
                    "This server holds its maximum of {} bytes of messages and FIFO deduplication records \
                     (--max-bytes); consume some, wait for deduplication ids to expire (5 minutes after \
                     their send), or raise the limit.",
                    self.limits.max_bytes
                ),
            ));
        }
        Ok(())
    }
}
