//! The shards of a Redis-backed node and what they share: the Redis
//! connections, the notices subscriber, the group's own keys and, in a
//! sharded group, the membership that tells each elector whether to try
//! for its shard, the shard-count check and the heartbeats.

use std::sync::Arc;
use std::time::Duration;

use fred::clients::SubscriberClient;
use fred::prelude::ClientLike;
use tokio::sync::{Notify, watch};

use crate::cluster::election::{Claim, ElectionConfig};
use crate::cluster::group::Membership;
use crate::cluster::notices;
use crate::cluster::transfers::Transfers;
use crate::config::Config;
use crate::metrics::Metrics;
use crate::service::Service;
use crate::service::shards::{Catalog, Placement};
use crate::store::redis::catalog::RedisCatalog;
use crate::store::redis::replicas::ReplicaAcks;
use crate::store::redis::{Layout, ShardKeys};
use crate::store::redis::{Link, Redis};

use super::shard::{RedisShard, RunningShard, Shard};
use super::{Admission, StartError};

/// What the shards of a Redis-backed node share: the connections, the
/// group's own keys and, in a sharded group, the membership.
pub(super) struct RedisGroup {
    pub(super) redis: Redis,
    pub(super) acks: ReplicaAcks,
    pub(super) subscriber: SubscriberClient,
    pub(super) layout: Layout,
    /// What reaches the group's own keys (the shard count, the members).
    pub(super) link: Link,
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
    let one_at_a_time = Arc::new(tokio::sync::Mutex::new(()));
    let layout_of = |shard: usize| match count {
        1 => Layout::new(&config.redis_prefix),
        _ => Layout::shard(&config.redis_prefix, shard, count),
    };
    let shards: Vec<Shard> = services
        .into_iter()
        .enumerate()
        .map(|(index, service)| {
            let claim = match &membership {
                None => Claim::always(wakes[index].clone()),
                Some(membership) => {
                    let membership = membership.clone();
                    Claim {
                        wake: wakes[index].clone(),
                        wish: Arc::new(move || membership.wish(index)),
                        one_at_a_time: one_at_a_time.clone(),
                        may_hand_off: true,
                    }
                }
            };
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
        link: connections.link(&layout.members()),
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
                let transfers = Transfers {
                    acks: self.acks,
                    placement: placement.clone(),
                    shards: shards.clone(),
                    shard: shard.leadership.shard(),
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
        let (link, layout, election) = (self.link.clone(), self.layout.clone(), self.election);
        let membership = self.membership.clone();
        let shards = running.len();
        tokio::spawn(async move {
            match crate::cluster::group::check_shard_count(&link, &layout, shards, election.retry_every).await
            {
                // Reported by `serve`, which returns it after shutting down.
                Err(wrong) => {
                    let _ = admit.send(Admission::Refused(wrong));
                }
                Ok(()) => {
                    let _ = admit.send(Admission::Cleared);
                    if let Some(membership) = membership {
                        crate::cluster::group::run_heartbeats(
                            membership,
                            link,
                            layout,
                            election.ttl,
                            election.retry_every,
                            stopped,
                        )
                        .await;
                    }
                }
            }
        });
        catalog
    }
}
