//! The MySQL backend as the group starts it ([`Backend`]): a connection
//! for the group's calls (the roster, the catalog, the mailboxes) and, per
//! shard, its lock (on a connection of its own), loader and committer.
//! MySQL has no notices: `start` has nothing to listen to, and each task
//! finds changes at its next poll.

use std::sync::Arc;

use tokio::sync::watch;

use super::catalog::MysqlCatalog;
use super::committer::MysqlCall;
use super::loader::Loader;
use super::lock::MysqlLock;
use super::mailboxes::MysqlMailboxes;
use super::roster::MysqlRoster;
use super::{MysqlStore, Reconnecting, Target};
use crate::cluster::backend::{Backend, Elected, Roster, ShardParts, Wakes};
use crate::cluster::election::ElectionConfig;
use crate::cluster::transfers::Mailboxes;
use crate::leader::Leadership;
use crate::service::shards::{Catalog, Placement};
use crate::store::folded_commit;
use crate::store::load_id::LoadId;

/// What the shards of a MySQL-backed node share.
pub struct MysqlBackend {
    target: Target,
    placement: Placement,
    /// The group's calls: the roster's, the catalog's, the mailboxes'.
    connection: Arc<Reconnecting>,
    /// The URL this instance is reached at, written into its lease.
    advertise_url: String,
    election: ElectionConfig,
}

impl MysqlBackend {
    pub fn new(
        target: Target,
        placement: Placement,
        advertise_url: String,
        election: ElectionConfig,
    ) -> MysqlBackend {
        MysqlBackend {
            connection: Arc::new(Reconnecting::new(target.clone())),
            target,
            placement,
            advertise_url,
            election,
        }
    }
}

impl Backend for MysqlBackend {
    fn start_shard(&self, shard: ShardParts) -> Elected {
        let election = self.election;
        let lock = MysqlLock::new(
            self.target.clone(),
            shard.index,
            shard.leadership.node_id(),
            &self.advertise_url,
            election.ttl,
        );
        let store = MysqlStore {
            target: self.target.clone(),
            shard: shard.index as i32,
            placement: self.placement.clone(),
            memory: shard.memory.clone(),
            leadership: shard.leadership.clone(),
            load_id: Arc::new(LoadId::default()),
        };
        let committed = folded_commit::Shard {
            memory: shard.memory,
            leadership: shard.leadership,
            metrics: shard.metrics,
            load_id: store.load_id.clone(),
        };
        let call = MysqlCall::new(self.target.clone(), store.shard);
        let loader = Arc::new(Loader::new(store, election.retry_every));
        let lock = Arc::new(lock);
        Elected {
            lock: lock.clone(),
            fence: lock,
            load_state: folded_commit::start(call, committed, loader, election.retry_every, shard.journal),
        }
    }

    fn roster(&self) -> Arc<dyn Roster> {
        Arc::new(MysqlRoster::new(self.connection.clone()))
    }

    fn start(&self, _: Wakes, _: watch::Receiver<bool>) {}

    fn mailboxes(&self, shard: usize, leadership: &Arc<Leadership>) -> Arc<dyn Mailboxes> {
        Arc::new(MysqlMailboxes {
            connection: self.connection.clone(),
            shard,
            leadership: leadership.clone(),
        })
    }

    fn catalog(&self, _: &Placement) -> Arc<dyn Catalog> {
        Arc::new(MysqlCatalog {
            connection: self.connection.clone(),
        })
    }
}
