//! Reading the whole state back from Postgres, as a new leader does before
//! it serves and a leader does after a failed write.
//!
//! Each load first sets a new load fence in the shard's lease row (its
//! update waits for a commit in flight, which holds the shard's fence),
//! then reads every table in one REPEATABLE READ snapshot taken after it:
//! what an earlier commit wrote is in the snapshot, and a commit made on
//! earlier memory that reaches Postgres later is refused (`ssq_commit`).
//! A load retries until it succeeds or the term ends.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio_postgres::{Client, IsolationLevel};

use super::schema::FENCE_CLASS;
use super::{PostgresError, PostgresStore, current_epoch};
use crate::queue::Queue;
use crate::service::shards::Placement;
use crate::store::codec;
use crate::store::reload::{FencedLoad, Installing, Loaded};

pub struct Loader {
    store: PostgresStore,
    /// The longest wait between two attempts at loading.
    retry_every: Duration,
}

/// Why a load did not happen; it is retried.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Postgres(#[from] PostgresError),
    #[error("the leadership term ended")]
    TermEnded,
}

impl Loader {
    pub fn new(store: PostgresStore, retry_every: Duration) -> Loader {
        Loader { store, retry_every }
    }

    /// Sets a new load fence under this term's epoch, then loads.
    async fn load_fenced(&self, term: u64) -> Result<(Arc<str>, Loaded), LoadError> {
        let (current, epoch) = current_epoch(&self.store.leadership)
            .filter(|(t, _)| *t == term)
            .ok_or(LoadError::TermEnded)?;
        let load_id: Arc<str> = format!("{current}-{:032x}", crate::queue::random::uuid().as_u128()).into();
        let target = &self.store.target;
        let mut client = target.connect().await?;
        let fenced = target
            .bounded(fence(&mut client, self.store.shard, epoch, &load_id))
            .await?;
        if !fenced {
            return Err(LoadError::TermEnded);
        }
        let shard = self.store.shard as usize;
        let loaded = load(&mut client, &self.store.placement, shard).await?;
        Ok((load_id, loaded))
    }
}

impl FencedLoad for Loader {
    type Error = LoadError;

    fn installing(&self) -> Installing<'_> {
        Installing {
            leadership: &self.store.leadership,
            memory: &self.store.memory,
            load_id: &self.store.load_id,
            retry_every: self.retry_every,
            store: "Postgres",
        }
    }

    fn fenced_load(&self, term: u64) -> impl Future<Output = Result<(Arc<str>, Loaded), LoadError>> + Send {
        self.load_fenced(term)
    }
}

/// Sets `load_id` as the shard's load fence if `epoch` still leads it,
/// once every commit in flight has finished (`FENCE_CLASS`).
async fn fence(client: &mut Client, shard: i32, epoch: i64, load_id: &str) -> Result<bool, PostgresError> {
    let transaction = client.transaction().await?;
    transaction
        .execute("SELECT pg_advisory_xact_lock($1, $2)", &[&FENCE_CLASS, &shard])
        .await?;
    let fenced = transaction
        .execute(
            "UPDATE ssq_lease SET load_id = $3 WHERE shard = $1 AND epoch = $2",
            &[&shard, &epoch, &load_id],
        )
        .await?;
    transaction.commit().await?;
    Ok(fenced == 1)
}

/// Reads shard `shard`'s queues (every queue, unsharded) and, on the first
/// shard, the topics, in one snapshot.
pub async fn load(client: &mut Client, placement: &Placement, shard: usize) -> Result<Loaded, PostgresError> {
    let snapshot = client
        .build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await?;
    // The first shard holds the topics.
    let sns: Vec<(String, String)> = match shard {
        0 => snapshot
            .query("SELECT key, record FROM ssq_sns", &[])
            .await?
            .iter()
            .map(|row| (row.get(0), row.get(1)))
            .collect(),
        _ => Vec::new(),
    };
    let topics = crate::topic::Topics::restore(sns).unwrap_or_else(|error| {
        tracing::error!(%error, "the stored SNS topics cannot be read; they are left out");
        crate::topic::Topics::default()
    });
    let ceilings: HashMap<String, i64> = snapshot
        .query("SELECT name, ceiling FROM ssq_sequences", &[])
        .await?
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    let records = snapshot
        .query("SELECT name, record FROM ssq_queues ORDER BY name", &[])
        .await?;
    let mut loaded = Loaded {
        queues: Vec::with_capacity(records.len()),
        topics,
        messages: 0,
        damaged: 0,
    };
    for row in records {
        let (name, record): (String, &str) = (row.get(0), row.get(1));
        if placement.shard_of(&name) != shard {
            continue;
        }
        let meta = match codec::decode_queue(&name, record) {
            Ok(meta) => meta,
            Err(error) => {
                tracing::error!(%error, "a stored queue cannot be read; it is left out");
                loaded.damaged += 1;
                continue;
            }
        };
        let rows = snapshot
            .query(
                "SELECT b.seq, b.record, s.record FROM ssq_bodies b \
                 LEFT JOIN ssq_states s ON s.queue = b.queue AND s.seq = b.seq \
                 WHERE b.queue = $1 ORDER BY b.seq",
                &[&name],
            )
            .await?;
        let mut messages = Vec::with_capacity(rows.len());
        for row in rows {
            let seq = row.get::<_, i64>(0) as u64;
            match codec::decode_message(seq, row.get(1), row.get(2)) {
                Ok(message) => messages.push(message),
                Err(error) => {
                    tracing::error!(queue = %name, %error, "a stored message cannot be read; it is left out");
                    loaded.damaged += 1;
                }
            }
        }
        loaded.messages += messages.len();
        let dedup = records_of(
            &snapshot,
            "SELECT key, record FROM ssq_dedup WHERE queue = $1",
            &name,
            codec::decode_dedup,
        )
        .await?;
        let attempts = records_of(
            &snapshot,
            "SELECT id, record FROM ssq_attempts WHERE queue = $1",
            &name,
            codec::decode_attempt,
        )
        .await?;
        let next_seq = ceilings.get(&name).map_or(1, |&ceiling| ceiling as u64);
        let mut queue = Queue::restore(meta, next_seq, messages, dedup);
        queue.restore_attempts(attempts);
        loaded.queues.push(queue);
    }
    snapshot.commit().await?;
    Ok(loaded)
}

/// One queue's `(key, record)` rows, each decoded; one that cannot be read
/// is left out.
async fn records_of<T>(
    snapshot: &tokio_postgres::Transaction<'_>,
    query: &str,
    queue: &str,
    decode: fn(&str) -> Option<T>,
) -> Result<Vec<(String, T)>, PostgresError> {
    Ok(snapshot
        .query(query, &[&queue])
        .await?
        .iter()
        .filter_map(|row| Some((row.get(0), decode(row.get(1))?)))
        .collect())
}
