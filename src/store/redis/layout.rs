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

    /// The keys of shard `shard` of `count`, under a hash tag of its own,
    /// `{prefix:shard:n}`, so that shards spread over Redis Cluster's
    /// primaries: `n` is the smallest number that puts the tag's slot in the
    /// shard's own `count`-th of the slot space, so that K shards fall evenly
    /// on primaries that serve even slot ranges (as `redis-cli --cluster
    /// create` makes them). Plain `{prefix:s}` tags fell 4 / 6 / 2 on three
    /// primaries for K = 12.
    pub fn shard(prefix: &str, shard: usize, count: usize) -> Layout {
        const SLOTS: usize = 16384;
        let (first, end) = (shard * SLOTS / count, (shard + 1) * SLOTS / count);
        let tag = (0u64..)
            .map(|n| format!("{prefix}:{shard}:{n}"))
            .find(|tag| (first..end).contains(&usize::from(fred::util::redis_keyslot(tag.as_bytes()))))
            .expect("some number puts the tag in any range of slots");
        Layout { prefix: tag }
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

    /// With a lock kept apart from Redis (`--lock-url`): the revision of
    /// the holder last recorded; a holder with a smaller one is refused.
    pub fn lock_revision(&self) -> String {
        format!("{{{}}}:lock-revision", self.prefix)
    }

    /// Pub/sub channel on which a leader announces that it let go.
    pub fn release_channel(&self) -> String {
        format!("{{{}}}:leader-released", self.prefix)
    }

    /// String: the id of the load the leader's memory came from. Every
    /// commit names the load its writes were made on and is refused once
    /// another load began, so a write that reaches Redis late (it timed out,
    /// on a connection since replaced) cannot change what a later load read.
    pub fn load_fence(&self) -> String {
        format!("{{{}}}:loaded", self.prefix)
    }

    /// Hash: queue name → queue settings (JSON).
    pub fn queues(&self) -> String {
        format!("{{{}}}:queues", self.prefix)
    }

    /// Hash: SNS record key → record (topics, subscriptions, FIFO topics'
    /// deduplication ids; `topic/records.rs`).
    pub fn sns(&self) -> String {
        format!("{{{}}}:sns", self.prefix)
    }

    /// Hash: queue name → next message sequence number.
    pub fn sequences(&self) -> String {
        format!("{{{}}}:seqs", self.prefix)
    }

    /// Stream: messages that left this shard's queues for another shard's,
    /// until they are in that shard's inbox (see `transfers.rs`).
    pub fn outbox(&self) -> String {
        format!("{{{}}}:outbox", self.prefix)
    }

    /// Stream: messages from other shards for this shard's queues, until
    /// its leader takes them in.
    pub fn inbox(&self) -> String {
        format!("{{{}}}:inbox", self.prefix)
    }

    /// Pub/sub channel on which an inbox's arrivals are announced.
    pub fn inbox_channel(&self) -> String {
        format!("{{{}}}:inbox-arrived", self.prefix)
    }

    /// String with a TTL: a transfer (by its marker) reached this shard's
    /// inbox, so that delivering it again adds nothing.
    pub fn arrived(&self, marker: &str) -> String {
        format!("{{{}}}:arrived:{marker}", self.prefix)
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

#[cfg(test)]
mod tests {
    use super::Layout;

    fn slot(layout: &Layout) -> usize {
        usize::from(fred::util::redis_keyslot(layout.lock().as_bytes()))
    }

    #[test]
    fn shards_fall_evenly_over_the_slot_space() {
        for count in [2, 12, 24, 1024] {
            for shard in 0..count {
                let layout = Layout::shard("ssq", shard, count);
                let at = slot(&layout);
                assert!(
                    (shard * 16384 / count..(shard + 1) * 16384 / count).contains(&at),
                    "shard {shard} of {count} at slot {at}"
                );
                assert!(
                    layout.lock().starts_with(&format!("{{ssq:{shard}:")),
                    "{}",
                    layout.lock()
                );
            }
        }
        // Every key of a shard shares its slot.
        let layout = Layout::shard("ssq", 5, 12);
        assert_eq!(
            slot(&layout),
            usize::from(fred::util::redis_keyslot(layout.bodies("q").as_bytes()))
        );
        // Fixed, as docs/redis-layout.md gives them: a change here moves stored shards.
        let tags: Vec<String> = (0..12).map(|s| Layout::shard("ssq", s, 12).lock()).collect();
        assert_eq!(tags[0], "{ssq:0:10}:leader");
        assert_eq!(tags[1], "{ssq:1:0}:leader");
        assert_eq!(tags[8], "{ssq:8:49}:leader");
    }
}
