//! What every committer, Redis's, Postgres's and the disk's, does with the
//! writes that wait for it: take what is waiting as one group commit,
//! refuse writes made on memory that has since been dropped, answer every
//! waiter alike, and space the reloads that follow failed writes; and what
//! a group-backed one does with a commit's outcome ([`Settling`]).

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use tokio::sync::mpsc;

use crate::error::{ErrorCode, SqsError};
use crate::journal::Pending;
use crate::leader::{Leadership, StepDown};
use crate::metrics::Metrics;

/// Waits for a write, then takes whatever else waits, up to `max`: one
/// group commit. `None` once the service's side has closed.
///
/// Before the commit closes, the committer steps aside while the requests
/// that are ready to run reach their writes (at most [`MAX_YIELDS`]
/// times, and only while each step brought more): a commit costs about the
/// same whether it carries one write or thirty, so under load the writes
/// of every request the runtime could serve at once share it, and a lone
/// request waits for one turn of the scheduler only.
pub(crate) async fn next_batch(
    queue: &mut mpsc::UnboundedReceiver<Pending>,
    max: usize,
) -> Option<Vec<Pending>> {
    let mut batch = vec![queue.recv().await?];
    let mut yields = 0;
    loop {
        let before = batch.len();
        while batch.len() < max {
            match queue.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        let brought_nothing = yields > 0 && batch.len() == before;
        if batch.len() >= max || brought_nothing || yields == MAX_YIELDS {
            return Some(batch);
        }
        tokio::task::yield_now().await;
        yields += 1;
    }
}

/// How many turns of the scheduler a group commit waits at most for more
/// writes to join it.
const MAX_YIELDS: usize = 4;

/// The writes made in memory generation `generation`; the others (made on
/// memory since dropped, `why`) are answered with a 503.
pub(crate) fn keep_current(batch: Vec<Pending>, generation: u64, why: &str) -> Vec<Pending> {
    let (current, stale): (Vec<Pending>, Vec<Pending>) =
        batch.into_iter().partition(|p| p.generation == generation);
    answer(stale, Err(unavailable(why)));
    current
}

/// The 503 of a change the store could not make durable.
pub(crate) fn unavailable(why: impl std::fmt::Display) -> SqsError {
    SqsError::new(
        ErrorCode::ServiceUnavailable,
        format!("ssq could not make this change durable: {why}. Nothing was acknowledged; retry."),
    )
}

/// Answers every waiter of a commit alike.
pub(crate) fn answer(pendings: Vec<Pending>, result: Result<(), SqsError>) {
    for pending in pendings {
        let _ = pending.done.send(result.clone());
    }
}

/// A group commit a group-backed committer may send: its writes, made on
/// the memory of load `load_id`, in leadership term `term` (whose lock
/// holds `token`).
pub(crate) struct Admitted {
    pub pendings: Vec<Pending>,
    pub load_id: std::sync::Arc<str>,
    pub term: u64,
    pub token: String,
}

/// The writes of `batch` that may be committed now, or none: those made
/// on memory since dropped, all of them while memory is being loaded again
/// or this instance does not lead, are answered with a 503 here.
pub(crate) fn admit(
    batch: Vec<Pending>,
    load_id: &crate::store::load_id::LoadId,
    memory: &dyn crate::journal::Memory,
    leadership: &Leadership,
) -> Option<Admitted> {
    let (generation, load_id) = load_id.current(memory);
    let current = keep_current(
        batch,
        generation,
        "the state it changed was dropped by a change of leadership",
    );
    let Some(load_id) = load_id else {
        answer(current, Err(unavailable("the state is being loaded again")));
        return None;
    };
    let Some((term, token)) = leadership.current_term() else {
        answer(current, Err(unavailable("this instance is not the leader")));
        return None;
    };
    Some(Admitted {
        pendings: current,
        load_id,
        term,
        token,
    })
}

/// How a group commit to a store shared by a group went.
pub(crate) enum Outcome<E> {
    Applied,
    /// The store found another leader's epoch: this instance steps down.
    Fenced,
    /// It may or may not have applied: memory is loaded again.
    Failed(E),
}

/// The 503 of a commit another leader fenced out.
const FENCED: &str = "another instance has taken over as leader";

/// A group-backed committer's handling of its commits' outcomes: every
/// waiter answered alike; fenced, the instance steps down; failed, it stops
/// serving and loads memory again, the later the more writes failed in a
/// row (see [`reload_delay`]).
pub(crate) struct Settling {
    consecutive_failures: AtomicU32,
    /// The longest wait before a reload.
    max_reload_delay: Duration,
}

impl Settling {
    pub(crate) fn new(max_reload_delay: Duration) -> Settling {
        Settling {
            consecutive_failures: AtomicU32::new(0),
            max_reload_delay,
        }
    }

    /// Answers `chunk`, committed in leadership term `term`, by `outcome`;
    /// `reload(term, delay)` starts a reload. Returns whether it applied.
    pub(crate) fn settle<E: std::fmt::Display>(
        &self,
        outcome: Outcome<E>,
        chunk: Vec<Pending>,
        term: u64,
        leadership: &Leadership,
        metrics: &Metrics,
        reload: impl FnOnce(u64, Duration),
    ) -> bool {
        match outcome {
            Outcome::Applied => {
                self.consecutive_failures.store(0, Ordering::Relaxed);
                answer(chunk, Ok(()));
                true
            }
            Outcome::Fenced => {
                answer(chunk, Err(unavailable(FENCED)));
                leadership.step_down(Some(term), StepDown::Fenced);
                false
            }
            Outcome::Failed(why) => {
                tracing::warn!(error = %why, writes = chunk.len(), "a write to the store failed: reloading state before serving again");
                answer(chunk, Err(unavailable(&why)));
                metrics.commit_failures.inc();
                if leadership.begin_resync(term) {
                    let failures = self.consecutive_failures.fetch_add(1, Ordering::Relaxed) + 1;
                    reload(term, reload_delay(failures, self.max_reload_delay));
                }
                false
            }
        }
    }
}

/// How long to wait before reloading after the `failures`th failed write in
/// a row: at once the first time, then 50 ms doubling up to `max`. A store
/// that answers reads but refuses writes (Redis with `min-replicas-to-write`
/// unmet, a full disk) otherwise costs a full reload for every write a
/// client retries.
pub(crate) fn reload_delay(failures: u32, max: Duration) -> Duration {
    match failures {
        0 | 1 => Duration::ZERO,
        n => Duration::from_millis(50)
            .saturating_mul(1 << (n - 2).min(16))
            .min(max),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending() -> Pending {
        Pending {
            generation: 0,
            writes: Vec::new(),
            done: tokio::sync::oneshot::channel().0,
        }
    }

    #[tokio::test]
    async fn a_group_commit_takes_the_writes_of_requests_ready_in_the_same_turn() {
        let (journal, mut queue) = mpsc::unbounded_channel();
        journal.send(pending()).unwrap();
        // Requests the runtime could run now, which have not reached their
        // writes yet.
        for _ in 0..10 {
            let journal = journal.clone();
            tokio::spawn(async move { journal.send(pending()).unwrap() });
        }
        let batch = next_batch(&mut queue, 512).await.unwrap();
        assert_eq!(batch.len(), 11);
    }

    #[tokio::test(start_paused = true)]
    async fn a_lone_write_does_not_wait_for_writes_to_come() {
        let (journal, mut queue) = mpsc::unbounded_channel();
        journal.send(pending()).unwrap();
        let later = journal.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(1)).await;
            later.send(pending()).unwrap();
        });
        let started = tokio::time::Instant::now();
        let batch = next_batch(&mut queue, 512).await.unwrap();
        assert_eq!(batch.len(), 1);
        assert_eq!(started.elapsed(), Duration::ZERO);
    }

    #[tokio::test]
    async fn a_steady_trickle_does_not_hold_a_group_commit_open() {
        let (journal, mut queue) = mpsc::unbounded_channel();
        journal.send(pending()).unwrap();
        let trickle = journal.clone();
        tokio::spawn(async move {
            for _ in 0..1_000 {
                trickle.send(pending()).unwrap();
                tokio::task::yield_now().await;
            }
        });
        let batch = next_batch(&mut queue, 512).await.unwrap();
        assert!(
            (2..=1 + MAX_YIELDS).contains(&batch.len()),
            "{} writes",
            batch.len()
        );
    }

    #[tokio::test]
    async fn a_group_commit_stops_at_its_size_cap() {
        let (journal, mut queue) = mpsc::unbounded_channel();
        for _ in 0..10 {
            journal.send(pending()).unwrap();
        }
        assert_eq!(next_batch(&mut queue, 4).await.unwrap().len(), 4);
        assert_eq!(next_batch(&mut queue, 4).await.unwrap().len(), 4);
        assert_eq!(next_batch(&mut queue, 4).await.unwrap().len(), 2);
        drop(journal);
        assert!(next_batch(&mut queue, 4).await.is_none());
    }

    #[test]
    fn reloads_after_failed_writes_back_off_to_the_maximum() {
        let ms = Duration::from_millis;
        let delays = [1, 2, 3, 4, 10, 40].map(|failures| reload_delay(failures, ms(2_000)));
        assert_eq!(delays, [ms(0), ms(50), ms(100), ms(200), ms(2_000), ms(2_000)]);
    }
}
