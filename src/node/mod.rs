//! One ssq instance, built from its configuration and served on its
//! listeners until a shutdown signal: the one wiring, which `main.rs` and
//! the in-process tests and the restore bench (`tests/support/src/node.rs`) start.
//!
//! A node is the HTTP front (routers, request intake, credentials) and its
//! [`Shard`]s (`shard.rs`): the parts that lead one set of queues. A shard
//! is its service, its leadership and, with Redis, its lock, its store
//! (loader and committer) and the elector and watchdog tasks that keep the
//! lock. An unsharded node has one shard holding every queue; with
//! `--shards K` it has K, each elected on its own, and what they share
//! (the store's backend and the group: the connections, the notices, the
//! membership) tells each elector whether this instance should lead its
//! shard. Which backend a node runs on is chosen in one place,
//! [`backend_of`]: a new backend is a folder under `store/` and a line
//! there.

mod shard;

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};

use self::shard::{RunningShard, Shard, release};
use crate::cluster::Backend;
use crate::cluster::election::TimingError;
use crate::cluster::group::{Group, Membership, WrongShardCount};
use crate::config::{ClockKind, Config, LogFormat};
use crate::http::admin_api::activity::ActivityHistory;
use crate::http::admin_api::state::AdminState;
use crate::http::control_api::state::ControlApiState;
use crate::http::intake::audit_log::{AuditLog, AuditLogError};
use crate::http::intake::credentials_file::{CredentialsFile, CredentialsFileError};
use crate::http::intake::hosts::AllowedHosts;
use crate::http::intake::request_body::BodyBudget;
use crate::http::intake::throttle::Throttle;
use crate::http::listener::{ConnectionTimeouts, LimitedListener};
use crate::http::shards::Forwarding;
use crate::http::shards::forward::Forwarder;
use crate::http::sns_api::SnsApiState;
use crate::http::state::{AppState, Storage};
use crate::http::{ReadyLine, ShardFront, admin_router, router, sqs_router};
use crate::leader::Leadership;
use crate::metrics::Metrics;
use crate::queue::clock::{Clock, SystemClock, VirtualClock};
use crate::service::shards::Placement;
use crate::service::{ConfiguredQueueError, ImportError, QueueSpec, Seed, SeedError, SeedSource, Service};
use crate::store::disk::{DiskError, DiskStore};
use crate::store::etcd::{Etcd, LockUrl, LockedByEtcd};
use crate::store::mysql::MysqlBackend;
use crate::store::postgres::PostgresBackend;
use crate::store::redis::replicas::ReplicaAcks;
use crate::store::redis::{RedisBackend, Settings, SetupError};
use crate::store::snapshot::{self, Snapshot, SnapshotError};

/// Why a node could not start; each says what to change.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Timings(#[from] TimingError),
    #[error(transparent)]
    Redis(#[from] SetupError),
    #[error(transparent)]
    Disk(#[from] DiskError),
    #[error(transparent)]
    Credentials(#[from] CredentialsFileError),
    #[error(transparent)]
    AuditLog(#[from] AuditLogError),
    #[error(
        "--shards {0} needs Redis (--redis-url), Postgres (--postgres-url) or MySQL (--mysql-url): shards are spread over \
         the instances of a group sharing one store; memory-only mode is one instance"
    )]
    ShardsNeedASharedStore(usize),
    #[error(transparent)]
    Postgres(#[from] crate::store::postgres::PostgresError),
    #[error(transparent)]
    Mysql(#[from] crate::store::mysql::MysqlError),
    #[error(transparent)]
    LockUrl(#[from] crate::store::etcd::LockUrlError),
    #[error(transparent)]
    Etcd(#[from] crate::store::etcd::EtcdError),
    #[error(
        "--lock-url needs a store the group shares (--redis-url, --postgres-url or --mysql-url): etcd chooses the \
         leader, the store keeps the data and fences the leader's writes"
    )]
    LockUrlNeedsASharedStore,
    #[error(
        "--control-api with --credentials: the control API's requests are not signed, so anyone who reaches \
         ssq could reset it; use one or the other (the control API is for test instances)"
    )]
    ControlApiWithCredentials,
    #[error(
        "--control-api with --shards {0}: a reset would reach only the shards this instance leads; \
         run test instances with one shard"
    )]
    ControlApiWithShards(usize),
    #[error("--clock virtual needs --control-api: POST /_ssq/clock is what moves it")]
    VirtualClockNeedsControlApi,
    #[error(
        "--clock virtual with --redis-url, --postgres-url or --mysql-url: each instance of a group would keep a time \
         of its own; run test instances memory-only or with --data-dir"
    )]
    VirtualClockWithRedis,
    #[error(transparent)]
    WrongShardCount(#[from] WrongShardCount),
    #[error(transparent)]
    ConfiguredQueue(#[from] ConfiguredQueueError),
    #[error("the snapshot {} cannot be imported: {source}; correct it or start without --import", path.display())]
    Snapshot { path: PathBuf, source: SnapshotError },
    #[error(transparent)]
    Import(#[from] ImportError),
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
            StartError::Listen { .. }
            | StartError::ListenAdmin { .. }
            | StartError::Disk(_)
            | StartError::Import(ImportError::NotStored { .. }) => 1,
            _ => 2,
        }
    }
}

/// Reads the snapshot to import once at start, so that a file that
/// cannot be imported stops ssq here, naming the line. Without Redis the
/// one instance imports at once, and takes what this read; in a group,
/// each shard's service reads its own queues again when it leads and
/// imports (`service/import.rs`), rather than a passive holding them.
fn seed_from(
    path: &Path,
    config: &Config,
    placement: &Placement,
) -> Result<impl Fn(usize) -> SeedSource + use<>, StartError> {
    let file_path = path.to_path_buf();
    let (region, account) = (config.region.clone(), config.account_id.clone());
    let read = move || -> Result<Snapshot, SnapshotError> {
        let file = std::fs::File::open(&file_path).map_err(|error| SnapshotError {
            line: 0,
            problem: error.into(),
        })?;
        let defaults = snapshot::Defaults {
            home_region: &region,
            account_id: &account,
            now: crate::queue::clock::Clock::now_millis(&SystemClock),
        };
        snapshot::read(std::io::BufReader::new(file), &defaults)
    };
    let first = read().map_err(|source| StartError::Snapshot {
        path: path.to_path_buf(),
        source,
    })?;
    // Alone there is one shard, so one service takes these.
    let first = Arc::new(std::sync::Mutex::new((!config.in_group()).then_some(first)));
    let read = Arc::new(read);
    let placement = placement.clone();
    Ok(move |shard: usize| -> SeedSource {
        let (read, first, placement) = (read.clone(), first.clone(), placement.clone());
        Arc::new(move || {
            let kept = first
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .take();
            let snapshot = match kept {
                Some(snapshot) => snapshot,
                None => read().map_err(|error| Arc::new(error) as SeedError)?,
            };
            Ok(Seed {
                queues: snapshot
                    .queues
                    .into_iter()
                    .filter(|queue| placement.shard_of(&queue.name) == shard)
                    .collect(),
                // The first shard holds the topics.
                topics: match shard {
                    0 => snapshot.topics,
                    _ => Vec::new(),
                },
            })
        })
    })
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
    credentials: Option<Arc<CredentialsFile>>,
    audit: Option<Arc<AuditLog>>,
    placement: Placement,
    shards: Vec<Shard>,
    /// With Redis or Postgres: what the shards share.
    group: Option<Group>,
    /// `--clock virtual`: the clock the control API moves.
    virtual_clock: Option<Arc<VirtualClock>>,
}

impl Node {
    /// Builds every part; nothing runs until [`Node::serve`].
    pub fn new(config: Config, queues: Vec<QueueSpec>) -> Result<Node, StartError> {
        let election = config.election();
        election.validate()?;
        let acks = config.replica_acks()?;
        if config.control_api && config.credentials.is_some() {
            return Err(StartError::ControlApiWithCredentials);
        }
        if config.control_api && config.shards > 1 {
            return Err(StartError::ControlApiWithShards(config.shards.into()));
        }
        let virtual_clock = match (config.clock, config.control_api, config.in_group()) {
            (ClockKind::System, _, _) => None,
            (ClockKind::Virtual, false, _) => return Err(StartError::VirtualClockNeedsControlApi),
            (ClockKind::Virtual, true, true) => return Err(StartError::VirtualClockWithRedis),
            (ClockKind::Virtual, true, false) => Some(Arc::new(VirtualClock::starting_now())),
        };
        let clock: Arc<dyn Clock> = match &virtual_clock {
            Some(clock) => clock.clone(),
            None => Arc::new(SystemClock),
        };
        let node_id = config.node_id();
        let metrics = Arc::new(Metrics::new(&node_id));
        let credentials = match &config.credentials {
            Some(path) => Some(Arc::new(CredentialsFile::open(path, metrics.clone())?)),
            None => None,
        };
        let audit = match &config.audit_log {
            Some(path) => Some(Arc::new(AuditLog::open(path, metrics.clone())?)),
            None => None,
        };
        let count = usize::from(config.shards);
        let placement = Placement::new(count, &config.account_id, &config.region);
        let mut queues_of: Vec<Vec<QueueSpec>> = (0..count).map(|_| Vec::new()).collect();
        for queue in queues {
            queues_of[placement.shard_of(&queue.name)].push(queue);
        }
        let seed = config
            .import
            .as_ref()
            .map(|path| seed_from(path, &config, &placement))
            .transpose()?;
        let mut services = queues_of.into_iter().enumerate().map(|(shard, queues)| {
            let mut service = Service::new(clock.clone(), metrics.clone())
                .with_limits(config.limits())
                .with_configured_queues(queues);
            if config.credentials.is_some() {
                service = service.with_accounts(config.home());
            }
            if let Some(seed) = &seed {
                service = service.with_seed(seed(shard));
            }
            match count {
                1 => service,
                _ => service.in_shard(placement.clone(), shard),
            }
        });
        let (shards, group) = match backend_of(&config, acks, &placement)? {
            Some(backend) => {
                let (group, claims) = Group::new(backend.clone(), count, &node_id, election);
                let shards: Vec<Shard> = (services.zip(claims).enumerate())
                    .map(|(index, (service, claim))| {
                        Shard::in_group((index, claim), service, &backend, election, &node_id, &metrics)
                    })
                    .collect();
                group.count_shards_of(shards.iter().map(|s| s.leadership.clone()).collect());
                (shards, Some(group))
            }
            None if count > 1 => return Err(StartError::ShardsNeedASharedStore(count)),
            None => {
                // One shard: more need a shared store (refused above).
                let service = services.next().expect("one shard without a shared store");
                let shard = match &config.data_dir {
                    None => Shard::memory_only(service, &node_id, &metrics),
                    Some(dir) => Shard::on_disk(
                        service,
                        DiskStore::open(dir, config.data_sync)?,
                        &node_id,
                        &metrics,
                    ),
                };
                (vec![shard], None)
            }
        };
        if let Some(credentials) = &credentials {
            let services: Vec<Arc<Service>> = shards.iter().map(|shard| shard.service.clone()).collect();
            credentials.on_load(move |keys| {
                let max_bytes = keys.max_bytes_by_account();
                for service in &services {
                    service.set_account_limits(&max_bytes);
                }
            });
        }
        Ok(Node {
            config,
            node_id,
            metrics,
            credentials,
            audit,
            placement,
            shards,
            group,
            virtual_clock,
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
            audit,
            placement,
            shards,
            group,
            virtual_clock,
        } = self;
        let address = listeners.sqs.local_addr().unwrap_or(config.listen);
        let (stop_tasks, stopped) = watch::channel(false);
        if let Some(credentials) = &credentials {
            tokio::spawn(credentials.clone().watch(stopped.clone()));
        }
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
            Some(group) => {
                let shards: Vec<_> = (running.iter())
                    .map(|r| (r.service.clone(), r.leadership.clone()))
                    .collect();
                let admit = move |checked| {
                    let _ = admit.send(admission_of(checked));
                };
                group.start(&shards, &placement, admit, stopped.clone())
            }
        };
        log_started(&config, placement.count(), address, &node_id);
        let activity = Arc::new(ActivityHistory::default());
        tokio::spawn(activity.clone().run(
            running.iter().map(|r| r.service.clone()).collect(),
            stop_tasks.subscribe(),
        ));
        let admin_apart = listeners.admin.is_some();
        let fronts = running.iter().map(|r| r.front(catalog.as_ref())).collect();
        let membership = group.as_ref().and_then(Group::membership);
        crate::webhooks::start(
            crate::webhooks::Settings {
                destinations: config.sns_endpoints.clone(),
                home: config.home(),
            },
            running[0].service.clone(),
            stop_tasks.subscribe(),
        );
        let state = app_state(
            &config,
            &node_id,
            FrontParts {
                shards: fronts,
                placement,
                membership,
                metrics,
                credentials,
                audit,
                activity,
                admin_apart,
                virtual_clock,
            },
        );
        // The SNS signing key takes a moment to make: begin now, so that
        // the first Publish seldom waits for it.
        let warming = state.clone();
        tokio::spawn(async move {
            if let Err(error) = warming.sns.signing_key.prepare().await {
                tracing::error!(%error, "the SNS signing key could not be made");
            }
        });
        let ready_line = match config.log_format {
            LogFormat::Text => ReadyLine::Bare,
            LogFormat::Json => ReadyLine::Event,
        };
        tokio::spawn(crate::http::announce_ready(
            state.clone(),
            ready_line,
            stop_tasks.subscribe(),
        ));
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
        let leaderships = running.iter().map(|r| r.leadership.clone()).collect();
        let import_refused = import_refusal(&running, stop_tasks.subscribe());
        let (shutdown, tokens_rx) =
            shutting_down(shutdown, admission.clone(), import_refused.clone(), leaderships);
        serve_http(&config, listeners.sqs, app, admin, shutdown).await;
        let _ = stop_tasks.send(true);
        hand_over(group.as_ref(), &running, tokens_rx).await;
        if let Admission::Refused(wrong) = &*admission.borrow() {
            return Err(wrong.clone().into());
        }
        if let Some(refused) = import_refused.borrow().clone() {
            return Err(refused.into());
        }
        tracing::info!("ssq stopped");
        Ok(())
    }
}

/// The store a group of instances shares, as `config` names it (none:
/// memory-only or `--data-dir`). One line per backend.
fn backend_of(
    config: &Config,
    acks: ReplicaAcks,
    placement: &Placement,
) -> Result<Option<Arc<dyn Backend>>, StartError> {
    let store = store_of(config, acks, placement)?;
    let Some(url) = &config.lock_url else {
        return Ok(store);
    };
    let store = store.ok_or(StartError::LockUrlNeedsASharedStore)?;
    let election = config.election();
    let etcd = Etcd::new(&LockUrl::parse(url)?, &config.lock_tls(), election.call_timeout)?;
    let locked = LockedByEtcd::new(
        store,
        etcd,
        config.advertise_url(),
        election.ttl,
        election.retry_every,
    );
    Ok(Some(Arc::new(locked)))
}

/// The store of the group's data, as `config` names it.
fn store_of(
    config: &Config,
    acks: ReplicaAcks,
    placement: &Placement,
) -> Result<Option<Arc<dyn Backend>>, StartError> {
    let advertise_url = config.advertise_url();
    let election = config.election();
    if let Some(target) = config.redis() {
        return Ok(Some(Arc::new(RedisBackend::new(Settings {
            target: &target,
            acks,
            prefix: &config.redis_prefix,
            shards: placement.count(),
            advertise_url,
            election,
            commit_timeout: config.redis_timeout,
        })?)));
    }
    if let Some(target) = config.postgres() {
        let backend = PostgresBackend::new(target?, placement.clone(), advertise_url, election);
        return Ok(Some(Arc::new(backend)));
    }
    if let Some(target) = config.mysql() {
        let backend = MysqlBackend::new(target?, placement.clone(), advertise_url, election);
        return Ok(Some(Arc::new(backend)));
    }
    Ok(None)
}

/// Logs how the node started, and warns that memory-only keeps nothing.
fn log_started(config: &Config, shards: usize, address: SocketAddr, node_id: &str) {
    let advertise = config.advertise_url();
    let sql = match (&config.postgres_url, &config.mysql_url) {
        (Some(_), _) => Some("postgres"),
        (None, Some(_)) => Some("mysql"),
        (None, None) => None,
    };
    if let Some(mode) = sql {
        match shards {
            1 => tracing::info!(
                mode, listen = %address, node_id = %node_id, advertise = %advertise,
                "ssq started as a passive; it serves once it holds the leader lock"
            ),
            _ => tracing::info!(
                mode, shards, listen = %address, node_id = %node_id, advertise = %advertise,
                "ssq started in a sharded group; it leads the shards the group's map gives it and forwards the others"
            ),
        }
        return;
    }
    match (config.redis_url.is_some(), shards, &config.data_dir) {
        (false, _, Some(dir)) => tracing::info!(
            mode = "disk", listen = %address, node_id = %node_id, data_dir = %dir.display(), sync = ?config.data_sync,
            "ssq started; it serves once its state is loaded from disk"
        ),
        (false, _, None) => {
            tracing::info!(mode = "memory-only", listen = %address, node_id = %node_id, "ssq started");
            tracing::warn!(
                "memory-only mode: one instance, no failover; queues and messages are lost when it stops \
                 (--data-dir keeps them on disk)"
            );
        }
        (true, 1, _) => tracing::info!(
            mode = "redis", listen = %address, node_id = %node_id, advertise = %advertise,
            "ssq started as a passive; it serves once it holds the leader lock"
        ),
        (true, shards, _) => tracing::info!(
            mode = "redis", shards, listen = %address, node_id = %node_id, advertise = %advertise,
            "ssq started in a sharded group; it leads the shards the group's map gives it and forwards the others"
        ),
    }
}

/// What the HTTP front is built from besides the configuration.
struct FrontParts {
    shards: Vec<ShardFront>,
    placement: Placement,
    membership: Option<Arc<Membership>>,
    metrics: Arc<Metrics>,
    credentials: Option<Arc<CredentialsFile>>,
    audit: Option<Arc<AuditLog>>,
    activity: Arc<ActivityHistory>,
    /// The admin page and the operational endpoints on their own address.
    admin_apart: bool,
    virtual_clock: Option<Arc<VirtualClock>>,
}

/// What the HTTP front shares, from the configuration and the shards.
fn app_state(config: &Config, node_id: &str, parts: FrontParts) -> Arc<AppState> {
    let admin_apart = parts.admin_apart;
    Arc::new(AppState {
        node_id: node_id.to_string(),
        shards: parts.shards,
        placement: parts.placement,
        membership: parts.membership,
        metrics: parts.metrics,
        home: config.home(),
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
        credentials: parts.credentials,
        sign_ins: Default::default(),
        audit: parts.audit,
        throttle: Throttle::of_keys(),
        account_throttle: Throttle::of_accounts(),
        request_timeout: config.request_timeout,
        every_shard_led: Default::default(),
        body_budget: BodyBudget::new(config.max_body_buffer as usize),
        storage: match (
            &config.data_dir,
            &config.redis_url,
            &config.postgres_url,
            &config.mysql_url,
        ) {
            (_, Some(_), _, _) => Storage::Redis,
            (_, _, Some(_), _) => Storage::Postgres,
            (_, _, _, Some(_)) => Storage::Mysql,
            (Some(dir), None, None, None) => Storage::Disk { dir: dir.clone() },
            (None, None, None, None) => Storage::Memory,
        },
        lock_url: (config.lock_url.as_deref())
            .and_then(|url| LockUrl::parse(url).ok())
            .map(|url| url.redacted()),
        forwarding: Forwarding {
            forwarder: Forwarder::new(node_id),
            shard_wait: config.lock_retry * 2,
        },
        sns: SnsApiState {
            signing_key: Default::default(),
        },
        admin: AdminState::new(
            parts.activity,
            admin_apart,
            match (admin_apart, &config.public_url) {
                (true, None) => Some(config.advertise_url()),
                _ => None,
            },
        ),
        control: ControlApiState {
            enabled: config.control_api,
            faults: Default::default(),
            virtual_clock: parts.virtual_clock,
        },
    })
}

/// What ends serving: `shutdown`, or a refusal of the shard count. It then
/// refuses new queue calls and ends long polls (requests in flight finish),
/// and sends the tokens of the locks held then, to be released after.
fn shutting_down(
    shutdown: impl Future<Output = ()>,
    mut admission: watch::Receiver<Admission>,
    mut import_refused: watch::Receiver<Option<ImportError>>,
    leaderships: Vec<Arc<Leadership>>,
) -> (impl Future<Output = ()>, oneshot::Receiver<Vec<Option<String>>>) {
    let (tokens_tx, tokens_rx) = oneshot::channel();
    let refused = async move {
        // The checker is gone once it cleared the count: no refusal can come.
        if admission
            .wait_for(|a| matches!(a, Admission::Refused(_)))
            .await
            .is_err()
        {
            std::future::pending::<()>().await;
        }
    };
    let import_refused = async move {
        if import_refused.wait_for(Option::is_some).await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    let shutting_down = async move {
        tokio::select! {
            _ = shutdown => {}
            _ = refused => {}
            _ = import_refused => {}
        }
        let tokens = leaderships.iter().map(|l| l.begin_shutdown()).collect();
        let _ = tokens_tx.send(tokens);
    };
    (shutting_down, tokens_rx)
}

/// Set once a shard's service refuses the snapshot to import: the node
/// stops and exits with the cause rather than serve without it.
fn import_refusal(
    running: &[RunningShard],
    stopped: watch::Receiver<bool>,
) -> watch::Receiver<Option<ImportError>> {
    let (refused, refusal) = watch::channel(None);
    let refused = Arc::new(refused);
    for shard in running {
        let (service, refused, mut stopped) = (shard.service.clone(), refused.clone(), stopped.clone());
        tokio::spawn(async move {
            tokio::select! {
                error = service.import_failure() => {
                    tracing::error!(%error, "the snapshot cannot be imported; stopping");
                    refused.send_replace(Some(error));
                }
                _ = stopped.wait_for(|stopped| *stopped) => {}
            }
        });
    }
    refusal
}

/// Serves both addresses alike (connection cap, head and idle timeouts,
/// capped buffers) until `shutdown` has run.
async fn serve_http(
    config: &Config,
    sqs: TcpListener,
    app: axum::Router,
    admin: Option<(TcpListener, axum::Router)>,
    shutdown: impl Future<Output = ()>,
) {
    let timeouts = ConnectionTimeouts {
        idle: config.idle_timeout,
        header: config.header_timeout,
    };
    let (stop, stopping) = watch::channel(false);
    let shutdown = async move {
        shutdown.await;
        let _ = stop.send(true);
    };
    let stopped_serving = |mut stopping: watch::Receiver<bool>| async move {
        let _ = stopping.wait_for(|stop| *stop).await;
    };
    let max_connections = config.max_connections;
    let listener = LimitedListener::new(sqs, max_connections, timeouts);
    let sqs = crate::http::listener::serve(listener, app, stopped_serving(stopping.clone()));
    let admin = async move {
        if let Some((admin, admin_app)) = admin {
            let listener = LimitedListener::new(admin, max_connections, timeouts);
            crate::http::listener::serve(listener, admin_app, stopped_serving(stopping)).await;
        }
    };
    tokio::join!(sqs, admin, shutdown);
}

/// After serving: leaves the group, and gives up the locks this instance
/// held when shutdown began, so that passives need not wait for their TTL.
async fn hand_over(
    group: Option<&Group>,
    running: &[RunningShard],
    tokens: oneshot::Receiver<Vec<Option<String>>>,
) {
    if let Some(group) = group {
        group.leave().await;
    }
    if let Ok(tokens) = tokens.await {
        let mut releases = tokio::task::JoinSet::new();
        for (shard, token) in running.iter().zip(tokens) {
            if let (Some(lock), Some(token)) = (shard.lock.clone(), token) {
                releases.spawn(release(lock, token));
            }
        }
        releases.join_all().await;
    }
}

/// Whether this instance may act on the data in the group's store: only
/// once the group's shard count is known to match its own.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Admission {
    Checking,
    Cleared,
    /// The store holds data for another shard count.
    Refused(WrongShardCount),
}

/// The admission a shard-count check gives.
fn admission_of(checked: Result<(), WrongShardCount>) -> Admission {
    match checked {
        Ok(()) => Admission::Cleared,
        Err(wrong) => Admission::Refused(wrong),
    }
}

/// Waits until the shard count is checked; false if this instance may not
/// act (refused, or stopping first).
async fn admitted(admission: &mut watch::Receiver<Admission>) -> bool {
    matches!(
        admission.wait_for(|a| *a != Admission::Checking).await.as_deref(),
        Ok(Admission::Cleared)
    )
}
