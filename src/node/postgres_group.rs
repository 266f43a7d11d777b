//! The shards of a Postgres-backed node and what they share: a connection
//! for the group's calls (the roster, the catalog, the mailboxes), a
//! listener for the group's notices and, in a sharded group, the
//! membership that tells each elector whether to try for its shard. Each
//! shard's lock keeps its own session (`cluster/lock/postgres.rs`).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, watch};

use crate::cluster::election::ElectionConfig;
use crate::cluster::group::{self, Membership, PostgresRoster, Roster};
use crate::cluster::notices;
use crate::cluster::transfers::{PostgresMailboxes, Transfers, inbox_channel};
use crate::config::Config;
use crate::metrics::Metrics;
use crate::service::Service;
use crate::service::shards::{Catalog, Placement};
use crate::store::postgres::catalog::PostgresCatalog;
use crate::store::postgres::{Reconnecting, Target};

use super::shard::{RunningShard, Shard};
use super::{Admission, admission_of};

/// What the shards of a Postgres-backed node share.
pub(super) struct PostgresGroup {
    pub(super) target: Target,
    /// The group's calls: the roster's, the catalog's, the mailboxes'.
    pub(super) connection: Arc<Reconnecting>,
    pub(super) roster: Arc<dyn Roster>,
    pub(super) election: ElectionConfig,
    pub(super) membership: Option<Arc<Membership>>,
    /// One per shard, in a sharded group: wakes the task that takes in
    /// messages from other shards.
    pub(super) inbox_wakes: Vec<Arc<Notify>>,
}

/// The shards of a Postgres-backed node: one lock per shard and, with
/// more than one, the membership that tells each elector whether to try
/// for its shard.
pub(super) fn in_postgres(
    config: &Config,
    target: Target,
    placement: &Placement,
    services: Vec<Service>,
    node_id: &str,
    metrics: &Arc<Metrics>,
) -> (Vec<Shard>, PostgresGroup) {
    let count = services.len();
    let wakes: Vec<Arc<Notify>> = (0..count).map(|_| Arc::new(Notify::new())).collect();
    let membership = (count > 1).then(|| Arc::new(Membership::new(node_id, wakes.clone())));
    let claims = group::claims(membership.as_ref(), &wakes);
    let shards: Vec<Shard> = (services.into_iter().zip(claims).enumerate())
        .map(|(index, (service, claim))| {
            let at = (index, placement.clone(), claim);
            Shard::in_postgres(at, service, target.clone(), config, node_id, metrics)
        })
        .collect();
    if let Some(membership) = &membership {
        membership.count_shards_of(shards.iter().map(|s| s.leadership.clone()).collect());
    }
    let connection = Arc::new(Reconnecting::new(target.clone()));
    let group = PostgresGroup {
        target,
        roster: Arc::new(PostgresRoster::new(connection.clone())),
        connection,
        election: config.election(),
        membership,
        inbox_wakes: (0..count).map(|_| Arc::new(Notify::new())).collect(),
    };
    (shards, group)
}

impl PostgresGroup {
    /// Checks the shard count and, once it matches, lets the electors run;
    /// in a sharded group, starts the heartbeats, the listener for the
    /// group's notices and what moves messages between shards, and returns
    /// the catalog through which calls read the other shards' queues.
    pub(super) fn start(
        &self,
        running: &[RunningShard],
        placement: &Placement,
        admit: watch::Sender<Admission>,
        stopped: watch::Receiver<bool>,
    ) -> Option<Arc<dyn Catalog>> {
        let retry_every = self.election.retry_every;
        let mut catalog = None;
        if let Some(membership) = &self.membership {
            let mut channels = vec![(group::MEMBERS_CHANNEL.to_string(), membership.beat_now.clone())];
            for (shard, wake) in running.iter().zip(&self.inbox_wakes) {
                let index = shard.leadership.shard();
                channels.push((inbox_channel(index), wake.clone()));
                let mailboxes = PostgresMailboxes {
                    connection: self.connection.clone(),
                    shard: index,
                    leadership: shard.leadership.clone(),
                };
                let transfers = Transfers {
                    mailboxes: Arc::new(mailboxes),
                    placement: placement.clone(),
                    shard: index,
                    service: shard.service.clone(),
                    leadership: shard.leadership.clone(),
                    inbox_arrived: wake.clone(),
                    poll_every: retry_every.max(Duration::from_secs(1)),
                };
                tokio::spawn(transfers.run(stopped.clone()));
            }
            tokio::spawn(notices::listen_postgres(
                self.target.clone(),
                channels,
                retry_every,
                stopped.clone(),
            ));
            catalog = Some(Arc::new(PostgresCatalog {
                connection: self.connection.clone(),
            }) as Arc<dyn Catalog>);
        }
        tokio::spawn(group::join(
            self.roster.clone(),
            self.membership.clone(),
            running.len(),
            self.election.ttl,
            retry_every,
            move |checked| {
                let _ = admit.send(admission_of(checked));
            },
            stopped,
        ));
        catalog
    }
}
