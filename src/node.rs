//! One ssq instance, built from its configuration and served on its
//! listeners until a shutdown signal: the one wiring that `main.rs`, the
//! integration tests and the benches all start.
//!
//! A node is the HTTP front (routers, request intake, credentials) and a
//! [`Shard`]: the parts that lead one set of queues. A shard is its service,
//! its leadership and, with Redis, its lock, its store (loader and
//! committer) and the elector and watchdog tasks that keep the lock. Today a
//! node has exactly one shard holding every queue; the shard is the unit
//! that sharding will start several times in one process.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use fred::clients::SubscriberClient;
use fred::prelude::{Client, ClientLike};
use tokio::net::TcpListener;
use tokio::sync::{Notify, mpsc, oneshot, watch};

use crate::activity::ActivityHistory;
use crate::api::Api;
use crate::clock::SystemClock;
use crate::config::Config;
use crate::election::{self, ElectionConfig, LockStore, RedisLock};
use crate::http::admin::AdminState;
use crate::http::{AppState, admin_router, router, sqs_router};
use crate::journal::Pending;
use crate::leader::{Leadership, Role};
use crate::listener::{ConnectionTimeouts, LimitedListener};
use crate::metrics::Metrics;
use crate::replicas::ReplicaAcks;
use crate::request_body::BodyBudget;
use crate::service::{QueueSpec, Service};
use crate::sigv4::Credentials;
use crate::store::committer::Committer;
use crate::store::loader::Loader;
use crate::store::{Layout, Store};

/// Why a node could not start; each says what to change.
#[derive(Debug)]
pub enum StartError {
    /// Settings that cannot work together, or files they name.
    Config(String),
    /// An address that cannot be listened on.
    Listen {
        address: SocketAddr,
        error: std::io::Error,
        admin: bool,
    },
}

impl StartError {
    /// The process exit code: 2 for configuration, 1 for the environment.
    pub fn exit_code(&self) -> i32 {
        match self {
            StartError::Config(_) => 2,
            StartError::Listen { .. } => 1,
        }
    }
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::Config(why) => f.write_str(why),
            StartError::Listen {
                address,
                error,
                admin: false,
            } => write!(
                f,
                "cannot listen on {address}: {error}; is another server on that port? pick another with --listen"
            ),
            StartError::Listen {
                address,
                error,
                admin: true,
            } => write!(f, "cannot listen on the admin address {address}: {error}"),
        }
    }
}

impl std::error::Error for StartError {}

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
            .map_err(|error| StartError::Listen {
                address: config.listen,
                error,
                admin: false,
            })?;
        let admin = match config.admin_listen {
            None => None,
            Some(address) => Some(
                TcpListener::bind(address)
                    .await
                    .map_err(|error| StartError::Listen {
                        address,
                        error,
                        admin: true,
                    })?,
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
    shard: Shard,
}

impl Node {
    /// Builds every part; nothing runs until [`Node::serve`].
    pub fn new(config: Config, queues: Vec<QueueSpec>) -> Result<Node, StartError> {
        let election = config.election();
        election
            .validate()
            .map_err(|why| StartError::Config(format!("invalid lock timings: {why}")))?;
        let acks = config.replica_acks().map_err(StartError::Config)?;
        let credentials = config.credentials.as_ref().map(read_credentials).transpose()?;
        let node_id = config.node_id();
        let metrics = Arc::new(Metrics::new(&node_id));
        let service = Service::new(Arc::new(SystemClock), metrics.clone())
            .with_limits(config.limits())
            .with_configured_queues(queues);
        let shard = match config.redis() {
            None => Shard::memory_only(service, &node_id, election.step_down_after, &metrics),
            Some(target) => {
                let client = crate::redis::client(&target).map_err(StartError::Config)?;
                let subscriber = crate::redis::subscriber(&target).map_err(StartError::Config)?;
                // WAIT blocks its connection: commits then get their own.
                let commit_client = match acks.required() {
                    true => crate::redis::client(&target).map_err(StartError::Config)?,
                    false => client.clone(),
                };
                Shard::in_redis(
                    service,
                    RedisShard {
                        client,
                        commit_client,
                        acks,
                        subscriber,
                        layout: Layout::new(&config.redis_prefix),
                        advertise_url: config.advertise_url(),
                        election,
                        commit_timeout: config.redis_timeout,
                    },
                    &node_id,
                    &metrics,
                )
            }
        };
        Ok(Node {
            config,
            node_id,
            metrics,
            credentials,
            shard,
        })
    }

    pub fn service(&self) -> &Arc<Service> {
        &self.shard.service
    }

    pub fn leadership(&self) -> &Arc<Leadership> {
        &self.shard.leadership
    }

    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// Runs the node on `listeners` until `shutdown` resolves, then refuses
    /// new queue calls, lets those in flight finish and hands the lock over.
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
            shard,
        } = self;
        let address = listeners.sqs.local_addr().unwrap_or(config.listen);
        let (stop_tasks, stopped) = watch::channel(false);
        let running = shard.start(stopped).await?;
        match &running.lock {
            None => {
                tracing::info!(mode = "memory-only", listen = %address, node_id = %node_id, "ssq started");
                tracing::warn!(
                    "memory-only mode: one instance, no failover; queues and messages are lost when it stops"
                );
            }
            Some(_) => tracing::info!(
                mode = "redis", listen = %address, node_id = %node_id, advertise = %config.advertise_url(),
                "ssq started as a passive; it serves once it holds the leader lock"
            ),
        }
        let leadership = running.leadership.clone();
        let activity = Arc::new(ActivityHistory::default());
        tokio::spawn(
            activity
                .clone()
                .run(running.service.clone(), stop_tasks.subscribe()),
        );
        let state = Arc::new(AppState {
            api: Api::new(running.service.clone()),
            leadership: leadership.clone(),
            metrics,
            account_id: config.account_id.clone(),
            region: config.region.clone(),
            regions: config.regions,
            public_url: config.public_url.clone(),
            credentials,
            request_timeout: config.request_timeout,
            body_budget: BodyBudget::new(config.max_body_buffer as usize),
            admin_apart: listeners.admin.is_some(),
            admin: AdminState::new(
                activity,
                match (&listeners.admin, &config.public_url) {
                    (Some(_), None) => Some(config.advertise_url()),
                    _ => None,
                },
            ),
        });
        let app = match listeners.admin {
            None => router(state),
            Some(admin) => {
                if let Ok(admin_address) = admin.local_addr() {
                    tracing::info!(admin = %admin_address, "admin page, /health, /ready, /status and /metrics on their own address");
                }
                let admin_app = admin_router(state.clone());
                tokio::spawn(async move { axum::serve(admin, admin_app).await });
                sqs_router(state)
            }
        };
        if config.idle_timeout <= Duration::from_secs(20) {
            tracing::warn!(
                idle_timeout = ?config.idle_timeout,
                "--idle-timeout is not above 20 s: long polls that wait longer will have their connection closed"
            );
        }
        let (token_tx, token_rx) = oneshot::channel();
        let shutdown = async move {
            shutdown.await;
            // Refuse new queue calls and end long polls; requests in flight finish.
            let _ = token_tx.send(leadership.begin_shutdown());
        };
        let timeouts = ConnectionTimeouts {
            idle: config.idle_timeout,
            header: config.header_timeout,
        };
        let listener = LimitedListener::new(listeners.sqs, config.max_connections, timeouts);
        crate::listener::serve(listener, app, shutdown).await;
        let _ = stop_tasks.send(true);
        if let Ok(Some(token)) = token_rx.await {
            running.release(&token).await;
        }
        tracing::info!("ssq stopped");
        Ok(())
    }
}

fn read_credentials(path: &std::path::PathBuf) -> Result<Credentials, StartError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        StartError::Config(format!(
            "cannot read the credentials file {}: {e}",
            path.display()
        ))
    })?;
    Credentials::parse(&text).map_err(|e| {
        StartError::Config(format!(
            "the credentials file {} is not valid: {e}",
            path.display()
        ))
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
    client: Client,
    /// The connection commits are written on (see `replicas.rs`).
    commit_client: Client,
    acks: ReplicaAcks,
    subscriber: SubscriberClient,
    layout: Layout,
    advertise_url: String,
    election: ElectionConfig,
    commit_timeout: Duration,
}

/// A shard whose tasks run.
struct RunningShard {
    service: Arc<Service>,
    leadership: Arc<Leadership>,
    lock: Option<Arc<RedisLock>>,
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
    fn in_redis(service: Service, redis: RedisShard, node_id: &str, metrics: &Arc<Metrics>) -> Shard {
        let (journal, journal_rx) = mpsc::unbounded_channel();
        let service = Arc::new(service.persisting_to(journal));
        let leadership = Arc::new(Leadership::new(
            node_id.to_string(),
            Role::Passive,
            redis.election.step_down_after,
            service.clone(),
            metrics.clone(),
        ));
        let store = Store {
            client: redis.client.clone(),
            layout: redis.layout.clone(),
            memory: service.clone(),
            leadership: leadership.clone(),
            metrics: metrics.clone(),
        };
        Shard {
            service,
            leadership,
            redis: Some((redis, store, journal_rx)),
        }
    }

    /// Starts what keeps the shard: in memory-only mode, it creates the
    /// configured queues (a queue that cannot be created stops the start);
    /// with Redis, the committer, the elector (which
    /// loads the state on each new term), the watchdog and the listener for
    /// release notices. The tasks stop when `stopped` turns true.
    async fn start(self, stopped: watch::Receiver<bool>) -> Result<RunningShard, StartError> {
        let Shard {
            service,
            leadership,
            redis,
        } = self;
        let Some((redis, store, journal_rx)) = redis else {
            match service.create_missing_queues().await {
                Ok(0) => {}
                Ok(created) => tracing::info!(created, "created the configured queues"),
                Err(why) => return Err(StartError::Config(why.to_string())),
            }
            return Ok(RunningShard {
                service,
                leadership,
                lock: None,
            });
        };
        crate::redis::log_connection_errors(&redis.client, "commands");
        crate::redis::log_connection_errors(&redis.subscriber, "release notices");
        redis.client.connect();
        redis.subscriber.connect();
        if redis.acks.required() {
            crate::redis::log_connection_errors(&redis.commit_client, "commits");
            redis.commit_client.connect();
        }
        let election = redis.election;
        let lock = Arc::new(
            RedisLock::new(
                redis.client.clone(),
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
        .confirmed_by_replicas(redis.acks, redis.commit_client);
        tokio::spawn(committer.run(journal_rx));
        let released = Arc::new(Notify::new());
        tokio::spawn(election::watch_releases(
            redis.subscriber,
            lock.release_channel.clone(),
            released.clone(),
            election.retry_every,
        ));
        tokio::spawn(election::run_elector(
            leadership.clone(),
            lock.clone(),
            election,
            store.metrics.clone(),
            Arc::new(move |term| loader.spawn_restore(term)),
            released,
            stopped.clone(),
        ));
        tokio::spawn(election::run_watchdog(
            leadership.clone(),
            lock.clone(),
            election,
            stopped,
        ));
        Ok(RunningShard {
            service,
            leadership,
            lock: Some(lock),
        })
    }
}

impl RunningShard {
    /// Gives the lock up at shutdown so that a passive takes over at once
    /// rather than after the TTL.
    async fn release(&self, token: &str) {
        let Some(lock) = &self.lock else { return };
        match tokio::time::timeout(Duration::from_secs(2), lock.release(token)).await {
            Ok(Ok(true)) => tracing::info!("released the leader lock"),
            Ok(Ok(false)) => tracing::warn!("the leader lock was no longer ours to release"),
            Ok(Err(error)) => {
                tracing::warn!(%error, "could not release the leader lock; it expires with its TTL")
            }
            Err(_) => tracing::warn!("releasing the leader lock timed out; it expires with its TTL"),
        }
    }
}
