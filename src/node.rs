//! One ssq instance, built from its configuration and served on its
//! listeners until a shutdown signal: the one wiring that `main.rs`, the
//! integration tests and the benches all start.
//!
//! A node is the HTTP front (routers, request intake, credentials) and its
//! [`Shard`]s: the parts that lead one set of queues. A shard is its
//! service, its leadership and, with Redis, its lock, its store (loader and
//! committer) and the elector and watchdog tasks that keep the lock. An
//! unsharded node has one shard holding every queue; with `--shards K` it
//! has K, each elected on its own, and the group's membership (`group.rs`)
//! tells each elector whether this instance should lead its shard.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use fred::clients::SubscriberClient;
use fred::prelude::ClientLike;
use tokio::net::TcpListener;
use tokio::sync::{Notify, mpsc, oneshot, watch};

use crate::api::Api;
use crate::cluster::election::{self, Claim, ElectionConfig, TimingError};
use crate::cluster::group::Membership;
use crate::cluster::group::WrongShardCount;
use crate::cluster::lock::{LockStore, RedisLock};
use crate::cluster::transfers::Transfers;
use crate::cluster::{notices, watchdog};
use crate::config::Config;
use crate::http::activity::ActivityHistory;
use crate::http::admin::AdminState;
use crate::http::forward::Forwarder;
use crate::http::hosts::AllowedHosts;
use crate::http::listener::{ConnectionTimeouts, LimitedListener};
use crate::http::request_body::BodyBudget;
use crate::http::sigv4::{Credentials, CredentialsError};
use crate::http::{AppState, ShardFront, admin_router, router, sqs_router};
use crate::journal::Pending;
use crate::leader::{Leadership, Role};
use crate::metrics::Metrics;
use crate::queue::clock::SystemClock;
use crate::service::shards::{Catalog, Placement};
use crate::service::{ConfiguredQueueError, QueueSpec, Service};
use crate::store::catalog::RedisCatalog;
use crate::store::committer::Committer;
use crate::store::loader::Loader;
use crate::store::redis::{Link, Redis, SetupError};
use crate::store::replicas::ReplicaAcks;
use crate::store::{Layout, ShardKeys, Store};

/// Why a node could not start; each says what to change.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Timings(#[from] TimingError),
    #[error(transparent)]
    Redis(#[from] SetupError),
    #[error("cannot read the credentials file {}: {source}", path.display())]
    CredentialsUnreadable { path: PathBuf, source: std::io::Error },
    #[error("the credentials file {} is not valid: {source}", path.display())]
    BadCredentials { path: PathBuf, source: CredentialsError },
    #[error(
        "--shards {0} needs Redis (--redis-url): shards are spread over the instances of a group \
         sharing one Redis; memory-only mode is one instance"
    )]
    ShardsNeedRedis(usize),
    #[error(transparent)]
    WrongShardCount(#[from] WrongShardCount),
    #[error(transparent)]
    ConfiguredQueue(#[from] ConfiguredQueueError),
    /// An address that cannot be listened on.
    #[error(
        "cannot listen on {address}: {source}; is another server on that port? pick another with --listen"
    )]
    Listen {
        address: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot listen on the admin address {address}: {source}")]
    ListenAdmin {
        address: SocketAddr,
        source: std::io::Error,
    },
}

impl StartError {
    /// The process exit code: 1 for the environment, 2 for configuration.
    pub fn exit_code(&self) -> i32 {
        match self {
            StartError::Listen { .. } | StartError::ListenAdmin { .. } => 1,
            _ => 2,
        }
    }
}

/// The sockets a node serves on: SQS (and, unless apart, everything else),
/// and the operational endpoints when `--admin-listen` puts them apart.
pub struct Listeners {
    pub sqs: TcpListener,
    pub admin: Option<TcpListener>,
}

impl Listeners {
    pub async fn bind(config: &Config) -> Result<Listeners, StartError> {
        let sqs = TcpListener::bind(config.listen)
            .await
            .map_err(|source| StartError::Listen {
                address: config.listen,
                source,
            })?;
        let admin = match config.admin_listen {
            None => None,
            Some(address) => Some(
                TcpListener::bind(address)
                    .await
                    .map_err(|source| StartError::ListenAdmin { address, source })?,
            ),
        };
        Ok(Listeners { sqs, admin })
    }
}

/// One ssq instance.
pub struct Node {
    config: Config,
    node_id: String,
    metrics: Arc<Metrics>,
    credentials: Option<Credentials>,
    placement: Placement,
    shards: Vec<Shard>,
    /// With Redis: what the shards share.
    group: Option<RedisGroup>,
}

/// What the shards of a Redis-backed node share: the connections, the
/// group's own keys and, in a sharded group, the membership.
struct RedisGroup {
    redis: Redis,
    acks: ReplicaAcks,
    subscriber: SubscriberClient,
    layout: Layout,
    /// What reaches the group's own keys (the shard count, the members).
    link: Link,
    election: ElectionConfig,
    membership: Option<Arc<Membership>>,
    /// One per shard: wakes its elector (a release notice, members changed).
    wakes: Vec<Arc<Notify>>,
    /// One per shard, in a sharded group: wakes the task that takes in
    /// messages from other shards (`transfers.rs`).
    inbox_wakes: Vec<Arc<Notify>>,
}

impl Node {
    /// Builds every part; nothing runs until [`Node::serve`].
    pub fn new(config: Config, queues: Vec<QueueSpec>) -> Result<Node, StartError> {
        let election = config.election();
        election.validate()?;
        let acks = config.replica_acks()?;
        let credentials = config.credentials.as_ref().map(read_credentials).transpose()?;
        let node_id = config.node_id();
        let metrics = Arc::new(Metrics::new(&node_id));
        let count = usize::from(config.shards);
        let placement = Placement::new(count, &config.account_id, &config.region);
        let mut queues_of: Vec<Vec<QueueSpec>> = (0..count).map(|_| Vec::new()).collect();
        for queue in queues {
            queues_of[placement.shard_of(&queue.name)].push(queue);
        }
        let services = queues_of.into_iter().enumerate().map(|(shard, queues)| {
            let service = Service::new(Arc::new(SystemClock), metrics.clone())
                .with_limits(config.limits())
                .with_configured_queues(queues);
            match count {
                1 => service,
                _ => service.in_shard(placement.clone(), shard),
            }
        });
        let (shards, group) = match config.redis() {
            None if count > 1 => {
                return Err(StartError::ShardsNeedRedis(count));
            }
            None => {
                let shards = services
                    .map(|service| Shard::memory_only(service, &node_id, election.step_down_after, &metrics))
                    .collect();
                (shards, None)
            }
            Some(target) => {
                let (shards, group) =
                    in_redis(&config, &target, acks, services.collect(), &node_id, &metrics)?;
                (shards, Some(group))
            }
        };
        Ok(Node {
            config,
            node_id,
            metrics,
            credentials,
            placement,
            shards,
            group,
        })
    }

    /// The first shard's service: the only one unless `--shards`.
    pub fn service(&self) -> &Arc<Service> {
        &self.shards[0].service
    }

    /// The first shard's leadership: the only one unless `--shards`.
    pub fn leadership(&self) -> &Arc<Leadership> {
        &self.shards[0].leadership
    }

    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// Runs the node on `listeners` until `shutdown` resolves, then refuses
    /// new queue calls, lets those in flight finish and hands the locks
    /// over. Returns an error, after shutting down, if Redis holds data for
    /// another shard count.
    pub async fn serve(
        self,
        listeners: Listeners,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), StartError> {
        let Node {
            config,
            node_id,
            metrics,
            credentials,
            placement,
            shards,
            group,
        } = self;
        let address = listeners.sqs.local_addr().unwrap_or(config.listen);
        let (stop_tasks, stopped) = watch::channel(false);
        let (admit, admission) = watch::channel(match group {
            None => Admission::Cleared,
            Some(_) => Admission::Checking,
        });
        let mut running = Vec::with_capacity(shards.len());
        for shard in shards {
            running.push(shard.start(stopped.clone(), admission.clone()).await?);
        }
        let catalog = match &group {
            None => None,
            Some(group) => group.start(&running, &placement, admit, stopped.clone()),
        };
        match (&group, placement.count()) {
            (None, _) => {
                tracing::info!(mode = "memory-only", listen = %address, node_id = %node_id, "ssq started");
                tracing::warn!(
                    "memory-only mode: one instance, no failover; queues and messages are lost when it stops"
                );
            }
            (Some(_), 1) => tracing::info!(
                mode = "redis", listen = %address, node_id = %node_id, advertise = %config.advertise_url(),
                "ssq started as a passive; it serves once it holds the leader lock"
            ),
            (Some(_), shards) => tracing::info!(
                mode = "redis", shards, listen = %address, node_id = %node_id, advertise = %config.advertise_url(),
                "ssq started in a sharded group; it leads the shards the group's map gives it and forwards the others"
            ),
        }
        let activity = Arc::new(ActivityHistory::default());
        tokio::spawn(activity.clone().run(
            running.iter().map(|r| r.service.clone()).collect(),
            stop_tasks.subscribe(),
        ));
        let fronts = running
            .iter()
            .map(|r| ShardFront {
                api: match &catalog {
                    None => Api::new(r.service.clone()),
                    Some(catalog) => Api::sharded(r.service.clone(), catalog.clone()),
                },
                leadership: r.leadership.clone(),
                lock: r.lock.clone(),
            })
            .collect();
        let state = Arc::new(AppState {
            node_id: node_id.clone(),
            shards: fronts,
            placement,
            membership: group.as_ref().and_then(|g| g.membership.clone()),
            forwarder: Forwarder::new(&node_id),
            metrics,
            account_id: config.account_id.clone(),
            region: config.region.clone(),
            regions: config.regions,
            public_url: config.public_url.clone(),
            allowed_hosts: AllowedHosts::new(
                &config.allowed_hosts,
                [
                    config.public_url.as_deref(),
                    Some(config.advertise_url().as_str()),
                ]
                .into_iter()
                .flatten(),
            ),
            credentials,
            request_timeout: config.request_timeout,
            shard_wait: config.lock_retry * 2,
            every_shard_led: Default::default(),
            body_budget: BodyBudget::new(config.max_body_buffer as usize),
            heavy: Default::default(),
            admin_apart: listeners.admin.is_some(),
            admin: AdminState::new(
                activity,
                match (&listeners.admin, &config.public_url) {
                    (Some(_), None) => Some(config.advertise_url()),
                    _ => None,
                },
            ),
        });
        let (app, admin) = match listeners.admin {
            None => (router(state), None),
            Some(admin) => {
                if let Ok(admin_address) = admin.local_addr() {
                    tracing::info!(admin = %admin_address, "admin page, /health, /ready, /status and /metrics on their own address");
                }
                (sqs_router(state.clone()), Some((admin, admin_router(state))))
            }
        };
        if config.idle_timeout <= Duration::from_secs(20) {
            tracing::warn!(
                idle_timeout = ?config.idle_timeout,
                "--idle-timeout is not above 20 s: long polls that wait longer will have their connection closed"
            );
        }
        let (tokens_tx, tokens_rx) = oneshot::channel();
        let leaderships: Vec<Arc<Leadership>> = running.iter().map(|r| r.leadership.clone()).collect();
        let mut refusal = admission.clone();
        let refused = async move {
            // The checker is gone once it cleared the count: no refusal can come.
            if refusal
                .wait_for(|a| matches!(a, Admission::Refused(_)))
                .await
                .is_err()
            {
                std::future::pending::<()>().await;
            }
        };
        let shutdown = async move {
            tokio::select! {
                _ = shutdown => {}
                _ = refused => {}
            }
            // Refuse new queue calls and end long polls; requests in flight finish.
            let tokens: Vec<Option<String>> = leaderships.iter().map(|l| l.begin_shutdown()).collect();
            let _ = tokens_tx.send(tokens);
        };
        let timeouts = ConnectionTimeouts {
            idle: config.idle_timeout,
            header: config.header_timeout,
        };
        // Both addresses are served alike (connection cap, head and idle
        // timeouts, capped buffers) and both stop on the one shutdown.
        let (stop, stopping) = watch::channel(false);
        let shutdown = async move {
            shutdown.await;
            let _ = stop.send(true);
        };
        let stopped_serving = |mut stopping: watch::Receiver<bool>| async move {
            let _ = stopping.wait_for(|stop| *stop).await;
        };
        let max_connections = config.max_connections;
        let listener = LimitedListener::new(listeners.sqs, max_connections, timeouts);
        let sqs = crate::http::listener::serve(listener, app, stopped_serving(stopping.clone()));
        let admin = async move {
            if let Some((admin, admin_app)) = admin {
                let listener = LimitedListener::new(admin, max_connections, timeouts);
                crate::http::listener::serve(listener, admin_app, stopped_serving(stopping)).await;
            }
        };
        tokio::join!(sqs, admin, shutdown);
        let _ = stop_tasks.send(true);
        if let Some(group) = &group
            && let Some(membership) = &group.membership
        {
            crate::cluster::group::leave(
                membership,
                &group.link.commands(),
                &group.layout,
                group.election.ttl,
            )
            .await;
        }
        if let Ok(tokens) = tokens_rx.await {
            let mut releases = tokio::task::JoinSet::new();
            for (shard, token) in running.iter().zip(tokens) {
                if let (Some(lock), Some(token)) = (shard.lock.clone(), token) {
                    releases.spawn(release(lock, token));
                }
            }
            releases.join_all().await;
        }
        if let Admission::Refused(wrong) = &*admission.borrow() {
            return Err(wrong.clone().into());
        }
        tracing::info!("ssq stopped");
        Ok(())
    }
}

/// Whether this instance may act on the data in Redis: only once the
/// group's shard count is known to match its own.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Admission {
    Checking,
    Cleared,
    /// Redis holds data for another shard count.
    Refused(WrongShardCount),
}

/// Waits until the shard count is checked; false if this instance may not
/// act (refused, or stopping first).
async fn admitted(admission: &mut watch::Receiver<Admission>) -> bool {
    matches!(
        admission.wait_for(|a| *a != Admission::Checking).await.as_deref(),
        Ok(Admission::Cleared)
    )
}

/// The shards of a Redis-backed node and what they share: one lock per
/// shard and, with more than one, the membership that tells each elector
/// whether to try for its shard.
fn in_redis(
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
    fn start(
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
            .filter_map(|(shard, wake)| Some((shard.lock.as_ref()?.release_channel.clone(), wake.clone())))
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

fn read_credentials(path: &std::path::PathBuf) -> Result<Credentials, StartError> {
    let text = std::fs::read_to_string(path).map_err(|source| StartError::CredentialsUnreadable {
        path: path.clone(),
        source,
    })?;
    Credentials::parse(&text).map_err(|source| StartError::BadCredentials {
        path: path.clone(),
        source,
    })
}

/// The parts that lead one set of queues: a service and its leadership and,
/// with Redis, what keeps them in Redis and elects their leader.
pub struct Shard {
    service: Arc<Service>,
    leadership: Arc<Leadership>,
    redis: Option<(RedisShard, Store, mpsc::UnboundedReceiver<Pending>)>,
}

/// What a Redis-backed shard is made of.
struct RedisShard {
    link: Link,
    acks: ReplicaAcks,
    layout: Layout,
    advertise_url: String,
    election: ElectionConfig,
    commit_timeout: Duration,
    /// Whether the group's map wants this instance to lead the shard.
    claim: Claim,
}

/// A shard whose tasks run.
struct RunningShard {
    service: Arc<Service>,
    leadership: Arc<Leadership>,
    lock: Option<Arc<RedisLock>>,
    keys: Option<ShardKeys>,
}

impl Shard {
    /// No Redis: the only instance, leading from the start.
    fn memory_only(
        service: Service,
        node_id: &str,
        step_down_after: Duration,
        metrics: &Arc<Metrics>,
    ) -> Shard {
        let service = Arc::new(service);
        let leadership = Arc::new(Leadership::new(
            node_id.to_string(),
            0,
            Role::MemoryOnly,
            step_down_after,
            service.clone(),
            metrics.clone(),
        ));
        Shard {
            service,
            leadership,
            redis: None,
        }
    }

    /// Persisting to Redis, and passive until the elector takes the lock.
    fn in_redis(
        index: usize,
        service: Service,
        redis: RedisShard,
        node_id: &str,
        metrics: &Arc<Metrics>,
    ) -> Shard {
        let (journal, journal_rx) = mpsc::unbounded_channel();
        let service = Arc::new(service.persisting_to(journal));
        let leadership = Arc::new(Leadership::new(
            node_id.to_string(),
            index,
            Role::Passive,
            redis.election.step_down_after,
            service.clone(),
            metrics.clone(),
        ));
        let store = Store {
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
            redis: Some((redis, store, journal_rx)),
        }
    }

    /// Starts what keeps the shard: in memory-only mode, it creates the
    /// configured queues (a queue that cannot be created stops the start);
    /// with Redis, the committer, the elector (which loads the state on
    /// each new term, and waits for the group's shard count to be checked)
    /// and the watchdog. The tasks stop when `stopped` turns true.
    async fn start(
        self,
        stopped: watch::Receiver<bool>,
        mut admission: watch::Receiver<Admission>,
    ) -> Result<RunningShard, StartError> {
        let Shard {
            service,
            leadership,
            redis,
        } = self;
        let Some((redis, store, journal_rx)) = redis else {
            match service.create_missing_queues().await {
                Ok(0) => {}
                Ok(created) => tracing::info!(created, "created the configured queues"),
                Err(why) => return Err(why.into()),
            }
            return Ok(RunningShard {
                service,
                leadership,
                lock: None,
                keys: None,
            });
        };
        let election = redis.election;
        let lock = Arc::new(
            RedisLock::new(
                redis.link.clone(),
                &redis.layout,
                leadership.node_id(),
                &redis.advertise_url,
                election.ttl,
            )
            .confirmed_by_replicas(redis.acks),
        );
        let loader = Arc::new(Loader::new(store.clone(), election.retry_every));
        let committer = Committer::new(
            store.clone(),
            loader.clone(),
            redis.commit_timeout,
            election.retry_every * 4,
        )
        .confirmed_by_replicas(redis.acks);
        tokio::spawn(committer.run(journal_rx));
        let elector = election::run_elector(
            leadership.clone(),
            lock.clone(),
            election,
            store.metrics.clone(),
            Arc::new(move |term| loader.spawn_restore(term)),
            redis.claim,
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
            keys: Some(ShardKeys {
                layout: redis.layout,
                link: redis.link,
            }),
        })
    }
}

/// Gives a shard's lock up at shutdown so that another instance takes over
/// at once rather than after the TTL.
async fn release(lock: Arc<RedisLock>, token: String) {
    match tokio::time::timeout(Duration::from_secs(2), lock.release(&token)).await {
        Ok(Ok(true)) => tracing::info!("released the leader lock"),
        Ok(Ok(false)) => tracing::warn!("the leader lock was no longer ours to release"),
        Ok(Err(error)) => {
            tracing::warn!(%error, "could not release the leader lock; it expires with its TTL")
        }
        Err(_) => tracing::warn!("releasing the leader lock timed out; it expires with its TTL"),
    }
}
