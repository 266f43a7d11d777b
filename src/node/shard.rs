//! One shard of a node: a service and its leadership and what keeps its
//! state: nothing (memory-only), the disk (its committer, which loads the
//! state first), or a store shared by a group (its backend's lock, loader
//! and committer, and the elector and watchdog tasks that run while the
//! node serves).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};

use crate::api::Api;
use crate::cluster::Backend;
use crate::cluster::backend::{Elected, ShardParts};
use crate::cluster::election::{self, Claim, ElectionConfig};
use crate::cluster::lock::LockStore;
use crate::cluster::watchdog;
use crate::http::ShardFront;
use crate::journal::Pending;
use crate::leader::{Leadership, Role};
use crate::metrics::Metrics;
use crate::service::Service;
use crate::service::shards::Catalog;
use crate::store::disk::committer::{DiskCommitter, sync_every_second};
use crate::store::disk::{DiskStore, SyncPolicy};

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
    Group(Box<GroupShard>, mpsc::UnboundedReceiver<Pending>),
}

/// What a shard of a store shared by a group is made of.
pub(super) struct GroupShard {
    pub(super) backend: Arc<dyn Backend>,
    pub(super) election: ElectionConfig,
    /// Whether the group's map wants this instance to lead the shard.
    pub(super) claim: Claim,
    pub(super) metrics: Arc<Metrics>,
}

/// A shard whose tasks run.
pub(super) struct RunningShard {
    pub(super) service: Arc<Service>,
    pub(super) leadership: Arc<Leadership>,
    pub(super) lock: Option<Arc<dyn LockStore>>,
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
    /// elector takes the lock: shard `index`, led as `claim` wishes.
    pub(super) fn in_group(
        (index, claim): (usize, Claim),
        service: Service,
        backend: &Arc<dyn Backend>,
        election: ElectionConfig,
        node_id: &str,
        metrics: &Arc<Metrics>,
    ) -> Shard {
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
        let shard = GroupShard {
            backend: backend.clone(),
            election,
            claim,
            metrics: metrics.clone(),
        };
        Shard {
            service,
            leadership,
            backing: Backing::Group(Box::new(shard), journal_rx),
        }
    }

    /// Starts what keeps the shard: in memory-only mode, it creates the
    /// configured queues (a queue that cannot be created stops the start);
    /// on disk, the committer, which loads the state and then serves; with
    /// a shared store, the committer, the elector (which loads the state on
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
        };
        let (group, journal) = match backing {
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
            Backing::Group(shard, journal) => (shard, journal),
        };
        let GroupShard {
            backend,
            election,
            claim,
            metrics,
        } = *group;
        let Elected { lock, load_state, .. } = backend.start_shard(ShardParts {
            index: leadership.shard(),
            memory: service.clone(),
            leadership: leadership.clone(),
            metrics,
            wake: claim.wake.clone(),
            journal,
        });
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
        })
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
