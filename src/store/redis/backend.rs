//! The Redis backend as the group starts it ([`Backend`]): the connections
//! every shard shares and the notices subscriber; per shard, its keys, its
//! lock, its loader and its committer; the group's own keys (the roster);
//! in a sharded group, the mailboxes and the catalog.

use std::sync::Arc;
use std::time::Duration;

use fred::clients::SubscriberClient;
use fred::prelude::ClientLike;
use tokio::sync::{Notify, watch};

use super::catalog::RedisCatalog;
use super::committer::Committer;
use super::loader::Loader;
use super::lock::RedisLock;
use super::mailboxes::RedisMailboxes;
use super::notices::watch_notices;
use super::replicas::ReplicaAcks;
use super::roster::RedisRoster;
use super::{Layout, Redis, RedisStore, SetupError, ShardKeys, Target};
use crate::cluster::backend::{Backend, Elected, Roster, ShardParts, Wakes};
use crate::cluster::election::ElectionConfig;
use crate::cluster::transfers::Mailboxes;
use crate::leader::Leadership;
use crate::service::shards::{Catalog, Placement};
use crate::store::reload;

/// How a node reaches Redis and lays its keys out.
pub struct Settings<'a> {
    pub target: &'a Target,
    pub acks: ReplicaAcks,
    /// `--redis-prefix`: the hash tag every key is under.
    pub prefix: &'a str,
    pub shards: usize,
    /// The URL this instance is reached at, written into its lock.
    pub advertise_url: String,
    pub election: ElectionConfig,
    /// How long a commit may take before it counts as failed.
    pub commit_timeout: Duration,
}

/// What the shards of a Redis-backed node share: the connections, the
/// notices subscriber, every shard's keys and the group's own.
pub struct RedisBackend {
    redis: Redis,
    subscriber: SubscriberClient,
    acks: ReplicaAcks,
    /// The group's own keys (the shard count, the members).
    layout: Layout,
    /// Each shard's keys, in shard order.
    shards: Vec<ShardKeys>,
    advertise_url: String,
    election: ElectionConfig,
    commit_timeout: Duration,
}

impl RedisBackend {
    /// The clients, built but not connected (`start` connects them).
    pub fn new(settings: Settings<'_>) -> Result<RedisBackend, SetupError> {
        // WAIT blocks its connection: commits then get their own.
        let redis = Redis::new(settings.target, settings.acks.required())?;
        let subscriber = super::subscriber(settings.target)?;
        let shards = (0..settings.shards)
            .map(|shard| {
                let layout = match settings.shards {
                    1 => Layout::new(settings.prefix),
                    count => Layout::shard(settings.prefix, shard, count),
                };
                ShardKeys {
                    link: redis.link(&layout.lock()),
                    layout,
                }
            })
            .collect();
        Ok(RedisBackend {
            subscriber,
            acks: settings.acks,
            layout: Layout::new(settings.prefix),
            shards,
            advertise_url: settings.advertise_url,
            election: settings.election,
            commit_timeout: settings.commit_timeout,
            redis,
        })
    }
}

impl Backend for RedisBackend {
    fn start_shard(&self, shard: ShardParts) -> Elected {
        let ShardKeys { layout, link } = self.shards[shard.index].clone();
        let store = RedisStore {
            link: link.clone(),
            layout: layout.clone(),
            memory: shard.memory,
            leadership: shard.leadership.clone(),
            metrics: shard.metrics,
            load_id: Default::default(),
        };
        let election = self.election;
        let lock = RedisLock::new(
            link,
            &layout,
            shard.leadership.node_id(),
            &self.advertise_url,
            election.ttl,
        )
        .confirmed_by_replicas(self.acks);
        let loader = Arc::new(Loader::new(store.clone(), election.retry_every));
        let committer = Committer::new(
            store,
            loader.clone(),
            self.commit_timeout,
            election.retry_every * 4,
        )
        .confirmed_by_replicas(self.acks);
        tokio::spawn(committer.run(shard.journal));
        let lock = Arc::new(lock);
        Elected {
            lock: lock.clone(),
            fence: lock,
            load_state: Arc::new(move |term| reload::spawn_restore(&loader, term, Duration::ZERO)),
        }
    }

    fn roster(&self) -> Arc<dyn Roster> {
        Arc::new(RedisRoster::new(
            self.redis.link(&self.layout.members()),
            self.layout.clone(),
        ))
    }

    fn start(&self, wakes: Wakes, stopped: watch::Receiver<bool>) {
        self.redis.start(stopped);
        super::log_connection_errors(&self.subscriber, "notices");
        self.subscriber.connect();
        let mut channels: Vec<(String, Arc<Notify>)> = (self.shards.iter())
            .zip(wakes.electors)
            .map(|(keys, wake)| (keys.layout.release_channel(), wake))
            .collect();
        if let Some(sharded) = wakes.sharded {
            channels.push((self.layout.members_channel(), sharded.members));
            for (keys, wake) in self.shards.iter().zip(sharded.inboxes) {
                channels.push((keys.layout.inbox_channel(), wake));
            }
        }
        tokio::spawn(watch_notices(
            self.subscriber.clone(),
            channels,
            self.election.retry_every,
        ));
    }

    fn mailboxes(&self, shard: usize, _: &Arc<Leadership>) -> Arc<dyn Mailboxes> {
        Arc::new(RedisMailboxes::new(self.acks, self.shards.clone(), shard))
    }

    fn catalog(&self, placement: &Placement) -> Arc<dyn Catalog> {
        Arc::new(RedisCatalog {
            shards: self.shards.clone(),
            placement: placement.clone(),
        })
    }
}
