//! Deliveries waiting for HTTP and HTTPS subscriptions, kept with the
//! topics so that they are as durable as a Publish's queue copies: each is
//! a record of its own (`w:<subscription arn> <id>`), written in the same
//! commit as the change that caused it (a Publish, with its queue copies;
//! a Subscribe's or an Unsubscribe's confirmation), rewritten as its tries
//! go (the next try's time is in it, so it survives a restart) and removed
//! once it is delivered, dead-lettered or given up. A new leader loads them
//! and goes on where the last one stopped: at least once, as AWS delivers
//! to HTTP/S.
//!
//! Each subscription has a lane of its own: its waiting deliveries ordered
//! by when each is next due, bounded ([`MAX_WAITING`]: past it a Publish
//! to its topic is refused, as a full queue would be, rather than a
//! delivery dropped), and sent by a task of its own (`webhooks/`), so that
//! an endpoint that is slow, stuck or down holds up its own deliveries
//! only. Which are in flight, and whether the lane's task runs, live in
//! memory alone: a load starts with every delivery waiting and no task.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

use super::error::{Result, SnsError};
use super::{Protocol, SnsChange, Subscription, TopicArn, Topics};

/// What an outbound document is, as `x-amz-sns-message-type` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum OutboundKind {
    SubscriptionConfirmation,
    Notification,
    UnsubscribeConfirmation,
}

impl OutboundKind {
    pub fn name(self) -> &'static str {
        match self {
            OutboundKind::SubscriptionConfirmation => "SubscriptionConfirmation",
            OutboundKind::Notification => "Notification",
            OutboundKind::UnsubscribeConfirmation => "UnsubscribeConfirmation",
        }
    }
}

/// The most deliveries one subscription may have waiting.
pub const MAX_WAITING: usize = 10_000;

/// One delivery to an HTTP/S endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub id: u64,
    pub subscription: String,
    pub topic: TopicArn,
    /// Where it goes: kept with it, so that an UnsubscribeConfirmation
    /// reaches an endpoint whose subscription is gone.
    pub endpoint: String,
    /// Raw message delivery (its header).
    pub raw: bool,
    pub kind: OutboundKind,
    pub message_id: String,
    /// The signed document, or the message itself with raw delivery.
    pub body: Arc<str>,
    /// Tries made so far.
    pub tries: u32,
    /// When it is next due, wall-clock milliseconds.
    pub next_at: u64,
    /// When it was made: the age of a subscription's oldest.
    pub created_at: u64,
}

impl Delivery {
    /// What it counts for in `--max-messages` and `--max-bytes`.
    fn holding(&self) -> (u64, u64) {
        (1, self.body.len() as u64)
    }
}

/// A delivery as its record keeps it (the subscription and id are in the
/// key).
#[derive(Serialize, Deserialize)]
struct DeliveryRecord {
    topic: String,
    endpoint: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    raw: bool,
    kind: OutboundKind,
    message_id: String,
    body: String,
    #[serde(default)]
    tries: u32,
    next_at: u64,
    created_at: u64,
}

pub(super) fn delivery_key(subscription: &str, id: u64) -> String {
    format!("w:{subscription} {id:020}")
}

fn delivery_record(delivery: &Delivery) -> String {
    let record = DeliveryRecord {
        topic: delivery.topic.to_string(),
        endpoint: delivery.endpoint.clone(),
        raw: delivery.raw,
        kind: delivery.kind,
        message_id: delivery.message_id.clone(),
        body: delivery.body.to_string(),
        tries: delivery.tries,
        next_at: delivery.next_at,
        created_at: delivery.created_at,
    };
    serde_json::to_string(&record).unwrap_or_default()
}

/// Why a delivery's record could not be read back.
#[derive(Debug, thiserror::Error)]
pub(super) enum UnreadableDelivery {
    #[error("its key has no delivery id")]
    NoId,
    #[error("{0} is not a delivery id")]
    BadId(String),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error("its topic: {}", .0.message)]
    Topic(SnsError),
}

/// A delivery read back from its record (`rest` is the key after `w:`).
pub(super) fn read_delivery(rest: &str, text: &str) -> std::result::Result<Delivery, UnreadableDelivery> {
    let (subscription, id) = rest.split_once(' ').ok_or(UnreadableDelivery::NoId)?;
    let id = id
        .parse::<u64>()
        .map_err(|_| UnreadableDelivery::BadId(id.to_string()))?;
    let record: DeliveryRecord = serde_json::from_str(text)?;
    let topic = TopicArn::parse("TopicArn", &record.topic).map_err(UnreadableDelivery::Topic)?;
    Ok(Delivery {
        id,
        subscription: subscription.to_string(),
        topic,
        endpoint: record.endpoint,
        raw: record.raw,
        kind: record.kind,
        message_id: record.message_id,
        body: record.body.into(),
        tries: record.tries,
        next_at: record.next_at,
        created_at: record.created_at,
    })
}

/// Every waiting delivery, by id, and each subscription's lane.
#[derive(Debug, Default, Clone)]
pub struct Deliveries {
    waiting: BTreeMap<u64, Delivery>,
    lanes: HashMap<String, Lane>,
    next_id: u64,
    /// Deliveries and their bytes, counted in the instance's limits.
    held: (u64, u64),
    /// The same by the account of each delivery's topic, counted in the
    /// account's.
    by_account: HashMap<String, (u64, u64)>,
    /// The accounts whose holding changed since the service last took the
    /// changes, each with what it held before.
    moved: HashMap<String, (u64, u64)>,
}

/// One subscription's deliveries.
#[derive(Debug, Default, Clone)]
struct Lane {
    /// Waiting and not in flight, by when they are due.
    due: BTreeSet<(u64, u64)>,
    /// All of its deliveries, in flight or not, oldest first.
    ids: BTreeSet<u64>,
    /// Whether a task sends them (memory alone).
    running: bool,
    /// Wakes that task when one is added.
    wake: Arc<Notify>,
}

impl Deliveries {
    /// Takes in a delivery loaded from its record.
    pub(super) fn restore(&mut self, delivery: Delivery) {
        self.next_id = self.next_id.max(delivery.id + 1);
        self.insert(delivery);
    }

    fn insert(&mut self, delivery: Delivery) {
        let lane = self.lanes.entry(delivery.subscription.clone()).or_default();
        lane.due.insert((delivery.next_at, delivery.id));
        lane.ids.insert(delivery.id);
        let (n, bytes) = delivery.holding();
        self.held = (self.held.0 + n, self.held.1 + bytes);
        let account = self.account_held(&delivery.topic.account);
        *account = (account.0 + n, account.1 + bytes);
        self.waiting.insert(delivery.id, delivery);
    }

    /// What an account's deliveries hold, to be changed: its value before
    /// is kept for the service to see the move (`take_account_moves`).
    fn account_held(&mut self, account: &str) -> &mut (u64, u64) {
        let held = self.by_account.entry(account.to_string()).or_default();
        self.moved.entry(account.to_string()).or_insert(*held);
        held
    }

    fn remove(&mut self, id: u64) -> Option<Delivery> {
        let delivery = self.waiting.remove(&id)?;
        if let Some(lane) = self.lanes.get_mut(&delivery.subscription) {
            lane.due.remove(&(delivery.next_at, id));
            lane.ids.remove(&id);
        }
        let (n, bytes) = delivery.holding();
        self.held = (self.held.0 - n, self.held.1 - bytes);
        let account = self.account_held(&delivery.topic.account);
        *account = (account.0 - n, account.1 - bytes);
        Some(delivery)
    }

    fn waiting_in(&self, lane: &Lane) -> Waiting {
        Waiting {
            count: lane.ids.len(),
            oldest_created_at: lane
                .ids
                .first()
                .and_then(|id| self.waiting.get(id))
                .map(|delivery| delivery.created_at),
        }
    }

    /// Every delivery, for the records.
    pub(super) fn all(&self) -> impl Iterator<Item = (String, String)> + '_ {
        self.waiting.values().map(|delivery| {
            (
                delivery_key(&delivery.subscription, delivery.id),
                delivery_record(delivery),
            )
        })
    }
}

/// A subscription whose lane a task should now send.
#[derive(Debug, Clone)]
pub struct LaneStart {
    pub subscription: String,
    pub wake: Arc<Notify>,
}

/// How what an account's deliveries hold (messages, bytes) changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountMove {
    pub account: String,
    pub before: (u64, u64),
    pub after: (u64, u64),
}

/// What one subscription has waiting: how many, and since when the oldest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Waiting {
    pub count: usize,
    pub oldest_created_at: Option<u64>,
}

impl Topics {
    /// Refuses a Publish to `topic` while one of its confirmed HTTP/S
    /// subscriptions has [`MAX_WAITING`] deliveries waiting: AWS's
    /// `Throttled`, which clients retry with backoff.
    pub fn check_delivery_room(&self, topic: &TopicArn) -> Result<()> {
        let full = self.subscriptions_of(topic).find(|sub| {
            matches!(sub.protocol, Protocol::Http | Protocol::Https)
                && !sub.pending
                && self
                    .deliveries
                    .lanes
                    .get(&sub.arn)
                    .is_some_and(|lane| lane.ids.len() >= MAX_WAITING)
        });
        match full {
            None => Ok(()),
            Some(sub) => Err(SnsError::new(
                "Throttled",
                429,
                format!(
                    "The endpoint of subscription {} has {MAX_WAITING} deliveries waiting, the most it may have: \
                     publish again once it has taken some",
                    sub.arn
                ),
            )),
        }
    }

    /// Records a delivery to `subscription`, due at once; the wake of its
    /// lane's task, if one runs (else the sender starts one).
    pub fn add_delivery(
        &mut self,
        subscription: &Subscription,
        kind: OutboundKind,
        message_id: &str,
        body: String,
        now: u64,
    ) -> Option<Arc<Notify>> {
        let deliveries = &mut self.deliveries;
        let id = deliveries.next_id;
        deliveries.next_id += 1;
        let delivery = Delivery {
            id,
            subscription: subscription.arn.clone(),
            topic: subscription.topic.clone(),
            endpoint: subscription.endpoint.clone(),
            raw: subscription.raw(),
            kind,
            message_id: message_id.to_string(),
            body: body.into(),
            tries: 0,
            next_at: now,
            created_at: now,
        };
        if self.journaling() {
            self.record(SnsChange::Put {
                key: delivery_key(&delivery.subscription, id),
                record: delivery_record(&delivery),
            });
        }
        let deliveries = &mut self.deliveries;
        deliveries.insert(delivery);
        let lane = &deliveries.lanes[&subscription.arn];
        lane.running.then(|| lane.wake.clone())
    }

    /// Drops a subscription's deliveries (it is gone: AWS sends nothing
    /// more to it).
    pub(super) fn drop_deliveries(&mut self, subscription: &str) {
        let Some(lane) = self.deliveries.lanes.get(subscription) else {
            return;
        };
        let ids: Vec<u64> = lane.ids.iter().copied().collect();
        for id in ids {
            self.deliveries.remove(id);
            self.record(SnsChange::Delete {
                key: delivery_key(subscription, id),
            });
        }
    }

    /// The subscriptions with deliveries waiting and no task sending them,
    /// each now marked as sent by one.
    pub fn lanes_to_start(&mut self) -> Vec<LaneStart> {
        self.deliveries
            .lanes
            .iter_mut()
            .filter(|(_, lane)| !lane.running && !lane.ids.is_empty())
            .map(|(subscription, lane)| {
                lane.running = true;
                LaneStart {
                    subscription: subscription.clone(),
                    wake: lane.wake.clone(),
                }
            })
            .collect()
    }

    /// At most `max` of a subscription's deliveries due at `now`, taken to
    /// be sent (in flight until their outcome is told).
    pub fn take_due(&mut self, subscription: &str, now: u64, max: usize) -> Vec<Delivery> {
        self.take_before(subscription, now.saturating_add(1), max)
    }

    /// At most `max` of a subscription's deliveries that were due before
    /// `due_before` and were not taken: an endpoint too slow or stuck to
    /// take them within their delivery policy's time. Taken to be given up
    /// (in flight until their outcome is told).
    pub fn take_overdue(&mut self, subscription: &str, due_before: u64, max: usize) -> Vec<Delivery> {
        self.take_before(subscription, due_before, max)
    }

    /// At most `max` of a subscription's deliveries due before `due_before`,
    /// earliest first, taken out of its lane (in flight until their outcome
    /// is told).
    fn take_before(&mut self, subscription: &str, due_before: u64, max: usize) -> Vec<Delivery> {
        let deliveries = &mut self.deliveries;
        let Some(lane) = deliveries.lanes.get_mut(subscription) else {
            return Vec::new();
        };
        let mut taken = Vec::new();
        while taken.len() < max {
            let Some(&(at, id)) = lane.due.first() else { break };
            if at >= due_before {
                break;
            }
            lane.due.pop_first();
            if let Some(delivery) = deliveries.waiting.get(&id) {
                taken.push(delivery.clone());
            }
        }
        taken
    }

    /// When a subscription's next waiting delivery is due, if it has one
    /// that is not in flight.
    pub fn next_due(&self, subscription: &str) -> Option<u64> {
        let lane = self.deliveries.lanes.get(subscription)?;
        lane.due.first().map(|(at, _)| *at)
    }

    /// The lane's task ends when its subscription has nothing waiting or in
    /// flight: whether it may (it is then marked as not running, so that a
    /// delivery added later starts a new one).
    pub fn lane_done(&mut self, subscription: &str) -> bool {
        let Some(lane) = self.deliveries.lanes.get_mut(subscription) else {
            return true;
        };
        if !lane.ids.is_empty() {
            return false;
        }
        self.deliveries.lanes.remove(subscription);
        true
    }

    /// A delivery got through, or is given up: it is removed; the delivery,
    /// if it was still there.
    pub fn finish_delivery(&mut self, subscription: &str, id: u64) -> Option<Delivery> {
        let delivery = self.deliveries.remove(id)?;
        if self.journaling() {
            self.record(SnsChange::Delete {
                key: delivery_key(subscription, id),
            });
        }
        Some(delivery)
    }

    /// A try failed and another is due at `next_at`: the delivery waits
    /// again, its tries and next time recorded.
    pub fn retry_delivery(&mut self, id: u64, next_at: u64) {
        let Some(delivery) = self.deliveries.waiting.get_mut(&id) else {
            return;
        };
        let was_due = delivery.next_at;
        delivery.tries += 1;
        delivery.next_at = next_at;
        let change = SnsChange::Put {
            key: delivery_key(&delivery.subscription, id),
            record: delivery_record(delivery),
        };
        if let Some(lane) = self.deliveries.lanes.get_mut(&delivery.subscription) {
            // Waiting rather than in flight when the try was made from an
            // older memory (a load came between).
            lane.due.remove(&(was_due, id));
            lane.due.insert((next_at, id));
        }
        self.record(change);
    }

    /// What a subscription has waiting.
    pub fn waiting(&self, subscription: &str) -> Waiting {
        self.deliveries
            .lanes
            .get(subscription)
            .map_or_else(Waiting::default, |lane| self.deliveries.waiting_in(lane))
    }

    /// Every subscription with deliveries waiting, with its topic and what
    /// it has.
    pub fn all_waiting(&self) -> Vec<(String, TopicArn, Waiting)> {
        self.deliveries
            .lanes
            .iter()
            .filter_map(|(subscription, lane)| {
                let oldest = self.deliveries.waiting.get(lane.ids.first()?)?;
                Some((
                    subscription.clone(),
                    oldest.topic.clone(),
                    self.deliveries.waiting_in(lane),
                ))
            })
            .collect()
    }

    /// What the waiting deliveries hold: how many, and their bytes.
    pub fn deliveries_held(&self) -> (u64, u64) {
        self.deliveries.held
    }

    /// Each account whose deliveries' holding changed since the last call,
    /// with what it held before and holds now: for the service to apply to
    /// the account's share of the limits.
    pub fn take_account_moves(&mut self) -> Vec<AccountMove> {
        let deliveries = &mut self.deliveries;
        deliveries
            .moved
            .drain()
            .map(|(account, before)| {
                let after = deliveries.by_account.get(&account).copied().unwrap_or_default();
                AccountMove {
                    account,
                    before,
                    after,
                }
            })
            .filter(|moved| moved.before != moved.after)
            .collect()
    }

    /// What the topics hold that counts in the instance's limits, beside
    /// the queues: archived publications and waiting deliveries.
    pub fn held(&self) -> (u64, u64) {
        let (archived, delivering) = (self.archived(), self.deliveries.held);
        (archived.0 + delivering.0, archived.1 + delivering.1)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn with_hook() -> (Topics, Subscription) {
        let mut topics = Topics::default();
        topics.enable_journal();
        let arn = TopicArn::new("us-east-1", "000000000000", "hooked");
        topics.create(arn.clone(), BTreeMap::new(), vec![]).unwrap();
        let subscribed = topics
            .subscribe(
                &arn,
                Protocol::Http,
                "http://127.0.0.1:1/hook",
                &BTreeMap::new(),
                "000000000000",
            )
            .unwrap();
        let token = subscribed.pending_token.unwrap();
        topics.confirm(&arn.to_string(), &token).unwrap();
        let sub = topics.subscription(&subscribed.arn).unwrap().clone();
        topics.take_changes();
        (topics, sub)
    }

    #[test]
    fn a_delivery_is_recorded_tried_again_and_removed_and_a_load_gives_it_back() {
        let (mut topics, sub) = with_hook();
        assert!(
            topics
                .add_delivery(&sub, OutboundKind::Notification, "m1", "one".into(), 1_000)
                .is_none()
        );
        topics.add_delivery(&sub, OutboundKind::Notification, "m2", "two".into(), 1_000);
        let written = topics.take_changes();
        assert_eq!(written.len(), 2, "a record each, for the Publish's commit");
        assert_eq!(topics.deliveries_held(), (2, 6));
        let account = sub.topic.account.clone();
        assert_eq!(
            topics.take_account_moves(),
            vec![AccountMove {
                account: account.clone(),
                before: (0, 0),
                after: (2, 6)
            }],
            "counted for the account"
        );
        assert!(topics.take_account_moves().is_empty(), "each move told once");
        let started = topics.lanes_to_start();
        assert_eq!(started.len(), 1);
        assert!(topics.lanes_to_start().is_empty(), "one task a lane");

        let taken = topics.take_due(&sub.arn, 1_000, 10);
        assert_eq!(
            taken.iter().map(|d| d.message_id.as_str()).collect::<Vec<_>>(),
            ["m1", "m2"]
        );
        assert!(
            topics.take_due(&sub.arn, 1_000, 10).is_empty(),
            "in flight: not taken twice"
        );
        topics.retry_delivery(taken[0].id, 21_000);
        topics.finish_delivery(&sub.arn, taken[1].id);
        assert_eq!(topics.next_due(&sub.arn), Some(21_000));
        assert!(topics.take_due(&sub.arn, 20_999, 10).is_empty(), "not due yet");
        assert!(!topics.lane_done(&sub.arn), "one still waits");
        assert!(
            topics.take_overdue(&sub.arn, 21_000, 10).is_empty(),
            "due at 21,000, not before"
        );
        let overdue = topics.take_overdue(&sub.arn, 21_001, 10);
        assert_eq!(overdue.iter().map(|d| d.id).collect::<Vec<_>>(), [taken[0].id]);
        topics.retry_delivery(taken[0].id, 21_000);
        assert_eq!(
            topics.take_account_moves(),
            vec![AccountMove {
                account: account.clone(),
                before: (2, 6),
                after: (1, 3)
            }]
        );

        // What a store holds gives the same deliveries back, the tries counted.
        let restored = Topics::restore(topics.records()).unwrap();
        let mut restored = restored;
        let again = restored.take_due(&sub.arn, 21_000, 10);
        assert_eq!(again.len(), 1);
        assert_eq!(
            (again[0].tries, again[0].next_at, &*again[0].body),
            (2, 21_000, "one")
        );
        assert_eq!(restored.deliveries_held(), (1, 3));
        restored.finish_delivery(&sub.arn, again[0].id);
        assert!(restored.lane_done(&sub.arn));
        let fresh = restored.add_delivery(&sub, OutboundKind::Notification, "m3", "three".into(), 30_000);
        assert!(fresh.is_none(), "a lane whose task ended needs a new one");
        assert!(
            restored.take_due(&sub.arn, 30_000, 1)[0].id > again[0].id,
            "ids go on"
        );
    }

    #[test]
    fn a_full_lane_refuses_the_publish_and_an_unsubscribe_drops_what_waits() {
        let (mut topics, sub) = with_hook();
        for n in 0..MAX_WAITING {
            topics.add_delivery(&sub, OutboundKind::Notification, &n.to_string(), "x".into(), 0);
        }
        let refused = topics.check_delivery_room(&sub.topic).unwrap_err();
        assert_eq!((refused.code, refused.status), ("Throttled", 429));
        topics.take_changes();
        topics.unsubscribe(&sub.arn);
        assert_eq!(topics.deliveries_held(), (0, 0));
        let deleted = topics
            .take_changes()
            .iter()
            .filter(|change| matches!(change, SnsChange::Delete { key } if key.starts_with("w:")))
            .count();
        assert_eq!(deleted, MAX_WAITING);
    }
}
