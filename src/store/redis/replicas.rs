//! Replica-acknowledged writes (`--redis-min-replicas`): a write counts only
//! once enough of Redis's replicas hold it.
//!
//! Redis replicates asynchronously, so when a replica is promoted (by
//! Sentinel, or a managed Redis) it lacks the writes the old primary had not
//! yet shipped. With `--redis-min-replicas N`, every commit, every lock
//! acquisition (and so every epoch) and every renewal is followed by
//! `WAIT N timeout` on the connection that wrote it; fewer than N replicas
//! within the timeout makes the write unconfirmed: the commit's clients get
//! a retryable 503 and the leader reloads, an acquisition or a renewal
//! counts as failed. `WAIT` blocks its connection, so the committer then has
//! a connection of its own and never holds up the lock's renewals.

use std::time::Duration;

use fred::prelude::*;
use fred::types::ClusterHash;
use fred::types::config::Options;

use super::RedisError;

/// How many replicas must acknowledge a write, and how long to wait for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicaAcks {
    pub replicas: u32,
    pub timeout: Duration,
    /// The client's usual time limit of a command (`--redis-timeout`).
    pub command_timeout: Duration,
}

impl ReplicaAcks {
    /// No confirmation: a write counts once the primary applied it.
    pub const NONE: ReplicaAcks = ReplicaAcks {
        replicas: 0,
        timeout: Duration::ZERO,
        command_timeout: Duration::ZERO,
    };

    pub fn required(&self) -> bool {
        self.replicas > 0
    }

    /// Waits until the writes `client`'s connection sent are held by enough
    /// replicas. The command's own time limit is the wait plus the client's
    /// usual one, so that a slow answer is the replicas', not the network's.
    /// On Redis Cluster, `WAIT` goes to the primary of `key`'s slot: the
    /// connection that wrote it.
    pub async fn confirm(&self, client: &Client, key: &str) -> Result<(), RedisError> {
        if !self.required() {
            return Ok(());
        }
        let options = Options {
            timeout: Some(self.timeout + self.command_timeout),
            cluster_hash: Some(ClusterHash::Custom(fred::util::redis_keyslot(key.as_bytes()))),
            ..Options::default()
        };
        let acknowledged: i64 = client
            .with_options(&options)
            .wait(i64::from(self.replicas), self.timeout.as_millis() as i64)
            .await
            .map_err(RedisError::Wait)?;
        if acknowledged >= i64::from(self.replicas) {
            Ok(())
        } else {
            Err(RedisError::TooFewReplicas {
                acknowledged,
                wanted: self.replicas,
                within: self.timeout,
            })
        }
    }
}
