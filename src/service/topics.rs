//! The service's side of SNS: one shard's topics behind a lock, and a
//! Publish's fan-out: the copy for each subscribed queue sent to its queue
//! with every target queue locked at once (in name order, as two queues
//! are), and all of them submitted as one commit, so that a Publish is
//! answered only when every copy is stored and a crash before that leaves
//! none of them. Each delivery to an HTTP/S subscription is recorded in
//! that same commit (`topic/deliveries.rs`); the sender (`webhooks/`) takes
//! it from there, and never holds up the answer.

use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

use super::Service;
use super::commit::Commit;
use super::slot::{QueueSlot, lock_all};
use crate::journal::{Transfer, Write};
use crate::metrics;
use crate::queue::arn::QueueArn;
use crate::queue::key::{self, Home};
use crate::queue::{MessageAttributes, NewMessage};
use crate::topic::envelope::{Envelope, Notification, Sign, Signature};
use crate::topic::{
    OutboundKind, Protocol, Publication, Published, Result, SnsChange, SnsError, Subscription, TopicArn,
    Topics,
};

/// The SenderId of messages SNS delivers to queues: AWS's SNS principal.
pub const SNS_SENDER_ID: &str = "AIDAIT2UOQQY3AUEKVGXU";

/// What a fan-out needs to know of the request.
pub struct Fanout<'a> {
    /// Scheme and authority of this ssq, for the URLs in envelopes.
    pub base_url: &'a str,
    /// The instance's own account and region, to key the queues.
    pub home: &'a Home,
    /// X-Amzn-Trace-Id, carried to the queues as AWSTraceHeader.
    pub trace_header: Option<&'a str>,
    pub signer: &'a dyn Sign,
}

/// How a Publish's copies fared.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Delivered {
    /// Copies stored in their subscribed queue.
    pub to_queues: usize,
    /// Copies stored in their subscription's dead-letter queue.
    pub dead_lettered: usize,
    /// Copies with nowhere to go (the queue and any dead-letter queue gone,
    /// or the queue refused the message).
    pub failed: usize,
}

/// The shard's topics and the memory generation they belong to (as a
/// queue's slot knows its own): a change made on topics a load or a change
/// of leadership has replaced is submitted with their old generation, and
/// the store refuses it.
pub struct TopicsSlot {
    topics: Topics,
    generation: u64,
}

impl TopicsSlot {
    /// The memory generation these topics were installed in.
    pub fn generation(&self) -> u64 {
        self.generation
    }
}

impl std::ops::Deref for TopicsSlot {
    type Target = Topics;

    fn deref(&self) -> &Topics {
        &self.topics
    }
}

impl std::ops::DerefMut for TopicsSlot {
    fn deref_mut(&mut self) -> &mut Topics {
        &mut self.topics
    }
}

impl Service {
    /// The shard's topics, locked, to read.
    pub fn topics(&self) -> MutexGuard<'_, TopicsSlot> {
        self.topics
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Changes the shard's topics and answers once the change is durable:
    /// what it recorded is submitted with the lock held (so the store
    /// receives changes in memory's order), then waited for.
    pub async fn change_topics<R>(&self, change: impl FnOnce(&mut Topics) -> Result<R>) -> Result<R> {
        let (result, commit) = {
            let mut topics = self.topics();
            topics.set_time(self.now());
            let held = topics.held();
            let result = change(&mut topics);
            self.hold_topics(held, &mut topics);
            let changes = topics.take_changes();
            let writes = match changes.is_empty() {
                true => Vec::new(),
                false => vec![Write::Sns(changes)],
            };
            (result, self.submit(topics.generation, writes))
        };
        self.committed(commit).await.map_err(SnsError::from)?;
        result
    }

    /// Applies what a change to the topics moved to the instance's totals
    /// (what they held `before`, what they hold now) and to the share of
    /// each account whose deliveries it changed.
    pub(super) fn hold_topics(&self, before: (u64, u64), topics: &mut Topics) {
        self.hold(before, topics.held());
        for moved in topics.take_account_moves() {
            if let Some(accounts) = &self.accounts {
                accounts.apply(&moved.account, moved.before, moved.after);
            }
        }
    }

    /// Puts loaded topics in place of whatever memory held, in the
    /// generation the queues were just installed in.
    pub(super) fn install_topics(&self, mut topics: Topics) {
        if self.journal.is_some() {
            topics.enable_journal();
        }
        // The queues' install (or the clear) counted what is held afresh;
        // the archives are added here.
        self.hold_topics((0, 0), &mut topics);
        *self.topics() = TopicsSlot {
            topics,
            generation: self.generation(),
        };
        // Loaded deliveries wait for lanes.
        self.deliveries_added.notify_one();
    }

    /// Drops the topics with the rest of memory (after its generation
    /// moved on).
    pub(super) fn clear_topics(&self) {
        self.install_topics(Topics::default());
    }

    /// Publishes to a topic: registers the publication (a FIFO topic's
    /// sequence and deduplication), then stores a copy in every subscribed
    /// queue whose filter lets it through, all in one commit. Returns the
    /// answer, the webhook subscriptions with the document each is sent,
    /// and how the queue copies fared.
    pub async fn publish(
        &self,
        arn: &TopicArn,
        publication: &Publication,
        fanout: &Fanout<'_>,
    ) -> Result<(Published, Delivered)> {
        let fanned = self.fan_out(arn, publication, fanout)?;
        self.committed(fanned.commit).await.map_err(SnsError::from)?;
        self.wake_deliveries(fanned.wakes);
        Ok((fanned.published, fanned.delivered))
    }

    /// Tells the webhook sender of deliveries just added: the tasks of
    /// their lanes (`wakes`), and the sender, which starts those that have
    /// none.
    pub fn wake_deliveries(&self, wakes: Vec<Arc<Notify>>) {
        for wake in wakes {
            wake.notify_one();
        }
        self.deliveries_added.notify_one();
    }

    /// A Publish up to its commit: registered on the topic, its copies in
    /// their queues and submitted; the commit is left to wait for.
    fn fan_out(&self, arn: &TopicArn, publication: &Publication, fanout: &Fanout<'_>) -> Result<FannedOut> {
        let now = self.now();
        let message_id = crate::queue::random::uuid().to_string();
        // A FIFO topic's sequence and deduplication ids change with each
        // Publish: its lock is held until the copies are submitted with
        // them, so that the store receives them in order. A standard
        // topic's Publish changes no topic.
        let mut topics = self.topics();
        topics.set_time(now);
        let topic = topics.topic(arn)?;
        let signature_version = topic.signature_version();
        // Room for a copy in every subscription, checked before the topic
        // records the publication (a FIFO topic's deduplication id must
        // not be kept for a publication refused).
        let copies = topic.subscription_arns().len() as u64;
        let kept = copies + u64::from(topic.archives());
        let size =
            publication.message.len() + crate::queue::message::attributes_size(&publication.attributes);
        self.check_room(kept, kept.saturating_mul(size as u64))
            .map_err(SnsError::from)?;
        // Room for a delivery in every HTTP/S subscription's lane.
        topics.check_delivery_room(arn)?;
        if let Some(accounts) = &self.accounts {
            accounts
                .check_room(&arn.account, copies.saturating_mul(size as u64))
                .map_err(SnsError::from)?;
        }
        let held = topics.held();
        let published = topics.publish(arn, publication, message_id, now)?;
        self.hold_topics(held, &mut topics);
        let mut sns_changes = topics.take_changes();
        // Those a filter may keep it from: confirmed, taking live messages.
        let subscribed = topics
            .subscriptions_of(arn)
            .filter(|sub| !sub.pending && sub.takes_live())
            .count();
        let topics = match sns_changes.is_empty() {
            true => {
                drop(topics);
                None
            }
            false => Some(topics),
        };
        let timestamp = crate::topic::envelope::timestamp(now);
        let topic_arn = arn.to_string();
        let certificate_url = fanout.signer.certificate_url(fanout.base_url);
        // Signed once for each message text the subscriptions receive (one,
        // unless a JSON structure gives protocols messages of their own):
        // an RSA signature is most of what a signed Publish costs.
        let mut signatures: Vec<(&str, String)> = Vec::new();
        let fifo = published.sequence_number.is_some();
        let mut body_for = |sub: &Subscription| {
            if sub.raw() {
                return publication.message_for(sub.protocol).to_string();
            }
            let unsubscribe = unsubscribe_url(fanout.base_url, &sub.arn);
            let notification = Notification {
                message_id: &published.message_id,
                topic_arn: &topic_arn,
                subject: publication.subject.as_deref(),
                message: publication.message_for(sub.protocol),
                timestamp: &timestamp,
                sequence_number: published.sequence_number.as_deref(),
                attributes: &publication.attributes,
                signature_version,
                unsubscribe_url: &unsubscribe,
                replayed: false,
            };
            if fifo {
                return Envelope::notification(&notification, None).to_json();
            }
            let message = publication.message_for(sub.protocol);
            let at = match signatures.iter().position(|(signed, _)| *signed == message) {
                Some(at) => at,
                None => {
                    let value = fanout
                        .signer
                        .sign(signature_version, notification.string_to_sign().as_bytes());
                    signatures.push((message, value));
                    signatures.len() - 1
                }
            };
            let signature = Signature {
                value: &signatures[at].1,
                certificate_url: &certificate_url,
            };
            Envelope::notification(&notification, Some(&signature)).to_json()
        };
        let mut copies = Vec::new();
        let mut webhooks = Vec::new();
        for sub in &published.deliveries {
            match sub.protocol {
                Protocol::Sqs => copies.push(Copy::for_queue(
                    sub,
                    publication,
                    body_for(sub),
                    fanout.home,
                    published.sequence_number.is_some(),
                )),
                Protocol::Http | Protocol::Https => webhooks.push((sub, body_for(sub))),
                Protocol::Email | Protocol::EmailJson | Protocol::Sms => {}
            }
        }
        // Each HTTP/S delivery is recorded in the commit of the queue
        // copies, under the topics' lock (taken again for a standard topic;
        // the signing above was done without it).
        let mut wakes = Vec::new();
        let topics = match (topics, webhooks.is_empty()) {
            (topics, true) => topics,
            (topics, false) => {
                let mut topics = topics.unwrap_or_else(|| self.topics());
                let held = topics.held();
                for (sub, body) in webhooks {
                    let wake = topics.add_delivery(
                        sub,
                        OutboundKind::Notification,
                        &published.message_id,
                        body,
                        now,
                    );
                    wakes.extend(wake);
                }
                self.hold_topics(held, &mut topics);
                sns_changes.extend(topics.take_changes());
                Some(topics)
            }
        };
        let topics_generation = topics
            .as_ref()
            .map_or(self.generation(), |topics| topics.generation);
        let (delivered, commit) = self.store_copies(
            &topic_arn,
            copies,
            fanout.trace_header,
            sns_changes,
            topics_generation,
        );
        drop(topics);
        let filtered_out = subscribed.saturating_sub(published.deliveries.len());
        if filtered_out > 0 {
            // Which ones: those a filter kept it from (not the pending).
            let topics = self.topics();
            let passed: std::collections::HashSet<&str> =
                published.deliveries.iter().map(|sub| sub.arn.as_str()).collect();
            for sub in topics.subscriptions_of(arn) {
                if !sub.pending && sub.takes_live() && !passed.contains(sub.arn.as_str()) {
                    self.metrics
                        .sns_notification(&topic_arn, &sub.arn, metrics::FILTERED_OUT);
                }
            }
        }
        let failed = delivered.failed;
        self.metrics.sns_published(
            &arn.to_string(),
            delivered.to_queues + delivered.dead_lettered,
            failed,
            filtered_out,
        );
        Ok(FannedOut {
            published,
            wakes,
            delivered,
            commit,
        })
    }

    /// Sends each copy to its queue, or to its dead-letter queue when its
    /// queue is gone or refuses it, every queue locked at once, and submits
    /// every change (with `sns`, the topic's) as one commit, to be waited
    /// for. In a sharded group a copy for a queue of another shard goes
    /// into the outbox in that commit, for the transfers between shards to
    /// take it there exactly once (`cluster/transfers.rs`).
    pub(super) fn store_copies(
        &self,
        topic: &str,
        copies: Vec<Copy>,
        trace_header: Option<&str>,
        sns: Vec<SnsChange>,
        topics_generation: u64,
    ) -> (Delivered, Commit) {
        let mut delivered = Delivered::default();
        let (away, copies): (Vec<Copy>, Vec<Copy>) = copies.into_iter().partition(|copy| {
            copy.queue
                .as_deref()
                .is_some_and(|queue| self.is_elsewhere(queue))
        });
        let transfers: Vec<Transfer> = away
            .into_iter()
            .filter_map(|copy| {
                let to = copy.queue.clone()?;
                self.metrics
                    .sns_notification(topic, &copy.subscription, metrics::DELIVERED);
                let message = new_message(&copy, trace_header, to.ends_with(".fifo")).in_transit(self.now());
                Some(Transfer {
                    from: topic.to_string(),
                    to,
                    message,
                    dead_letter_source: None,
                })
            })
            .collect();
        delivered.to_queues += transfers.len();
        let mut last_writes: Vec<Write> = Vec::new();
        if !sns.is_empty() {
            last_writes.push(Write::Sns(sns));
        }
        if !transfers.is_empty() {
            last_writes.push(Write::Outbox(transfers));
        }
        let mut names: Vec<String> = copies
            .iter()
            .flat_map(|copy| copy.queue.iter().chain(copy.dead_letter.iter()).cloned())
            .collect();
        names.sort();
        names.dedup();
        let slots: Vec<Arc<QueueSlot>> = names.iter().filter_map(|name| self.slot(name).ok()).collect();
        if slots.is_empty() {
            delivered.failed += copies.len();
            for copy in &copies {
                self.metrics
                    .sns_notification(topic, &copy.subscription, metrics::FAILED);
            }
            return (delivered, self.submit(topics_generation, last_writes));
        }
        let commit = {
            let mut guards = lock_all(&slots);
            let now = self.now();
            let index_of = |name: &str, guards: &[MutexGuard<'_, crate::queue::Queue>]| {
                guards.iter().position(|queue| queue.name == name)
            };
            let closed: Vec<bool> = slots.iter().map(|slot| slot.is_closed()).collect();
            let before: Vec<(u64, u64)> = guards.iter().map(|queue| queue.holding()).collect();
            for copy in copies {
                let mut send_to = |name: &Option<String>| -> bool {
                    let Some(index) = name.as_deref().and_then(|name| index_of(name, &guards)) else {
                        return false;
                    };
                    if closed[index] || !self.topic_may_send(topic, &guards[index]) {
                        return false;
                    }
                    let queue = &mut guards[index];
                    let new = new_message(&copy, trace_header, queue.attributes.fifo_queue);
                    queue.send(new, now).is_ok()
                };
                let count = |metric| self.metrics.sns_notification(topic, &copy.subscription, metric);
                if send_to(&copy.queue) {
                    delivered.to_queues += 1;
                    count(metrics::DELIVERED);
                } else if send_to(&copy.dead_letter) {
                    delivered.dead_lettered += 1;
                    count(metrics::FAILED);
                    count(metrics::REDRIVEN);
                } else {
                    delivered.failed += 1;
                    count(metrics::FAILED);
                    if copy.dead_letter.is_some() {
                        count(metrics::NOT_REDRIVEN);
                    }
                }
            }
            for (queue, before) in guards.iter().zip(before) {
                self.hold_queue(&queue.name, before, queue.holding());
            }
            // A publication that straddles a load (its topic from before,
            // its queues from after, or the other way) carries the older
            // generation, which the store refuses.
            let generation = match last_writes.is_empty() {
                false => slots[0].generation.min(topics_generation),
                true => slots[0].generation,
            };
            let mut writes: Vec<Write> = guards.iter_mut().map(|queue| Self::changes_of(queue)).collect();
            writes.extend(last_writes);
            self.submit(generation, writes)
        };
        for slot in &slots {
            slot.ready.notify_waiters();
        }
        (delivered, commit)
    }
}

impl Service {
    /// Whether the topic `topic` (its ARN) may send to `queue`: always,
    /// unless topics need the queue's policy (with `--credentials`), where
    /// only if it allows SNS (`sns.amazonaws.com`) SendMessage on the queue
    /// for this topic (`aws:SourceArn`, `aws:SourceAccount`), as AWS asks.
    pub(super) fn topic_may_send(&self, topic: &str, queue: &crate::queue::Queue) -> bool {
        use crate::policy::{Decision, Principal, Request};
        let Some(home) = self.accounts.as_ref().map(|accounts| &accounts.home) else {
            return true;
        };
        let Some(policy) = queue
            .attributes
            .policy
            .as_ref()
            .and_then(|policy| policy.read.as_ref())
        else {
            return false;
        };
        let arn = key::arn(&queue.name, home);
        let topic_account = crate::policy::account_of_arn(topic).unwrap_or_default();
        let context = crate::policy::condition::Context::from([
            ("aws:sourcearn".to_string(), vec![topic.to_string()]),
            ("aws:sourceaccount".to_string(), vec![topic_account.to_string()]),
        ]);
        let request = Request {
            action: "sqs:SendMessage",
            resource: &arn,
            context: &context,
            principal: Some(Principal::Service("sns.amazonaws.com")),
        };
        policy.evaluate(&request) == Decision::Allow
    }
}

/// A Publish submitted, its commit still to wait for.
struct FannedOut {
    published: Published,
    /// The lanes of the HTTP/S deliveries it added, to wake once they are
    /// committed.
    wakes: Vec<Arc<Notify>>,
    delivered: Delivered,
    commit: Commit,
}

/// One copy of a publication, bound for a queue.
pub(super) struct Copy {
    /// The subscription's ARN, for its metrics.
    pub(super) subscription: String,
    /// The queue's key, `None` when the endpoint is not a queue of this
    /// ssq's account.
    pub(super) queue: Option<String>,
    pub(super) dead_letter: Option<String>,
    pub(super) body: String,
    pub(super) attributes: MessageAttributes,
    pub(super) group_id: Option<String>,
    pub(super) dedup_id: Option<String>,
    /// A FIFO topic's group id goes to FIFO queues only; a standard
    /// topic's to standard queues too (fair queues use it).
    pub(super) from_fifo_topic: bool,
}

impl Copy {
    /// `publication`'s copy, with `body`, for the queue `sub` subscribes
    /// (and its dead-letter queue), when they are queues of the topic's
    /// account (`home` keys them): a raw delivery carries the publication's
    /// attributes, an envelope none.
    pub(super) fn for_queue(
        sub: &Subscription,
        publication: &Publication,
        body: String,
        home: &Home,
        from_fifo_topic: bool,
    ) -> Copy {
        Copy {
            subscription: sub.arn.clone(),
            queue: queue_key_in(&sub.endpoint, &sub.topic.account, home),
            dead_letter: sub
                .dead_letter_queue()
                .and_then(|arn| queue_key_in(&arn.to_string(), &sub.topic.account, home)),
            body,
            attributes: match sub.raw() {
                true => publication.attributes.clone(),
                false => MessageAttributes::new(),
            },
            group_id: publication.group_id.clone(),
            dedup_id: publication.dedup_id.clone(),
            from_fifo_topic,
        }
    }
}

/// A copy as its queue receives it: a FIFO topic's group id goes to FIFO
/// queues only, its deduplication id to FIFO queues.
fn new_message(copy: &Copy, trace_header: Option<&str>, fifo_queue: bool) -> NewMessage {
    NewMessage {
        body: copy.body.clone(),
        attributes: copy.attributes.clone(),
        delay_seconds: None,
        sender_id: SNS_SENDER_ID.into(),
        trace_header: trace_header.map(str::to_string),
        group_id: copy
            .group_id
            .clone()
            .filter(|_| fifo_queue || !copy.from_fifo_topic),
        dedup_id: copy.dedup_id.clone().filter(|_| fifo_queue),
    }
}

/// The key of the queue an SQS ARN names, if it is one of `account`.
fn queue_key_in(endpoint: &str, account: &str, home: &Home) -> Option<String> {
    let arn = QueueArn::parse(endpoint)?;
    (arn.account == account).then(|| key::of(home, &arn.account, &arn.region, &arn.name))
}

/// The URL that ends a subscription, as AWS puts it in every notification.
pub fn unsubscribe_url(base_url: &str, subscription_arn: &str) -> String {
    format!("{base_url}/?Action=Unsubscribe&SubscriptionArn={subscription_arn}")
}

/// The topics of a shard, made empty: what a new service starts with.
pub(super) fn no_topics() -> Mutex<TopicsSlot> {
    Mutex::new(TopicsSlot {
        topics: Topics::default(),
        generation: 0,
    })
}
