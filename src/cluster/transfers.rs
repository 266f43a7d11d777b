//! Messages between shards: dead letters and moved messages whose queue is
//! in another shard than the one they leave, delivered exactly once.
//!
//! No Lua script can touch two shards (on Redis Cluster they are on
//! different nodes), so a message crosses in three steps, each of them
//! atomic and each safe to repeat:
//!
//! 1. The source shard's leader removes the message from its queue and
//!    appends it to its shard's **outbox** stream, in one fenced commit
//!    (`Write::Outbox`): from then on the message is durable in Redis, and
//!    in exactly one place.
//! 2. The [`Transfers`] task of the source shard reads the outbox in order
//!    and runs `deliver.lua` on the target shard's slot: it appends each
//!    message to that shard's **inbox** stream and sets its arrival marker
//!    (`Transfer::marker`: queue left, place there, message id), unless the
//!    marker is already there. Then it removes the entries from the outbox
//!    (`Write::Delivered`, fenced). A delivery repeated after a crash
//!    between the two finds the markers and adds nothing.
//! 3. The target shard's task reads its inbox in order, takes the messages
//!    into their queues and removes the entries, in one fenced commit per
//!    queue (`Write::TakenIn`).
//!
//! A target queue that does not exist answers step 2 with -1: the message
//! goes back into the queue it left, in its old place (`Queue::put_back`).
//! Markers are kept for [`MARKER_TTL`], far longer than the source shard
//! can take to finish step 2 (a failover of its leader).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use fred::prelude::*;
use fred::types::scripts::Script;
use tokio::sync::{Notify, watch};

use crate::error::SqsError;
use crate::journal::{Transfer, Write};
use crate::leader::Leadership;
use crate::service::Service;
use crate::service::shards::Placement;
use crate::store::codec;
use crate::store::redis::replicas::ReplicaAcks;
use crate::store::redis::{RedisError, ShardKeys};

/// Stream entries read at a time.
const BATCH: u64 = 100;

/// How long a shard remembers that a message arrived.
const MARKER_TTL: Duration = Duration::from_secs(3600);

/// Why moving messages between shards paused; it resumes at the next turn,
/// and nothing is lost: an entry leaves a stream only once it is held
/// where it goes.
#[derive(Debug, thiserror::Error)]
enum TransferError {
    #[error("reading {stream} failed: {source}")]
    Read {
        stream: String,
        source: fred::error::Error,
    },
    #[error("delivering to shard {target} failed: {source}")]
    Deliver {
        target: usize,
        source: fred::error::Error,
    },
    #[error(transparent)]
    Replicas(#[from] RedisError),
    /// This shard's own commit refused the change (say, it is no longer leader).
    #[error("{}", .0.message)]
    Commit(#[from] SqsError),
}

/// The outbox and inbox of one shard, worked while this instance leads it.
pub struct Transfers {
    pub acks: ReplicaAcks,
    pub placement: Placement,
    /// Every shard's keys, in shard order: deliveries go to the target
    /// shard's primary, on its connection for commits (`WAIT` confirms
    /// them there).
    pub shards: Vec<ShardKeys>,
    pub shard: usize,
    pub service: Arc<Service>,
    pub leadership: Arc<Leadership>,
    /// Woken by the inbox's arrival notices.
    pub inbox_arrived: Arc<Notify>,
    /// How often the streams are looked at with no notice (one may be lost
    /// while the subscriber reconnects).
    pub poll_every: Duration,
}

/// A stream entry read back: its id, the transfer it holds, and its fields
/// as stored (delivered on as they are).
struct Entry {
    id: String,
    transfer: Transfer,
    fields: HashMap<String, String>,
}

impl Transfers {
    /// Runs the outbox and the inbox until `stopped` turns true.
    pub async fn run(self, stopped: watch::Receiver<bool>) {
        let deliver = Script::from_lua(include_str!("lua/deliver.lua"));
        tokio::join!(
            self.work(&self.service.outbox_ready, stopped.clone(), || self
                .deliver_outbox(&deliver)),
            self.work(&self.inbox_arrived, stopped, || self.take_in_inbox()),
        );
    }

    /// Runs `step` while it finds work, each time `wake` is notified or
    /// `poll_every` passed, while this instance serves the shard.
    async fn work<'a, Fut>(
        &'a self,
        wake: &Notify,
        mut stopped: watch::Receiver<bool>,
        step: impl Fn() -> Fut,
    ) where
        Fut: std::future::Future<Output = Result<usize, TransferError>> + 'a,
    {
        loop {
            tokio::select! {
                _ = wake.notified() => {}
                _ = tokio::time::sleep(self.poll_every) => {}
                _ = stopped.changed() => return,
            }
            while self.leadership.is_serving() {
                match step().await {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(why) => {
                        tracing::warn!(shard = self.shard, %why, "moving messages between shards paused; retrying");
                        break;
                    }
                }
            }
        }
    }

    /// Delivers the oldest outbox entries; returns how many it handled.
    async fn deliver_outbox(&self, deliver: &Script) -> Result<usize, TransferError> {
        let entries = self.read(&self.shards[self.shard].layout.outbox()).await?;
        let count = entries.len();
        let (by_shard, unreadable) = self.decode(entries);
        let (mut done, mut returned) = (unreadable, Vec::new());
        for (target, entries) in by_shard {
            let results = self.deliver_to(target, deliver, &entries).await?;
            for (entry, result) in entries.into_iter().zip(results) {
                match result {
                    -1 => returned.push((entry.id, entry.transfer)),
                    _ => done.push(entry.id),
                }
            }
        }
        let counted = |step: &str, count: usize| {
            let metric = &self.service.metrics.transfers;
            metric.with_label_values(&[step]).inc_by(count as u64);
        };
        if !returned.is_empty() {
            let count = returned.len();
            tracing::warn!(
                shard = self.shard,
                count,
                "messages bound for a queue of another shard that does not exist went back to their queues"
            );
            self.service.put_back(returned).await?;
            counted("returned", count);
        }
        if !done.is_empty() {
            let count = done.len();
            self.service.commit_alone(Write::Delivered(done)).await?;
            counted("delivered", count);
        }
        Ok(count)
    }

    /// Runs `deliver.lua` on shard `target`'s slot for these entries.
    async fn deliver_to(
        &self,
        target: usize,
        deliver: &Script,
        entries: &[Entry],
    ) -> Result<Vec<i64>, TransferError> {
        let ShardKeys { layout, link } = &self.shards[target];
        let mut keys = vec![layout.queues(), layout.inbox()];
        let mut args: Vec<Value> = vec![
            (MARKER_TTL.as_millis() as i64).into(),
            layout.inbox_channel().into(),
        ];
        for Entry { transfer, fields, .. } in entries {
            keys.push(layout.arrived(&transfer.marker()));
            args.push(transfer.to.clone().into());
            args.push((fields.len() as i64).into());
            for (name, value) in fields {
                args.push(name.clone().into());
                args.push(value.clone().into());
            }
        }
        let inbox = layout.inbox();
        let client = link.commits();
        let results: Vec<i64> = deliver
            .evalsha_with_reload(&client, keys, args)
            .await
            .map_err(|source| TransferError::Deliver { target, source })?;
        // The outbox entries go only once the inbox holds them for good.
        self.acks.confirm(&client, &inbox).await?;
        Ok(results)
    }

    /// Takes the oldest inbox entries into their queues.
    async fn take_in_inbox(&self) -> Result<usize, TransferError> {
        let entries = self.read(&self.shards[self.shard].layout.inbox()).await?;
        let count = entries.len();
        let (by_shard, unreadable) = self.decode(entries);
        let arrivals: Vec<(String, Transfer)> = by_shard
            .into_values()
            .flatten()
            .map(|entry| (entry.id, entry.transfer))
            .collect();
        if !unreadable.is_empty() {
            self.service.commit_alone(Write::TakenIn(unreadable)).await?;
        }
        let arrived = arrivals.len() as u64;
        self.service.take_in(arrivals).await?;
        self.service
            .metrics
            .transfers
            .with_label_values(&["taken_in"])
            .inc_by(arrived);
        Ok(count)
    }

    /// The oldest entries of `stream`, in order.
    async fn read(&self, stream: &str) -> Result<Vec<(String, HashMap<String, String>)>, TransferError> {
        self.shards[self.shard]
            .link
            .commands()
            .xrange_values(stream, "-", "+", Some(BATCH))
            .await
            .map_err(|source| TransferError::Read {
                stream: stream.to_string(),
                source,
            })
    }

    /// Entries by the shard of their target queue, in stream order; and the
    /// ids of entries that cannot be read (logged, and removed: they could
    /// never be delivered).
    fn decode(
        &self,
        entries: Vec<(String, HashMap<String, String>)>,
    ) -> (BTreeMap<usize, Vec<Entry>>, Vec<String>) {
        let mut by_shard: BTreeMap<usize, Vec<Entry>> = BTreeMap::new();
        let mut unreadable = Vec::new();
        for (id, fields) in entries {
            match codec::decode_transfer(&fields) {
                Ok(transfer) => by_shard
                    .entry(self.placement.shard_of(&transfer.to))
                    .or_default()
                    .push(Entry { id, transfer, fields }),
                Err(error) => {
                    tracing::error!(shard = self.shard, entry = %id, %error, "an unreadable message between shards is dropped");
                    unreadable.push(id);
                }
            }
        }
        (by_shard, unreadable)
    }
}
