//! Replays of FIFO topics' archives (`topic/archive.rs`): each runs as a
//! task of its own, a batch of archived publications at a time, every
//! batch's copies committed with the replay's progress in one commit, so
//! that a failover resumes a replay where its last commit left it, with no
//! copy lost or sent twice. After each load of the state, the replays it
//! holds unfinished are resumed.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use super::Service;
use super::topics::{Copy, unsubscribe_url};
use crate::topic::arn::subscription_topic;
use crate::topic::envelope::{Envelope, Notification, timestamp};
use crate::topic::{Protocol, ReplayStep, Result};

/// Archived publications looked at in one step.
const BATCH: usize = 100;

/// The replays this instance runs.
pub struct Replays {
    service: Arc<Service>,
    /// The subscriptions whose replay runs here.
    running: Running,
}

type Running = Arc<Mutex<HashSet<String>>>;

impl Replays {
    /// Also starts what resumes unfinished replays after each load.
    pub fn new(service: Arc<Service>) -> Replays {
        let running = Running::default();
        tokio::spawn(resume_after_loads(service.clone(), running.clone()));
        Replays { service, running }
    }

    /// Runs the replay of subscription `arn` (its policy just set), unless
    /// it already runs here.
    pub fn start(&self, arn: &str) {
        spawn(&self.service, &self.running, arn.to_string());
    }
}

fn lock(running: &Running) -> std::sync::MutexGuard<'_, HashSet<String>> {
    running.lock().unwrap_or_else(|p| p.into_inner())
}

fn spawn(service: &Arc<Service>, running: &Running, arn: String) {
    if !lock(running).insert(arn.clone()) {
        return;
    }
    let (service, running) = (service.clone(), running.clone());
    tokio::spawn(async move {
        loop {
            match service.replay_step(&arn).await {
                Ok(true) => tokio::task::yield_now().await,
                Ok(false) => break,
                Err(error) => {
                    tracing::info!(subscription = %arn, error = %error.message, "replay paused: the next load of the state resumes it");
                    break;
                }
            }
        }
        lock(&running).remove(&arn);
    });
}

async fn resume_after_loads(service: Arc<Service>, running: Running) {
    let mut loads = service.state_loaded.subscribe();
    // A load before this task started counts too.
    loads.mark_changed();
    loop {
        if loads.changed().await.is_err() {
            return;
        }
        let unfinished = service.topics().unfinished_replays();
        for arn in unfinished {
            tracing::info!(subscription = %arn, "resuming a replay");
            spawn(&service, &running, arn);
        }
    }
}

impl Service {
    /// One step of a replay, committed; whether there is more to do.
    async fn replay_step(&self, arn: &str) -> Result<bool> {
        let step_commit = {
            let mut topics = self.topics();
            topics.set_time(self.now());
            let archived = topics.held();
            let step = topics.replay_step(arn, BATCH).unwrap_or_else(|error| {
                tracing::warn!(subscription = %arn, error = %error.message, "a replay stopped");
                ReplayStep::Done
            });
            self.hold_topics(archived, &mut topics);
            let changes = topics.take_changes();
            let (more, copies) = match step {
                ReplayStep::Done => (false, Vec::new()),
                ReplayStep::Deliver {
                    subscription,
                    publications,
                    base_url,
                    home,
                } => {
                    let topic_arn = subscription.topic.to_string();
                    let unsubscribe = unsubscribe_url(&base_url, &subscription.arn);
                    let mut copies = Vec::new();
                    // FIFO topics deliver to SQS queues only.
                    if subscription.protocol == Protocol::Sqs {
                        for archived in publications {
                            // Checked when it was published.
                            let Ok(publication) = archived.publication() else {
                                continue;
                            };
                            let message = publication.message_for(Protocol::Sqs);
                            let body = match subscription.raw() {
                                true => message.to_string(),
                                false => {
                                    let sequence = format!("{:020}", archived.sequence);
                                    let notification = Notification {
                                        message_id: &archived.message_id,
                                        topic_arn: &topic_arn,
                                        subject: publication.subject.as_deref(),
                                        message,
                                        timestamp: &timestamp(archived.at),
                                        sequence_number: Some(&sequence),
                                        attributes: &publication.attributes,
                                        signature_version: 1,
                                        unsubscribe_url: &unsubscribe,
                                        replayed: true,
                                    };
                                    Envelope::notification(&notification, None).to_json()
                                }
                            };
                            copies.push(Copy::for_queue(&subscription, &publication, body, &home, true));
                        }
                    }
                    (true, copies)
                }
            };
            if changes.is_empty() && copies.is_empty() {
                return Ok(more);
            }
            let generation = topics.generation();
            let topic = subscription_topic(arn)?.to_string();
            let (delivered, commit) = self.store_copies(&topic, copies, None, changes, generation);
            if delivered.failed > 0 {
                tracing::warn!(subscription = %arn, failed = delivered.failed, "replayed copies had nowhere to go");
            }
            (commit, more)
        };
        let (commit, more) = step_commit;
        self.committed(commit).await?;
        Ok(more)
    }
}
