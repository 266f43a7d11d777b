//! One shard of a node: a service and its leadership and what keeps its
//! state: nothing (memory-only), the disk (its committer, which loads the
//! state first), or a store shared by a group, Redis or Postgres (its
//! lock, loader and committer, and the elector and watchdog tasks that run
//! while the node serves).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};

use crate::api::Api;
use crate::cluster::election::{self, Claim, ElectionConfig, LoadState};
use crate::cluster::lock::{LockStore, PostgresLock, RedisLock};
use crate::cluster::watchdog;
use crate::http::ShardFront;
use crate::journal::Pending;
use crate::leader::{Leadership, Role};
use crate::metrics::Metrics;
use crate::service::Service;
use crate::service::shards::{Catalog, Placement};
use crate::store::disk::committer::{DiskCommitter, sync_every_second};
use crate::store::disk::{DiskStore, SyncPolicy};
use crate::store::load_id::LoadId;
use crate::store::postgres::{self, PostgresStore};
use crate::store::redis::Link;
use crate::store::redis::committer::Committer;
use crate::store::redis::loader::Loader;
use crate::store::redis::replicas::ReplicaAcks;
use crate::store::redis::{Layout, RedisStore, ShardKeys};
use crate::store::reload;

use super::{Admission, StartError, admitted};

/// The parts that lead one set of queues: a service and its leadership and
/// what keeps their state.
pub struct Shard {
    pub(super) service: Arc<Service>,
    pub(super) leadership: Arc<Leadership>,
    pub(super) backing: Backing,
}

/// What keeps a shard's state, and the service's writes waiting for it.
pub(super) enum Backing {
    Memory,
    Disk(Arc<DiskStore>, mpsc::UnboundedReceiver<Pending>),
    Redis(Box<RedisShard>, RedisStore, mpsc::UnboundedReceiver<Pending>),
    Postgres(Box<PostgresShard>, mpsc::UnboundedReceiver<Pending>),
}

/// What a Postgres-backed shard is made of.
pub(super) struct PostgresShard {
    pub(super) store: PostgresStore,
    pub(super) advertise_url: String,
    pub(super) election: ElectionConfig,
    /// Whether the group's map wants this instance to lead the shard.
    pub(super) claim: Claim,
}

/// What a Redis-backed shard is made of.
pub(super) struct RedisShard {
    pub(super) link: Link,
    pub(super) acks: ReplicaAcks,
    pub(super) layout: Layout,
    pub(super) advertise_url: String,
    pub(super) election: ElectionConfig,
    pub(super) commit_timeout: Duration,
    /// Whether the group's map wants this instance to lead the shard.
    pub(super) claim: Claim,
}

/// A shard whose tasks run.
pub(super) struct RunningShard {
    pub(super) service: Arc<Service>,
    pub(super) leadership: Arc<Leadership>,
    pub(super) lock: Option<Arc<dyn LockStore>>,
    pub(super) keys: Option<ShardKeys>,
}

impl RunningShard {
    /// The shard as the HTTP front sees it; in a sharded group its API
    /// finds the queues of the other shards through `catalog`.
    pub(super) fn front(&self, catalog: Option<&Arc<dyn Catalog>>) -> ShardFront {
        ShardFront {
            api: match catalog {
                None => Api::new(self.service.clone()),
                Some(catalog) => Api::sharded(self.service.clone(), catalog.clone()),
            },
            leadership: self.leadership.clone(),
            lock: self.lock.clone(),
        }
    }
}

impl Shard {
    /// No Redis: the only instance, leading from the start.
    pub(super) fn memory_only(service: Service, node_id: &str, metrics: &Arc<Metrics>) -> Shard {
        Shard::alone(
            Arc::new(service),
            Role::MemoryOnly,
            Backing::Memory,
            node_id,
            metrics,
        )
    }

    /// On local disk: the only instance, serving once its state is loaded.
    pub(super) fn on_disk(
        service: Service,
        store: DiskStore,
        node_id: &str,
        metrics: &Arc<Metrics>,
    ) -> Shard {
        let (journal, journal_rx) = mpsc::unbounded_channel();
        let service = Arc::new(service.persisting_to(journal));
        let backing = Backing::Disk(Arc::new(store), journal_rx);
        Shard::alone(service, Role::Standalone, backing, node_id, metrics)
    }

    /// The only instance, with no lease: nothing to step down from.
    fn alone(
        service: Arc<Service>,
        role: Role,
        backing: Backing,
        node_id: &str,
        metrics: &Arc<Metrics>,
    ) -> Shard {
        let leadership = Arc::new(Leadership::new(
            node_id.to_string(),
            0,
            role,
            Duration::ZERO,
            service.clone(),
            metrics.clone(),
        ));
        Shard {
            service,
            leadership,
            backing,
        }
    }

    /// Persisting to a store shared by a group, and passive until the
    /// elector takes the lock: the service, its journal and its leadership.
    fn passive(
        index: usize,
        service: Service,
        election: &ElectionConfig,
        node_id: &str,
        metrics: &Arc<Metrics>,
    ) -> (Arc<Service>, mpsc::UnboundedReceiver<Pending>, Arc<Leadership>) {
        let (journal, journal_rx) = mpsc::unbounded_channel();
        let service = Arc::new(service.persisting_to(journal));
        let leadership = Arc::new(Leadership::new(
            node_id.to_string(),
            index,
            Role::Passive,
            election.step_down_after,
            service.clone(),
            metrics.clone(),
        ));
        (service, journal_rx, leadership)
    }

    /// Persisting to Postgres, and passive until the elector takes the
    /// lock: shard `index` of `placement`, led as `claim` wishes.
    pub(super) fn in_postgres(
        (index, placement, claim): (usize, Placement, Claim),
        service: Service,
        target: postgres::Target,
        config: &crate::config::Config,
        node_id: &str,
        metrics: &Arc<Metrics>,
    ) -> Shard {
        let election = config.election();
        let (service, journal_rx, leadership) = Shard::passive(index, service, &election, node_id, metrics);
        let store = PostgresStore {
            target,
            shard: index as i32,
            placement,
            memory: service.clone(),
            leadership: leadership.clone(),
            metrics: metrics.clone(),
            load_id: Arc::new(LoadId::default()),
        };
        let shard = PostgresShard {
            store,
            advertise_url: config.advertise_url(),
            election,
            claim,
        };
        Shard {
            service,
            leadership,
            backing: Backing::Postgres(Box::new(shard), journal_rx),
        }
    }

    /// Persisting to Redis, and passive until the elector takes the lock.
    pub(super) fn in_redis(
        index: usize,
        service: Service,
        redis: RedisShard,
        node_id: &str,
        metrics: &Arc<Metrics>,
    ) -> Shard {
        let (service, journal_rx, leadership) =
            Shard::passive(index, service, &redis.election, node_id, metrics);
        let store = RedisStore {
            link: redis.link.clone(),
            layout: redis.layout.clone(),
            memory: service.clone(),
            leadership: leadership.clone(),
            metrics: metrics.clone(),
            load_id: Default::default(),
        };
        Shard {
            service,
            leadership,
            backing: Backing::Redis(Box::new(redis), store, journal_rx),
        }
    }

    /// Starts what keeps the shard: in memory-only mode, it creates the
    /// configured queues (a queue that cannot be created stops the start);
    /// on disk, the committer, which loads the state and then serves; with
    /// Redis, the committer, the elector (which loads the state on
    /// each new term, and waits for the group's shard count to be checked)
    /// and the watchdog. The tasks stop when `stopped` turns true.
    pub(super) async fn start(
        self,
        stopped: watch::Receiver<bool>,
        mut admission: watch::Receiver<Admission>,
    ) -> Result<RunningShard, StartError> {
        let Shard {
            service,
            leadership,
            backing,
        } = self;
        let alone = |service, leadership| RunningShard {
            service,
            leadership,
            lock: None,
            keys: None,
        };
        let elected = match backing {
            Backing::Memory => {
                match service.import_seed().await {
                    None => {}
                    Some(Ok(imported)) => tracing::info!(?imported, "imported the snapshot"),
                    Some(Err(why)) => return Err(why.into()),
                }
                match service.create_missing_queues().await {
                    Ok(0) => {}
                    Ok(created) => tracing::info!(created, "created the configured queues"),
                    Err(why) => return Err(why.into()),
                }
                service.prepared();
                return Ok(alone(service, leadership));
            }
            Backing::Disk(store, journal_rx) => {
                // Loaded (and checked) before ssq serves: a damaged file
                // stops it here, with the file named.
                let loading = store.clone();
                let first = tokio::task::spawn_blocking(move || loading.load_checked())
                    .await
                    .expect("a load does not panic")?;
                if store.sync_policy() == SyncPolicy::Everysec {
                    tokio::spawn(sync_every_second(store.clone()));
                }
                let committer = DiskCommitter {
                    store,
                    memory: service.clone(),
                    leadership: leadership.clone(),
                    metrics: service.metrics.clone(),
                };
                tokio::spawn(committer.run(first, journal_rx));
                return Ok(alone(service, leadership));
            }
            Backing::Redis(redis, store, journal_rx) => start_redis(*redis, store, journal_rx, &leadership),
            Backing::Postgres(shard, journal_rx) => start_postgres(*shard, journal_rx, &leadership),
        };
        let Elected {
            lock,
            load_state,
            claim,
            election,
            keys,
        } = elected;
        let elector = election::run_elector(
            leadership.clone(),
            lock.clone(),
            election,
            service.metrics.clone(),
            load_state,
            claim,
            stopped.clone(),
        );
        tokio::spawn(async move {
            if admitted(&mut admission).await {
                elector.await;
            }
        });
        tokio::spawn(watchdog::run_watchdog(
            leadership.clone(),
            lock.clone(),
            election,
            stopped,
        ));
        Ok(RunningShard {
            service,
            leadership,
            lock: Some(lock),
            keys,
        })
    }
}

/// What the elector and the watchdog of a shard in a group act with.
struct Elected {
    lock: Arc<dyn LockStore>,
    /// Loads the state when a term begins.
    load_state: LoadState,
    claim: Claim,
    election: ElectionConfig,
    keys: Option<ShardKeys>,
}

/// Redis's lock, and its committer started.
fn start_redis(
    redis: RedisShard,
    store: RedisStore,
    journal_rx: mpsc::UnboundedReceiver<Pending>,
    leadership: &Arc<Leadership>,
) -> Elected {
    let election = redis.election;
    let lock = RedisLock::new(
        redis.link.clone(),
        &redis.layout,
        leadership.node_id(),
        &redis.advertise_url,
        election.ttl,
    )
    .confirmed_by_replicas(redis.acks);
    let loader = Arc::new(Loader::new(store.clone(), election.retry_every));
    let committer = Committer::new(
        store.clone(),
        loader.clone(),
        redis.commit_timeout,
        election.retry_every * 4,
    )
    .confirmed_by_replicas(redis.acks);
    tokio::spawn(committer.run(journal_rx));
    Elected {
        lock: Arc::new(lock),
        load_state: Arc::new(move |term| reload::spawn_restore(&loader, term, Duration::ZERO)),
        claim: redis.claim,
        election,
        keys: Some(ShardKeys {
            layout: redis.layout,
            link: redis.link,
        }),
    }
}

/// Postgres's lock, and its committer started.
fn start_postgres(
    shard: PostgresShard,
    journal_rx: mpsc::UnboundedReceiver<Pending>,
    leadership: &Arc<Leadership>,
) -> Elected {
    let PostgresShard {
        store,
        advertise_url,
        election,
        claim,
    } = shard;
    let lock = PostgresLock::new(
        store.target.clone(),
        store.shard as usize,
        leadership.node_id(),
        &advertise_url,
        election.ttl,
        claim.wake.clone(),
    );
    let loader = Arc::new(postgres::loader::Loader::new(store.clone(), election.retry_every));
    let committer = postgres::committer::Committer::new(store, loader.clone(), election.retry_every * 4);
    tokio::spawn(committer.run(journal_rx));
    Elected {
        lock: Arc::new(lock),
        load_state: Arc::new(move |term| reload::spawn_restore(&loader, term, Duration::ZERO)),
        claim,
        election,
        keys: None,
    }
}

/// Gives a shard's lock up at shutdown so that another instance takes over
/// at once rather than after the TTL.
pub(super) async fn release(lock: Arc<dyn LockStore>, token: String) {
    match tokio::time::timeout(Duration::from_secs(2), lock.release(&token)).await {
        Ok(Ok(true)) => tracing::info!("released the leader lock"),
        Ok(Ok(false)) => tracing::warn!("the leader lock was no longer ours to release"),
        Ok(Err(error)) => {
            tracing::warn!(%error, "could not release the leader lock; it expires with its TTL")
        }
        Err(_) => tracing::warn!("releasing the leader lock timed out; it expires with its TTL"),
    }
}
