//! The disk's group committer: whatever writes wait are written in one
//! SQLite transaction, on a blocking thread (a sync takes milliseconds,
//! which the threads that serve SQS calls must not wait out), then every
//! waiter is answered. A failed commit rolls back whole: its waiters get a
//! retryable 503, the instance stops serving and loads memory again from
//! the disk, backing off while writes keep failing (a full disk), and
//! serves again by itself once a load succeeds.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::{DiskStore, Loaded};
use crate::journal::{Memory, Pending};
use crate::leader::Leadership;
use crate::metrics::Metrics;
use crate::store::group_commit::{answer, keep_current, next_batch, reload_delay, unavailable};

/// The most requests one transaction carries.
const MAX_BATCH: usize = 512;

/// The longest wait between two loads after failed writes.
const MAX_RELOAD_DELAY: Duration = Duration::from_secs(1);

pub struct DiskCommitter {
    pub store: Arc<DiskStore>,
    pub memory: Arc<dyn Memory>,
    pub leadership: Arc<Leadership>,
    pub metrics: Arc<Metrics>,
}

impl DiskCommitter {
    /// Serves the state loaded at start, and commits what the service
    /// submits until the service's side of `journal` closes.
    pub async fn run(self, first: Loaded, mut journal: mpsc::UnboundedReceiver<Pending>) {
        self.serve(first);
        let mut failures = 0u32;
        while let Some(batch) = next_batch(&mut journal, MAX_BATCH).await {
            let current = keep_current(
                batch,
                self.memory.generation(),
                "the state it changed was dropped when memory was loaded again",
            );
            if current.is_empty() {
                continue;
            }
            let store = self.store.clone();
            let started = Instant::now();
            self.metrics.commit_writes.observe(current.len() as f64);
            let (current, result) = tokio::task::spawn_blocking(move || {
                let result = store.commit(current.iter().flat_map(|pending| &pending.writes));
                (current, result)
            })
            .await
            .expect("a commit does not panic");
            self.metrics
                .commit_seconds
                .observe(started.elapsed().as_secs_f64());
            match result {
                Ok(()) => {
                    failures = 0;
                    answer(current, Ok(()));
                }
                Err(error) => {
                    tracing::warn!(%error, writes = current.len(), "a write to disk failed: loading the state again before serving");
                    self.metrics.commit_failures.inc();
                    answer(
                        current,
                        Err(unavailable(format!("the write to disk failed ({error})"))),
                    );
                    if self.leadership.standalone_pause() {
                        failures += 1;
                        self.load_and_serve(reload_delay(failures, MAX_RELOAD_DELAY))
                            .await;
                    }
                }
            }
        }
    }

    /// Loads the state from disk, after `delay`, retrying until it loads,
    /// then serves it.
    async fn load_and_serve(&self, delay: Duration) {
        tokio::time::sleep(delay).await;
        let mut retry = Duration::from_millis(50);
        loop {
            let store = self.store.clone();
            match tokio::task::spawn_blocking(move || store.load())
                .await
                .expect("a load does not panic")
            {
                Ok(loaded) => return self.serve(loaded),
                Err(error) => {
                    tracing::error!(%error, "loading the state from disk failed; retrying");
                    tokio::time::sleep(retry).await;
                    retry = (retry * 2).min(MAX_RELOAD_DELAY);
                }
            }
        }
    }

    /// Puts what a load read in memory and serves it.
    fn serve(&self, loaded: Loaded) {
        let (queues, messages, took) = (loaded.queues.len(), loaded.messages, loaded.took);
        if self
            .leadership
            .standalone_loaded(|| self.memory.install(loaded.queues, loaded.topics))
        {
            tracing::info!(
                queues,
                messages,
                millis = took.as_millis() as u64,
                file = %self.store.file().display(),
                "state loaded from disk"
            );
            // In a task of its own: their commits come through this
            // committer, which must be running to make them.
            let memory = self.memory.clone();
            tokio::spawn(async move { memory.create_configured_queues().await });
        }
    }
}

/// With `--data-sync everysec`: syncs what was written about once a second.
pub async fn sync_every_second(store: Arc<DiskStore>) {
    let mut every = tokio::time::interval(Duration::from_secs(1));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        let store = store.clone();
        let synced = tokio::task::spawn_blocking(move || store.sync()).await;
        if let Ok(Err(error)) = synced {
            tracing::warn!(%error, "syncing the data file failed; retrying in a second");
        }
    }
}
