//! The service's side of moving messages between shards (`cluster/transfers.rs`
//! drives it): which queues live elsewhere, taking arrivals from the inbox
//! into their queues, and putting back what could not be delivered. Each
//! queue's change commits with the stream entries it settles, so a message
//! is taken exactly once.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::time::Instant;

use super::Service;
use crate::error::Result;
use crate::journal::{Transfer, Write};
use crate::queue::Queue;
use crate::service::shards::Placement;

/// How long a dead-letter queue of another shard that was found missing is
/// not sent to again.
const MISSING_TARGET_BACKOFF: Duration = Duration::from_secs(10);

impl Service {
    /// Holds shard `shard` of `placement`'s queues.
    pub fn in_shard(mut self, placement: Placement, shard: usize) -> Service {
        self.home = Some((placement, shard));
        self
    }

    /// Whether the queue `key` belongs to another shard than this one.
    pub fn is_elsewhere(&self, key: &str) -> bool {
        self.home
            .as_ref()
            .is_some_and(|(placement, shard)| placement.shard_of(key) != *shard)
    }

    pub(super) fn target_missing(&self, key: &str) -> bool {
        let mut missing = self.missing_targets.lock().unwrap_or_else(|p| p.into_inner());
        missing.retain(|_, until| *until > Instant::now());
        missing.contains_key(key)
    }

    /// Takes messages from other shards (inbox entries, by stream id) into
    /// their queues; each queue's arrivals commit with the removal of their
    /// entries, so each is taken exactly once. Arrivals for a queue deleted
    /// meanwhile go with it.
    /// An SNS copy (sent from its topic) that the queue's policy does not
    /// let the topic send is dropped, as on the topic's own shard.
    pub async fn take_in(&self, arrivals: Vec<(String, Transfer)>) -> Result<()> {
        self.settle(
            arrivals,
            |t| &t.to,
            Write::TakenIn,
            |queue, transfer, now| {
                if transfer.from.starts_with("arn:aws:sns:") && !self.topic_may_send(&transfer.from, queue) {
                    tracing::info!(topic = %transfer.from, queue = %queue.name, "a topic's message is dropped: the queue's policy does not let the topic send");
                    return;
                }
                queue.accept(transfer.message, transfer.dead_letter_source, now)
            },
        )
        .await
    }

    /// Puts outbox entries whose target queue does not exist back into the
    /// queues they left, and stops sending dead letters there for a while.
    pub async fn put_back(&self, returned: Vec<(String, Transfer)>) -> Result<()> {
        {
            let mut missing = self.missing_targets.lock().unwrap_or_else(|p| p.into_inner());
            for (_, transfer) in &returned {
                missing.insert(transfer.to.clone(), Instant::now() + MISSING_TARGET_BACKOFF);
            }
        }
        self.settle(
            returned,
            |t| &t.from,
            Write::Delivered,
            |queue, transfer, now| queue.put_back(transfer.message, now),
        )
        .await
    }

    /// Applies transfers to the queues `queue_of` names, each queue's in
    /// one commit with `settled` (the stream entries they came from).
    async fn settle(
        &self,
        transfers: Vec<(String, Transfer)>,
        queue_of: fn(&Transfer) -> &String,
        settled: fn(Vec<String>) -> Write,
        apply: impl Fn(&mut Queue, Transfer, u64),
    ) -> Result<()> {
        let mut by_queue: BTreeMap<String, Vec<(String, Transfer)>> = BTreeMap::new();
        for (id, transfer) in transfers {
            by_queue
                .entry(queue_of(&transfer).clone())
                .or_default()
                .push((id, transfer));
        }
        let mut commits = Vec::with_capacity(by_queue.len());
        for (name, transfers) in by_queue {
            let ids = transfers.iter().map(|(id, _)| id.clone()).collect();
            let slot = self.read_queues().get(&name).cloned();
            let commit = match slot {
                Some(slot) => {
                    let commit = {
                        let mut queue = slot.lock();
                        let before = queue.holding();
                        if !slot.is_closed() {
                            let now = self.now();
                            for (_, transfer) in transfers {
                                apply(&mut queue, transfer, now);
                            }
                        }
                        self.hold_queue(&queue.name, before, queue.holding());
                        self.submit(slot.generation, vec![Self::changes_of(&mut queue), settled(ids)])
                    };
                    slot.ready.notify_waiters();
                    commit
                }
                None => {
                    tracing::info!(queue = %name, "messages from another shard for a queue that no longer exists are dropped with it");
                    self.submit(self.generation(), vec![settled(ids)])
                }
            };
            commits.push(commit);
        }
        for commit in commits {
            self.committed(commit).await?;
        }
        Ok(())
    }
}
