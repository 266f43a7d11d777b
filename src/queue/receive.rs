//! Receiving from a queue: ReceiveMessage's choice of messages (any visible
//! one on a standard queue; on a FIFO queue, runs from groups with nothing
//! in flight), the move of over-received messages to the dead-letter queue,
//! and FIFO receive attempts that a retry repeats.

use std::sync::Arc;

use super::fifo::Run;
use super::limits::{DEDUP_WINDOW_MS, MAX_IN_FLIGHT};
use super::message::{Message, MessageState};
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
                (in_flight && message.issued(handle) == Some(Issued::Latest)).then(|| Received {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::test_support::*;

    #[test]
    fn receive_hides_a_message_until_its_visibility_timeout_passes() {
        let mut q = queue();
        q.send(msg("a"), T0).unwrap();
        let first = q.receive(10, None, None, None, T0);
        assert_eq!(bodies(&first), ["a"]);
        assert_eq!(first[0].message.receive_count, 1);
        assert!(q.receive(10, None, None, None, T0 + 29_999).is_empty());
        let again = q.receive(10, None, None, None, T0 + 30_000);
        assert_eq!(bodies(&again), ["a"]);
        assert_eq!(again[0].message.receive_count, 2);
        assert_eq!(again[0].message.first_received_at, Some(T0));
        assert_ne!(again[0].receipt_handle, first[0].receipt_handle);
    }

    #[test]
    fn receive_attempts_are_journaled_and_restored_until_they_expire() {
        let mut q = fifo_queue();
        q.enable_journal();
        q.send(grouped("a", "g"), T0).unwrap();
        q.take_changes();
        let first = q.receive(1, Some(60), Some("try-1"), None, T0);
        let recorded: Vec<Change> = q.take_changes();
        let Some(Change::Attempt(id, attempt)) = recorded.iter().find(|c| matches!(c, Change::Attempt(..)))
        else {
            panic!("the attempt is journaled: {recorded:?}");
        };
        assert_eq!(
            (id.as_str(), attempt.handles.clone()),
            ("try-1", vec![first[0].receipt_handle])
        );

        // A new leader restores the queue, and the attempt with it.
        let stored: Vec<Message> = q.messages.values().cloned().collect();
        let mut restored = Queue::restore(q.meta(), 0, stored, []);
        restored.restore_attempts([(id.clone(), attempt.clone())]);
        let retried = restored.receive(1, Some(60), Some("try-1"), None, T0 + 1_000);
        assert_eq!(
            retried[0].receipt_handle, first[0].receipt_handle,
            "the same handle again"
        );
        assert_eq!(retried[0].message.receive_count, 1, "not received a second time");

        // Past five minutes the id is forgotten, and the journal says so.
        restored.enable_journal();
        restored.receive(1, Some(60), Some("try-2"), None, T0 + DEDUP_WINDOW_MS + 1);
        assert!(
            restored
                .take_changes()
                .iter()
                .any(|c| matches!(c, Change::AttemptExpired(id) if id == "try-1")),
            "the expiry is journaled"
        );
    }

    /// Fills `q` with `MAX_IN_FLIGHT` messages in flight and one more
    /// visible.
    fn fill_in_flight(q: &mut Queue, message: impl Fn(usize) -> NewMessage) {
        use crate::queue::limits::MAX_IN_FLIGHT;
        for i in 0..=MAX_IN_FLIGHT {
            q.send(message(i), T0).unwrap();
        }
        let mut received = 0;
        while received < MAX_IN_FLIGHT {
            received += q.receive(10, Some(600), None, None, T0).len();
        }
        assert_eq!(q.counts(T0).in_flight, MAX_IN_FLIGHT);
    }

    #[test]
    fn a_standard_queue_at_the_in_flight_quota_refuses_receives() {
        let mut q = queue();
        fill_in_flight(&mut q, |i| msg(&i.to_string()));
        let refused = q.check_in_flight_room(T0 + 1).unwrap_err();
        assert_eq!(refused.code, ErrorCode::OverLimit);
        assert!(
            q.receive(10, None, None, None, T0 + 1).is_empty(),
            "never past the quota"
        );
        // One message back by its timeout makes room for one receive.
        let first = q.in_flight.first().map(|&(_, seq)| seq).unwrap();
        q.set_state(first, MessageState::Visible { since: T0 + 1 });
        assert!(q.check_in_flight_room(T0 + 2).is_ok());
        assert_eq!(q.receive(10, None, None, None, T0 + 2).len(), 1);
        assert!(q.check_in_flight_room(T0 + 3).is_err());
        // That one's 30 s visibility timeout running out makes room too.
        assert!(q.check_in_flight_room(T0 + 2 + 30_000).is_ok());
    }

    #[test]
    fn a_fifo_queue_at_the_in_flight_quota_receives_nothing_without_an_error() {
        let mut q = fifo_queue();
        // Ten messages a group: a FIFO receive takes one group's run of ten.
        fill_in_flight(&mut q, |i| grouped(&i.to_string(), &(i / 10).to_string()));
        assert!(q.check_in_flight_room(T0 + 1).is_ok());
        assert!(q.receive(10, None, None, None, T0 + 1).is_empty());
    }

    #[test]
    fn a_retried_receive_attempt_gets_the_same_messages() {
        let mut q = fifo_queue();
        for body in ["1", "2", "3"] {
            q.send(grouped(body, "g"), T0).unwrap();
        }
        let first = q.receive(2, None, Some("attempt-1"), None, T0);
        let retried = q.receive(2, None, Some("attempt-1"), None, T0 + 1_000);
        let handles = |r: &[Received]| r.iter().map(|r| r.receipt_handle).collect::<Vec<_>>();
        assert_eq!(handles(&retried), handles(&first));
        assert!(
            q.receive(2, None, Some("attempt-2"), None, T0).is_empty(),
            "the group is blocked"
        );
    }

    #[test]
    fn over_received_messages_move_to_the_dead_letter_queue() {
        let mut source = queue();
        source
            .attributes
            .set(
                "RedrivePolicy",
                r#"{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq","maxReceiveCount":2}"#,
            )
            .unwrap();
        let mut dlq = Queue::new("dlq".into(), QueueAttributes::default(), BTreeMap::new(), T0);
        let sent = source.send(msg("poison"), T0).unwrap();
        let arn: Arc<str> = "arn:aws:sqs:us-east-1:000000000000:q".into();
        for i in 0..2 {
            let dl = DeadLetter {
                queue: DeadLetterQueue::Here(&mut dlq),
                source_arn: arn.clone(),
            };
            assert_eq!(
                source.receive(1, Some(1), None, Some(dl), T0 + i * 1_000).len(),
                1
            );
        }
        let dl = DeadLetter {
            queue: DeadLetterQueue::Here(&mut dlq),
            source_arn: arn.clone(),
        };
        assert!(
            source.receive(1, Some(1), None, Some(dl), T0 + 2_000).is_empty(),
            "the third receive moves it"
        );
        assert_eq!(source.counts(T0 + 2_000), Counts::default());
        let moved = dlq.receive(1, None, None, None, T0 + 2_000);
        assert_eq!(moved[0].message.id, sent.message_id, "same message id");
        assert_eq!(moved[0].message.sent_at, T0, "original SentTimestamp");
        assert_eq!(moved[0].message.dead_letter_source, Some(arn));
        assert_eq!(
            moved[0].message.receive_count, 3,
            "two receives in the source, one in the dead-letter queue"
        );
    }

    /// A dead-letter queue of another shard gets the over-received message
    /// handed out; put back (that queue turned out missing), it is visible
    /// again in its old place, ahead of later messages of its group.
    #[test]
    fn a_dead_letter_for_another_shard_is_handed_out_and_can_be_put_back() {
        let mut source = fifo_queue();
        source.enable_journal();
        source
            .attributes
            .set(
                "RedrivePolicy",
                r#"{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq.fifo","maxReceiveCount":1}"#,
            )
            .unwrap();
        for body in ["first", "second"] {
            source.send(grouped(body, "g"), T0).unwrap();
        }
        let first = source.receive(1, Some(0), None, None, T0);
        assert_eq!(&*first[0].message.body, "first");
        let mut leaving = Vec::new();
        let dl = DeadLetter {
            queue: DeadLetterQueue::Elsewhere(&mut leaving),
            source_arn: "arn:aws:sqs:us-east-1:000000000000:q.fifo".into(),
        };
        let next = source.receive(1, Some(0), None, Some(dl), T0 + 1);
        assert_eq!(leaving.len(), 1, "the over-received message is handed out");
        assert_eq!(&*leaving[0].body, "first");
        assert_eq!(&*next[0].message.body, "second", "its group goes on");
        source.take_changes();
        source.put_back(leaving.pop().unwrap(), T0 + 2);
        assert!(
            matches!(source.take_changes().as_slice(), [Change::Sent(m)] if &*m.body == "first"),
            "put back durably"
        );
        let again = source.receive(1, Some(30), None, None, T0 + 2);
        assert_eq!(&*again[0].message.body, "first", "in its old place");
        assert_eq!(again[0].message.receive_count, 2, "with its receive count");
    }
}
