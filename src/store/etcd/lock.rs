//! A shard's leader lock in etcd, taken as etcd's own election takes it:
//! a lease with the lock's TTL, kept alive by its holder, and the shard's
//! key (`<prefix>/lock/<shard>`) put under that lease only if it does not
//! exist (a transaction on its create revision), so that it goes when its
//! holder lets go or stops renewing.
//!
//! The key's create revision is the fencing token: etcd's revisions only
//! grow, so each new holder's is larger than every earlier one's. Before
//! it loads, a new holder records it in the store ([`Fence`]: only a larger
//! revision wins, and starts a new epoch there), and every commit carries
//! the token of that epoch; a holder frozen past its lease, or cut off
//! from etcd but not from the store, is refused by the store once its
//! successor has recorded. The key then holds that token, so that the
//! passives and the HTTP front see who leads and where.
//!
//! A holder steps down before its lease can expire (the elector's deadline
//! runs from when its last good keep-alive was sent, shorter than the TTL,
//! which etcd may only lengthen), and at once when a keep-alive finds its
//! lease or its key gone. It never leads alone: without an etcd quorum no
//! call succeeds, so no instance serves past its deadline.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use super::client::{Etcd, decode, encode, number};
use crate::cluster::lock::{Acquire, Fence, LockCall, LockError, LockStore};
use crate::leader::LeaderInfo;

/// What this instance holds while it leads.
#[derive(Clone)]
struct Held {
    lease: i64,
    revision: i64,
    token: String,
}

pub struct EtcdLock {
    etcd: Arc<Etcd>,
    /// The shard's key, in base64 as etcd's JSON wants it.
    key: String,
    fence: Arc<dyn Fence>,
    node_id: String,
    advertise_url: String,
    /// The lease asked for: the lock's TTL in whole seconds, rounded up.
    ttl_seconds: i64,
    held: Mutex<Option<Held>>,
}

impl EtcdLock {
    pub fn new(
        etcd: Arc<Etcd>,
        shard: usize,
        fence: Arc<dyn Fence>,
        node_id: &str,
        advertise_url: &str,
        ttl: Duration,
    ) -> EtcdLock {
        EtcdLock {
            key: encode(&etcd.lock_key(shard)),
            etcd,
            fence,
            node_id: node_id.to_string(),
            advertise_url: advertise_url.to_string(),
            ttl_seconds: ttl.as_secs() as i64 + i64::from(ttl.subsec_nanos() > 0),
            held: Mutex::default(),
        }
    }

    fn held(&self) -> Option<Held> {
        self.held.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set_held(&self, held: Option<Held>) {
        *self.held.lock().unwrap_or_else(|p| p.into_inner()) = held;
    }

    async fn take(&self) -> Result<Acquire, LockError> {
        let answer = self
            .etcd
            .call("/v3/lease/grant", &json!({"TTL": self.ttl_seconds}))
            .await?;
        let lease = number(&answer["ID"]);
        let granted = number(&answer["TTL"]);
        if granted > self.ttl_seconds {
            warn_longer_lease(granted, self.ttl_seconds);
        }
        let taken = self.campaign(lease).await;
        if !matches!(taken, Ok(Acquire::Won(_))) {
            self.revoke_quietly(lease).await;
        }
        taken
    }

    /// Puts the key under `lease` if it does not exist, records its
    /// revision in the store, and writes the store's token into it.
    async fn campaign(&self, lease: i64) -> Result<Acquire, LockError> {
        let nonce = format!("{:016x}", crate::queue::random::nonce());
        let holder = format!("{}|{nonce}|{}", self.node_id, self.advertise_url);
        let mut revision = None;
        // A key in this node's own name was left by an answer it never
        // got (it asks only while it does not lead): taken over at once,
        // as the store's locks do, rather than after its lease.
        for _ in 0..2 {
            match self.put_if_absent(lease, &format!("0|{holder}")).await? {
                Ok(created) => {
                    revision = Some(created);
                    break;
                }
                Err(kv) => {
                    let token = decode(&kv["value"]);
                    let ours = LeaderInfo::parse(&token).is_some_and(|info| info.node_id == self.node_id);
                    if !ours {
                        return Ok(Acquire::Held(token));
                    }
                    self.delete_if_created(number(&kv["create_revision"])).await?;
                }
            }
        }
        let Some(revision) = revision else {
            return Ok(Acquire::Held(String::new()));
        };
        let token = match self.fence.record(revision as u64, &holder).await? {
            Acquire::Won(token) => token,
            Acquire::Held(recorded) => {
                tracing::error!(
                    revision, %recorded,
                    "the store recorded a lock revision at least as large as etcd's newest: was etcd replaced by a \
                     new cluster? Its revisions start again from 1, so no instance can lead until the store's \
                     record is cleared (docs/operations.md, \"etcd\")"
                );
                return Ok(Acquire::Held(recorded));
            }
        };
        // The key names the token every commit now carries.
        let put = json!({
            "compare": [{"target": "CREATE", "key": self.key, "create_revision": revision.to_string()}],
            "success": [{"request_put": {"key": self.key, "value": encode(&token), "lease": lease.to_string()}}],
        });
        if !self.etcd.call("/v3/kv/txn", &put).await?["succeeded"]
            .as_bool()
            .unwrap_or(false)
        {
            return Ok(Acquire::Held(String::new()));
        }
        self.set_held(Some(Held {
            lease,
            revision,
            token: token.clone(),
        }));
        Ok(Acquire::Won(token))
    }

    /// The key's create revision if this put it, or the key as it is.
    async fn put_if_absent(&self, lease: i64, value: &str) -> Result<Result<i64, Value>, LockError> {
        let txn = json!({
            "compare": [{"target": "CREATE", "key": self.key, "create_revision": "0"}],
            "success": [{"request_put": {"key": self.key, "value": encode(value), "lease": lease.to_string()}}],
            "failure": [{"request_range": {"key": self.key}}],
        });
        let answer = self.etcd.call("/v3/kv/txn", &txn).await?;
        if answer["succeeded"].as_bool().unwrap_or(false) {
            return Ok(Ok(number(&answer["header"]["revision"])));
        }
        let kv = &answer["responses"][0]["response_range"]["kvs"][0];
        Ok(Err(kv.clone()))
    }

    async fn delete_if_created(&self, revision: i64) -> Result<(), LockError> {
        let txn = json!({
            "compare": [{"target": "CREATE", "key": self.key, "create_revision": revision.to_string()}],
            "success": [{"request_delete_range": {"key": self.key}}],
        });
        self.etcd.call("/v3/kv/txn", &txn).await?;
        Ok(())
    }

    async fn revoke_quietly(&self, lease: i64) {
        if let Err(error) = self
            .etcd
            .call("/v3/lease/revoke", &json!({"ID": lease.to_string()}))
            .await
        {
            tracing::debug!(%error, "a lease not taken could not be revoked; it expires with its TTL");
        }
    }

    async fn read_holder(&self) -> Result<Option<String>, LockError> {
        let answer = self.etcd.call("/v3/kv/range", &json!({"key": self.key})).await?;
        Ok(answer["kvs"].get(0).map(|kv| decode(&kv["value"])))
    }

    /// Keeps the lease alive, and checks that the key is still the one
    /// this holder put, with its token.
    async fn extend(&self, token: &str) -> Result<bool, LockError> {
        let Some(held) = self.held().filter(|held| held.token == token) else {
            return Ok(false);
        };
        let answer = (self.etcd)
            .call("/v3/lease/keepalive", &json!({"ID": held.lease.to_string()}))
            .await?;
        if number(&answer["result"]["TTL"]) <= 0 {
            return Ok(false);
        }
        let answer = self.etcd.call("/v3/kv/range", &json!({"key": self.key})).await?;
        let kv = &answer["kvs"][0];
        Ok(number(&kv["create_revision"]) == held.revision && decode(&kv["value"]) == token)
    }

    async fn give_up(&self, token: &str) -> Result<bool, LockError> {
        let Some(held) = self.held().filter(|held| held.token == token) else {
            return Ok(false);
        };
        self.etcd
            .call("/v3/lease/revoke", &json!({"ID": held.lease.to_string()}))
            .await?;
        self.set_held(None);
        Ok(true)
    }
}

/// etcd lengthens a lease below its minimum (about 1.5 election timeouts):
/// safe, since a holder steps down by its own deadline, but a passive then
/// waits for the longer lease after a holder dies. Said once per process.
fn warn_longer_lease(granted: i64, asked: i64) {
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| {
        tracing::warn!(
            granted_seconds = granted,
            asked_seconds = asked,
            "etcd granted a longer lease than --lock-ttl asks: a takeover after a leader dies waits for etcd's lease; \
             raise --lock-ttl to at least etcd's minimum, or lower etcd's --election-timeout"
        );
    });
}

impl LockStore for EtcdLock {
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
