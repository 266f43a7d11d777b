//! The group of instances sharing one store (Redis or Postgres): the
//! shard count its data is for, and (with `--shards` above 1) its live
//! members and the shares they follow.
//!
//! The shard count is recorded in the store by the first instance; one
//! started with another count refuses to start, since it would look for
//! queues in the wrong shards. Members beat every `--lock-retry` into the
//! store's roster, with expiry times on the store's clock, so a member that
//! stops beating drops out one lock TTL later, and a change of members is
//! announced so that the others recount at once. From the number of
//! members each instance knows its share (`shards::share`) and tells each
//! shard's elector whether to try for it or to hand it off (see
//! `election::Wish`); the shard locks keep at most one leader per shard
//! whatever the members believe.
//!
//! The roster is one file per store, as the lock is, in the store's
//! folder (`store/redis/roster.rs`, `store/postgres/roster.rs`).

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::sync::{Notify, watch};
use tokio::time::sleep;

use crate::cluster::backend::{Backend, Roster, ShardedWakes, Wakes};
use crate::cluster::election::{Claim, ElectionConfig, Wish};
use crate::cluster::transfers::Transfers;
use crate::leader::Leadership;
use crate::service::Service;
use crate::service::shards::{Catalog, Placement};

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

    /// Takes the members the store answered; wakes the electors if they changed.
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
}

/// Each shard's claim, woken by its `wakes`: alone, always lead it; in a
/// sharded group (`membership`), as the membership wishes, one acquisition
/// at a time.
fn claims(membership: Option<&Arc<Membership>>, wakes: &[Arc<Notify>]) -> Vec<Claim> {
    let one_at_a_time = Arc::new(tokio::sync::Mutex::new(()));
    (wakes.iter().enumerate())
        .map(|(index, wake)| match membership {
            None => Claim::always(wake.clone()),
            Some(membership) => {
                let membership = membership.clone();
                Claim {
                    wake: wake.clone(),
                    wish: Arc::new(move || membership.wish(index)),
                    one_at_a_time: one_at_a_time.clone(),
                    may_hand_off: true,
                }
            }
        })
        .collect()
}

/// The group a node on a shared store belongs to: the store's backend, its
/// roster and, with more than one shard, the membership, held once
/// whatever the store.
pub struct Group {
    pub backend: Arc<dyn Backend>,
    roster: Arc<dyn Roster>,
    election: ElectionConfig,
    membership: Option<Arc<Membership>>,
    /// One per shard: wakes its elector (a release notice, members changed).
    electors: Vec<Arc<Notify>>,
    /// One per shard, in a sharded group: wakes the task that takes in
    /// messages from other shards (`transfers.rs`).
    inboxes: Vec<Arc<Notify>>,
}

impl Group {
    /// A group of `count` shards on `backend`, and each shard's claim.
    pub fn new(
        backend: Arc<dyn Backend>,
        count: usize,
        node_id: &str,
        election: ElectionConfig,
    ) -> (Group, Vec<Claim>) {
        let electors: Vec<Arc<Notify>> = (0..count).map(|_| Arc::new(Notify::new())).collect();
        let membership = (count > 1).then(|| Arc::new(Membership::new(node_id, electors.clone())));
        let claims = claims(membership.as_ref(), &electors);
        let group = Group {
            roster: backend.roster(),
            backend,
            election,
            membership,
            electors,
            inboxes: (0..count).map(|_| Arc::new(Notify::new())).collect(),
        };
        (group, claims)
    }

    /// Gives the membership the shards' leaderships, once they exist.
    pub fn count_shards_of(&self, leaderships: Vec<Arc<Leadership>>) {
        if let Some(membership) = &self.membership {
            membership.count_shards_of(leaderships);
        }
    }

    /// Connects the store and listens for its notices, then checks the
    /// shard count and tells `admit` whether the electors may run; in a
    /// sharded group, starts the heartbeats and what moves messages between
    /// shards, and returns the catalog through which calls read the other
    /// shards' queues. `shards` are this node's, in shard order.
    pub fn start(
        &self,
        shards: &[(Arc<Service>, Arc<Leadership>)],
        placement: &Placement,
        admit: impl FnOnce(Result<(), WrongShardCount>) + Send + 'static,
        stopped: watch::Receiver<bool>,
    ) -> Option<Arc<dyn Catalog>> {
        let sharded = self.membership.as_ref().map(|membership| ShardedWakes {
            members: membership.beat_now.clone(),
            inboxes: self.inboxes.clone(),
        });
        let wakes = Wakes {
            electors: self.electors.clone(),
            sharded,
        };
        self.backend.start(wakes, stopped.clone());
        let mut catalog = None;
        if self.membership.is_some() {
            for ((service, leadership), wake) in shards.iter().zip(&self.inboxes) {
                let shard = leadership.shard();
                let transfers = Transfers {
                    mailboxes: self.backend.mailboxes(shard, leadership),
                    placement: placement.clone(),
                    shard,
                    service: service.clone(),
                    leadership: leadership.clone(),
                    inbox_arrived: wake.clone(),
                    poll_every: self.election.retry_every.max(Duration::from_secs(1)),
                };
                tokio::spawn(transfers.run(stopped.clone()));
            }
            catalog = Some(self.backend.catalog(placement));
        }
        tokio::spawn(join(
            self.roster.clone(),
            self.membership.clone(),
            shards.len(),
            self.election.ttl,
            self.election.retry_every,
            admit,
            stopped,
        ));
        catalog
    }

    pub fn membership(&self) -> Option<Arc<Membership>> {
        self.membership.clone()
    }

    /// Leaves the group's members, if it is sharded.
    pub async fn leave(&self) {
        if let Some(membership) = &self.membership {
            leave(membership, &*self.roster, self.election.ttl).await;
        }
    }
}

/// Beats into the roster every `every` (and at once when a member joined
/// or left) until `stopped`, keeping `membership` up to date.
async fn run_heartbeats(
    membership: Arc<Membership>,
    roster: Arc<dyn Roster>,
    ttl: Duration,
    every: Duration,
    mut stopped: watch::Receiver<bool>,
) {
    while !*stopped.borrow() {
        match roster.beat(&membership.node_id, ttl, false).await {
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

/// Leaves the roster, so that the others take this instance's shards as
/// soon as it lets go of them rather than a TTL later.
async fn leave(membership: &Membership, roster: &dyn Roster, ttl: Duration) {
    if let Err(error) = roster.beat(&membership.node_id, ttl, true).await {
        tracing::warn!(%error, "could not leave the group's members; the others drop this instance after the lock TTL");
    }
}

/// Why the group's shard count keeps this instance from starting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{store} holds data for --shards {stored}, and this instance runs with --shards {ours}: it would look for \
     queues in the wrong shards. Start it with --shards {stored} (or SSQ_SHARDS), or move the queues to a \
     group of the new size as docs/operations.md (\"Resizing a sharded group\") describes."
)]
pub struct WrongShardCount {
    pub store: &'static str,
    pub stored: usize,
    pub ours: usize,
}

/// Records `shards` as the group's shard count, or checks it against the
/// one recorded; retries every `retry_every` while the store does not answer.
pub async fn check_shard_count(
    roster: &dyn Roster,
    shards: usize,
    retry_every: Duration,
) -> Result<(), WrongShardCount> {
    // Said once per distinct error: a store that answers but refuses (an
    // ACL user without a command the scripts run, a role without a grant)
    // otherwise keeps the instance passive without a word above debug.
    let mut last_error = None;
    loop {
        match roster.shard_count(shards).await {
            Ok(stored) if stored == shards => return Ok(()),
            Ok(stored) => {
                return Err(WrongShardCount {
                    store: roster.store(),
                    stored,
                    ours: shards,
                });
            }
            Err(error) => {
                let text = error.to_string();
                if last_error.as_ref() != Some(&text) {
                    tracing::warn!(error = %text, "cannot read the group's shard count: not leading until the store answers; retrying");
                    last_error = Some(text);
                }
                sleep(retry_every).await;
            }
        }
    }
}

/// Checks the shard count, then clears (or refuses) this instance through
/// `admit` and, in a sharded group, beats until `stopped`.
async fn join(
    roster: Arc<dyn Roster>,
    membership: Option<Arc<Membership>>,
    shards: usize,
    ttl: Duration,
    retry_every: Duration,
    admit: impl FnOnce(Result<(), WrongShardCount>) + Send + 'static,
    stopped: watch::Receiver<bool>,
) {
    let checked = check_shard_count(&*roster, shards, retry_every).await;
    let cleared = checked.is_ok();
    admit(checked);
    if let (true, Some(membership)) = (cleared, membership) {
        run_heartbeats(membership, roster, ttl, retry_every, stopped).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leader::{LeaderInfo, Role};
    use crate::metrics::Metrics;
    use crate::queue::clock::SystemClock;

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
