//! The group of instances sharing one Redis: the shard count its data is
//! for, and (with `--shards` above 1) its live members and the shard map
//! they follow.
//!
//! The shard count is recorded in Redis by the first instance; one started
//! with another count refuses to start, since it would look for queues in
//! the wrong shards. Members beat every `--lock-retry` into a sorted set
//! whose scores are expiry times on Redis's clock, so a member that stops
//! beating drops out one lock TTL later, and a change of members is
//! announced on a channel so that the others recompute the map at once. The
//! map itself is `shards::assign` of the members: a wish that each shard's
//! elector follows (see `election::Wish`), while the shard locks keep at
//! most one leader per shard whatever the members believe.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use fred::prelude::*;
use fred::types::scripts::Script;
use tokio::sync::{Notify, watch};
use tokio::time::sleep;

use crate::election::Wish;
use crate::store::Layout;

/// The members and the map, as this instance last read them.
#[derive(Debug, Clone, Default)]
pub struct ShardMap {
    /// Live members' node ids, in order.
    pub members: Vec<String>,
    /// The member that should lead each shard.
    pub owners: Vec<Option<String>>,
}

/// This instance's view of the group.
pub struct Membership {
    node_id: String,
    shards: usize,
    map: Mutex<ShardMap>,
    /// One per shard: wakes its elector when the map changes.
    wakes: Vec<Arc<Notify>>,
    /// Asks the heartbeat task to beat now (a member joined or left).
    pub beat_now: Arc<Notify>,
}

impl Membership {
    pub fn new(node_id: &str, wakes: Vec<Arc<Notify>>) -> Membership {
        Membership {
            node_id: node_id.to_string(),
            shards: wakes.len(),
            map: Mutex::new(ShardMap {
                members: Vec::new(),
                owners: vec![None; wakes.len()],
            }),
            wakes,
            beat_now: Arc::new(Notify::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ShardMap> {
        self.map.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn map(&self) -> ShardMap {
        self.lock().clone()
    }

    /// What the map wants of this instance for `shard`. Until the first
    /// heartbeat is answered nobody is known, and the instance only takes
    /// shards left without a leader for a whole lease.
    pub fn wish(&self, shard: usize) -> Wish {
        match self.lock().owners.get(shard) {
            Some(Some(owner)) if *owner == self.node_id => Wish::Lead,
            _ => Wish::Yield,
        }
    }

    /// Takes the members Redis answered; wakes the electors if the map moved.
    fn update(&self, mut members: Vec<String>) {
        // Redis answers in order of expiry, which each heartbeat changes.
        members.sort_unstable();
        members.dedup();
        let changed = {
            let mut map = self.lock();
            if map.members == members {
                false
            } else {
                let owners = crate::shards::assign(self.shards, &members)
                    .into_iter()
                    .map(|owner| owner.map(|index| members[index].clone()))
                    .collect();
                tracing::info!(members = ?members, "the group's members changed: shards move to follow");
                *map = ShardMap { members, owners };
                true
            }
        };
        if changed {
            for wake in &self.wakes {
                wake.notify_one();
            }
        }
    }
}

/// Beats into the members set every `every` (and at once when a member
/// joined or left) until `stopped`, keeping `membership` up to date.
pub async fn run_heartbeats(
    membership: Arc<Membership>,
    client: Client,
    layout: Layout,
    ttl: Duration,
    every: Duration,
    mut stopped: watch::Receiver<bool>,
) {
    let script = Script::from_lua(include_str!("lua/members.lua"));
    while !*stopped.borrow() {
        match beat(&script, &client, &layout, &membership.node_id, ttl, "beat").await {
            Ok(members) => membership.update(members),
            Err(error) => tracing::debug!(%error, "heartbeat failed; retrying"),
        }
        tokio::select! {
            _ = sleep(every) => {}
            _ = membership.beat_now.notified() => {}
            _ = stopped.changed() => {}
        }
    }
}

/// Leaves the members set, so that the others take this instance's shards
/// as soon as it lets go of them rather than a TTL later.
pub async fn leave(membership: &Membership, client: &Client, layout: &Layout, ttl: Duration) {
    let script = Script::from_lua(include_str!("lua/members.lua"));
    if let Err(error) = beat(&script, client, layout, &membership.node_id, ttl, "leave").await {
        tracing::warn!(%error, "could not leave the group's members; the others drop this instance after the lock TTL");
    }
}

async fn beat(
    script: &Script,
    client: &Client,
    layout: &Layout,
    node_id: &str,
    ttl: Duration,
    what: &str,
) -> Result<Vec<String>, String> {
    script
        .evalsha_with_reload(
            client,
            vec![layout.members()],
            vec![
                node_id.to_string(),
                ttl.as_millis().to_string(),
                what.to_string(),
                layout.members_channel(),
            ],
        )
        .await
        .map_err(|e| e.to_string())
}

/// Why the group's shard count keeps this instance from starting.
#[derive(Debug)]
pub struct WrongShardCount {
    pub stored: String,
    pub ours: usize,
}

impl std::fmt::Display for WrongShardCount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Redis holds data for --shards {}, and this instance runs with --shards {}: it would look for \
             queues in the wrong shards. Start it with --shards {} (or SSQ_SHARDS), or move the queues to a \
             group of the new size as docs/operations.md (\"Resizing a sharded group\") describes.",
            self.stored, self.ours, self.stored
        )
    }
}

/// Records `shards` as the group's shard count, or checks it against the
/// one recorded; retries every `retry_every` while Redis does not answer.
pub async fn check_shard_count(
    client: &Client,
    layout: &Layout,
    shards: usize,
    retry_every: Duration,
) -> Result<(), WrongShardCount> {
    let script = Script::from_lua(include_str!("lua/shard_count.lua"));
    loop {
        let answer: Result<String, _> = script
            .evalsha_with_reload(
                client,
                vec![layout.shard_count(), layout.queues(), layout.epoch()],
                vec![shards.to_string()],
            )
            .await;
        match answer {
            Ok(stored) if stored == shards.to_string() => return Ok(()),
            Ok(stored) => return Err(WrongShardCount { stored, ours: shards }),
            Err(error) => {
                tracing::debug!(%error, "cannot read the group's shard count yet; retrying");
                sleep(retry_every).await;
            }
        }
    }
}
