//! What a store shared by a group of instances gives the group: the one
//! seam a backend (Redis, Postgres) implements, in its own folder under
//! `store/`, for [`crate::cluster::group::Group`] and the node to start it
//! without naming it.
//!
//! A backend is, per shard, a lock and a committer that fences each write
//! with the lock's epoch, and a loader that reads the shard's state when a
//! term begins; for the group, a roster and the notices that wake the
//! tasks at once; in a sharded group, each shard's mailboxes and a catalog
//! of every shard's queues.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, mpsc, watch};

use crate::cluster::StoreError;
use crate::cluster::election::LoadState;
use crate::cluster::lock::{Fence, LockStore};
use crate::cluster::transfers::Mailboxes;
use crate::journal::{Memory, Pending};
use crate::leader::Leadership;
use crate::metrics::Metrics;
use crate::service::shards::{Catalog, Placement};

/// One shard as its backend keeps it.
pub struct ShardParts {
    pub index: usize,
    /// The shard's service: what its loader fills and its committer keeps
    /// in step with the store.
    pub memory: Arc<dyn Memory>,
    /// Whose token fences the shard's writes.
    pub leadership: Arc<Leadership>,
    pub metrics: Arc<Metrics>,
    /// Wakes the shard's elector: a backend whose lock hears of a release
    /// itself (Postgres's session) rings it.
    pub wake: Arc<Notify>,
    /// The writes the service hands over, for the committer.
    pub journal: mpsc::UnboundedReceiver<Pending>,
}

/// A started shard: the lock its elector and watchdog act through, the
/// store's fence for a lock kept elsewhere (`--lock-url`), and how its
/// state is loaded when a term begins.
pub struct Elected {
    pub lock: Arc<dyn LockStore>,
    pub fence: Arc<dyn Fence>,
    pub load_state: LoadState,
}

/// Who the store's notices wake at once rather than at their next poll.
#[derive(Clone)]
pub struct Wakes {
    /// One per shard: its elector, when its leader lets go of the lock.
    pub electors: Vec<Arc<Notify>>,
    /// In a sharded group: the heartbeat, when a member joins or leaves,
    /// and each shard's inbox task, when messages arrive from another.
    pub sharded: Option<ShardedWakes>,
}

#[derive(Clone)]
pub struct ShardedWakes {
    pub members: Arc<Notify>,
    pub inboxes: Vec<Arc<Notify>>,
}

/// A roster call in flight.
pub type RosterCall<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Where a group keeps its shard count and its live members.
pub trait Roster: Send + Sync + 'static {
    /// The store's name, for messages.
    fn store(&self) -> &'static str;

    /// Adds or renews `node_id` until `ttl` from now on the store's clock
    /// (or, `leaving`, removes it), drops the members whose time ran out,
    /// announces a change to the others, and answers the live members.
    fn beat<'a>(&'a self, node_id: &'a str, ttl: Duration, leaving: bool) -> RosterCall<'a, Vec<String>>;

    /// Records `shards` as the group's shard count, unless one is recorded
    /// or the store already holds an unsharded group's data (then 1), and
    /// answers the count the data is for.
    fn shard_count(&self, shards: usize) -> RosterCall<'_, usize>;
}

/// A store that a group of instances shares.
pub trait Backend: Send + Sync + 'static {
    /// Starts `shard`'s committer and answers its lock and its loads.
    fn start_shard(&self, shard: ShardParts) -> Elected;

    /// Where the group keeps its shard count and members.
    fn roster(&self) -> Arc<dyn Roster>;

    /// Connects, and wakes `wakes` on the store's notices until `stopped`.
    fn start(&self, wakes: Wakes, stopped: watch::Receiver<bool>);

    /// In a sharded group: shard `shard`'s outbox and inbox, its deliveries
    /// fenced by `leadership`.
    fn mailboxes(&self, shard: usize, leadership: &Arc<Leadership>) -> Arc<dyn Mailboxes>;

    /// In a sharded group: every shard's queues, read from the store.
    fn catalog(&self, placement: &Placement) -> Arc<dyn Catalog>;
}
