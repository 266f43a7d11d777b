//! Recent activity per queue, for the admin page's rates and sparklines,
//! and its depth over the last hour, for the queue page's chart.
//!
//! Every [`SAMPLE_EVERY`], a background task reads each queue's counters of
//! sends, receives and deletes (kept by the core, an add each on the
//! request path) and keeps the last [`SAMPLES_KEPT`] readings: five minutes.
//! Every [`DEPTH_EVERY`] it reads each queue's counts by state and the age
//! of its oldest message, and keeps [`DEPTHS_KEPT`] of those: an hour.
//! Rates are the differences between readings. Nothing is kept for a queue
//! that is gone, and a counter that went down (memory was loaded again on a
//! leadership change) counts as a fresh start, not as a negative rate.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use crate::queue::{Activity, Counts};
use crate::service::Service;

pub const SAMPLE_EVERY: Duration = Duration::from_secs(5);
pub const SAMPLES_KEPT: usize = 60;
pub const DEPTH_EVERY: Duration = Duration::from_secs(30);
pub const DEPTHS_KEPT: usize = 120;

#[derive(Default)]
pub struct ActivityHistory {
    /// Queue key → its readings, oldest first.
    queues: Mutex<BTreeMap<String, VecDeque<Activity>>>,
    /// Queue key → its depths, oldest first.
    depths: Mutex<BTreeMap<String, VecDeque<Depth>>>,
}

/// A queue's messages by state and the age of its oldest, at `at` (the
/// queues' clock, milliseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Depth {
    pub at: u64,
    pub visible: usize,
    pub in_flight: usize,
    pub delayed: usize,
    pub oldest_age_seconds: u64,
}

impl Depth {
    pub fn of(counts: &Counts, now: u64) -> Depth {
        Depth {
            at: now,
            visible: counts.visible,
            in_flight: counts.in_flight,
            delayed: counts.delayed,
            oldest_age_seconds: counts
                .oldest_sent_at
                .map_or(0, |sent| now.saturating_sub(sent) / 1000),
        }
    }
}

/// Adds `reading` to each queue's history, at most `kept` long; forgets the
/// queues not in `readings`.
fn keep<T>(histories: &Mutex<BTreeMap<String, VecDeque<T>>>, readings: Vec<(String, T)>, kept: usize) {
    let mut histories = histories.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut still = BTreeMap::new();
    for (key, reading) in readings {
        let mut history = histories.remove(&key).unwrap_or_default();
        if history.len() == kept {
            history.pop_front();
        }
        history.push_back(reading);
        still.insert(key, history);
    }
    *histories = still;
}

/// Per-second rates over the kept readings, oldest first.
#[derive(Debug, Default, Clone, PartialEq, serde::Serialize)]
pub struct Rates {
    pub sent: Vec<f64>,
    pub received: Vec<f64>,
    pub deleted: Vec<f64>,
}

impl ActivityHistory {
    /// Adds one reading of every queue; forgets the queues not in it.
    pub fn record(&self, readings: Vec<(String, Activity)>) {
        keep(&self.queues, readings, SAMPLES_KEPT);
    }

    /// Adds one depth of every queue; forgets the queues not in it.
    pub fn record_depths(&self, depths: Vec<(String, Depth)>) {
        keep(&self.depths, depths, DEPTHS_KEPT);
    }

    /// A queue's depths over the last hour, oldest first.
    pub fn depths(&self, key: &str) -> Vec<Depth> {
        let depths = self
            .depths
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        depths
            .get(key)
            .map(|history| history.iter().copied().collect())
            .unwrap_or_default()
    }

    pub fn rates(&self, key: &str) -> Rates {
        let queues = self
            .queues
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut rates = Rates::default();
        let Some(history) = queues.get(key) else {
            return rates;
        };
        let seconds = SAMPLE_EVERY.as_secs_f64();
        let per_second =
            |before: u64, after: u64| after.checked_sub(before).map_or(0.0, |n| n as f64 / seconds);
        for (before, after) in history.iter().zip(history.iter().skip(1)) {
            rates.sent.push(per_second(before.sent, after.sent));
            rates.received.push(per_second(before.received, after.received));
            rates.deleted.push(per_second(before.deleted, after.deleted));
        }
        rates
    }

    /// Samples the queues of `services` (one per shard) until `stopped`
    /// turns true.
    pub async fn run(self: Arc<Self>, services: Vec<Arc<Service>>, mut stopped: watch::Receiver<bool>) {
        let mut every = tokio::time::interval(SAMPLE_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut depth_every = tokio::time::interval(DEPTH_EVERY);
        depth_every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let depths = |service: &Arc<Service>| {
            service.each_queue(|key, queue, now| (key.to_string(), Depth::of(&queue.counts(now), now)))
        };
        loop {
            tokio::select! {
                _ = every.tick() => self.record(services.iter().flat_map(|s| s.activity_by_queue()).collect()),
                _ = depth_every.tick() => self.record_depths(services.iter().flat_map(depths).collect()),
                _ = stopped.changed() => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(sent: u64, received: u64, deleted: u64) -> Activity {
        Activity {
            sent,
            received,
            deleted,
        }
    }

    #[test]
    fn rates_are_differences_per_second_and_a_restart_is_no_negative_rate() {
        let history = ActivityHistory::default();
        for r in [reading(0, 0, 0), reading(50, 10, 5), reading(3, 1, 0)] {
            history.record(vec![("q".into(), r), ("other".into(), reading(0, 0, 0))]);
        }
        assert_eq!(
            history.rates("q"),
            Rates {
                sent: vec![10.0, 0.0],
                received: vec![2.0, 0.0],
                deleted: vec![1.0, 0.0],
            }
        );
        history.record(vec![("other".into(), reading(1, 1, 1))]);
        assert_eq!(
            history.rates("q"),
            Rates::default(),
            "a queue that is gone is forgotten"
        );
        for n in 0..100 {
            history.record(vec![("other".into(), reading(n, n, n))]);
        }
        assert_eq!(
            history.rates("other").sent.len(),
            SAMPLES_KEPT - 1,
            "five minutes kept"
        );
    }

    #[test]
    fn depths_are_kept_for_an_hour() {
        let history = ActivityHistory::default();
        let counts = Counts {
            visible: 3,
            in_flight: 1,
            delayed: 0,
            oldest_sent_at: Some(1_000),
        };
        for n in 0..DEPTHS_KEPT as u64 + 5 {
            history.record_depths(vec![("q".into(), Depth::of(&counts, 61_000 + n))]);
        }
        let depths = history.depths("q");
        assert_eq!(depths.len(), DEPTHS_KEPT, "an hour");
        assert_eq!(depths[0].at, 61_005, "the oldest dropped first");
        assert_eq!((depths[0].visible, depths[0].oldest_age_seconds), (3, 60));
    }

    #[tokio::test(start_paused = true)]
    async fn samples_every_interval_until_stopped() {
        let metrics = Arc::new(crate::metrics::Metrics::new("test"));
        let service = Arc::new(Service::new(Arc::new(crate::queue::clock::SystemClock), metrics));
        service
            .create_queue("q", &Default::default(), Default::default())
            .await
            .unwrap();
        let history = Arc::new(ActivityHistory::default());
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(history.clone().run(vec![service], stopped));
        tokio::time::sleep(SAMPLE_EVERY * 3 + Duration::from_millis(1)).await;
        assert_eq!(history.rates("q").sent.len(), 3, "four readings");
        assert_eq!(history.depths("q").len(), 1, "a depth at once, the next in 30 s");
        stop.send(true).unwrap();
        task.await.unwrap();
    }
}
