//! The group commit of the SQL stores (Postgres, MySQL): one task takes
//! every write waiting, folds it (`batch.rs`) and hands it to the store's
//! commit procedure in one call ([`FoldedCall`]), fenced by the lease's
//! epoch and the load the writes were made on.
//!
//! As on Redis (`store/redis/committer.rs`), only one batch is in flight,
//! so batches apply in the order memory made them, and failures keep
//! memory honest:
//! - fenced (another instance took the lease): every waiter gets a 503
//!   and this instance steps down at once;
//! - stale (memory was loaded again since), any other error, or no answer
//!   in time: the batch may or may not have applied. Every waiter gets a
//!   503, the instance stops serving, drops memory and loads it again
//!   from the store, which holds the truth either way.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::batch::Batch;
use super::group_commit::{Admitted, Outcome, Settling, admit, answer, next_batch, unavailable};
use super::load_id::LoadId;
use super::reload::{self, FencedLoad};
use crate::cluster::election::LoadState;
use crate::journal::{Memory, Pending};
use crate::leader::Leadership;
use crate::metrics::Metrics;

/// A batch stops growing at this many writes.
const MAX_BATCH_WRITES: usize = 1_024;

/// One call of a store's commit procedure.
pub trait FoldedCall: Send + Sync + 'static {
    type Error: std::error::Error + Send + Sync + 'static;

    /// The store's name, for messages.
    const STORE: &'static str;

    /// A batch stops growing at this many bytes of records (one more
    /// request's writes may cross it).
    fn max_batch_bytes(&self) -> usize;

    /// Commits `batch` whole or not at all, if the shard's lease still has
    /// `epoch` and its load fence is `load_id`.
    fn call(
        &self,
        epoch: i64,
        load_id: &str,
        batch: Batch,
    ) -> impl Future<Output = Outcome<Self::Error>> + Send;
}

/// What a committer keeps in step with its store: the shard's memory,
/// the load it came from and the leadership whose epoch fences it.
pub struct Shard {
    pub memory: Arc<dyn Memory>,
    pub leadership: Arc<Leadership>,
    pub metrics: Arc<Metrics>,
    pub load_id: Arc<LoadId>,
}

struct Committer<C, L> {
    call: C,
    shard: Shard,
    loader: Arc<L>,
    settling: Settling,
}

/// Starts a shard's committer on `journal`, reloading through `loader`
/// after a failed write (waiting at most `retry_every` × 4 between
/// reloads); answers how a new term loads the shard.
pub fn start<C: FoldedCall, L: FencedLoad>(
    call: C,
    shard: Shard,
    loader: Arc<L>,
    retry_every: Duration,
    journal: mpsc::UnboundedReceiver<Pending>,
) -> LoadState {
    let committer = Committer::new(call, shard, loader.clone(), retry_every * 4);
    tokio::spawn(committer.run(journal));
    Arc::new(move |term| reload::spawn_restore(&loader, term, Duration::ZERO))
}

impl<C: FoldedCall, L: FencedLoad> Committer<C, L> {
    fn new(call: C, shard: Shard, loader: Arc<L>, max_reload_delay: Duration) -> Committer<C, L> {
        Committer {
            call,
            shard,
            loader,
            settling: Settling::new(max_reload_delay),
        }
    }

    async fn run(self, mut queue: mpsc::UnboundedReceiver<Pending>) {
        while let Some(batch) = next_batch(&mut queue, MAX_BATCH_WRITES).await {
            self.commit(batch).await;
        }
    }

    async fn commit(&self, batch: Vec<Pending>) {
        let shard = &self.shard;
        let Some(Admitted {
            pendings: current,
            load_id,
            term,
            token,
        }) = admit(batch, &shard.load_id, &*shard.memory, &shard.leadership)
        else {
            return;
        };
        let Some(epoch) = crate::leader::LeaderInfo::parse(&token).map(|info| info.epoch as i64) else {
            answer(current, Err(unavailable("the lease's token has no epoch")));
            return;
        };
        let max_bytes = self.call.max_batch_bytes();
        let mut rest = current;
        while !rest.is_empty() {
            let mut batch = Batch::default();
            let mut taken = 0;
            while taken < rest.len() && batch.bytes() < max_bytes {
                for write in &rest[taken].writes {
                    batch.push(write);
                }
                taken += 1;
            }
            let chunk: Vec<Pending> = rest.drain(..taken).collect();
            if !self.send(term, epoch, &load_id, batch, chunk).await {
                let why = format!("an earlier write to {} failed", C::STORE);
                answer(rest, Err(unavailable(why)));
                return;
            }
        }
    }

    /// Runs one call; answers its waiters. Returns whether it applied.
    async fn send(&self, term: u64, epoch: i64, load_id: &str, batch: Batch, chunk: Vec<Pending>) -> bool {
        let shard = &self.shard;
        let started = Instant::now();
        shard.metrics.commit_writes.observe(chunk.len() as f64);
        let outcome = self.call.call(epoch, load_id, batch).await;
        shard
            .metrics
            .commit_seconds
            .observe(started.elapsed().as_secs_f64());
        self.settling.settle(
            outcome,
            chunk,
            term,
            &shard.leadership,
            &shard.metrics,
            |term, delay| reload::spawn_restore(&self.loader, term, delay),
        )
    }
}
