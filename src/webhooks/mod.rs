//! Sends the deliveries a shard's topics keep for HTTP and HTTPS
//! subscriptions (`topic/deliveries.rs`), off the threads that serve calls.
//!
//! Each subscription with deliveries waiting gets a task of its own, its
//! lane, with at most [`LANE_IN_FLIGHT`] requests in flight, connections
//! of its own kept open between tries, and its own throttle (the delivery
//! policy's `maxReceivesPerSecond`): an endpoint that is slow, stuck or
//! down holds up its own deliveries only. A lane takes what is due, sends
//! it, and records the outcomes of the tries that ended since its last
//! turn in one change to the store: delivered or given up, a delivery is
//! removed; to be tried again, its tries and next time are written, as the
//! delivery policy says
//! (`topic::delivery_policy`): on a refused or reset connection, a
//! timeout, a TLS failure, 429 and 5xx; not on other 4xx. A delivery that
//! waited untried past its policy's whole time (its delays and one try's),
//! while the lane was running, is given up without a try: an endpoint that
//! is stuck takes 8 tries per 15 s, and what it cannot take is counted
//! failed rather than left to fill its backlog. A notification given up
//! goes to the subscription's dead-letter queue, if it has one.
//! Redirects are not followed, and only destinations the operator allowed
//! are reached (`destinations.rs`).
//!
//! Only the shard's leader holds deliveries in memory, so only it sends; a
//! lane stops when its memory is replaced (a load, leadership lost), and
//! the new memory's lanes start from what the store holds.

mod destinations;
mod request;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinSet;

pub use self::destinations::{Destinations, DestinationsError};
use crate::metrics;
use crate::queue::NewMessage;
use crate::queue::key::{self, Home};
use crate::service::Service;
use crate::topic::OutboundKind;
use crate::topic::deliveries::{Delivery, LaneStart};
use crate::topic::delivery_policy::DeliveryPolicy;

/// Requests in flight at once to one subscription's endpoint.
pub const LANE_IN_FLIGHT: usize = 8;
/// How long one try may take, connection to answer: AWS's 15 seconds.
const TRY_TIMEOUT: Duration = Duration::from_secs(15);
/// How often the sender looks for lanes without a task, beside being told
/// of new deliveries (a load brings some without a word), and how long a
/// lane with nothing due sleeps at most.
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// How long a lane with nothing to send keeps its task and its idle
/// connections, for the next delivery: an endpoint published to every
/// second or so is not reconnected each time. Shorter than the 5 s after
/// which common servers close an idle connection.
const KEEP_IDLE: Duration = Duration::from_secs(4);

/// Overdue deliveries given up per turn of a lane's loop.
const OVERDUE_AT_ONCE: usize = 64;

/// A delivery policy's whole time, in milliseconds: its delays, and one
/// try's.
fn policy_time(policy: &DeliveryPolicy) -> u64 {
    policy.delays().iter().sum::<u64>() * 1000 + TRY_TIMEOUT.as_millis() as u64
}

/// What the sender needs beside the deliveries.
pub struct Settings {
    pub destinations: Destinations,
    /// The instance's account and region, to key dead-letter queues.
    pub home: Home,
}

/// Starts sending `service`'s deliveries, until `stopped`.
pub fn start(settings: Settings, service: Arc<Service>, stopped: watch::Receiver<bool>) {
    let sender = Arc::new(Sender { settings, service });
    tokio::spawn(sender.run(stopped));
}

struct Sender {
    settings: Settings,
    service: Arc<Service>,
}

impl Sender {
    /// Starts a lane for each subscription whose deliveries have none.
    async fn run(self: Arc<Self>, mut stopped: watch::Receiver<bool>) {
        loop {
            let (starts, generation) = {
                let mut topics = self.service.topics();
                (topics.lanes_to_start(), topics.generation())
            };
            for start in starts {
                tokio::spawn(self.clone().lane(start, generation));
            }
            let stopping = tokio::select! {
                _ = self.service.deliveries_added.notified() => false,
                _ = tokio::time::sleep(LOOK_EVERY) => false,
                changed = stopped.changed() => changed.is_err() || *stopped.borrow(),
            };
            if stopping {
                return;
            }
        }
    }

    /// Sends one subscription's deliveries until none waits, or the memory
    /// they are in is replaced.
    async fn lane(self: Arc<Self>, start: LaneStart, generation: u64) {
        let subscription = start.subscription.as_str();
        let mut in_flight = JoinSet::new();
        // The endpoint, read once, and connections to it open and idle.
        let mut endpoint: Option<Arc<request::Endpoint>> = None;
        let mut idle: Vec<request::Connection> = Vec::new();
        let mut tried: Vec<Tried> = Vec::new();
        let mut policy = Arc::new(self.policy_of(subscription));
        let mut policy_read = tokio::time::Instant::now();
        let mut throttle = Throttle::default();
        let started = self.service.now();
        let mut active = tokio::time::Instant::now();
        loop {
            while let Some(Ok(done)) = in_flight.try_join_next() {
                tried.push(done);
            }
            for done in &mut tried {
                idle.extend(done.connection.take());
            }
            if active.elapsed() >= KEEP_IDLE {
                idle.clear();
            }
            if policy_read.elapsed() >= LOOK_EVERY {
                policy = Arc::new(self.policy_of(subscription));
                policy_read = tokio::time::Instant::now();
            }
            let room = (LANE_IN_FLIGHT - in_flight.len()).min(throttle.room(policy.max_per_second));
            let (overdue, due, next) = {
                let mut topics = self.service.topics();
                if topics.generation() != generation {
                    return;
                }
                let now = self.service.now();
                // Waiting in this lane, untried, for longer than the policy's
                // whole time (not counting time the lane was not running:
                // ssq down, or another instance leading).
                let overdue = match now.checked_sub(policy_time(&policy)) {
                    Some(before) if started < before => {
                        topics.take_overdue(subscription, before, OVERDUE_AT_ONCE)
                    }
                    _ => Vec::new(),
                };
                let due = topics.take_due(subscription, now, room);
                if !(tried.is_empty() && overdue.is_empty() && due.is_empty()) {
                    active = tokio::time::Instant::now();
                }
                // Kept a while for its idle connections (KEEP_IDLE).
                let lingers = !idle.is_empty() && active.elapsed() < KEEP_IDLE;
                if in_flight.is_empty() && !lingers && topics.lane_done(subscription) {
                    return;
                }
                let next = topics.next_due(subscription).map(|at| at.saturating_sub(now));
                (overdue, due, next)
            };
            throttle.spent(due.len(), policy.max_per_second);
            for delivery in due {
                let target = match &endpoint {
                    Some(known) if known.is(&delivery.endpoint) => Ok(known.clone()),
                    _ => request::Endpoint::parse(&delivery.endpoint).map(Arc::new),
                };
                if let Ok(target) = &target
                    && endpoint.as_ref().is_none_or(|known| !Arc::ptr_eq(known, target))
                {
                    endpoint = Some(target.clone());
                    idle.clear();
                }
                let connection = idle.pop();
                in_flight.spawn(self.clone().attempt(delivery, target, policy.clone(), connection));
            }
            if !tried.is_empty() || !overdue.is_empty() {
                self.settle(std::mem::take(&mut tried), overdue, &policy).await;
                continue;
            }
            // Sleep until something is due, if there is room to send it.
            let room = (LANE_IN_FLIGHT - in_flight.len()).min(throttle.room(policy.max_per_second));
            let sleep = match (room, next) {
                (0, _) | (_, None) => throttle.until_room(policy.max_per_second).unwrap_or(LOOK_EVERY),
                (_, Some(ms)) => Duration::from_millis(ms).min(LOOK_EVERY),
            }
            // Or until its idle connections are let go.
            .min(match idle.is_empty() {
                true => LOOK_EVERY,
                false => KEEP_IDLE.saturating_sub(active.elapsed()),
            });
            tokio::select! {
                Some(done) = in_flight.join_next(), if !in_flight.is_empty() => tried.extend(done.ok()),
                _ = start.wake.notified() => {}
                _ = tokio::time::sleep(sleep) => {}
            }
        }
    }

    /// The delivery policy of a subscription's deliveries: the topic's and
    /// its own (the topic's alone, or AWS's, once it is gone).
    fn policy_of(&self, subscription: &str) -> DeliveryPolicy {
        let topics = self.service.topics();
        let own = topics.subscription(subscription).ok();
        let topic = own
            .and_then(|sub| topics.topic(&sub.topic).ok())
            .and_then(|topic| topic.attributes.get("DeliveryPolicy"));
        DeliveryPolicy::effective(
            topic.map(String::as_str),
            own.and_then(|sub| sub.attributes.get("DeliveryPolicy"))
                .map(String::as_str),
        )
    }

    /// One try of a delivery, on `connection` if it is still open.
    async fn attempt(
        self: Arc<Self>,
        delivery: Delivery,
        endpoint: Result<Arc<request::Endpoint>, request::NotAnEndpoint>,
        policy: Arc<DeliveryPolicy>,
        connection: Option<request::Connection>,
    ) -> Tried {
        let (outcome, connection) = match endpoint {
            Ok(endpoint) => {
                request::Prepared::new(endpoint, &delivery, &policy)
                    .send(&self.settings.destinations, TRY_TIMEOUT, connection)
                    .await
            }
            Err(refused) => (request::Outcome::Refused(refused.to_string()), None),
        };
        Tried {
            delivery,
            outcome,
            connection,
        }
    }

    /// Records the outcomes of the tries that ended, and gives up the
    /// `overdue` deliveries, in one change to the store: a lane's
    /// deliveries cost a commit per turn of its loop, not one each.
    async fn settle(&self, tried: Vec<Tried>, overdue: Vec<Delivery>, policy: &DeliveryPolicy) {
        let mut finished = Vec::new();
        let mut retries = Vec::new();
        let mut given_up = Vec::new();
        for delivery in overdue {
            let seconds = policy_time(policy) / 1000;
            tracing::warn!(
                subscription = delivery.subscription,
                endpoint = delivery.endpoint,
                "a webhook delivery was given up: its endpoint did not take it within its delivery policy's {seconds} s"
            );
            given_up.push(delivery);
        }
        for Tried {
            delivery, outcome, ..
        } in tried
        {
            self.count(&delivery, metrics::TRIED);
            let subscription = delivery.subscription.as_str();
            let why = match outcome {
                request::Outcome::Delivered => {
                    self.count(&delivery, metrics::DELIVERED);
                    finished.push(delivery);
                    continue;
                }
                request::Outcome::Retry(why) => match policy.delays().get(delivery.tries as usize) {
                    Some(delay) => {
                        tracing::debug!(subscription, %why, delay, "a webhook delivery will be retried");
                        retries.push((delivery.id, self.service.now() + delay * 1000));
                        continue;
                    }
                    None => format!("{why}, after {} tries", delivery.tries + 1),
                },
                request::Outcome::Permanent(why) | request::Outcome::Refused(why) => why,
            };
            tracing::warn!(subscription, endpoint = delivery.endpoint, %why, "a webhook delivery failed");
            given_up.push(delivery);
        }
        for delivery in &given_up {
            self.give_up(delivery).await;
        }
        finished.extend(given_up);
        let recorded = self
            .service
            .change_topics(|topics| {
                for delivery in &finished {
                    topics.finish_delivery(&delivery.subscription, delivery.id);
                }
                for (id, next_at) in retries {
                    topics.retry_delivery(id, next_at);
                }
                Ok(())
            })
            .await;
        if let Err(error) = recorded {
            tracing::warn!(%error, "webhook deliveries' outcomes could not be recorded: they will be tried again");
        }
    }

    /// A notification that never got through is counted failed and sent to
    /// the subscription's dead-letter queue if it has one (its removal is
    /// the caller's).
    async fn give_up(&self, delivery: &Delivery) {
        if delivery.kind == OutboundKind::Notification {
            self.count(delivery, metrics::FAILED);
            match self.dead_letter(delivery).await {
                Some(true) => self.count(delivery, metrics::REDRIVEN),
                Some(false) => self.count(delivery, metrics::NOT_REDRIVEN),
                None => {}
            }
        }
    }

    /// Counts a notification's outcome for its subscription.
    fn count(&self, delivery: &Delivery, metric: &'static str) {
        if delivery.kind == OutboundKind::Notification {
            self.service.metrics.sns_notification(
                &delivery.topic.to_string(),
                &delivery.subscription,
                metric,
            );
        }
    }

    /// Sends a notification that never got through to its subscription's
    /// dead-letter queue: whether it is there, `None` without one.
    async fn dead_letter(&self, delivery: &Delivery) -> Option<bool> {
        let queue = self
            .service
            .topics()
            .subscription(&delivery.subscription)
            .ok()?
            .dead_letter_queue()?;
        // A topic's dead-letter queues are of its account.
        if queue.account != delivery.topic.account {
            return Some(false);
        }
        let name = key::of(&self.settings.home, &queue.account, &queue.region, &queue.name);
        let message = NewMessage {
            body: delivery.body.to_string(),
            attributes: Default::default(),
            delay_seconds: None,
            sender_id: crate::service::SNS_SENDER_ID.into(),
            trace_header: None,
            group_id: None,
            dedup_id: None,
        };
        match self.service.send(&name, vec![message]).await {
            Ok(_) => Some(true),
            Err(error) => {
                tracing::warn!(subscription = delivery.subscription, %error, "a failed webhook delivery could not be dead-lettered");
                Some(false)
            }
        }
    }
}

/// A try that ended: its delivery, how, and the connection it leaves
/// open.
struct Tried {
    delivery: Delivery,
    outcome: request::Outcome,
    connection: Option<request::Connection>,
}

/// A lane's throttle: the sends of the last second, against the policy's
/// `maxReceivesPerSecond`.
#[derive(Default)]
struct Throttle {
    sent: std::collections::VecDeque<tokio::time::Instant>,
}

impl Throttle {
    fn forget_old(&mut self) {
        let now = tokio::time::Instant::now();
        while self
            .sent
            .front()
            .is_some_and(|at| now.duration_since(*at) >= Duration::from_secs(1))
        {
            self.sent.pop_front();
        }
    }

    /// How many more may be sent now.
    fn room(&mut self, per_second: Option<u64>) -> usize {
        let Some(rate) = per_second else {
            return usize::MAX;
        };
        self.forget_old();
        (rate as usize).saturating_sub(self.sent.len())
    }

    /// How long until one more may be sent, when none may now.
    fn until_room(&mut self, per_second: Option<u64>) -> Option<Duration> {
        if self.room(per_second) > 0 {
            return None;
        }
        let first = self.sent.front()?;
        Some(Duration::from_secs(1).saturating_sub(first.elapsed()))
    }

    /// Counts `sends` made now (kept only where a rate is set).
    fn spent(&mut self, sends: usize, per_second: Option<u64>) {
        if per_second.is_some() {
            let now = tokio::time::Instant::now();
            self.sent.extend(std::iter::repeat_n(now, sends));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_throttle_lets_through_its_rate_a_second() {
        let mut throttle = Throttle::default();
        assert_eq!(throttle.room(None), usize::MAX);
        assert_eq!(throttle.room(Some(3)), 3);
        throttle.spent(3, Some(3));
        assert_eq!(throttle.room(Some(3)), 0);
        assert_eq!(throttle.until_room(Some(3)), Some(Duration::from_secs(1)));
        tokio::time::advance(Duration::from_millis(400)).await;
        assert_eq!(throttle.until_room(Some(3)), Some(Duration::from_millis(600)));
        tokio::time::advance(Duration::from_millis(600)).await;
        assert_eq!(throttle.room(Some(3)), 3);
    }
}
