//! The shards as the HTTP front sees them: each one's API, whether this
//! instance serves it and where its leader is ([`ShardFront`]); in a
//! sharded group, a call run on its shard here or sent on to that shard's
//! leader (`run.rs`), over a kept-alive pool (`forward.rs`). Every surface
//! that runs calls uses it; it uses none of them.

pub(crate) mod forward;
pub(in crate::http) mod run;

use std::sync::Arc;

use crate::api::Api;
use crate::cluster::lock::LockStore;
use crate::http::shards::forward::Forwarder;
use crate::leader::{LeaderInfo, Leadership};

/// One shard as the HTTP front sees it: its API, whether this instance
/// serves it and, in a group, its lock (to find its leader).
pub struct ShardFront {
    pub api: Api,
    pub leadership: Arc<Leadership>,
    pub lock: Option<Arc<dyn LockStore>>,
}

impl ShardFront {
    /// The shard's leader as its lock names it now, noted for the
    /// requests that follow; None when nobody else holds it.
    pub(crate) async fn look_up_leader(&self) -> Option<String> {
        let token = self.lock.as_ref()?.holder().await.ok()??;
        let leader = LeaderInfo::parse(&token)?;
        self.leadership.observe_leader(Some(leader.clone()));
        (leader.node_id != self.leadership.node_id()).then_some(leader.url)
    }
}

/// How calls reach the shards this instance does not lead, in a sharded
/// group.
pub struct Forwarding {
    /// Sends requests on to the leader of their shard.
    pub forwarder: Forwarder,
    /// How long a request for a shard with no leader waits for one: about
    /// two lock-retry intervals.
    pub shard_wait: std::time::Duration,
}
