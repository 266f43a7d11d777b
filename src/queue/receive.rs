//! Receiving from a queue: ReceiveMessage's choice of messages (any visible
//! one on a standard queue; on a FIFO queue, runs from groups with nothing
//! in flight), the move of over-received messages to the dead-letter queue,
//! and FIFO receive attempts that a retry repeats.

use std::sync::Arc;

use super::fifo::Run;
use super::limits::{DEDUP_WINDOW_MS, MAX_IN_FLIGHT};
use super::message::{Message, MessageState};
use super::queue::issued;
use super::receipt::{Issued, ReceiptHandle};
use super::{Change, Queue};
use crate::error::{ErrorCode, Result, SqsError};

/// What a FIFO receive with a ReceiveRequestAttemptId gave, kept for five
/// minutes so that a retry of it (on this leader or the next) gets the same
/// messages and handles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub expires_at: u64,
    pub handles: Vec<ReceiptHandle>,
}

/// A message as handed to a receiver: a snapshot taken at the receive, with
/// the receipt handle of that receive.
#[derive(Debug, Clone)]
pub struct Received {
    pub message: Message,
    pub receipt_handle: ReceiptHandle,
}

/// The dead-letter queue a receive moves over-received messages into.
pub struct DeadLetter<'a> {
    pub queue: DeadLetterQueue<'a>,
    /// The ARN of the queue the messages leave (DeadLetterQueueSourceArn).
    pub source_arn: Arc<str>,
}

pub enum DeadLetterQueue<'a> {
    /// A queue this instance holds: messages move into it at once.
    Here(&'a mut Queue),
    /// A queue of another shard: the messages are handed out, for the
    /// caller to send on (see `transfers.rs`).
    Elsewhere(&'a mut Vec<Message>),
}

impl Queue {
    /// Takes up to `max` messages and hides each for the visibility timeout
    /// (the queue's, or `visibility_timeout` seconds). Standard queues give
    /// the oldest visible messages; FIFO queues give, group by group, runs of
    /// consecutive messages from groups with nothing in flight. A message
    /// already received as often as the redrive policy allows moves to
    /// `dead_letter` instead. No receive takes a queue past
    /// [`MAX_IN_FLIGHT`] messages in flight.
    pub fn receive(
        &mut self,
        max: usize,
        visibility_timeout: Option<u32>,
        attempt_id: Option<&str>,
        mut dead_letter: Option<DeadLetter<'_>>,
        now: u64,
    ) -> Vec<Received> {
        self.advance(now);
        if let Some(previous) = attempt_id.and_then(|id| self.repeat_attempt(id, now)) {
            return previous;
        }
        let timeout_ms = u64::from(visibility_timeout.unwrap_or(self.attributes.visibility_timeout)) * 1000;
        let max_receives = self
            .attributes
            .redrive_policy
            .as_ref()
            .map(|p| p.max_receive_count);
        let mut received = Vec::new();
        let mut run: Option<Run> = None;
        while received.len() < max && self.in_flight.len() < MAX_IN_FLIGHT {
            let Some(seq) = self.next_receivable(&mut run) else {
                break;
            };
            if let (Some(limit), Some(target)) = (max_receives, dead_letter.as_mut())
                && self.messages[&seq].receive_count >= limit
            {
                run = None;
                let moved = self.remove(seq).expect("a receivable message exists");
                self.record(|_| Change::Removed(seq));
                match &mut target.queue {
                    DeadLetterQueue::Here(queue) => queue.accept(moved, Some(target.source_arn.clone()), now),
                    DeadLetterQueue::Elsewhere(leaving) => leaving.push(moved),
                }
                continue;
            }
            self.set_state(
                seq,
                MessageState::InFlight {
                    until: now + timeout_ms,
                    received_at: now,
                },
            );
            let message = self.messages.get_mut(&seq).expect("just placed");
            if !self.attributes.fifo_queue {
                self.tenants
                    .received(message.group_id.as_ref(), self.in_flight.len());
            }
            message.receive_count = message.receive_count.saturating_add(1);
            message.first_received_at.get_or_insert(now);
            let key = *message
                .receipt_key
                .get_or_insert_with(crate::queue::random::nonce);
            let receipt_handle = ReceiptHandle::issue(seq, message.receive_count, key);
            let snapshot = message.clone();
            self.record(|_| Change::State(snapshot.clone()));
            received.push(Received {
                message: snapshot,
                receipt_handle,
            });
        }
        if let Some(id) = attempt_id.filter(|_| self.is_fifo()) {
            self.remember_attempt(id, &received, now);
        }
        self.activity.received += received.len() as u64;
        received
    }

    /// A standard queue with [`MAX_IN_FLIGHT`] messages in flight refuses
    /// receives, with AWS's answer; a FIFO queue's receive just finds
    /// nothing (see [`Queue::receive`]), as AWS's does.
    pub fn check_in_flight_room(&mut self, now: u64) -> Result<()> {
        if self.is_fifo() || self.in_flight.len() < MAX_IN_FLIGHT {
            return Ok(());
        }
        // Time only brings messages back from flight: at the quota it may
        // have made room (the receive that follows advances time anyway).
        self.advance(now);
        if self.in_flight.len() < MAX_IN_FLIGHT {
            return Ok(());
        }
        Err(SqsError::new(
            ErrorCode::OverLimit,
            "Too many messages have been received without being deleted.\nPlease delete your received messages or let them timeout before receiving more.",
        ))
    }

    /// The next message a receive may take. For FIFO queues, keeps taking
    /// from the current run while it goes on, then starts one from the
    /// ready group whose turn it is.
    fn next_receivable(&self, run: &mut Option<Run>) -> Option<u64> {
        if !self.is_fifo() {
            return self.next_visible();
        }
        if let Some(seq) = run.as_ref().and_then(|run| self.groups.next_in(run)) {
            return Some(seq);
        }
        let next = self.groups.next_ready()?;
        let first = next.first;
        *run = Some(next);
        Some(first)
    }

    /// A FIFO receive retried with the same ReceiveRequestAttemptId gets the
    /// same messages and handles, while they are all still in flight.
    fn repeat_attempt(&self, attempt_id: &str, now: u64) -> Option<Vec<Received>> {
        let attempt = self.attempts.get(attempt_id).filter(|a| a.expires_at > now)?;
        attempt
            .handles
            .iter()
            .map(|handle| {
                let message = self.messages.get(&handle.seq)?;
                let in_flight = matches!(message.state, MessageState::InFlight { .. });
                (in_flight && issued(message, handle) == Some(Issued::Latest)).then(|| Received {
                    message: message.clone(),
                    receipt_handle: *handle,
                })
            })
            .collect()
    }

    fn remember_attempt(&mut self, attempt_id: &str, received: &[Received], now: u64) {
        let expired: Vec<String> = self
            .attempts
            .iter()
            .filter(|(_, attempt)| attempt.expires_at <= now)
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            self.attempts.remove(&id);
            self.record(|_| Change::AttemptExpired(id));
        }
        let attempt = Attempt {
            expires_at: now + DEDUP_WINDOW_MS,
            handles: received.iter().map(|r| r.receipt_handle).collect(),
        };
        self.record(|_| Change::Attempt(attempt_id.to_string(), attempt.clone()));
        self.attempts.insert(attempt_id.to_string(), attempt);
    }

    /// Takes back the ReceiveRequestAttemptIds a restored queue had
    /// remembered (see [`Change::Attempt`]).
    pub fn restore_attempts(&mut self, attempts: impl IntoIterator<Item = (String, Attempt)>) {
        self.attempts.extend(attempts);
    }
}
