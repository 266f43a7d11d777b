//! A store's backend with its lock taken from etcd (`--lock-url`): the
//! store keeps the data, its roster, mailboxes and catalog as without
//! etcd; each shard's lock is an [`EtcdLock`] fenced through the store's
//! [`Fence`](crate::cluster::lock::Fence), and one watch wakes the
//! electors when a lock key goes.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::client::Etcd;
use super::lock::EtcdLock;
use super::watch::wake_on_release;
use crate::cluster::Backend;
use crate::cluster::backend::{Elected, Roster, ShardParts, Wakes};
use crate::cluster::transfers::Mailboxes;
use crate::leader::Leadership;
use crate::service::shards::{Catalog, Placement};

pub struct LockedByEtcd {
    store: Arc<dyn Backend>,
    etcd: Arc<Etcd>,
    advertise_url: String,
    ttl: Duration,
    retry: Duration,
}

impl LockedByEtcd {
    pub fn new(
        store: Arc<dyn Backend>,
        etcd: Etcd,
        advertise_url: String,
        ttl: Duration,
        retry: Duration,
    ) -> Self {
        LockedByEtcd {
            store,
            etcd: Arc::new(etcd),
            advertise_url,
            ttl,
            retry,
        }
    }
}

impl Backend for LockedByEtcd {
    fn start_shard(&self, shard: ShardParts) -> Elected {
        let index = shard.index;
        let node_id = shard.leadership.node_id().to_string();
        let Elected {
            fence, load_state, ..
        } = self.store.start_shard(shard);
        let lock = EtcdLock::new(
            self.etcd.clone(),
            index,
            fence.clone(),
            &node_id,
            &self.advertise_url,
            self.ttl,
        );
        Elected {
            lock: Arc::new(lock),
            fence,
            load_state,
        }
    }

    fn roster(&self) -> Arc<dyn Roster> {
        self.store.roster()
    }

    fn start(&self, wakes: Wakes, stopped: watch::Receiver<bool>) {
        let electors = wakes.electors.clone();
        tokio::spawn(wake_on_release(
            self.etcd.clone(),
            electors,
            self.retry,
            stopped.clone(),
        ));
        self.store.start(wakes, stopped);
    }

    fn mailboxes(&self, shard: usize, leadership: &Arc<Leadership>) -> Arc<dyn Mailboxes> {
        self.store.mailboxes(shard, leadership)
    }

    fn catalog(&self, placement: &Placement) -> Arc<dyn Catalog> {
        self.store.catalog(placement)
    }
}
