//! Reading the whole state back from MySQL, as a new leader does before it
//! serves and a leader does after a failed write.
//!
//! Each load first sets a new load fence in the shard's lease row (its
//! row lock waits for a commit in flight, which holds the row shared),
//! then reads every table in one consistent snapshot taken after it: what
//! an earlier commit wrote is in the snapshot, and a commit made on
//! earlier memory that reaches MySQL later is refused (`ssq_commit`).
//! Each table is read in one pass in key order, grouped by queue, so a
//! load costs a few scans however many queues there are. A load retries
//! until it succeeds or the term ends.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Row};

use super::{MysqlError, MysqlStore, text};
use crate::queue::{Message, Queue};
use crate::service::shards::Placement;
use crate::store::codec;
use crate::store::current_epoch;
use crate::store::reload::{FencedLoad, Installing, Loaded};

pub struct Loader {
    store: MysqlStore,
    /// The longest wait between two attempts at loading.
    retry_every: Duration,
}

/// Why a load did not happen; it is retried.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Mysql(#[from] MysqlError),
    #[error("the leadership term ended")]
    TermEnded,
}

impl Loader {
    pub fn new(store: MysqlStore, retry_every: Duration) -> Loader {
        Loader { store, retry_every }
    }

    /// Sets a new load fence under this term's epoch, then loads.
    async fn load_fenced(&self, term: u64) -> Result<(Arc<str>, Loaded), LoadError> {
        let (current, epoch) = current_epoch(&self.store.leadership)
            .filter(|(t, _)| *t == term)
            .ok_or(LoadError::TermEnded)?;
        let load_id: Arc<str> = format!("{current}-{:032x}", crate::queue::random::uuid().as_u128()).into();
        let target = &self.store.target;
        let mut conn = target.connect().await?;
        let fenced = target
            .bounded(fence(&mut conn, self.store.shard, epoch, &load_id))
            .await?;
        if !fenced {
            return Err(LoadError::TermEnded);
        }
        let loaded = load(&mut conn, &self.store.placement, self.store.shard as usize).await?;
        tokio::spawn(conn.disconnect());
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
            store: "MySQL",
        }
    }

    fn fenced_load(&self, term: u64) -> impl Future<Output = Result<(Arc<str>, Loaded), LoadError>> + Send {
        self.load_fenced(term)
    }
}

/// Sets `load_id` as the shard's load fence if `epoch` still leads it,
/// once every commit in flight has finished (the row's lock).
async fn fence(conn: &mut Conn, shard: i32, epoch: i64, load_id: &str) -> Result<bool, MysqlError> {
    conn.query_drop("START TRANSACTION").await?;
    let fenced = async {
        conn.exec_drop("SELECT epoch FROM ssq_lease WHERE shard = ? FOR UPDATE", (shard,))
            .await?;
        conn.exec_drop(
            "UPDATE ssq_lease SET load_id = ? WHERE shard = ? AND epoch = ?",
            (load_id.as_bytes(), shard, epoch),
        )
        .await?;
        Ok::<_, MysqlError>(conn.affected_rows() == 1)
    }
    .await;
    match fenced {
        Ok(fenced) => {
            conn.query_drop("COMMIT").await?;
            Ok(fenced)
        }
        Err(error) => {
            let _ = conn.query_drop("ROLLBACK").await;
            Err(error)
        }
    }
}

/// A queue's rows as read: `(key, record)` pairs, decoded later.
type Keyed = HashMap<String, Vec<(String, String)>>;

/// Reads shard `shard`'s queues (every queue, unsharded) and, on the first
/// shard, the topics, in one snapshot.
pub async fn load(conn: &mut Conn, placement: &Placement, shard: usize) -> Result<Loaded, MysqlError> {
    conn.query_drop("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        .await?;
    conn.query_drop("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
        .await?;
    let ours = |name: &str| placement.shard_of(name) == shard;
    // The first shard holds the topics.
    let sns = match shard {
        0 => pairs(conn, "SELECT `key`, record FROM ssq_sns").await?,
        _ => Vec::new(),
    };
    let topics = crate::topic::Topics::restore(sns).unwrap_or_else(|error| {
        tracing::error!(%error, "the stored SNS topics cannot be read; they are left out");
        crate::topic::Topics::default()
    });
    let ceilings: HashMap<String, i64> = conn
        .query::<(Vec<u8>, i64), _>("SELECT name, ceiling FROM ssq_sequences")
        .await?
        .into_iter()
        .map(|(name, ceiling)| Ok((text(name)?, ceiling)))
        .collect::<Result<_, MysqlError>>()?;
    let records: Vec<(String, String)> = pairs(conn, "SELECT name, record FROM ssq_queues ORDER BY name")
        .await?
        .into_iter()
        .filter(|(name, _)| ours(name))
        .collect();
    let mut damaged = 0;
    let mut messages: HashMap<String, Vec<Message>> = HashMap::new();
    let mut rows = conn
        .query_iter("SELECT queue, seq, body, state FROM ssq_messages ORDER BY queue, seq")
        .await?;
    rows.for_each(|row: Row| {
        let Ok((queue, seq, body, state)) =
            mysql_async::from_row_opt::<(Vec<u8>, i64, Vec<u8>, Option<Vec<u8>>)>(row)
        else {
            damaged += 1;
            return;
        };
        let (Ok(queue), Ok(body)) = (String::from_utf8(queue), String::from_utf8(body)) else {
            damaged += 1;
            return;
        };
        if !ours(&queue) {
            return;
        }
        let state = state.and_then(|state| String::from_utf8(state).ok());
        match codec::decode_message(seq as u64, &body, state.as_deref()) {
            Ok(message) => messages.entry(queue).or_default().push(message),
            Err(error) => {
                tracing::error!(%queue, %error, "a stored message cannot be read; it is left out");
                damaged += 1;
            }
        }
    })
    .await?;
    drop(rows);
    let dedup = keyed(conn, "SELECT queue, `key`, record FROM ssq_dedup").await?;
    let attempts = keyed(conn, "SELECT queue, id, record FROM ssq_attempts").await?;
    conn.query_drop("COMMIT").await?;

    let mut loaded = Loaded {
        queues: Vec::with_capacity(records.len()),
        topics,
        messages: 0,
        damaged,
    };
    let (mut dedup, mut attempts) = (dedup, attempts);
    for (name, record) in records {
        let meta = match codec::decode_queue(&name, &record) {
            Ok(meta) => meta,
            Err(error) => {
                tracing::error!(%error, "a stored queue cannot be read; it is left out");
                loaded.damaged += 1;
                continue;
            }
        };
        let messages = messages.remove(&name).unwrap_or_default();
        loaded.messages += messages.len();
        let dedup = decoded(dedup.remove(&name), codec::decode_dedup);
        let next_seq = ceilings.get(&name).map_or(1, |&ceiling| ceiling as u64);
        let mut queue = Queue::restore(meta, next_seq, messages, dedup);
        queue.restore_attempts(decoded(attempts.remove(&name), codec::decode_attempt));
        loaded.queues.push(queue);
    }
    Ok(loaded)
}

/// A queue's `(key, record)` rows, each decoded; one that cannot be read
/// is left out.
fn decoded<T>(rows: Option<Vec<(String, String)>>, decode: fn(&str) -> Option<T>) -> Vec<(String, T)> {
    rows.unwrap_or_default()
        .into_iter()
        .filter_map(|(key, record)| Some((key, decode(&record)?)))
        .collect()
}

/// Every `(text, text)` row `query` selects.
async fn pairs(conn: &mut Conn, query: &str) -> Result<Vec<(String, String)>, MysqlError> {
    conn.query::<(Vec<u8>, Vec<u8>), _>(query)
        .await?
        .into_iter()
        .map(|(key, record)| Ok((text(key)?, text(record)?)))
        .collect()
}

/// Every `(queue, key, record)` row `query` selects, by queue.
async fn keyed(conn: &mut Conn, query: &str) -> Result<Keyed, MysqlError> {
    let mut by_queue = Keyed::new();
    for (queue, key, record) in conn.query::<(Vec<u8>, Vec<u8>, Vec<u8>), _>(query).await? {
        by_queue
            .entry(text(queue)?)
            .or_default()
            .push((text(key)?, text(record)?));
    }
    Ok(by_queue)
}
