//! Where ssq keeps things in Redis. See docs/redis-layout.md.
//!
//! Every key starts with the hash tag `{prefix}`, so that all of them live in
//! one slot: each Lua script then touches a single slot, which keeps the
//! layout valid behind Redis Cluster and proxies that enforce it.

#[derive(Debug, Clone)]
pub struct Layout {
    prefix: String,
}

impl Layout {
    /// The keys of an unsharded group, and the group-wide keys of a
    /// sharded one (its shard count and members), under `{prefix}`.
    pub fn new(prefix: &str) -> Layout {
        Layout {
            prefix: prefix.to_string(),
        }
    }

    /// The keys of one shard of a sharded group, under `{prefix:shard}`: a
    /// hash tag of its own, so that shards spread over Redis Cluster's nodes.
    pub fn shard(prefix: &str, shard: usize) -> Layout {
        Layout {
            prefix: format!("{prefix}:{shard}"),
        }
    }

    /// The shard count the data is for (`--shards`).
    pub fn shard_count(&self) -> String {
        format!("{{{}}}:shards", self.prefix)
    }

    /// Sorted set: a sharded group's live members, scored by when their
    /// last heartbeat expires (ms, Redis's clock).
    pub fn members(&self) -> String {
        format!("{{{}}}:members", self.prefix)
    }

    /// Pub/sub channel on which a change of members is announced.
    pub fn members_channel(&self) -> String {
        format!("{{{}}}:members-changed", self.prefix)
    }

    /// The leader lock: `epoch|node|nonce|url` with a TTL.
    pub fn lock(&self) -> String {
        format!("{{{}}}:leader", self.prefix)
    }

    /// Counter of lock acquisitions.
    pub fn epoch(&self) -> String {
        format!("{{{}}}:epoch", self.prefix)
    }

    /// Pub/sub channel on which a leader announces that it let go.
    pub fn release_channel(&self) -> String {
        format!("{{{}}}:leader-released", self.prefix)
    }

    /// Hash: queue name → queue settings (JSON).
    pub fn queues(&self) -> String {
        format!("{{{}}}:queues", self.prefix)
    }

    /// Hash: queue name → next message sequence number.
    pub fn sequences(&self) -> String {
        format!("{{{}}}:seqs", self.prefix)
    }

    /// Hash: sequence number → the message's immutable part (JSON).
    pub fn bodies(&self, queue: &str) -> String {
        format!("{{{}}}:q:{queue}:bodies", self.prefix)
    }

    /// Hash: FIFO deduplication key → `message id|sequence|expires at`.
    pub fn dedup(&self, queue: &str) -> String {
        format!("{{{}}}:q:{queue}:dedup", self.prefix)
    }

    /// Hash: FIFO ReceiveRequestAttemptId → `expires at|receipt handles`.
    pub fn attempts(&self, queue: &str) -> String {
        format!("{{{}}}:q:{queue}:attempts", self.prefix)
    }

    /// Hash: sequence number → the message's changing state (JSON).
    pub fn states(&self, queue: &str) -> String {
        format!("{{{}}}:q:{queue}:states", self.prefix)
    }
}
