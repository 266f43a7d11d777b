//! One shard as the HTTP front sees it: its API, whether this instance
//! serves it, and where its leader is.

use std::sync::Arc;

use crate::api::Api;
use crate::cluster::lock::LockStore;
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
