//! What a group-backed store's loader (Redis's, Postgres's) does when a
//! leadership term begins and after a failed write: load the whole state
//! under a new load fence, retrying until it succeeds or the term ends,
//! then install it and let the leader serve.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::load_id::LoadId;
use crate::journal::Memory;
use crate::leader::Leadership;
use crate::queue::Queue;

/// What a load found.
pub struct Loaded {
    pub queues: Vec<Queue>,
    pub topics: crate::topic::Topics,
    pub messages: usize,
    /// Records that could not be read: logged and left out.
    pub damaged: usize,
}

/// A store's loader: where the state it loads goes, and one load under a
/// new fence.
pub(crate) trait FencedLoad: Send + Sync + 'static {
    type Error: std::fmt::Display + Send;

    fn installing(&self) -> Installing<'_>;

    /// Sets a new load fence under term `term`, then loads: the fence's id
    /// and what it read.
    fn fenced_load(&self, term: u64) -> impl Future<Output = Result<(Arc<str>, Loaded), Self::Error>> + Send;
}

/// Loads the state for leadership term `term` in the background after
/// `delay` (reloads after failed writes back off, so that a store that
/// answers reads but refuses writes is not read whole many times a
/// second), then lets the leader serve.
pub(crate) fn spawn_restore<L: FencedLoad>(loader: &Arc<L>, term: u64, delay: Duration) {
    let loader = loader.clone();
    tokio::spawn(async move {
        tokio::time::sleep(delay).await;
        loader
            .installing()
            .restore(term, || loader.fenced_load(term))
            .await
    });
}

/// Where loaded state goes, and how often a failed load is tried again.
pub(crate) struct Installing<'a> {
    pub leadership: &'a Leadership,
    pub memory: &'a Arc<dyn Memory>,
    pub load_id: &'a LoadId,
    /// The longest wait between two attempts (the lock retry interval): a
    /// leader serves within it of the store answering again.
    pub retry_every: Duration,
    /// The store's name, for the log.
    pub store: &'static str,
}

impl Installing<'_> {
    /// Runs `fenced_load` (which sets a new load fence, then loads, and
    /// returns the fence's id with what it read) until it succeeds or term
    /// `term` ends; installs what it read as that term's memory.
    pub(crate) async fn restore<F, E>(&self, term: u64, mut fenced_load: impl FnMut() -> F)
    where
        F: Future<Output = Result<(Arc<str>, Loaded), E>>,
        E: std::fmt::Display,
    {
        let mut delay = Duration::from_millis(50).min(self.retry_every);
        while self.leadership.holds_term(term) {
            let started = Instant::now();
            match fenced_load().await {
                Ok((load_id, loaded)) => {
                    let (queues, messages, damaged) = (loaded.queues.len(), loaded.messages, loaded.damaged);
                    let memory = self.memory;
                    if self.leadership.restored_with(term, || {
                        self.load_id
                            .install(load_id, &**memory, loaded.queues, loaded.topics)
                    }) {
                        tracing::info!(
                            store = self.store,
                            queues,
                            messages,
                            damaged,
                            millis = started.elapsed().as_millis() as u64,
                            "state loaded"
                        );
                        memory.create_configured_queues().await;
                    }
                    return;
                }
                Err(error) => {
                    tracing::warn!(store = self.store, %error, "loading the state failed; retrying");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(self.retry_every);
                }
            }
        }
    }
}
