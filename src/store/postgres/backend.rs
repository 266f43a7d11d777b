//! The Postgres backend as the group starts it ([`Backend`]): a connection
//! for the group's calls (the roster, the catalog, the mailboxes), a
//! listener for the group's notices and, per shard, its lock (on a session
//! of its own, which also hears its release notices), loader and committer.

use std::sync::Arc;

use tokio::sync::watch;

use super::catalog::PostgresCatalog;
use super::committer::PostgresCall;
use super::loader::Loader;
use super::lock::PostgresLock;
use super::mailboxes::{PostgresMailboxes, inbox_channel};
use super::roster::{MEMBERS_CHANNEL, PostgresRoster};
use super::{PostgresStore, Reconnecting, Target, notices};
use crate::cluster::backend::{Backend, Elected, Roster, ShardParts, Wakes};
use crate::cluster::election::ElectionConfig;
use crate::cluster::transfers::Mailboxes;
use crate::leader::Leadership;
use crate::service::shards::{Catalog, Placement};
use crate::store::folded_commit;
use crate::store::load_id::LoadId;

/// What the shards of a Postgres-backed node share.
pub struct PostgresBackend {
    target: Target,
    placement: Placement,
    /// The group's calls: the roster's, the catalog's, the mailboxes'.
    connection: Arc<Reconnecting>,
    /// The URL this instance is reached at, written into its lease.
    advertise_url: String,
    election: ElectionConfig,
}

impl PostgresBackend {
    pub fn new(
        target: Target,
        placement: Placement,
        advertise_url: String,
        election: ElectionConfig,
    ) -> PostgresBackend {
        PostgresBackend {
            connection: Arc::new(Reconnecting::new(target.clone())),
            target,
            placement,
            advertise_url,
            election,
        }
    }
}

impl Backend for PostgresBackend {
    fn start_shard(&self, shard: ShardParts) -> Elected {
        let election = self.election;
        let lock = PostgresLock::new(
            self.target.clone(),
            shard.index,
            shard.leadership.node_id(),
            &self.advertise_url,
            election.ttl,
            shard.wake,
        );
        let store = PostgresStore {
            target: self.target.clone(),
            shard: shard.index as i32,
            placement: self.placement.clone(),
            memory: shard.memory,
            leadership: shard.leadership,
            metrics: shard.metrics,
            load_id: Arc::new(LoadId::default()),
        };
        let loader = Arc::new(Loader::new(store.clone(), election.retry_every));
        let committed = folded_commit::Shard {
            memory: store.memory.clone(),
            leadership: store.leadership.clone(),
            metrics: store.metrics.clone(),
            load_id: store.load_id.clone(),
        };
        let call = PostgresCall::new(store.target.clone(), store.shard);
        let lock = Arc::new(lock);
        Elected {
            lock: lock.clone(),
            fence: lock,
            load_state: folded_commit::start(call, committed, loader, election.retry_every, shard.journal),
        }
    }

    fn roster(&self) -> Arc<dyn Roster> {
        Arc::new(PostgresRoster::new(self.connection.clone()))
    }

    /// Connections are made as calls need them; a lock's own session hears
    /// its release notices, so only a sharded group listens here.
    fn start(&self, wakes: Wakes, stopped: watch::Receiver<bool>) {
        let Some(sharded) = wakes.sharded else {
            return;
        };
        let mut channels = vec![(MEMBERS_CHANNEL.to_string(), sharded.members)];
        for (shard, wake) in sharded.inboxes.into_iter().enumerate() {
            channels.push((inbox_channel(shard), wake));
        }
        tokio::spawn(notices::listen(
            self.target.clone(),
            channels,
            self.election.retry_every,
            stopped,
        ));
    }

    fn mailboxes(&self, shard: usize, leadership: &Arc<Leadership>) -> Arc<dyn Mailboxes> {
        Arc::new(PostgresMailboxes {
            connection: self.connection.clone(),
            shard,
            leadership: leadership.clone(),
        })
    }

    fn catalog(&self, _: &Placement) -> Arc<dyn Catalog> {
        Arc::new(PostgresCatalog {
            connection: self.connection.clone(),
        })
    }
}
