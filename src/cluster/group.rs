//! The group of instances sharing one Redis: the shard count its data is
//! for, and (with `--shards` above 1) its live members and the shares they
//! follow.
//!
//! The shard count is recorded in Redis by the first instance; one started
//! with another count refuses to start, since it would look for queues in
//! the wrong shards. Members beat every `--lock-retry` into a sorted set
//! whose scores are expiry times on Redis's clock, so a member that stops
//! beating drops out one lock TTL later, and a change of members is
//! announced on a channel so that the others recount at once. From the
//! number of members each instance knows its share (`shards::share`) and
//! tells each shard's elector whether to try for it or to hand it off (see
//! `election::Wish`); the shard locks keep at most one leader per shard
//! whatever the members believe.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use fred::prelude::*;
use fred::types::scripts::Script;
use tokio::sync::{Notify, watch};
use tokio::time::sleep;

use crate::cluster::election::Wish;
use crate::leader::Leadership;
use crate::store::redis::{Layout, Link};

/// This instance's view of the group.
pub struct Membership {
    node_id: String,
    shards: usize,
    /// Live members' node ids, in order; empty until the first heartbeat
    /// is answered.
    members: Mutex<Vec<String>>,
    /// Each shard's leadership here, to count the shards led.
    leaderships: OnceLock<Vec<Arc<Leadership>>>,
    /// One per shard: wakes its elector when the members change.
    wakes: Vec<Arc<Notify>>,
    /// Asks the heartbeat task to beat now (a member joined or left).
    pub beat_now: Arc<Notify>,
    /// `members.lua`: a heartbeat, or leaving.
    beat_script: Script,
}

impl Membership {
    pub fn new(node_id: &str, wakes: Vec<Arc<Notify>>) -> Membership {
        Membership {
            node_id: node_id.to_string(),
            shards: wakes.len(),
            members: Mutex::new(Vec::new()),
            leaderships: OnceLock::new(),
            wakes,
            beat_now: Arc::new(Notify::new()),
            beat_script: Script::from_lua(include_str!("lua/members.lua")),
        }
    }

    /// Gives the membership the shards' leaderships, once they exist.
    pub fn count_shards_of(&self, leaderships: Vec<Arc<Leadership>>) {
        let _ = self.leaderships.set(leaderships);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        self.members
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn members(&self) -> Vec<String> {
        self.lock().clone()
    }

    /// At most how many shards this instance should lead now.
    pub fn share(&self) -> usize {
        self.share_among(self.lock().len())
    }

    fn share_among(&self, members: usize) -> usize {
        crate::service::shards::share(self.shards, members)
    }

    /// What this instance should do with `shard`: lead it while it leads no
    /// more than its share (trying for free shards while below it), hand it
    /// off when it is part of the surplus. Until the first heartbeat is
    /// answered the share is unknown: the instance keeps what it leads and
    /// only takes shards left without a leader for a whole lease.
    pub fn wish(&self, shard: usize) -> Wish {
        let members = self.lock().len();
        let (known, share) = (members > 0, self.share_among(members));
        let led: Vec<usize> = self
            .leaderships
            .get()
            .map(|all| {
                all.iter()
                    .filter(|l| l.current_term().is_some())
                    .map(|l| l.shard())
                    .collect()
            })
            .unwrap_or_default();
        let wanted = match led.contains(&shard) {
            true => !known || !crate::service::shards::surplus(&self.node_id, &led, share).contains(&shard),
            false => known && led.len() < share,
        };
        match wanted {
            true => Wish::Lead,
            false => Wish::Yield,
        }
    }

    /// Takes the members Redis answered; wakes the electors if they changed.
    fn update(&self, mut members: Vec<String>) {
        // Redis answers in order of expiry, which each heartbeat changes.
        members.sort_unstable();
        members.dedup();
        {
            let mut known = self.lock();
            if *known == members {
                return;
            }
            tracing::info!(members = ?members, "the group's members changed: shards move to follow");
            *known = members;
        }
        for wake in &self.wakes {
            wake.notify_one();
        }
    }

    /// Runs `members.lua` (`what`: "beat" or "leave"); the live members.
    async fn beat(
        &self,
        client: &Client,
        layout: &Layout,
        ttl: Duration,
        what: &str,
    ) -> Result<Vec<String>, Error> {
        self.beat_script
            .evalsha_with_reload(
                client,
                vec![layout.members()],
                vec![
                    self.node_id.clone(),
                    ttl.as_millis().to_string(),
                    what.to_string(),
                    layout.members_channel(),
                ],
            )
            .await
    }
}

/// Beats into the members set every `every` (and at once when a member
/// joined or left) until `stopped`, keeping `membership` up to date.
pub async fn run_heartbeats(
    membership: Arc<Membership>,
    link: Link,
    layout: Layout,
    ttl: Duration,
    every: Duration,
    mut stopped: watch::Receiver<bool>,
) {
    while !*stopped.borrow() {
        match membership.beat(&link.commands(), &layout, ttl, "beat").await {
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
    if let Err(error) = membership.beat(client, layout, ttl, "leave").await {
        tracing::warn!(%error, "could not leave the group's members; the others drop this instance after the lock TTL");
    }
}

/// Why the group's shard count keeps this instance from starting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "Redis holds data for --shards {stored}, and this instance runs with --shards {ours}: it would look for \
     queues in the wrong shards. Start it with --shards {stored} (or SSQ_SHARDS), or move the queues to a \
     group of the new size as docs/operations.md (\"Resizing a sharded group\") describes."
)]
pub struct WrongShardCount {
    pub stored: String,
    pub ours: usize,
}

/// Records `shards` as the group's shard count, or checks it against the
/// one recorded; retries every `retry_every` while Redis does not answer.
pub async fn check_shard_count(
    link: &Link,
    layout: &Layout,
    shards: usize,
    retry_every: Duration,
) -> Result<(), WrongShardCount> {
    let script = Script::from_lua(include_str!("lua/shard_count.lua"));
    // Said once per distinct error: a Redis that answers but refuses (an
    // ACL user without a command the scripts run) otherwise keeps the
    // instance passive without a word above debug.
    let mut last_error = None;
    loop {
        let answer: Result<String, _> = script
            .evalsha_with_reload(
                &link.commands(),
                vec![layout.shard_count(), layout.queues(), layout.epoch()],
                vec![shards.to_string()],
            )
            .await;
        match answer {
            Ok(stored) if stored == shards.to_string() => return Ok(()),
            Ok(stored) => return Err(WrongShardCount { stored, ours: shards }),
            Err(error) => {
                let text = error.to_string();
                if last_error.as_ref() != Some(&text) {
                    tracing::warn!(error = %text, "cannot read the group's shard count: not leading until Redis answers; retrying");
                    last_error = Some(text);
                }
                sleep(retry_every).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leader::{LeaderInfo, Role};
    use crate::metrics::Metrics;
    use crate::queue::clock::SystemClock;
    use crate::service::Service;

    fn membership_of(node: &str, shards: usize) -> (Membership, Vec<Arc<Leadership>>) {
        let metrics = Arc::new(Metrics::new(node));
        let leaderships: Vec<Arc<Leadership>> = (0..shards)
            .map(|shard| {
                let service = Arc::new(Service::new(Arc::new(SystemClock), metrics.clone()));
                Arc::new(Leadership::new(
                    node.into(),
                    shard,
                    Role::Passive,
                    Duration::from_secs(3),
                    service,
                    metrics.clone(),
                ))
            })
            .collect();
        let membership = Membership::new(node, (0..shards).map(|_| Arc::new(Notify::new())).collect());
        membership.count_shards_of(leaderships.clone());
        (membership, leaderships)
    }

    fn lead(leadership: &Leadership, node: &str) {
        let info = LeaderInfo::parse(&format!("1|{node}|00|http://{node}")).unwrap();
        leadership.acquired(info, tokio::time::Instant::now()).unwrap();
    }

    fn wishes(membership: &Membership, shards: usize) -> Vec<Wish> {
        (0..shards).map(|shard| membership.wish(shard)).collect()
    }

    #[test]
    fn an_instance_tries_for_shards_up_to_its_share_and_hands_off_the_surplus() {
        let (membership, leaderships) = membership_of("a", 4);
        assert_eq!(
            wishes(&membership, 4),
            [Wish::Yield; 4],
            "no members known: take nothing yet"
        );

        membership.update(vec!["b".into(), "a".into()]);
        assert_eq!(membership.members(), ["a", "b"]);
        assert_eq!(membership.share(), 2);
        assert_eq!(
            wishes(&membership, 4),
            [Wish::Lead; 4],
            "below its share: try for any shard"
        );

        for leadership in &leaderships[..3] {
            lead(leadership, "a");
        }
        let now = wishes(&membership, 4);
        assert_eq!(now[3], Wish::Yield, "at or above its share: take no more");
        assert_eq!(
            now[..3].iter().filter(|w| **w == Wish::Yield).count(),
            1,
            "three led, share two: one to hand off: {now:?}"
        );

        membership.update(vec!["a".into()]);
        assert_eq!(wishes(&membership, 4), [Wish::Lead; 4], "alone: lead everything");
    }

    #[test]
    fn an_instance_that_knows_no_members_keeps_what_it_leads() {
        let (membership, leaderships) = membership_of("a", 2);
        lead(&leaderships[0], "a");
        assert_eq!(wishes(&membership, 2), [Wish::Lead, Wish::Yield]);
    }
}
