//! The watchdog: steps a leader down at its serving deadline, apart from
//! the elector so that a Redis call that hangs cannot delay it
//! (invariant 3: the deadline runs from when the last good renewal was
//! *sent*, on the monotonic clock, and is shorter than the lock's TTL).

use std::sync::Arc;

use tokio::sync::watch;
use tokio::time::{sleep_until, timeout};

use super::election::ElectionConfig;
use super::lock::LockStore;
use crate::leader::Leadership;

/// Steps the leader down when its serving deadline passes, whatever the
/// elector is doing. Gives the lock up too if Redis still answers, so that a
/// passive need not wait for the TTL.
pub async fn run_watchdog(
    leadership: Arc<Leadership>,
    store: Arc<dyn LockStore>,
    config: ElectionConfig,
    mut shutdown: watch::Receiver<bool>,
) {
    while !*shutdown.borrow() {
        let changed = leadership.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        if let Some(token) = leadership.step_down_if_expired() {
            let store = store.clone();
            tokio::spawn(async move {
                let _ = timeout(config.call_timeout, store.release(&token)).await;
            });
            continue;
        }
        match leadership.deadline() {
            Some(deadline) => tokio::select! {
                _ = sleep_until(deadline) => {}
                _ = &mut changed => {}
                _ = shutdown.changed() => {}
            },
            None => tokio::select! {
                _ = &mut changed => {}
                _ = shutdown.changed() => {}
            },
        }
    }
}
