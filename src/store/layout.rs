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
    pub fn new(prefix: &str) -> Layout {
        Layout {
            prefix: prefix.to_string(),
        }
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
