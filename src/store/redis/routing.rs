//! Which connections reach which keys.
//!
//! On one Redis (or one found through Sentinel) every key is behind the
//! same connections. On Redis Cluster each shard keeps its keys in one hash
//! slot, so on one primary: a shard talks to that primary over connections
//! made for it alone (one set per primary, shared by the shards it holds),
//! and follows its slot when the cluster moves it (a failover, a
//! resharding), asking `CLUSTER SLOTS` every half reconnect interval.
//!
//! fred's own cluster client would reach every node too, but it runs all of
//! a cluster's connections from one task, and while that task reconnects
//! to a dead node no command reaches any node: one primary down once made
//! every shard's renewals and commits time out, and leaders of shards on
//! healthy nodes stepped down. With a client per primary, a node's failure
//! costs only the shards it holds.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use fred::prelude::*;
use fred::types::cluster::ClusterRouting;
use fred::types::config::ServerConfig;
use tokio::sync::watch;

use super::{SetupError, Target};

/// The clients of one Redis process: commands, and with replica
/// acknowledgements a second one for commits (`WAIT` blocks its
/// connection).
pub struct Connections {
    /// The primary these reach; none on one Redis, where fred finds it.
    server: Option<Server>,
    commands: Client,
    commits: Client,
    /// How often `commands` connected again: a new connection may reach
    /// another Redis process (one restarted), whose scan cursors differ.
    reconnects: Arc<AtomicU64>,
}

impl Connections {
    fn new(
        config: Config,
        target: &Target,
        separate_commits: bool,
        server: Option<Server>,
    ) -> Result<Self, SetupError> {
        let commands = super::connections::client_with(config.clone(), target)?;
        let commits = match separate_commits {
            true => super::connections::client_with(config, target)?,
            false => commands.clone(),
        };
        Ok(Connections {
            server,
            commands,
            commits,
            reconnects: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Starts connecting, in the background, for ever; logs what keeps
    /// the clients from Redis once per distinct error.
    fn connect(&self) {
        let name = match &self.server {
            None => "commands".to_string(),
            Some(server) => format!("commands to {server}"),
        };
        super::log_connection_errors(&self.commands, name.clone());
        let reconnects = self.reconnects.clone();
        self.commands.on_reconnect(move |_| {
            reconnects.fetch_add(1, Ordering::AcqRel);
            async { Ok(()) }
        });
        self.commands.connect();
        if self.commits.id() != self.commands.id() {
            super::log_connection_errors(&self.commits, name.replacen("commands", "commits", 1));
            self.commits.connect();
        }
    }

    fn reaches(&self, server: &Server) -> bool {
        self.server
            .as_ref()
            .is_some_and(|mine| mine.host == server.host && mine.port == server.port)
    }
}

/// The connections that reach one set of keys (a shard's, or the group's
/// own): the same for ever on one Redis, the current primary of their slot
/// on Redis Cluster.
#[derive(Clone)]
pub struct Link(Arc<LinkState>);

struct LinkState {
    slot: u16,
    current: RwLock<Arc<Connections>>,
    /// How often the link moved to another primary.
    switches: AtomicU64,
}

impl Link {
    fn new(slot: u16, connections: Arc<Connections>) -> Link {
        Link(Arc::new(LinkState {
            slot,
            current: RwLock::new(connections),
            switches: AtomicU64::new(0),
        }))
    }

    fn current(&self) -> Arc<Connections> {
        self.0
            .current
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// The client for commands.
    pub fn commands(&self) -> Client {
        self.current().commands.clone()
    }

    /// The client for commits and other writes that wait for replicas.
    pub fn commits(&self) -> Client {
        self.current().commits.clone()
    }

    /// Changes whenever what this link reaches may be another Redis
    /// process than before: it moved to another primary, or its client
    /// connected again. A scan is only whole if this held still during it.
    pub fn epoch(&self) -> (u64, u64) {
        let current = self.current();
        (
            self.0.switches.load(Ordering::Acquire),
            current.reconnects.load(Ordering::Acquire),
        )
    }

    fn switch_to(&self, connections: Arc<Connections>) {
        *self
            .0
            .current
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = connections;
        self.0.switches.fetch_add(1, Ordering::AcqRel);
    }
}

/// Every connection an instance has to Redis, and the links through them.
pub enum Redis {
    One(Arc<Connections>),
    Cluster(Arc<Cluster>),
}

impl Redis {
    /// Builds the clients for `target`; nothing connects before
    /// [`Redis::start`]. Fails only for a URL or CA file that cannot be
    /// used.
    pub fn new(target: &Target, separate_commits: bool) -> Result<Redis, SetupError> {
        let config = super::connections::config(target)?;
        match &config.server {
            ServerConfig::Clustered { hosts, .. } => {
                let seeds = hosts.clone();
                let first = seeds.first().cloned().ok_or(SetupError::NoClusterNode)?;
                let cluster = Cluster {
                    template: config.clone(),
                    target: target.clone(),
                    separate_commits,
                    seeds,
                    nodes: Mutex::new(Vec::new()),
                    links: Mutex::new(Vec::new()),
                };
                cluster.open(&first)?;
                Ok(Redis::Cluster(Arc::new(cluster)))
            }
            _ => Ok(Redis::One(Arc::new(Connections::new(
                config,
                target,
                separate_commits,
                None,
            )?))),
        }
    }

    /// The link for the keys that share `key`'s hash slot.
    pub fn link(&self, key: &str) -> Link {
        let slot = fred::util::redis_keyslot(key.as_bytes());
        match self {
            Redis::One(connections) => Link::new(slot, connections.clone()),
            Redis::Cluster(cluster) => {
                let link = Link::new(slot, cluster.lock_nodes()[0].clone());
                cluster.lock_links().push(link.clone());
                link
            }
        }
    }

    /// Connects and, on Redis Cluster, follows the slots until `stopped`.
    pub fn start(&self, stopped: watch::Receiver<bool>) {
        match self {
            Redis::One(connections) => connections.connect(),
            Redis::Cluster(cluster) => {
                for node in cluster.nodes() {
                    node.connect();
                }
                tokio::spawn(cluster.clone().follow(stopped));
            }
        }
    }
}

/// The primaries of a Redis Cluster, as this instance knows them.
pub struct Cluster {
    /// The configuration of every node's clients but for the address.
    template: Config,
    target: Target,
    separate_commits: bool,
    /// The nodes the URL names, asked for the slots when no known node answers.
    seeds: Vec<Server>,
    /// One entry per node ever reached, the last to answer `CLUSTER SLOTS`
    /// first.
    nodes: Mutex<Vec<Arc<Connections>>>,
    links: Mutex<Vec<Link>>,
}

impl Cluster {
    fn lock_nodes(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Connections>>> {
        self.nodes.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn nodes(&self) -> Vec<Arc<Connections>> {
        self.lock_nodes().clone()
    }

    fn lock_links(&self) -> std::sync::MutexGuard<'_, Vec<Link>> {
        self.links.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The connections to `server`, made (not yet connected) if new; and
    /// whether they are.
    fn open(&self, server: &Server) -> Result<(Arc<Connections>, bool), SetupError> {
        let mut nodes = self.lock_nodes();
        if let Some(known) = nodes.iter().find(|node| node.reaches(server)) {
            return Ok((known.clone(), false));
        }
        let mut config = self.template.clone();
        config.server = ServerConfig::Centralized {
            server: server.clone(),
        };
        let connections = Arc::new(Connections::new(
            config,
            &self.target,
            self.separate_commits,
            Some(server.clone()),
        )?);
        nodes.push(connections.clone());
        Ok((connections, true))
    }

    /// The connections to `server`, connecting if new (once running).
    fn reach(&self, server: &Server) -> Result<Arc<Connections>, SetupError> {
        let (connections, new) = self.open(server)?;
        if new {
            connections.connect();
        }
        Ok(connections)
    }

    /// Asks for the slots every half reconnect interval and moves each link
    /// to its slot's primary, until `stopped`.
    async fn follow(self: Arc<Self>, mut stopped: watch::Receiver<bool>) {
        let every = (self.target.reconnect_every / 2).max(Duration::from_millis(10));
        loop {
            if let Some(routing) = self.slots().await {
                self.route(&routing);
            }
            tokio::select! {
                _ = tokio::time::sleep(every) => {}
                _ = stopped.changed() => return,
            }
        }
    }

    /// The slot map, from the first known node that answers; when none
    /// does, the next seed not yet known is opened, to be asked next time.
    async fn slots(&self) -> Option<ClusterRouting> {
        let known = self.nodes();
        for (index, node) in known.iter().enumerate() {
            let asked = tokio::time::timeout(
                self.target.command_timeout,
                node.commands.cluster_slots::<Value>(),
            )
            .await;
            let Ok(Ok(slots)) = asked else { continue };
            let host = node.server.as_ref().map(|s| s.host.clone()).unwrap_or_default();
            match ClusterRouting::from_cluster_slots(slots, host) {
                Ok(routing) if routing.len() > 0 => {
                    if index > 0 {
                        let mut nodes = self.lock_nodes();
                        if let Some(at) = nodes.iter().position(|n| Arc::ptr_eq(n, node)) {
                            let answered = nodes.remove(at);
                            nodes.insert(0, answered);
                        }
                    }
                    return Some(routing);
                }
                Ok(_) => continue,
                Err(error) => {
                    tracing::warn!(%error, "a Redis Cluster node's CLUSTER SLOTS answer cannot be read");
                    continue;
                }
            }
        }
        let unknown = self
            .seeds
            .iter()
            .find(|seed| !known.iter().any(|node| node.reaches(seed)))?;
        match self.reach(unknown) {
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, seed = %unknown, "cannot reach a Redis Cluster seed"),
        }
        None
    }

    /// Moves every link whose slot's primary changed.
    fn route(&self, routing: &ClusterRouting) {
        let links = self.lock_links().clone();
        for link in links {
            let Some(primary) = routing.get_server(link.0.slot) else {
                continue;
            };
            if link.current().reaches(primary) {
                continue;
            }
            match self.reach(primary) {
                Ok(connections) => {
                    tracing::info!(slot = link.0.slot, primary = %primary, "Redis Cluster keys are served by another primary now");
                    link.switch_to(connections);
                }
                Err(error) => {
                    tracing::warn!(%error, primary = %primary, "cannot reach a Redis Cluster primary")
                }
            }
        }
    }
}
