//! Group commit: one task turns every write waiting into one fenced Lua call.
//!
//! Writes arrive in the order memory applied them (the service submits a
//! queue's writes while it holds that queue's lock). The committer takes the
//! first, then everything else already waiting, up to a size cap, and sends
//! them in a single `EVALSHA` round trip; only one batch is in flight, so
//! batches apply in order. Under load the batches grow by themselves, which is
//! how durability costs little throughput.
//!
//! Failure handling keeps memory honest:
//! - FENCED: another instance leads. Every waiter gets a 503 and this one
//!   steps down at once.
//! - any other error or a timeout: the batch may or may not have applied.
//!   Every waiter gets a 503, the instance stops serving, drops memory and
//!   reloads it from Redis, which holds the truth either way. Writes queued
//!   behind the failed batch belong to the old memory and fail too.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fred::prelude::*;
use fred::types::scripts::Script;
use tokio::sync::mpsc;

use super::codec;
use super::layout::Layout;
use super::loader::Loader;
use super::{Pending, Write};
use crate::error::{ErrorCode, SqsError};
use crate::leader::{Leadership, StepDown};
use crate::metrics::Metrics;
use crate::queue::Change;
use crate::service::Service;

/// A batch stops growing at this many bytes of arguments (one more write
/// may cross it): large messages then commit in several round trips rather
/// than one huge script call.
const MAX_BATCH_BYTES: usize = 8 * 1024 * 1024;
const MAX_BATCH_WRITES: usize = 1_024;

pub struct Committer {
    pub client: Client,
    pub layout: Layout,
    pub script: Script,
    pub leadership: Arc<Leadership>,
    pub service: Arc<Service>,
    pub loader: Arc<Loader>,
    pub metrics: Arc<Metrics>,
    pub timeout: Duration,
}

impl Committer {
    pub fn new(
        client: Client,
        layout: Layout,
        leadership: Arc<Leadership>,
        service: Arc<Service>,
        loader: Arc<Loader>,
        metrics: Arc<Metrics>,
        timeout: Duration,
    ) -> Committer {
        Committer {
            client,
            layout,
            script: Script::from_lua(include_str!("../lua/commit.lua")),
            leadership,
            service,
            loader,
            metrics,
            timeout,
        }
    }

    pub async fn run(self, mut queue: mpsc::UnboundedReceiver<Pending>) {
        let mut batch = Vec::new();
        while let Some(first) = queue.recv().await {
            batch.push(first);
            while batch.len() < MAX_BATCH_WRITES {
                match queue.try_recv() {
                    Ok(next) => batch.push(next),
                    Err(_) => break,
                }
            }
            self.commit(std::mem::take(&mut batch)).await;
        }
    }

    async fn commit(&self, batch: Vec<Pending>) {
        let generation = self.service.generation();
        let (current, stale): (Vec<Pending>, Vec<Pending>) =
            batch.into_iter().partition(|p| p.generation == generation);
        answer(
            stale,
            Err(unavailable(
                "the state it changed was dropped by a change of leadership",
            )),
        );
        let Some((term, token)) = self.leadership.current_term() else {
            answer(current, Err(unavailable("this instance is not the leader")));
            return;
        };
        // Split by size, keeping order.
        let mut rest = current.into_iter().peekable();
        while rest.peek().is_some() {
            let mut args = Args::new(&self.layout, token.clone());
            let mut chunk = Vec::new();
            while let Some(pending) = rest.next_if(|_| args.bytes < MAX_BATCH_BYTES) {
                for write in &pending.writes {
                    args.push(write);
                }
                chunk.push(pending);
            }
            if !self.send(term, args, chunk).await {
                // Whatever follows was applied to memory after the failed
                // writes; memory is being reloaded, so it cannot commit.
                answer(
                    rest.collect(),
                    Err(unavailable("an earlier write to Redis failed")),
                );
                return;
            }
        }
    }

    /// Sends one script call; answers its waiters. Returns whether it applied.
    async fn send(&self, term: u64, args: Args<'_>, chunk: Vec<Pending>) -> bool {
        let started = Instant::now();
        self.metrics.commit_writes.observe(chunk.len() as f64);
        let result: Result<Result<i64, Error>, _> = tokio::time::timeout(
            self.timeout,
            self.script
                .evalsha_with_reload(&self.client, args.keys, args.argv),
        )
        .await;
        self.metrics
            .commit_seconds
            .observe(started.elapsed().as_secs_f64());
        match result {
            Ok(Ok(_)) => {
                answer(chunk, Ok(()));
                true
            }
            Ok(Err(error)) if error.details().starts_with("FENCED") => {
                answer(
                    chunk,
                    Err(unavailable("another instance has taken over as leader")),
                );
                self.leadership.step_down(Some(term), StepDown::Fenced);
                false
            }
            failed => {
                let why = match failed {
                    Ok(Err(error)) => error.to_string(),
                    _ => format!("no answer within {:?}", self.timeout),
                };
                tracing::warn!(error = %why, writes = chunk.len(), "a write to Redis failed: reloading state before serving again");
                answer(
                    chunk,
                    Err(unavailable(&format!("the write to Redis failed ({why})"))),
                );
                self.metrics.commit_failures.inc();
                if self.leadership.begin_resync(term) {
                    self.loader.spawn_restore(term);
                }
                false
            }
        }
    }
}

fn unavailable(why: &str) -> SqsError {
    SqsError::new(
        ErrorCode::ServiceUnavailable,
        format!("ssq could not make this change durable: {why}. Nothing was acknowledged; retry."),
    )
}

fn answer(pendings: Vec<Pending>, result: Result<(), SqsError>) {
    for pending in pendings {
        let _ = pending.done.send(result.clone());
    }
}

/// The KEYS and ARGV of one commit script call.
struct Args<'a> {
    layout: &'a Layout,
    keys: Vec<String>,
    key_index: HashMap<String, usize>,
    argv: Vec<String>,
    bytes: usize,
}

impl<'a> Args<'a> {
    fn new(layout: &'a Layout, token: String) -> Args<'a> {
        Args {
            layout,
            keys: vec![layout.lock(), layout.queues(), layout.sequences()],
            key_index: HashMap::new(),
            argv: vec![token],
            bytes: 0,
        }
    }

    /// The 1-based KEYS index of `key`, as the script expects it.
    fn key(&mut self, key: String) -> String {
        let next = self.keys.len() + 1;
        let index = *self.key_index.entry(key.clone()).or_insert_with(|| {
            self.keys.push(key);
            next
        });
        index.to_string()
    }

    fn op(&mut self, parts: Vec<String>) {
        self.bytes += parts.iter().map(String::len).sum::<usize>();
        self.argv.extend(parts);
    }

    fn push(&mut self, write: &Write) {
        match write {
            Write::DeleteQueue { name } => {
                let (bodies, states) = (
                    self.key(self.layout.bodies(name)),
                    self.key(self.layout.states(name)),
                );
                self.op(vec!["D".into(), name.clone(), bodies, states]);
            }
            Write::Queue { name, changes } => {
                let (bodies, states) = (
                    self.key(self.layout.bodies(name)),
                    self.key(self.layout.states(name)),
                );
                let mut next_seq = None;
                for change in changes {
                    match change {
                        Change::Meta(meta) => {
                            self.op(vec!["Q".into(), name.clone(), codec::encode_queue(meta)])
                        }
                        Change::Sent(message) => {
                            next_seq = Some(message.seq + 1);
                            self.op(vec![
                                "M".into(),
                                bodies.clone(),
                                states.clone(),
                                message.seq.to_string(),
                                codec::encode_body(message),
                                codec::encode_state(message),
                            ]);
                        }
                        Change::State(message) => self.op(vec![
                            "S".into(),
                            states.clone(),
                            message.seq.to_string(),
                            codec::encode_state(message),
                        ]),
                        Change::Removed(seq) => {
                            self.op(vec!["X".into(), bodies.clone(), states.clone(), seq.to_string()])
                        }
                        Change::Purged => self.op(vec!["P".into(), bodies.clone(), states.clone()]),
                        Change::Deduplicated(key, entry) => {
                            let dedup = self.key(self.layout.dedup(name));
                            self.op(vec!["U".into(), dedup, key.clone(), codec::encode_dedup(entry)]);
                        }
                        Change::DedupExpired(key) => {
                            let dedup = self.key(self.layout.dedup(name));
                            self.op(vec!["V".into(), dedup, key.clone()]);
                        }
                    }
                }
                if let Some(next) = next_seq {
                    self.op(vec!["N".into(), name.clone(), next.to_string()]);
                }
            }
        }
    }
}
