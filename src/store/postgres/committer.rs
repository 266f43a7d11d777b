//! Group commit on Postgres: one task turns every write waiting into one
//! call of `ssq_commit` (`batch.rs`), on a connection of its own.
//!
//! As on Redis (`store/redis/committer.rs`), only one batch is in flight,
//! so batches apply in the order memory made them, and failures keep
//! memory honest:
//! - FENCED (SQLSTATE SSQFN): another instance took the lease. Every
//!   waiter gets a 503 and this instance steps down at once.
//! - STALE (SSQST), any other error, or no answer in time: the batch may
//!   or may not have applied. Every waiter gets a 503, the instance stops
//!   serving, drops memory and loads it again from Postgres, which holds
//!   the truth either way; a lost connection is made again first.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{Mutex, mpsc};
use tokio_postgres::{Client, Statement};

use super::batch::{Batch, CALL};
use super::loader::Loader;
use super::{PostgresError, PostgresStore};
use crate::journal::Pending;
use crate::store::group_commit::{Admitted, Outcome, Settling, admit, answer, next_batch, unavailable};
use crate::store::reload;

/// A batch stops growing at this many bytes of records (one more write
/// may cross it).
const MAX_BATCH_BYTES: usize = 8 * 1024 * 1024;
const MAX_BATCH_WRITES: usize = 1_024;

/// The SQLSTATE `ssq_commit` raises when another instance leads.
const FENCED: &str = "SSQFN";

pub struct Committer {
    store: PostgresStore,
    loader: Arc<Loader>,
    /// The connection commits go on, and the call prepared on it.
    connection: Mutex<Option<(Client, Statement)>>,
    settling: Settling,
}

/// Why a group commit did not count.
#[derive(Debug, thiserror::Error)]
#[error("the write to Postgres failed ({0})")]
struct CommitError(#[from] PostgresError);

impl Committer {
    pub fn new(store: PostgresStore, loader: Arc<Loader>, max_reload_delay: Duration) -> Committer {
        Committer {
            store,
            loader,
            connection: Mutex::new(None),
            settling: Settling::new(max_reload_delay),
        }
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
        let Some(epoch) = crate::leader::LeaderInfo::parse(&token).map(|info| info.epoch as i64) else {
            answer(current, Err(unavailable("the lease's token has no epoch")));
            return;
        };
        let mut rest = current;
        while !rest.is_empty() {
            let mut batch = Batch::default();
            let mut taken = 0;
            while taken < rest.len() && batch.bytes() < MAX_BATCH_BYTES {
                for write in &rest[taken].writes {
                    batch.push(write);
                }
                taken += 1;
            }
            let chunk: Vec<Pending> = rest.drain(..taken).collect();
            if !self.send(term, epoch, &load_id, batch, chunk).await {
                answer(rest, Err(unavailable("an earlier write to Postgres failed")));
                return;
            }
        }
    }

    /// Runs one call; answers its waiters. Returns whether it applied.
    async fn send(&self, term: u64, epoch: i64, load_id: &str, batch: Batch, chunk: Vec<Pending>) -> bool {
        let started = Instant::now();
        self.store.metrics.commit_writes.observe(chunk.len() as f64);
        let outcome = self.call(epoch, load_id, batch).await;
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

    async fn call(&self, epoch: i64, load_id: &str, batch: Batch) -> Outcome<CommitError> {
        match self.try_call(epoch, load_id, batch).await {
            Ok(()) => Outcome::Applied,
            Err(PostgresError::Call(error)) if error.code().is_some_and(|code| code.code() == FENCED) => {
                Outcome::Fenced
            }
            Err(error) => Outcome::Failed(error.into()),
        }
    }

    async fn try_call(&self, epoch: i64, load_id: &str, mut batch: Batch) -> Result<(), PostgresError> {
        let target = &self.store.target;
        let mut connection = self.connection.lock().await;
        // A connection that broke while idle (Postgres restarted) is made
        // again before the call rather than failing it.
        if connection.as_ref().is_some_and(|(client, _)| client.is_closed()) {
            *connection = None;
        }
        if connection.is_none() {
            let client = target.connect().await?;
            let statement = target.bounded(client.prepare(CALL)).await?;
            *connection = Some((client, statement));
        }
        let (client, statement) = connection.as_ref().expect("connected above");
        let bytes = batch.bytes();
        let arguments = batch.arguments();
        let mut parameters: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
            vec![&self.store.shard, &epoch, &load_id];
        parameters.extend(arguments.parameters());
        let result = (target.bounded_for(bytes, client.execute(statement, &parameters))).await;
        if result.as_ref().is_err_and(PostgresError::connection_lost) {
            *connection = None;
        }
        result.map(drop)
    }
}
