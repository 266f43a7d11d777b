//! Deliveries to HTTP and HTTPS subscriptions, off the threads that serve
//! calls: a call hands its webhooks to the [`Sender`] and answers at once.
//!
//! What waits to be sent is bounded in bytes (a delivery past the budget
//! is dropped and counted as failed, never queued without end), and at
//! most [`MAX_CONNECTIONS`] requests are in flight. Each delivery follows
//! its delivery policy (`topic::delivery_policy`): retried on connection
//! errors, timeouts, 429 and 5xx, not on other 4xx; when the tries run out
//! a notification goes to the subscription's dead-letter queue, if it has
//! one. Redirects are not followed, and only destinations the operator
//! allowed are reached (`destinations.rs`).

mod destinations;
mod request;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Semaphore, mpsc};

pub use self::destinations::{Destinations, DestinationsError};
use crate::metrics;
use crate::queue::NewMessage;
use crate::queue::key::{self, Home};
use crate::service::Service;
use crate::topic::delivery_policy::DeliveryPolicy;
use crate::topic::{Outbound, OutboundKind, Subscription};

/// Requests in flight at once, over every subscription.
pub const MAX_CONNECTIONS: usize = 64;
/// Bytes of documents waiting to be sent, over every subscription.
const MAX_PENDING_BYTES: usize = 64 << 20;
/// How long one try may take, connection to answer: AWS's 15 seconds.
const TRY_TIMEOUT: Duration = Duration::from_secs(15);

/// What the sender needs beside the work it is given.
pub struct Settings {
    pub destinations: Destinations,
    /// The instance's account and region, to key dead-letter queues.
    pub home: Home,
}

/// Hands webhooks to the delivery task.
pub struct Sender {
    jobs: mpsc::UnboundedSender<Job>,
    pending_bytes: Arc<Semaphore>,
}

struct Job {
    work: Outbound,
    _bytes: tokio::sync::OwnedSemaphorePermit,
}

impl Sender {
    /// Starts the delivery task. Dead letters go to `service`'s queues.
    pub fn start(settings: Settings, service: Arc<Service>) -> Sender {
        let (jobs, receiver) = mpsc::unbounded_channel();
        let delivery = Delivery {
            settings: Arc::new(settings),
            service,
            connections: Arc::new(Semaphore::new(MAX_CONNECTIONS)),
        };
        tokio::spawn(delivery.run(receiver));
        Sender {
            jobs,
            pending_bytes: Arc::new(Semaphore::new(MAX_PENDING_BYTES >> 10)),
        }
    }

    /// Queues a delivery; never waits. Past the byte budget it is dropped
    /// with a log line (the subscriber sees a missed delivery, as with an
    /// endpoint that is down for longer than its retries).
    pub fn send(&self, work: Outbound) {
        let bytes = work.body.len();
        let kib = u32::try_from(bytes.div_ceil(1024).max(1)).unwrap_or(u32::MAX);
        let Ok(permit) = self.pending_bytes.clone().try_acquire_many_owned(kib) else {
            tracing::warn!(
                subscription = work.subscription.arn,
                "a webhook delivery was dropped: {MAX_PENDING_BYTES} bytes already wait to be sent"
            );
            return;
        };
        let job = Job { work, _bytes: permit };
        if self.jobs.send(job).is_err() {
            tracing::warn!("a webhook delivery was dropped: the sender has stopped");
        }
    }
}

/// The delivery task's side.
struct Delivery {
    settings: Arc<Settings>,
    service: Arc<Service>,
    connections: Arc<Semaphore>,
}

impl Delivery {
    async fn run(self, mut jobs: mpsc::UnboundedReceiver<Job>) {
        let this = Arc::new(self);
        while let Some(job) = jobs.recv().await {
            let this = this.clone();
            tokio::spawn(async move { this.deliver(job).await });
        }
    }

    /// Tries a job as its policy says, then dead-letters a notification
    /// that never got through.
    async fn deliver(&self, job: Job) {
        let subscription = job.work.subscription.clone();
        let topic_policy = self
            .service
            .topics()
            .topic(&subscription.topic)
            .ok()
            .and_then(|topic| topic.attributes.get("DeliveryPolicy").cloned());
        let policy = DeliveryPolicy::effective(
            topic_policy.as_deref(),
            subscription.attributes.get("DeliveryPolicy").map(String::as_str),
        );
        let request = match request::Prepared::new(&job.work, &policy) {
            Ok(request) => request,
            Err(why) => {
                tracing::warn!(subscription = subscription.arn, %why, "a webhook could not be sent");
                return;
            }
        };
        let mut delays = policy.delays().into_iter();
        loop {
            let outcome = {
                let Ok(_connection) = self.connections.acquire().await else {
                    return;
                };
                request.send(&self.settings.destinations, TRY_TIMEOUT).await
            };
            match outcome {
                request::Outcome::Delivered => {
                    self.count(&job.work, metrics::DELIVERED);
                    return;
                }
                request::Outcome::Permanent(why) | request::Outcome::Refused(why) => {
                    tracing::warn!(subscription = subscription.arn, endpoint = subscription.endpoint, %why, "a webhook delivery failed");
                    break;
                }
                request::Outcome::Retry(why) => match delays.next() {
                    Some(delay) => {
                        tracing::debug!(subscription = subscription.arn, %why, delay, "a webhook delivery will be retried");
                        tokio::time::sleep(Duration::from_secs(delay)).await;
                    }
                    None => {
                        tracing::warn!(subscription = subscription.arn, endpoint = subscription.endpoint, %why, "a webhook delivery failed after its retries");
                        break;
                    }
                },
            }
        }
        if job.work.kind == OutboundKind::Notification {
            self.count(&job.work, metrics::FAILED);
            let redriven = self.dead_letter(&subscription, &job.work.body).await;
            match (redriven, subscription.dead_letter_queue().is_some()) {
                (true, _) => self.count(&job.work, metrics::REDRIVEN),
                (false, true) => self.count(&job.work, metrics::NOT_REDRIVEN),
                (false, false) => {}
            }
        }
    }

    /// Counts a notification's outcome for its subscription.
    fn count(&self, work: &Outbound, metric: &'static str) {
        if work.kind == OutboundKind::Notification {
            let subscription = &work.subscription;
            self.service
                .metrics
                .sns_notification(&subscription.topic.to_string(), &subscription.arn, metric);
        }
    }

    /// Sends a notification that never got through to the subscription's
    /// dead-letter queue; whether it is there.
    async fn dead_letter(&self, subscription: &Subscription, body: &str) -> bool {
        let Some(queue) = subscription.dead_letter_queue() else {
            return false;
        };
        // A topic's dead-letter queues are of its account.
        if queue.account != subscription.topic.account {
            return false;
        }
        let name = key::of(&self.settings.home, &queue.account, &queue.region, &queue.name);
        let message = NewMessage {
            body: body.to_string(),
            attributes: Default::default(),
            delay_seconds: None,
            sender_id: crate::service::SNS_SENDER_ID.into(),
            trace_header: None,
            group_id: None,
            dedup_id: None,
        };
        match self.service.send(&name, vec![message]).await {
            Ok(_) => true,
            Err(error) => {
                tracing::warn!(subscription = subscription.arn, %error, "a failed webhook delivery could not be dead-lettered");
                false
            }
        }
    }
}
