//! What both committers, Redis's and the disk's, do with the writes that
//! wait for them: take what is waiting as one group commit, refuse writes
//! made on memory that has since been dropped, answer every waiter alike,
//! and space the reloads that follow failed writes.

use std::time::Duration;

use tokio::sync::mpsc;

use crate::error::{ErrorCode, SqsError};
use crate::journal::Pending;

/// Waits for a write, then takes whatever else waits, up to `max`: one
/// group commit. `None` once the service's side has closed.
pub(crate) async fn next_batch(
    queue: &mut mpsc::UnboundedReceiver<Pending>,
    max: usize,
) -> Option<Vec<Pending>> {
    let mut batch = vec![queue.recv().await?];
    while batch.len() < max {
        match queue.try_recv() {
            Ok(next) => batch.push(next),
            Err(_) => break,
        }
    }
    Some(batch)
}

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

    #[test]
    fn reloads_after_failed_writes_back_off_to_the_maximum() {
        let ms = Duration::from_millis;
        let delays = [1, 2, 3, 4, 10, 40].map(|failures| reload_delay(failures, ms(2_000)));
        assert_eq!(delays, [ms(0), ms(50), ms(100), ms(200), ms(2_000), ms(2_000)]);
    }
}
