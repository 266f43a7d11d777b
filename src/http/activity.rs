//! Recent activity per queue, for the admin page's rates and sparklines.
//!
//! Every [`SAMPLE_EVERY`], a background task reads each queue's counters of
//! sends, receives and deletes (kept by the core, an add each on the
//! request path) and keeps the last [`SAMPLES_KEPT`] readings: five minutes.
//! Rates are the differences between readings. Nothing is kept for a queue
//! that is gone, and a counter that went down (memory was loaded again on a
//! leadership change) counts as a fresh start, not as a negative rate.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use crate::queue::Activity;
use crate::service::Service;

pub const SAMPLE_EVERY: Duration = Duration::from_secs(5);
pub const SAMPLES_KEPT: usize = 60;

#[derive(Default)]
pub struct ActivityHistory {
    /// Queue key → its readings, oldest first.
    queues: Mutex<BTreeMap<String, VecDeque<Activity>>>,
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
        let mut queues = self
            .queues
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut kept = BTreeMap::new();
        for (key, reading) in readings {
            let mut history = queues.remove(&key).unwrap_or_default();
            if history.len() == SAMPLES_KEPT {
                history.pop_front();
            }
            history.push_back(reading);
            kept.insert(key, history);
        }
        *queues = kept;
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
        loop {
            tokio::select! {
                _ = every.tick() => self.record(services.iter().flat_map(|s| s.activity_by_queue()).collect()),
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
        stop.send(true).unwrap();
        task.await.unwrap();
    }
}
