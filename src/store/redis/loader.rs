//! Reading the whole state back from Redis.
//!
//! A new leader loads every queue and message before it serves; so does a
//! leader whose write to Redis failed, since memory may then differ from what
//! Redis holds. Loading runs in its own task while the elector keeps renewing
//! the lock, and it retries until it succeeds or the term ends.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use fred::prelude::*;
use fred::types::scripts::Script;
use fred::types::{ClusterHash, CustomCommand};

use super::RedisStore;
use crate::queue::Queue;
use crate::store::codec;
use crate::store::reload::{FencedLoad, Installing, Loaded};

/// HSCAN pages aim at about this many bytes: many small messages per round
/// trip, yet no giant reply when messages are large.
const PAGE_BYTES: usize = 4 * 1024 * 1024;

pub struct Loader {
    store: RedisStore,
    /// The longest wait between two attempts at loading (the lock retry
    /// interval): a leader serves within it of Redis answering again.
    retry_every: Duration,
    /// `load_fence.lua`, run before every load.
    fence_script: Script,
}

/// Redis failed to answer while a load read `key`; the load is retried.
#[derive(Debug, thiserror::Error)]
#[error("reading {key}: {error}")]
pub struct LoadError {
    pub key: String,
    pub error: fred::error::Error,
}

impl LoadError {
    fn new(key: String, error: fred::error::Error) -> LoadError {
        LoadError { key, error }
    }
}

impl Loader {
    /// A loader that retries at most `retry_every` apart.
    pub fn new(store: RedisStore, retry_every: Duration) -> Loader {
        Loader {
            store,
            retry_every,
            fence_script: Script::from_lua(include_str!("lua/load_fence.lua")),
        }
    }

    /// Sets a new load fence, then loads: a commit made on the memory of an
    /// earlier load can no longer change what this one reads, however late
    /// it reaches Redis (commit.lua refuses it).
    async fn load_fenced(&self, term: u64) -> Result<(Arc<str>, Loaded), LoadError> {
        let fence = self.store.layout.load_fence();
        let Some((current, token)) = self.store.leadership.current_term().filter(|(t, _)| *t == term) else {
            return Err(LoadError::new(
                fence,
                Error::new(ErrorKind::Unknown, "the term ended"),
            ));
        };
        let load_id: Arc<str> = format!("{current}-{:032x}", crate::queue::random::uuid().as_u128()).into();
        self.fence_script
            .evalsha_with_reload::<i64, _, _>(
                &self.store.link.commands(),
                vec![self.store.layout.lock(), fence.clone()],
                vec![token.to_string(), load_id.to_string()],
            )
            .await
            .map_err(|error| LoadError::new(fence.clone(), error))?;
        // HSCAN's cursor means something only to the Redis process that
        // gave it: a scan continued on a restarted Redis (its hash tables
        // rebuilt, with another seed) or on another primary skips and
        // repeats entries without any error, so a load during which the
        // link connected again or moved is thrown away and made again.
        let epoch = self.store.link.epoch();
        let loaded = self.load().await?;
        if self.store.link.epoch() != epoch {
            return Err(LoadError::new(
                fence,
                Error::new(
                    ErrorKind::IO,
                    "the connection to Redis was made again during the load",
                ),
            ));
        }
        Ok((load_id, loaded))
    }

    pub async fn load(&self) -> Result<Loaded, LoadError> {
        let records: HashMap<String, String> = self
            .store
            .link
            .commands()
            .hgetall(self.store.layout.queues())
            .await
            .map_err(|error| LoadError::new(self.store.layout.queues(), error))?;
        let sequences: HashMap<String, String> = self
            .store
            .link
            .commands()
            .hgetall(self.store.layout.sequences())
            .await
            .map_err(|error| LoadError::new(self.store.layout.sequences(), error))?;
        let sns: HashMap<String, String> = self
            .store
            .link
            .commands()
            .hgetall(self.store.layout.sns())
            .await
            .map_err(|error| LoadError::new(self.store.layout.sns(), error))?;
        let topics = crate::topic::Topics::restore(sns.into_iter().collect()).unwrap_or_else(|error| {
            // Refused whole rather than served in part: topics are rebuilt
            // together, a subscription needs its topic.
            tracing::error!(%error, "the stored SNS topics cannot be read; they are left out");
            crate::topic::Topics::default()
        });
        let mut loaded = Loaded {
            queues: Vec::with_capacity(records.len()),
            topics,
            messages: 0,
            damaged: 0,
        };
        for (name, record) in records {
            let meta = match codec::decode_queue(&name, &record) {
                Ok(meta) => meta,
                Err(error) => {
                    tracing::error!(%error, "a stored queue cannot be read; it is left out");
                    loaded.damaged += 1;
                    continue;
                }
            };
            let mut states = HashMap::new();
            self.scan(&self.store.layout.states(&name), |seq, state| {
                states.insert(seq, state);
            })
            .await?;
            let mut messages = Vec::new();
            let mut damaged = 0;
            self.scan(&self.store.layout.bodies(&name), |seq, body| {
                // A message never received has no state record.
                match codec::decode_message(seq, &body, states.get(&seq).map(String::as_str)) {
                    Ok(message) => messages.push(message),
                    Err(error) => {
                        tracing::error!(queue = %name, %error, "a stored message cannot be read; it is left out");
                        damaged += 1;
                    }
                }
            })
            .await?;
            // HSCAN may return an entry twice (while Redis rehashes).
            messages.sort_unstable_by_key(|message| message.seq);
            messages.dedup_by_key(|message| message.seq);
            loaded.damaged += damaged;
            loaded.messages += messages.len();
            // FIFO queues also keep deduplication ids and receive attempts.
            let (dedup, attempts) = match meta.attributes.fifo_queue {
                true => (
                    self.records(self.store.layout.dedup(&name), codec::decode_dedup)
                        .await?,
                    self.records(self.store.layout.attempts(&name), codec::decode_attempt)
                        .await?,
                ),
                false => (Vec::new(), Vec::new()),
            };
            let next_seq = sequences.get(&name).and_then(|s| s.parse().ok()).unwrap_or(1);
            let mut queue = Queue::restore(meta, next_seq, messages, dedup);
            queue.restore_attempts(attempts);
            loaded.queues.push(queue);
        }
        Ok(loaded)
    }

    /// Walks a hash with HSCAN, calling `each` with every field and value.
    /// A hash of records, each decoded; one that cannot be read is left out.
    async fn records<T>(
        &self,
        key: String,
        decode: fn(&str) -> Option<T>,
    ) -> Result<Vec<(String, T)>, LoadError> {
        let entries: HashMap<String, String> = self
            .store
            .link
            .commands()
            .hgetall(&key)
            .await
            .map_err(|error| LoadError::new(key.clone(), error))?;
        Ok(entries
            .into_iter()
            .filter_map(|(field, text)| Some((field, decode(&text)?)))
            .collect())
    }

    async fn scan(&self, key: &str, mut each: impl FnMut(u64, String)) -> Result<(), LoadError> {
        let mut cursor = "0".to_string();
        let mut count = 1_000usize;
        loop {
            let (next, page): (String, Vec<String>) = self
                .store
                .link
                .commands()
                .custom(
                    CustomCommand::new_static("HSCAN", ClusterHash::FirstKey, false),
                    vec![key.to_string(), cursor, "COUNT".into(), count.to_string()],
                )
                .await
                .map_err(|error| LoadError::new(key.to_string(), error))?;
            let entries = page.len() / 2;
            let bytes: usize = page.iter().map(String::len).sum();
            let mut page = page.into_iter();
            while let (Some(field), Some(value)) = (page.next(), page.next()) {
                if let Ok(seq) = field.parse() {
                    each(seq, value);
                }
            }
            if let Some(per_entry) = bytes.checked_div(entries) {
                count = (PAGE_BYTES / per_entry.max(1)).clamp(16, 10_000);
            }
            if next == "0" {
                return Ok(());
            }
            cursor = next;
        }
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
            store: "Redis",
        }
    }

    fn fenced_load(&self, term: u64) -> impl Future<Output = Result<(Arc<str>, Loaded), LoadError>> + Send {
        self.load_fenced(term)
    }
}
