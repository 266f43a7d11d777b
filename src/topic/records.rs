//! Topics as the stores keep them: a record a topic, a subscription, a
//! FIFO topic's deduplication id and archived publication, each a small
//! JSON value under a key of its own (`t:<topic arn>`, `s:<subscription
//! arn>`, `d:<topic arn> <id>`, `a:<topic arn> <sequence>`), a delivery
//! waiting for an HTTP/S subscription (`w:<subscription arn> <id>`,
//! `deliveries.rs`), and the signing key (`k:signing`),
//! so that a change writes only what it changed. [`Topics`] records its
//! changes as [`SnsChange`]s once a store asks (`enable_journal`), and is
//! rebuilt from the records at a load.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::archive::{Archive, Archived};
use super::filter::FilterPolicy;
use super::subscription::Replay;
use super::{Dedup, Protocol, Subscription, Topic, TopicArn, Topics};

/// One change to the stored records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnsChange {
    Put { key: String, record: String },
    Delete { key: String },
}

#[derive(Serialize, Deserialize)]
struct TopicRecord {
    arn: String,
    attributes: BTreeMap<String, String>,
    tags: BTreeMap<String, String>,
    deleted_subscriptions: u64,
    sequence: u64,
    /// With an ArchivePolicy: when archiving was turned on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    archive_since: Option<u64>,
}

#[derive(Serialize, Deserialize)]
struct SubscriptionRecord {
    arn: String,
    topic: String,
    /// Where it stands among its topic's subscriptions.
    order: u64,
    protocol: String,
    endpoint: String,
    owner: String,
    attributes: BTreeMap<String, String>,
    pending: bool,
    token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    replay: Option<Replay>,
}

#[derive(Serialize, Deserialize)]
struct DedupRecord {
    message_id: String,
    sequence: u64,
    until: u64,
}

pub(super) fn topic_key(arn: &str) -> String {
    format!("t:{arn}")
}

pub(super) fn subscription_key(arn: &str) -> String {
    format!("s:{arn}")
}

pub(super) fn dedup_key(topic: &str, id: &str) -> String {
    format!("d:{topic} {id}")
}

const SIGNING_KEY: &str = "k:signing";

pub(super) fn archive_key(topic: &str, sequence: u64) -> String {
    format!("a:{topic} {sequence:020}")
}

pub(super) fn archive_record(archived: &Archived) -> String {
    serde_json::to_string(archived).unwrap_or_default()
}

pub(super) fn topic_record(topic: &Topic) -> String {
    let record = TopicRecord {
        arn: topic.arn.to_string(),
        attributes: topic.attributes.clone(),
        tags: topic.tags.clone(),
        deleted_subscriptions: topic.deleted_subscriptions,
        sequence: topic.sequence,
        archive_since: topic.archive.as_ref().map(|archive| archive.since),
    };
    serde_json::to_string(&record).unwrap_or_default()
}

pub(super) fn subscription_record(subscription: &Subscription, order: u64) -> String {
    let record = SubscriptionRecord {
        arn: subscription.arn.clone(),
        topic: subscription.topic.to_string(),
        order,
        protocol: subscription.protocol.as_str().into(),
        endpoint: subscription.endpoint.clone(),
        owner: subscription.owner.clone(),
        attributes: subscription.attributes.clone(),
        pending: subscription.pending,
        token: subscription.token.clone(),
        replay: subscription.replay.clone(),
    };
    serde_json::to_string(&record).unwrap_or_default()
}

pub(super) fn dedup_record(message_id: &str, sequence: u64, until: u64) -> String {
    let record = DedupRecord {
        message_id: message_id.into(),
        sequence,
        until,
    };
    serde_json::to_string(&record).unwrap_or_default()
}

/// A record that cannot be read, by key.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("the SNS record {key} cannot be read: {reason}")]
pub struct RecordError {
    pub key: String,
    pub reason: String,
}

impl Topics {
    /// Topics rebuilt from their records (in any order). A record that
    /// cannot be read is refused, naming it.
    pub fn restore(records: Vec<(String, String)>) -> Result<Topics, RecordError> {
        let fail = |key: &str, reason: String| RecordError {
            key: key.to_string(),
            reason,
        };
        let mut topics = Topics::default();
        let mut subscriptions = Vec::new();
        let mut dedups = Vec::new();
        let mut archived = Vec::new();
        let mut deliveries = Vec::new();
        for (key, text) in &records {
            match key.split_once(':') {
                Some(("t", _)) => {
                    let record: TopicRecord =
                        serde_json::from_str(text).map_err(|e| fail(key, e.to_string()))?;
                    let arn = TopicArn::parse("TopicArn", &record.arn).map_err(|e| fail(key, e.message))?;
                    let archive = match (record.attributes.get("ArchivePolicy"), record.archive_since) {
                        (Some(policy), Some(since)) => super::archive::retention(policy)
                            .map_err(|e| fail(key, e.message))?
                            .map(|retention| Archive::new(retention, since)),
                        _ => None,
                    };
                    let topic = Topic {
                        archive,
                        arn,
                        attributes: record.attributes,
                        tags: record.tags,
                        subscriptions: Vec::new(),
                        deleted_subscriptions: record.deleted_subscriptions,
                        sequence: record.sequence,
                        dedup: Dedup::default(),
                    };
                    topics.topics.insert(record.arn, topic);
                }
                Some(("s", _)) => {
                    let record: SubscriptionRecord =
                        serde_json::from_str(text).map_err(|e| fail(key, e.to_string()))?;
                    subscriptions.push((key, record));
                }
                Some(("a", rest)) => {
                    let topic = rest
                        .split_once(' ')
                        .map(|(topic, _)| topic.to_string())
                        .ok_or_else(|| fail(key, "no sequence number".into()))?;
                    let record: Archived =
                        serde_json::from_str(text).map_err(|e| fail(key, e.to_string()))?;
                    archived.push((key, topic, record));
                }
                Some(("w", rest)) => {
                    let delivery = super::deliveries::read_delivery(rest, text)
                        .map_err(|reason| fail(key, reason.to_string()))?;
                    deliveries.push(delivery);
                }
                Some(("k", "signing")) => {
                    let stored = serde_json::from_str(text).map_err(|e| fail(key, e.to_string()))?;
                    topics.signing_key = Some(stored);
                }
                Some(("d", rest)) => {
                    let (topic, id) = rest
                        .split_once(' ')
                        .ok_or_else(|| fail(key, "no deduplication id".into()))?;
                    let record: DedupRecord =
                        serde_json::from_str(text).map_err(|e| fail(key, e.to_string()))?;
                    dedups.push((topic.to_string(), id.to_string(), record));
                }
                _ => {
                    return Err(fail(
                        key,
                        "not a topic, subscription, deduplication, archive, delivery or key record".into(),
                    ));
                }
            }
        }
        subscriptions.sort_by_key(|(_, record)| record.order);
        for (key, record) in subscriptions {
            let topic = TopicArn::parse("TopicArn", &record.topic).map_err(|e| fail(key, e.message))?;
            let protocol = Protocol::parse(&record.protocol).map_err(|e| fail(key, e.message))?;
            let mut subscription = Subscription {
                arn: record.arn.clone(),
                topic: topic.clone(),
                protocol,
                endpoint: record.endpoint,
                owner: record.owner,
                attributes: record.attributes,
                filter: None,
                pending: record.pending,
                token: record.token,
                replay: record.replay,
            };
            if let Some(policy) = subscription.attributes.get("FilterPolicy") {
                let compiled = FilterPolicy::compile(policy, subscription.scope(), "FilterPolicy")
                    .map_err(|e| fail(key, e.message))?;
                subscription.filter = Some(compiled);
            }
            let Some(owner) = topics.topics.get_mut(&record.topic) else {
                return Err(fail(key, format!("its topic {} is not stored", record.topic)));
            };
            owner.subscriptions.push(record.arn.clone());
            if let Some(token) = &subscription.token {
                topics.tokens.insert(token.clone(), record.arn.clone());
            }
            topics.order.insert(record.arn.clone(), record.order);
            topics.next_order = topics.next_order.max(record.order + 1);
            topics
                .subscriptions
                .insert(record.arn, std::sync::Arc::new(subscription));
        }
        for (key, topic, record) in archived {
            let Some(archive) = topics.topics.get_mut(&topic).and_then(|t| t.archive.as_mut()) else {
                return Err(fail(key, format!("its topic {topic} keeps no archive")));
            };
            archive.push(record);
        }
        topics.archived = topics
            .topics
            .values()
            .filter_map(|topic| topic.archive.as_ref())
            .map(Archive::holding)
            .fold((0, 0), |(m, b), (am, ab)| (m + am, b + ab));
        for delivery in deliveries {
            topics.deliveries.restore(delivery);
        }
        dedups.sort_by_key(|(_, _, record)| record.until);
        for (topic, id, record) in dedups {
            if let Some(owner) = topics.topics.get_mut(&topic) {
                owner
                    .dedup
                    .seen
                    .insert(id.clone(), (record.message_id, record.sequence));
                owner.dedup.expiry.push_back((record.until, id));
            }
        }
        Ok(topics)
    }

    /// Starts recording changes for a store.
    pub fn enable_journal(&mut self) {
        self.journal = Some(Vec::new());
    }

    /// The changes recorded since the last call.
    pub fn take_changes(&mut self) -> Vec<SnsChange> {
        self.journal.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// The signing key the state keeps, if it has one.
    pub fn signing_key(&self) -> Option<&super::signing::StoredKey> {
        self.signing_key.as_ref()
    }

    /// Keeps `made` as the state's signing key, unless it has one already;
    /// the key it keeps.
    pub fn keep_signing_key(&mut self, made: super::signing::StoredKey) -> super::signing::StoredKey {
        if let Some(kept) = &self.signing_key {
            return kept.clone();
        }
        self.record(SnsChange::Put {
            key: SIGNING_KEY.into(),
            record: serde_json::to_string(&made).unwrap_or_default(),
        });
        self.signing_key = Some(made.clone());
        made
    }

    /// Every record, as a store would hold them (snapshots, tests).
    pub fn records(&self) -> Vec<(String, String)> {
        let mut records = Vec::new();
        if let Some(stored) = &self.signing_key {
            records.push((
                SIGNING_KEY.into(),
                serde_json::to_string(stored).unwrap_or_default(),
            ));
        }
        for topic in self.topics.values() {
            records.push((topic_key(&topic.arn.to_string()), topic_record(topic)));
            if let Some(archive) = &topic.archive {
                for archived in archive.after(0, usize::MAX) {
                    records.push((
                        archive_key(&topic.arn.to_string(), archived.sequence),
                        archive_record(archived),
                    ));
                }
            }
            for (id, (message_id, sequence)) in &topic.dedup.seen {
                let until = topic
                    .dedup
                    .expiry
                    .iter()
                    .find(|(_, i)| i == id)
                    .map_or(0, |(u, _)| *u);
                records.push((
                    dedup_key(&topic.arn.to_string(), id),
                    dedup_record(message_id, *sequence, until),
                ));
            }
        }
        records.extend(self.deliveries.all());
        for subscription in self.subscriptions.values() {
            let order = self.order.get(&subscription.arn).copied().unwrap_or_default();
            records.push((
                subscription_key(&subscription.arn),
                subscription_record(subscription, order),
            ));
        }
        records
    }

    /// Whether changes are recorded (a store keeps them): a record that
    /// costs something to build is built only then.
    pub(super) fn journaling(&self) -> bool {
        self.journal.is_some()
    }

    pub(super) fn record(&mut self, change: SnsChange) {
        if let Some(journal) = &mut self.journal {
            journal.push(change);
        }
    }

    pub(super) fn record_topic(&mut self, arn: &TopicArn) {
        if self.journal.is_none() {
            return;
        }
        let key = arn.to_string();
        let change = match self.topics.get(&key) {
            Some(topic) => SnsChange::Put {
                key: topic_key(&key),
                record: topic_record(topic),
            },
            None => SnsChange::Delete { key: topic_key(&key) },
        };
        self.record(change);
    }

    pub(super) fn record_subscription(&mut self, arn: &str) {
        if self.journal.is_none() {
            return;
        }
        let change = match self.subscriptions.get(arn) {
            Some(subscription) => SnsChange::Put {
                key: subscription_key(arn),
                record: subscription_record(subscription, self.order.get(arn).copied().unwrap_or_default()),
            },
            None => SnsChange::Delete {
                key: subscription_key(arn),
            },
        };
        self.record(change);
    }
}
