//! Group commit: one task turns every write waiting into one fenced Lua call.
//!
//! Writes arrive in the order memory applied them (the service submits a
//! queue's writes while it holds that queue's lock). The committer takes the
//! first, then everything else waiting once the requests ready to run have
//! reached their writes (`group_commit.rs`), up to a size cap, and sends
//! them in a single `EVALSHA` round trip; only one batch is in flight, so
//! batches apply in order. Under load the batches grow by themselves, which is
//! how durability costs little throughput.
//!
//! With `--redis-min-replicas`, a batch counts only once enough replicas
//! hold it (`replicas.rs`): the committer then writes on a connection of its
//! own, since the wait blocks the connection it runs on.
//!
//! Failure handling keeps memory honest:
//! - FENCED: another instance leads. Every waiter gets a 503 and this one
//!   steps down at once.
//! - STALE: memory was loaded again after these writes were made (the load
//!   fence); they fail, as below, and so does whatever follows them.
//! - any other error, a timeout, or too few replicas confirming: the batch
//!   may or may not survive (a failover could lose it).
//!   Every waiter gets a 503, the instance stops serving, drops memory and
//!   reloads it from Redis, which holds the truth either way. Writes queued
//!   behind the failed batch belong to the old memory and fail too.

use std::sync::Arc;
use std::time::{Duration, Instant};

use fred::prelude::*;
use fred::types::scripts::Script;
use tokio::sync::mpsc;

use super::RedisError;
use super::RedisStore;
use super::batch::{Batch, Call};
use super::loader::Loader;
use super::replicas::ReplicaAcks;
use crate::journal::Pending;
use crate::store::group_commit::{Admitted, Outcome, Settling, admit, answer, next_batch, unavailable};
use crate::store::reload;

/// A batch stops growing at this many bytes of arguments (one more write
/// may cross it): large messages then commit in several round trips rather
/// than one huge script call.
const MAX_BATCH_BYTES: usize = 8 * 1024 * 1024;
const MAX_BATCH_WRITES: usize = 1_024;

pub struct Committer {
    store: RedisStore,
    acks: ReplicaAcks,
    loader: Arc<Loader>,
    script: Script,
    /// How long one script call may take before it counts as failed.
    timeout: Duration,
    settling: Settling,
}

impl Committer {
    /// A committer whose script calls time out after `timeout`, and whose
    /// reloads after failed writes wait up to `max_reload_delay` (four lock
    /// retry intervals in the server).
    pub fn new(
        store: RedisStore,
        loader: Arc<Loader>,
        timeout: Duration,
        max_reload_delay: Duration,
    ) -> Committer {
        Committer {
            acks: ReplicaAcks::NONE,
            store,
            loader,
            script: Script::from_lua(include_str!("lua/commit.lua")),
            timeout,
            settling: Settling::new(max_reload_delay),
        }
    }

    /// Commits count once `acks` replicas hold them (confirmed on the
    /// link's connection for commits, which `WAIT` blocks).
    pub fn confirmed_by_replicas(mut self, acks: ReplicaAcks) -> Committer {
        self.acks = acks;
        self
    }

    pub async fn run(self, mut queue: mpsc::UnboundedReceiver<Pending>) {
        while let Some(batch) = next_batch(&mut queue, MAX_BATCH_WRITES).await {
            self.commit(batch).await;
        }
    }

    async fn commit(&self, batch: Vec<Pending>) {
        let store = &self.store;
        let Some(Admitted {
            pendings: current,
            load_id,
            term,
            token,
        }) = admit(batch, &store.load_id, &*store.memory, &store.leadership)
        else {
            return;
        };
        // Split by size, keeping order.
        let mut rest = current;
        while !rest.is_empty() {
            let mut batch = Batch::new(&self.store.layout);
            let mut taken = 0;
            while taken < rest.len() && batch.bytes() < MAX_BATCH_BYTES {
                for write in &rest[taken].writes {
                    batch.push(write);
                }
                taken += 1;
            }
            let call = batch.finish(&token, &load_id);
            let chunk = rest.drain(..taken).collect();
            if !self.send(term, call, chunk).await {
                // Whatever follows was applied to memory after the failed
                // writes; memory is being reloaded, so it cannot commit.
                answer(rest, Err(unavailable("an earlier write to Redis failed")));
                return;
            }
        }
    }

    /// Runs the script by its hash, loading it first if Redis does not know
    /// it (after a restart or SCRIPT FLUSH); a NOSCRIPT answer ran nothing,
    /// so the retry cannot apply anything twice.
    async fn eval(&self, client: &Client, call: &Call) -> Result<i64, Error> {
        let run = || client.evalsha(self.script.sha1().clone(), call.keys(), call.args());
        match run().await {
            Err(error) if error.details().starts_with("NOSCRIPT") => {
                self.script.load(client).await?;
                run().await
            }
            result => result,
        }
    }

    /// Sends one script call; answers its waiters. Returns whether it applied.
    async fn send(&self, term: u64, call: Call, chunk: Vec<Pending>) -> bool {
        let started = Instant::now();
        self.store.metrics.commit_writes.observe(chunk.len() as f64);
        // `WAIT` counts the writes of the connection it is sent on.
        let client = self.store.link.commits();
        let outcome = match tokio::time::timeout(self.timeout, self.eval(&client, &call)).await {
            Err(_) => Outcome::Failed(CommitError::TimedOut(self.timeout)),
            Ok(Err(error)) if error.details().starts_with("FENCED") => Outcome::Fenced,
            Ok(Err(error)) => Outcome::Failed(CommitError::Redis(error.into())),
            Ok(Ok(_)) => match self.acks.confirm(&client, &self.store.layout.lock()).await {
                Ok(()) => Outcome::Applied,
                Err(error) => Outcome::Failed(CommitError::Redis(error)),
            },
        };
        self.store
            .metrics
            .commit_seconds
            .observe(started.elapsed().as_secs_f64());
        let store = &self.store;
        self.settling.settle(
            outcome,
            chunk,
            term,
            &store.leadership,
            &store.metrics,
            |term, delay| reload::spawn_restore(&self.loader, term, delay),
        )
    }
}

/// Why a group commit did not count; its waiters get a retryable 503 that
/// says which.
#[derive(Debug, thiserror::Error)]
enum CommitError {
    #[error("the write to Redis failed ({0})")]
    Redis(RedisError),
    #[error("the write to Redis failed (no answer within {0:?})")]
    TimedOut(Duration),
}
