//! ReceiveMessage: long polling and dead-letter routing.
//!
//! A long poll never spins: it registers on the queue's notification before
//! it looks, then waits on it or sleeps until the next moment a message
//! turns visible by itself, whichever comes first. Over-received messages
//! move to the dead-letter queue in the same commit as the receive, on
//! this shard or, through the outbox, on another.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::Instant;

use super::Service;
use super::commit::Commit;
use super::slot::{QueueSlot, lock_pair};
use crate::error::Result;
use crate::journal::{Transfer, Write};
use crate::queue::{DeadLetter, DeadLetterQueue, Message, Queue, Received, key};

/// What a ReceiveMessage asks for.
#[derive(Debug, Default, Clone, Copy)]
pub struct ReceiveRequest<'a> {
    pub max: usize,
    pub visibility_timeout: Option<u32>,
    /// Wait up to this long for a message; `None`: the queue's setting.
    pub wait_seconds: Option<u32>,
    /// FIFO: a retried receive with the same id gets the same messages.
    pub attempt_id: Option<&'a str>,
}

/// Where a queue's over-received messages go.
enum Route {
    /// Nowhere: no redrive policy, the queue itself, a dead-letter queue
    /// that does not exist (they stay in their queue, as SQS keeps them).
    Nowhere,
    /// A dead-letter queue of this shard.
    Here {
        slot: Arc<QueueSlot>,
        source_arn: Arc<str>,
    },
    /// A dead-letter queue of another shard, through the outbox.
    Elsewhere { to: String, source_arn: Arc<str> },
}

/// What one look at a queue found.
#[derive(Default)]
struct Look {
    received: Vec<Received>,
    /// The queue's ReceiveMessageWaitTimeSeconds.
    wait_seconds: u32,
    /// In how many milliseconds a message turns visible by itself.
    next_wakeup: Option<u64>,
    commit: Commit,
}

impl Service {
    /// Receives up to `max` messages, waiting up to `wait_seconds` (or the
    /// queue's ReceiveMessageWaitTimeSeconds) for the first to arrive.
    pub async fn receive(&self, name: &str, request: ReceiveRequest<'_>) -> Result<Vec<Received>> {
        let slot = self.slot(name)?;
        let mut deadline = None;
        loop {
            // Register interest before looking, so that a send between the
            // look and the wait still wakes us.
            let notified = slot.ready.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();

            let Look {
                received,
                wait_seconds: wait_default,
                next_wakeup,
                commit,
            } = self.receive_once(name, &slot, &request)?;
            self.committed(commit).await?;
            self.metrics.messages_received.inc_by(received.len() as u64);
            let deadline = *deadline.get_or_insert_with(|| {
                Instant::now() + Duration::from_secs(request.wait_seconds.unwrap_or(wait_default).into())
            });
            let closed = slot.is_closed() || self.closing.load(Ordering::Acquire);
            if !received.is_empty() || closed || Instant::now() >= deadline {
                return Ok(received);
            }
            let wake_at = match next_wakeup {
                Some(ms) => deadline.min(Instant::now() + Duration::from_millis(ms)),
                None => deadline,
            };
            tokio::select! {
                _ = &mut notified => {}
                _ = tokio::time::sleep_until(wake_at) => {}
            }
        }
    }

    /// One look at the queue: receives what it can, moving over-received
    /// messages to the dead-letter queue. Both queues are locked, in name
    /// order (so two queues redriving into each other cannot deadlock), and
    /// their changes go to the store as one commit: a moved message is never
    /// lost and never in both. A dead-letter queue of another shard gets the
    /// messages through the outbox, written in the same commit.
    fn receive_once(&self, name: &str, slot: &Arc<QueueSlot>, request: &ReceiveRequest<'_>) -> Result<Look> {
        let route = self.dead_letter_route(name, slot);
        let (mut queue, mut dead_letters) = match &route {
            Route::Here { slot: dlq, .. } => {
                let (queue, dead_letters) = lock_pair(slot, dlq);
                (queue, Some(dead_letters))
            }
            _ => (slot.lock(), None),
        };
        if slot.is_closed() {
            return Ok(Look::default());
        }
        let now = self.now();
        let held_before = (queue.holding(), dead_letters.as_deref().map(Queue::holding));
        let mut leaving: Vec<Message> = Vec::new();
        let dead_letter = match (&route, dead_letters.as_deref_mut()) {
            (
                Route::Here {
                    slot: dlq_slot,
                    source_arn,
                },
                Some(dlq),
            ) if !dlq_slot.is_closed() => Some(DeadLetter {
                queue: DeadLetterQueue::Here(dlq),
                source_arn: source_arn.clone(),
            }),
            (Route::Elsewhere { source_arn, .. }, _) => Some(DeadLetter {
                queue: DeadLetterQueue::Elsewhere(&mut leaving),
                source_arn: source_arn.clone(),
            }),
            _ => None,
        };
        // Refused or not, what time changed is accounted and committed alike.
        let received = queue.check_in_flight_room(now).map(|()| {
            queue.receive(
                request.max,
                request.visibility_timeout,
                request.attempt_id,
                dead_letter,
                now,
            )
        });
        self.hold_queue(&queue.name, held_before.0, queue.holding());
        if let (Some(before), Some(dlq)) = (held_before.1, dead_letters.as_deref()) {
            self.hold_queue(&dlq.name, before, dlq.holding());
        }
        let next_wakeup = queue.next_wakeup().map(|at| at.saturating_sub(now));
        let mut writes = vec![Self::changes_of(&mut queue)];
        if let Some(dlq) = dead_letters.as_deref_mut() {
            writes.push(Self::changes_of(dlq));
        }
        if let Route::Elsewhere { to, source_arn } = &route
            && !leaving.is_empty()
        {
            let transfers = leaving
                .into_iter()
                .map(|message| Transfer {
                    from: name.to_string(),
                    to: to.clone(),
                    message,
                    dead_letter_source: Some(source_arn.clone()),
                })
                .collect();
            writes.push(Write::Outbox(transfers));
        }
        let commit = self.submit(slot.generation, writes);
        if let Route::Here { slot: dlq_slot, .. } = &route {
            dlq_slot.ready.notify_waiters();
        }
        Ok(Look {
            received: received?,
            wait_seconds: queue.attributes.receive_message_wait_time_seconds,
            next_wakeup,
            commit,
        })
    }

    /// Where `name`'s over-received messages go, by its redrive policy. A
    /// dead-letter queue is in its source's region; the source's ARN, which
    /// moved messages carry, is in the dead-letter queue's region and account.
    fn dead_letter_route(&self, name: &str, slot: &QueueSlot) -> Route {
        let Some(policy) = slot.lock().attributes.redrive_policy.clone() else {
            return Route::Nowhere;
        };
        let target = key::sibling(name, policy.target_name());
        if target == name {
            return Route::Nowhere;
        }
        let prefix = policy
            .dead_letter_target_arn
            .rsplit_once(':')
            .map_or("", |(prefix, _)| prefix);
        let source_arn: Arc<str> = format!("{prefix}:{}", key::split(name).name).into();
        if self.is_elsewhere(&target) {
            return match self.target_missing(&target) {
                true => Route::Nowhere,
                false => Route::Elsewhere {
                    to: target,
                    source_arn,
                },
            };
        }
        match self.read_queues().get(&target) {
            Some(dlq) => Route::Here {
                slot: dlq.clone(),
                source_arn,
            },
            None => Route::Nowhere,
        }
    }
}
