//! The SNS core: topics, their subscriptions and what a Publish delivers,
//! beside the queue core and as pure: no I/O, no clock of its own (each
//! operation is given the time), randomness only for ids and tokens.
//!
//! `Topics` is one shard's registry. The service keeps it behind a lock
//! and turns a publication's deliveries into messages on its queues; the
//! API reads and writes it through the service.

pub mod archive;
pub mod arn;
pub mod attributes;
pub mod deliveries;
pub mod delivery_policy;
pub mod envelope;
pub mod error;
pub mod filter;
mod permissions;
pub mod publish;
mod records;
mod replay;
pub mod signing;
mod snapshot;
pub mod subscription;
mod subscriptions;
mod tags;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ops::Bound;
use std::sync::Arc;

pub use self::arn::TopicArn;
pub use self::deliveries::OutboundKind;
pub use self::error::{Result, SnsError};
pub use self::publish::{AttributeInput, Publication, PublishInput};
pub use self::records::{RecordError, SnsChange};
pub use self::replay::ReplayStep;
pub use self::snapshot::{SubscriptionCursor, SubscriptionSnapshot, TopicSnapshot};
pub use self::subscription::{Protocol, Subscription};
pub use self::tags::check_tags;

/// AWS's default quota of topics per account, and ssq's bound on one
/// topic's subscriptions (AWS allows 12.5 million; ssq holds every
/// subscription in memory).
pub const MAX_TOPICS: usize = 100_000;
pub const MAX_SUBSCRIPTIONS_PER_TOPIC: usize = 100_000;
/// The actions a topic's policy may grant (AddPermission's ActionName).
const TOPIC_POLICY_ACTIONS: &[&str] = &[
    "AddPermission",
    "DeleteTopic",
    "GetDataProtectionPolicy",
    "GetTopicAttributes",
    "ListSubscriptionsByTopic",
    "ListTagsForResource",
    "Publish",
    "PutDataProtectionPolicy",
    "RemovePermission",
    "SetTopicAttributes",
    "Subscribe",
    "TagResource",
    "UntagResource",
];
/// How many topics or subscriptions a List call answers at once.
pub const PAGE: usize = 100;
/// How long a FIFO topic remembers a deduplication id: five minutes.
const DEDUP_WINDOW_MS: u64 = 5 * 60 * 1000;

/// One topic.
#[derive(Debug, Clone)]
pub struct Topic {
    pub arn: TopicArn,
    /// What clients set (`FifoTopic` is read from the name).
    pub attributes: BTreeMap<String, String>,
    pub tags: BTreeMap<String, String>,
    /// Subscription ARNs in the order they were made.
    subscriptions: Vec<String>,
    deleted_subscriptions: u64,
    /// FIFO: the last sequence number handed out.
    sequence: u64,
    dedup: Dedup,
    /// FIFO, with an ArchivePolicy: the publications kept for replays.
    archive: Option<archive::Archive>,
}

/// A FIFO topic's deduplication ids of the last five minutes, with the
/// answer each got.
#[derive(Debug, Clone, Default)]
struct Dedup {
    seen: HashMap<String, (String, u64)>,
    expiry: VecDeque<(u64, String)>,
}

impl Dedup {
    /// Forgets the ids whose five minutes have passed; returns them.
    fn forget_before(&mut self, now: u64) -> Vec<String> {
        let mut forgotten = Vec::new();
        while let Some((until, _)) = self.expiry.front() {
            if *until > now {
                break;
            }
            if let Some((_, id)) = self.expiry.pop_front() {
                self.seen.remove(&id);
                forgotten.push(id);
            }
        }
        forgotten
    }
}

impl Topic {
    pub fn is_fifo(&self) -> bool {
        self.arn.is_fifo()
    }

    /// Whether publications without a deduplication id are deduplicated
    /// by their message.
    pub fn content_dedup(&self) -> bool {
        self.attributes
            .get("ContentBasedDeduplication")
            .is_some_and(|v| v == "true")
    }

    /// The SignatureVersion its documents are signed with: 1 unless set.
    pub fn signature_version(&self) -> u8 {
        match self.attributes.get("SignatureVersion").map(String::as_str) {
            Some("2") => 2,
            _ => 1,
        }
    }

    /// What its publications are checked against: kind and size.
    pub fn publish_rules(&self) -> publish::Rules {
        publish::Rules {
            fifo: self.is_fifo(),
            content_dedup: self.content_dedup(),
            max_bytes: attributes::max_message_bytes(&self.attributes),
        }
    }

    /// The key a publication's deduplication id is remembered under: the
    /// id, or with `FifoThroughputScope` MessageGroup, its group's and the
    /// id (neither holds a space).
    fn dedup_key(&self, publication: &Publication) -> String {
        let id = publication.dedup_id.as_deref().unwrap_or_default();
        match (
            self.attributes.get("FifoThroughputScope").map(String::as_str),
            &publication.group_id,
        ) {
            (Some("MessageGroup"), Some(group)) => format!("{group} {id}"),
            _ => id.to_string(),
        }
    }

    /// Whether its publications are archived (an ArchivePolicy).
    pub fn archives(&self) -> bool {
        self.archive.is_some()
    }

    pub fn subscription_arns(&self) -> &[String] {
        &self.subscriptions
    }
}

/// The answer to a Publish and what it delivers.
#[derive(Debug)]
pub struct Published {
    pub message_id: String,
    /// FIFO topics: the message's sequence number on the topic.
    pub sequence_number: Option<String>,
    /// The subscriptions it goes to (none for a duplicate).
    pub deliveries: Vec<Arc<Subscription>>,
}

/// What a Subscribe did.
#[derive(Debug)]
pub struct Subscribed {
    pub arn: String,
    /// A new subscription that waits for its endpoint to confirm: the token.
    pub pending_token: Option<String>,
}

/// One shard's topics and subscriptions.
#[derive(Debug, Default, Clone)]
pub struct Topics {
    topics: BTreeMap<String, Topic>,
    /// Shared, so that a Publish takes its deliveries without copying
    /// them (a compiled filter policy is not small).
    subscriptions: BTreeMap<String, Arc<Subscription>>,
    /// Confirmation tokens, each naming its subscription (kept after it is
    /// confirmed: confirming again answers the same).
    tokens: HashMap<String, String>,
    /// Each subscription's place among all, so that a load lines each
    /// topic's up as they were made.
    order: HashMap<String, u64>,
    next_order: u64,
    /// Changes for the store, once one asks (`records.rs`).
    journal: Option<Vec<SnsChange>>,
    /// The time of the change being made, which the service sets (the core
    /// has no clock): when an archive policy set now starts to count.
    now: u64,
    /// What every archive holds: publications and their bytes.
    archived: (u64, u64),
    /// The key SNS documents are signed with, kept with the state.
    signing_key: Option<signing::StoredKey>,
    /// What waits to be sent to HTTP/S subscriptions (`deliveries.rs`).
    deliveries: deliveries::Deliveries,
}

impl Topics {
    pub fn is_empty(&self) -> bool {
        self.topics.is_empty()
    }

    pub fn len(&self) -> usize {
        self.topics.len()
    }

    /// CreateTopic: a new topic, or the one of that name when what the
    /// call gives agrees with it.
    pub fn create(
        &mut self,
        arn: TopicArn,
        attributes: BTreeMap<String, String>,
        tags: Vec<(String, String)>,
    ) -> Result<TopicArn> {
        let fifo_asked = attributes.get("FifoTopic").is_some_and(|v| v == "true");
        if !attributes::valid_topic_name(&arn.name) || arn.is_fifo() != fifo_asked {
            return Err(SnsError::parameter("Topic Name"));
        }
        check_tags(&tags)?;
        if let Some(topic) = self.topics.get(&arn.to_string()) {
            if !attributes::agree(&topic.attributes, topic.is_fifo(), &attributes) {
                return Err(SnsError::parameter(
                    "Attributes Reason: Topic already exists with different attributes",
                ));
            }
            if !tags.iter().all(|(key, value)| topic.tags.get(key) == Some(value)) {
                return Err(SnsError::parameter(
                    "Tags Reason: Topic already exists with different tags",
                ));
            }
            return Ok(arn);
        }
        if self.topics.len() >= MAX_TOPICS {
            return Err(SnsError::new("TopicLimitExceeded", 403, "Topic limit exceeded"));
        }
        let mut own = BTreeMap::new();
        for (name, value) in attributes {
            attributes::check(&name, &value, arn.is_fifo(), true)?;
            if name != "FifoTopic" {
                own.insert(name, value);
            }
        }
        own.entry("Policy".into())
            .or_insert_with(|| attributes::default_policy(&arn));
        let topic = Topic {
            arn: arn.clone(),
            attributes: own,
            tags: tags.into_iter().collect(),
            subscriptions: Vec::new(),
            deleted_subscriptions: 0,
            sequence: 0,
            dedup: Dedup::default(),
            archive: None,
        };
        let archive_policy = topic.attributes.get("ArchivePolicy").cloned();
        self.topics.insert(arn.to_string(), topic);
        if let Some(policy) = archive_policy {
            self.set_archive(&arn, &policy)?;
        }
        self.record_topic(&arn);
        Ok(arn)
    }

    /// DeleteTopic: the topic and its subscriptions (a topic that is not
    /// there is no error, as in AWS).
    pub fn delete(&mut self, arn: &TopicArn) -> Vec<Subscription> {
        self.drop_archive(arn);
        let Some(topic) = self.topics.remove(&arn.to_string()) else {
            return Vec::new();
        };
        let removed: Vec<Subscription> = topic
            .subscriptions
            .iter()
            .filter_map(|sub| self.subscriptions.remove(sub))
            .map(Arc::unwrap_or_clone)
            .collect();
        for token in removed.iter().filter_map(|sub| sub.token.as_ref()) {
            self.tokens.remove(token);
        }
        self.record_topic(arn);
        for sub in &removed {
            self.order.remove(&sub.arn);
            self.record_subscription(&sub.arn);
            self.drop_deliveries(&sub.arn);
        }
        let dedup_keys: Vec<String> = topic
            .dedup
            .seen
            .keys()
            .map(|id| records::dedup_key(&arn.to_string(), id))
            .collect();
        for key in dedup_keys {
            self.record(SnsChange::Delete { key });
        }
        removed
    }

    /// Deletes every topic (the control API's reset); how many there were.
    pub fn delete_all(&mut self) -> usize {
        let arns: Vec<TopicArn> = self.topics.values().map(|topic| topic.arn.clone()).collect();
        for arn in &arns {
            self.delete(arn);
        }
        arns.len()
    }

    pub fn topic(&self, arn: &TopicArn) -> Result<&Topic> {
        self.topics
            .get(&arn.to_string())
            .ok_or_else(SnsError::topic_not_found)
    }

    fn topic_mut(&mut self, arn: &TopicArn) -> Result<&mut Topic> {
        self.topics
            .get_mut(&arn.to_string())
            .ok_or_else(SnsError::topic_not_found)
    }

    /// GetTopicAttributes' attributes.
    pub fn topic_attributes(&self, arn: &TopicArn, now: u64) -> Result<BTreeMap<String, String>> {
        let topic = self.topic(arn)?;
        let mut out = topic.attributes.clone();
        if let Some(archive) = &topic.archive {
            out.insert(
                "BeginningArchiveTime".into(),
                envelope::timestamp(archive.beginning(now)),
            );
        }
        // Kept apart in AWS: GetDataProtectionPolicy answers it.
        out.remove("DataProtectionPolicy");
        out.entry("DisplayName".into()).or_default();
        out.insert(
            "EffectiveDeliveryPolicy".into(),
            attributes::effective_delivery_policy(topic.attributes.get("DeliveryPolicy").map(String::as_str))
                .to_string(),
        );
        out.insert("Owner".into(), arn.account.clone());
        let (mut confirmed, mut pending) = (0, 0);
        for sub in topic
            .subscriptions
            .iter()
            .filter_map(|s| self.subscriptions.get(s))
        {
            match sub.pending {
                false => confirmed += 1,
                true => pending += 1,
            }
        }
        out.insert("SubscriptionsConfirmed".into(), confirmed.to_string());
        out.insert("SubscriptionsPending".into(), pending.to_string());
        out.insert(
            "SubscriptionsDeleted".into(),
            topic.deleted_subscriptions.to_string(),
        );
        out.insert("TopicArn".into(), arn.to_string());
        if topic.is_fifo() {
            out.insert("FifoTopic".into(), "true".into());
            out.entry("ContentBasedDeduplication".into())
                .or_insert_with(|| "false".into());
        }
        Ok(out)
    }

    pub fn set_topic_attribute(&mut self, arn: &TopicArn, name: &str, value: &str) -> Result<()> {
        let topic = self.topic_mut(arn)?;
        attributes::check(name, value, topic.is_fifo(), false)?;
        if name == "MaximumMessageSize" {
            let max = attributes::max_message_bytes(&BTreeMap::from([(name.to_string(), value.to_string())]));
            let subscriptions = topic.subscriptions.clone();
            for (held, sub) in subscriptions
                .iter()
                .filter_map(|arn| self.subscriptions.get(arn))
                .enumerate()
            {
                attributes::check_large_message_room(max, held, sub.protocol)?;
            }
        }
        let topic = self.topic_mut(arn)?;
        match (name, value.is_empty()) {
            ("Policy", true) => {
                topic
                    .attributes
                    .insert(name.into(), attributes::default_policy(arn));
            }
            (_, true) if name != "DisplayName" => {
                topic.attributes.remove(name);
            }
            _ => {
                topic.attributes.insert(name.into(), value.into());
            }
        }
        if name == "ArchivePolicy" {
            self.set_archive(arn, value)?;
        }
        self.record_topic(arn);
        Ok(())
    }

    /// ListTopics: one page of a region and account's topics, after `token`.
    pub fn list(
        &self,
        region: &str,
        account: &str,
        token: Option<&str>,
    ) -> Result<(Vec<String>, Option<String>)> {
        let prefix = format!("arn:aws:sns:{region}:{account}:");
        let start = match token.map(read_page_token) {
            Some(Some(token)) if token.starts_with(&prefix) => Bound::Included(token),
            Some(_) => return Err(SnsError::parameter("NextToken")),
            None => Bound::Included(prefix.clone()),
        };
        let mut page: Vec<String> = self
            .topics
            .range((start, Bound::Unbounded))
            .map(|(arn, _)| arn)
            .take_while(|arn| arn.starts_with(&prefix))
            .take(PAGE + 1)
            .cloned()
            .collect();
        let next = (page.len() > PAGE).then(|| page.pop()).flatten();
        Ok((page, next.map(|next| page_token(&next))))
    }

    pub fn tag(&mut self, arn: &TopicArn, tags: Vec<(String, String)>) -> Result<()> {
        check_tags(&tags)?;
        let topic = self
            .topics
            .get_mut(&arn.to_string())
            .ok_or_else(tags::resource_not_found)?;
        let mut merged = topic.tags.clone();
        merged.extend(tags);
        tags::check_count(merged.len())?;
        topic.tags = merged;
        self.record_topic(arn);
        Ok(())
    }

    pub fn untag(&mut self, arn: &TopicArn, keys: &[String]) -> Result<()> {
        let topic = self
            .topics
            .get_mut(&arn.to_string())
            .ok_or_else(tags::resource_not_found)?;
        keys.iter().for_each(|key| {
            topic.tags.remove(key);
        });
        self.record_topic(arn);
        Ok(())
    }

    pub fn tags(&self, arn: &TopicArn) -> Result<&BTreeMap<String, String>> {
        self.topics
            .get(&arn.to_string())
            .map(|topic| &topic.tags)
            .ok_or_else(tags::resource_not_found)
    }

    /// Publish: a FIFO topic's deduplication and sequence, then the
    /// subscriptions the publication goes to (confirmed ones whose filter
    /// lets it through). `message_id` is the new message's id.
    pub fn publish(
        &mut self,
        arn: &TopicArn,
        publication: &Publication,
        message_id: String,
        now: u64,
    ) -> Result<Published> {
        let topic = self.topic_mut(arn)?;
        let mut sequence_number = None;
        if topic.is_fifo() {
            let forgotten = topic.dedup.forget_before(now);
            let dedup = topic.dedup_key(publication);
            if let Some((id, sequence)) = topic.dedup.seen.get(&dedup) {
                return Ok(Published {
                    message_id: id.clone(),
                    sequence_number: Some(format!("{sequence:020}")),
                    deliveries: Vec::new(),
                });
            }
            topic.sequence += 1;
            let sequence = topic.sequence;
            let until = now + DEDUP_WINDOW_MS;
            topic
                .dedup
                .seen
                .insert(dedup.clone(), (message_id.clone(), sequence));
            topic.dedup.expiry.push_back((until, dedup.clone()));
            sequence_number = Some(format!("{sequence:020}"));
            let topic_arn = arn.to_string();
            for id in forgotten {
                self.record(SnsChange::Delete {
                    key: records::dedup_key(&topic_arn, &id),
                });
            }
            self.record(SnsChange::Put {
                key: records::dedup_key(&topic_arn, &dedup),
                record: records::dedup_record(&message_id, sequence, until),
            });
            self.record_topic(arn);
            self.archive_publication(arn, publication, sequence, &message_id, now);
        }
        let topic = self.topic(arn)?;
        let deliveries = topic
            .subscriptions
            .iter()
            .filter_map(|sub| self.subscriptions.get(sub))
            .filter(|sub| !sub.pending && sub.takes_live() && publication.passes(sub))
            .cloned()
            .collect();
        Ok(Published {
            message_id,
            sequence_number,
            deliveries,
        })
    }
}

/// A List call's NextToken: where the next page starts, in base64 as
/// AWS's tokens are (clients decode them).
fn page_token(start: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(start)
}

fn read_page_token(token: &str) -> Option<String> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD.decode(token).ok()?;
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests;
