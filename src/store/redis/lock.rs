//! The leader lock in Redis: a key with a TTL holding the holder's token,
//! and an epoch key that numbers the acquisitions; every commit script
//! checks the token (`store/redis/lua/commit.lua`). With a lock kept apart
//! (`--lock-url`) the same key, without a TTL, is the store's [`Fence`]:
//! it holds the token of the holder with the largest revision.

use std::time::Duration;

use fred::prelude::*;
use fred::types::scripts::Script;

use crate::cluster::lock::{Acquire, Fence, LockCall, LockError, LockStore};
use crate::store::redis::replicas::ReplicaAcks;
use crate::store::redis::{Layout, Link, RedisError};

/// The leader lock in Redis. All keys share the hash tag `{prefix}`, so the
/// scripts touch one slot and stay valid behind Redis Cluster.
pub struct RedisLock {
    link: Link,
    lock_key: String,
    epoch_key: String,
    revision_key: String,
    pub release_channel: String,
    node_id: String,
    advertise_url: String,
    ttl_ms: u64,
    acquire: Script,
    renew: Script,
    release: Script,
    record: Script,
    /// Replicas that must hold an acquisition or a renewal (`replicas.rs`).
    acks: ReplicaAcks,
}

impl RedisLock {
    pub fn new(link: Link, layout: &Layout, node_id: &str, advertise_url: &str, ttl: Duration) -> RedisLock {
        RedisLock {
            link,
            lock_key: layout.lock(),
            epoch_key: layout.epoch(),
            revision_key: layout.lock_revision(),
            release_channel: layout.release_channel(),
            node_id: node_id.to_string(),
            advertise_url: advertise_url.to_string(),
            ttl_ms: ttl.as_millis() as u64,
            acquire: Script::from_lua(include_str!("lua/lock_acquire.lua")),
            renew: Script::from_lua(include_str!("lua/lock_renew.lua")),
            release: Script::from_lua(include_str!("lua/lock_release.lua")),
            record: Script::from_lua(include_str!("lua/lock_record.lua")),
            acks: ReplicaAcks::NONE,
        }
    }

    /// Acquisitions (and so epochs) and renewals count only once `acks`
    /// replicas hold them; an unconfirmed one is a failed one.
    pub fn confirmed_by_replicas(mut self, acks: ReplicaAcks) -> RedisLock {
        self.acks = acks;
        self
    }

    /// `client` must be the one the write was sent on: `WAIT` counts
    /// the writes of its own connection.
    async fn confirm(&self, client: &Client) -> Result<(), LockError> {
        Ok(self.acks.confirm(client, &self.lock_key).await?)
    }

    async fn run<R: FromValue>(
        &self,
        client: &Client,
        script: &Script,
        keys: Vec<String>,
        args: Vec<String>,
    ) -> Result<R, LockError> {
        script
            .evalsha_with_reload(client, keys, args)
            .await
            .map_err(|error| LockError::from(RedisError::from(error)))
    }

    async fn take(&self) -> Result<Acquire, LockError> {
        let nonce = format!("{:016x}", crate::queue::random::nonce());
        let args = vec![
            self.node_id.clone(),
            self.advertise_url.clone(),
            self.ttl_ms.to_string(),
            nonce,
        ];
        let client = self.link.commands();
        let (won, token): (i64, String) = self
            .run(
                &client,
                &self.acquire,
                vec![self.lock_key.clone(), self.epoch_key.clone()],
                args,
            )
            .await?;
        if won != 1 {
            return Ok(Acquire::Held(token));
        }
        // Unconfirmed, the lock stays in this node's name in Redis; the next
        // attempt takes it over with a new epoch, confirmed or not at all.
        self.confirm(&client).await?;
        Ok(Acquire::Won(token))
    }

    async fn read_holder(&self) -> Result<Option<String>, LockError> {
        self.link
            .commands()
            .get(self.lock_key.as_str())
            .await
            .map_err(|error| LockError::from(RedisError::from(error)))
    }

    async fn extend(&self, token: &str) -> Result<bool, LockError> {
        let args = vec![token.to_string(), self.ttl_ms.to_string()];
        let client = self.link.commands();
        let renewed = self
            .run::<i64>(&client, &self.renew, vec![self.lock_key.clone()], args)
            .await?
            == 1;
        if renewed {
            self.confirm(&client).await?;
        }
        Ok(renewed)
    }

    async fn give_up(&self, token: &str) -> Result<bool, LockError> {
        let args = vec![token.to_string(), self.release_channel.clone()];
        Ok(self
            .run::<i64>(
                &self.link.commands(),
                &self.release,
                vec![self.lock_key.clone()],
                args,
            )
            .await?
            == 1)
    }

    async fn record_revision(&self, revision: u64, holder: &str) -> Result<Acquire, LockError> {
        let keys = vec![
            self.lock_key.clone(),
            self.epoch_key.clone(),
            self.revision_key.clone(),
        ];
        let client = self.link.commands();
        let args = vec![revision.to_string(), holder.to_string()];
        let (recorded, token): (i64, String) = self.run(&client, &self.record, keys, args).await?;
        if recorded != 1 {
            return Ok(Acquire::Held(token));
        }
        self.confirm(&client).await?;
        Ok(Acquire::Won(token))
    }
}

impl Fence for RedisLock {
    fn record<'a>(&'a self, revision: u64, holder: &'a str) -> LockCall<'a, Acquire> {
        Box::pin(self.record_revision(revision, holder))
    }
}

impl LockStore for RedisLock {
    fn acquire(&self) -> LockCall<'_, Acquire> {
        Box::pin(self.take())
    }

    fn holder(&self) -> LockCall<'_, Option<String>> {
        Box::pin(self.read_holder())
    }

    fn renew<'a>(&'a self, token: &'a str) -> LockCall<'a, bool> {
        Box::pin(self.extend(token))
    }

    fn release<'a>(&'a self, token: &'a str) -> LockCall<'a, bool> {
        Box::pin(self.give_up(token))
    }
}
