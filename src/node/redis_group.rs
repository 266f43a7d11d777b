//! The shards of a Redis-backed node and what they share: the Redis
//! connections, the notices subscriber, the group's own keys and, in a
//! sharded group, the membership that tells each elector whether to try
//! for its shard, the shard-count check and the heartbeats.

use std::sync::Arc;
use std::time::Duration;

use fred::clients::SubscriberClient;
use fred::prelude::ClientLike;
use tokio::sync::{Notify, watch};

use crate::cluster::election::ElectionConfig;
use crate::cluster::group::{self, Membership, RedisRoster, Roster};
use crate::cluster::notices;
use crate::cluster::transfers::{RedisMailboxes, Transfers};
use crate::config::Config;
use crate::metrics::Metrics;
use crate::service::Service;
use crate::service::shards::{Catalog, Placement};
use crate::store::redis::Redis;
use crate::store::redis::catalog::RedisCatalog;
use crate::store::redis::replicas::ReplicaAcks;
use crate::store::redis::{Layout, ShardKeys};

use super::shard::{RedisShard, RunningShard, Shard};
use super::{Admission, StartError, admission_of};

/// What the shards of a Redis-backed node share: the connections, the
/// group's own keys and, in a sharded group, the membership.
pub(super) struct RedisGroup {
    pub(super) redis: Redis,
    pub(super) acks: ReplicaAcks,
    pub(super) subscriber: SubscriberClient,
    pub(super) layout: Layout,
    /// The group's own keys (the shard count, the members).
    pub(super) roster: Arc<dyn Roster>,
    pub(super) election: ElectionConfig,
    pub(super) membership: Option<Arc<Membership>>,
    /// One per shard: wakes its elector (a release notice, members changed).
    pub(super) wakes: Vec<Arc<Notify>>,
    /// One per shard, in a sharded group: wakes the task that takes in
    /// messages from other shards (`transfers.rs`).
    pub(super) inbox_wakes: Vec<Arc<Notify>>,
}

/// The shards of a Redis-backed node and what they share: one lock per
/// shard and, with more than one, the membership that tells each elector
/// whether to try for its shard.
pub(super) fn in_redis(
    config: &Config,
    target: &crate::store::redis::Target,
    acks: ReplicaAcks,
    services: Vec<Service>,
    node_id: &str,
    metrics: &Arc<Metrics>,
) -> Result<(Vec<Shard>, RedisGroup), StartError> {
    let election = config.election();
    let count = services.len();
    // WAIT blocks its connection: commits then get their own.
    let connections = Redis::new(target, acks.required())?;
    let subscriber = crate::store::redis::subscriber(target)?;
    let wakes: Vec<Arc<Notify>> = (0..count).map(|_| Arc::new(Notify::new())).collect();
    let membership = (count > 1).then(|| Arc::new(Membership::new(node_id, wakes.clone())));
    let claims = group::claims(membership.as_ref(), &wakes);
    let layout_of = |shard: usize| match count {
        1 => Layout::new(&config.redis_prefix),
        _ => Layout::shard(&config.redis_prefix, shard, count),
    };
    let shards: Vec<Shard> = (services.into_iter().zip(claims).enumerate())
        .map(|(index, (service, claim))| {
            let layout = layout_of(index);
            let redis = RedisShard {
                link: connections.link(&layout.lock()),
                acks,
                layout,
                advertise_url: config.advertise_url(),
                election,
                commit_timeout: config.redis_timeout,
                claim,
            };
            Shard::in_redis(index, service, redis, node_id, metrics)
        })
        .collect();
    if let Some(membership) = &membership {
        membership.count_shards_of(shards.iter().map(|s| s.leadership.clone()).collect());
    }
    let layout = Layout::new(&config.redis_prefix);
    let group = RedisGroup {
        roster: Arc::new(RedisRoster::new(
            connections.link(&layout.members()),
            layout.clone(),
        )),
        redis: connections,
        acks,
        subscriber,
        layout,
        election,
        membership,
        wakes,
        inbox_wakes: (0..count).map(|_| Arc::new(Notify::new())).collect(),
    };
    Ok((shards, group))
}

impl RedisGroup {
    /// Connects, listens for notices, checks the shard count and, once it
    /// matches, lets the electors run and (sharded) starts the heartbeats
    /// and what moves messages between shards. A sharded group's calls read
    /// the other shards' queues through the catalog it returns.
    pub(super) fn start(
        &self,
        running: &[RunningShard],
        placement: &Placement,
        admit: watch::Sender<Admission>,
        stopped: watch::Receiver<bool>,
    ) -> Option<Arc<dyn Catalog>> {
        self.redis.start(stopped.clone());
        crate::store::redis::log_connection_errors(&self.subscriber, "notices");
        self.subscriber.connect();
        let mut channels: Vec<(String, Arc<Notify>)> = running
            .iter()
            .zip(&self.wakes)
            .filter_map(|(shard, wake)| Some((shard.keys.as_ref()?.layout.release_channel(), wake.clone())))
            .collect();
        let mut catalog = None;
        if let Some(membership) = &self.membership {
            channels.push((self.layout.members_channel(), membership.beat_now.clone()));
            let shards: Vec<ShardKeys> = running.iter().filter_map(|r| r.keys.clone()).collect();
            for ((shard, keys), wake) in running.iter().zip(&shards).zip(&self.inbox_wakes) {
                channels.push((keys.layout.inbox_channel(), wake.clone()));
                let index = shard.leadership.shard();
                let transfers = Transfers {
                    mailboxes: Arc::new(RedisMailboxes::new(self.acks, shards.clone(), index)),
                    placement: placement.clone(),
                    shard: index,
                    service: shard.service.clone(),
                    leadership: shard.leadership.clone(),
                    inbox_arrived: wake.clone(),
                    poll_every: self.election.retry_every.max(Duration::from_secs(1)),
                };
                tokio::spawn(transfers.run(stopped.clone()));
            }
            catalog = Some(Arc::new(RedisCatalog {
                shards,
                placement: placement.clone(),
            }) as Arc<dyn Catalog>);
        }
        tokio::spawn(notices::watch_notices(
            self.subscriber.clone(),
            channels,
            self.election.retry_every,
        ));
        tokio::spawn(group::join(
            self.roster.clone(),
            self.membership.clone(),
            running.len(),
            self.election.ttl,
            self.election.retry_every,
            move |checked| {
                let _ = admit.send(admission_of(checked));
            },
            stopped,
        ));
        catalog
    }
}
