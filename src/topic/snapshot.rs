//! The topics' side of snapshots (`store/snapshot.rs`): every topic with
//! its subscriptions as plain values to write out, and a snapshot's topics
//! taken in, each checked as CreateTopic and Subscribe check theirs.
//!
//! A subscription keeps its ARN (the clients that hold it can still
//! unsubscribe and change it after an import) and its confirmation token
//! while it is pending. What is left out, as a queue's snapshot leaves out
//! its FIFO deduplication ids: a FIFO topic's deduplication ids, which live
//! five minutes.

use std::collections::BTreeMap;
use std::ops::Bound;

use super::error::{Result, SnsError};
use super::{
    MAX_SUBSCRIPTIONS_PER_TOPIC, MAX_TOPICS, Protocol, Subscription, TopicArn, Topics, confirmation_token,
};

/// One topic as a snapshot carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicSnapshot {
    pub arn: TopicArn,
    /// What clients set, as CreateTopic takes it (`FifoTopic` is read from
    /// the name).
    pub attributes: BTreeMap<String, String>,
    pub tags: BTreeMap<String, String>,
    /// FIFO: the last sequence number given to a publication.
    pub sequence: u64,
    pub subscriptions: Vec<SubscriptionSnapshot>,
}

/// One subscription as a snapshot carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriptionSnapshot {
    /// The part of its ARN after the topic's; a new one when `None`.
    pub id: Option<String>,
    pub protocol: Protocol,
    pub endpoint: String,
    /// The topic's account when `None`.
    pub owner: Option<String>,
    pub attributes: BTreeMap<String, String>,
    pub pending: bool,
    /// A pending subscription's token; a new one when `None`.
    pub token: Option<String>,
}

impl Topics {
    /// Topics with their subscriptions, in ARN order: at most `max` of
    /// those after the ARN `after` (from the first when `None`), so that an
    /// export copies a few at a time under the lock.
    pub fn snapshot_after(&self, after: Option<&str>, max: usize) -> Vec<TopicSnapshot> {
        let start = match after {
            Some(arn) => Bound::Excluded(arn.to_string()),
            None => Bound::Unbounded,
        };
        self.topics
            .range((start, Bound::Unbounded))
            .take(max)
            .map(|(_, topic)| topic)
            .map(|topic| TopicSnapshot {
                arn: topic.arn.clone(),
                attributes: topic.attributes.clone(),
                tags: topic.tags.clone(),
                sequence: topic.sequence,
                subscriptions: topic
                    .subscriptions
                    .iter()
                    .filter_map(|arn| self.subscriptions.get(arn))
                    .map(|sub| SubscriptionSnapshot {
                        id: sub.arn.rsplit(':').next().map(str::to_string),
                        protocol: sub.protocol,
                        endpoint: sub.endpoint.clone(),
                        owner: Some(sub.owner.clone()),
                        attributes: sub.attributes.clone(),
                        pending: sub.pending,
                        token: sub.token.clone().filter(|_| sub.pending),
                    })
                    .collect(),
            })
            .collect()
    }

    /// Takes in a snapshot's topics that are not here (recorded for the
    /// store, as a client's CreateTopic and Subscribe are) and returns the
    /// ARNs of those that were, left as they are. Whole or nothing: if one
    /// is refused, the registry is as before and the error names it.
    pub fn import(&mut self, snapshot: Vec<TopicSnapshot>) -> Result<Vec<String>> {
        let (skipped, fresh): (Vec<TopicSnapshot>, Vec<TopicSnapshot>) = snapshot
            .into_iter()
            .partition(|topic| self.topics.contains_key(&topic.arn.to_string()));
        // Each is tried on an empty registry first, so that a refusal
        // leaves this one as it was.
        let mut trial = Topics::default();
        for topic in &fresh {
            let arn = topic.arn.to_string();
            trial
                .import_topic(topic.clone())
                .map_err(|error| SnsError::parameter(format!("topic {arn}: {}", error.message)))?;
        }
        if self.topics.len() + fresh.len() > MAX_TOPICS {
            return Err(SnsError::new("TopicLimitExceeded", 403, "Topic limit exceeded"));
        }
        if trial.tokens.keys().any(|token| self.tokens.contains_key(token)) {
            return Err(SnsError::parameter(
                "a confirmation token of the snapshot is one a subscription here has",
            ));
        }
        for topic in fresh {
            self.import_topic(topic)?;
        }
        Ok(skipped.into_iter().map(|topic| topic.arn.to_string()).collect())
    }

    fn import_topic(&mut self, snapshot: TopicSnapshot) -> Result<()> {
        let TopicSnapshot {
            arn,
            mut attributes,
            tags,
            sequence,
            subscriptions,
        } = snapshot;
        let fifo = arn.is_fifo();
        if fifo {
            attributes.insert("FifoTopic".into(), "true".into());
        }
        if sequence > 0 && !fifo {
            return Err(SnsError::parameter("only FIFO topics have a sequence number"));
        }
        self.create(arn.clone(), attributes, tags.into_iter().collect())?;
        if sequence > 0 {
            self.topic_mut(&arn)?.sequence = sequence;
            self.record_topic(&arn);
        }
        for subscription in subscriptions {
            self.import_subscription(&arn, subscription)?;
        }
        Ok(())
    }

    fn import_subscription(&mut self, topic: &TopicArn, snapshot: SubscriptionSnapshot) -> Result<()> {
        let id = snapshot
            .id
            .unwrap_or_else(|| crate::queue::random::uuid().to_string());
        let arn = format!("{topic}:{id}");
        let valid_id =
            !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
        if !valid_id || self.subscriptions.contains_key(&arn) {
            return Err(SnsError::parameter(format!(
                "subscription id {id:?} is not a new id of letters, digits and hyphens"
            )));
        }
        let held = self.topic(topic)?;
        let fifo = held.is_fifo();
        if held.subscriptions.len() >= MAX_SUBSCRIPTIONS_PER_TOPIC {
            return Err(SnsError::new(
                "SubscriptionLimitExceeded",
                403,
                "Subscription limit exceeded",
            ));
        }
        super::attributes::check_large_message_room(
            held.publish_rules().max_bytes,
            held.subscriptions.len(),
            snapshot.protocol,
        )?;
        snapshot.protocol.check_endpoint(&snapshot.endpoint)?;
        let pending = snapshot.pending && snapshot.protocol.needs_confirmation();
        let sub = Subscription {
            arn,
            topic: topic.clone(),
            protocol: snapshot.protocol,
            endpoint: snapshot.endpoint,
            owner: snapshot.owner.unwrap_or_else(|| topic.account.clone()),
            attributes: BTreeMap::new(),
            filter: None,
            pending,
            token: pending.then(|| snapshot.token.unwrap_or_else(confirmation_token)),
            replay: None,
        };
        self.insert_subscription(sub, &snapshot.attributes, fifo)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arn(name: &str) -> TopicArn {
        TopicArn::new("us-east-1", "000000000000", name)
    }

    fn queue(name: &str) -> String {
        format!("arn:aws:sqs:us-east-1:000000000000:{name}")
    }

    #[test]
    fn a_snapshot_taken_in_gives_back_the_same_topics_and_subscriptions() {
        let mut topics = Topics::default();
        topics
            .create(
                arn("orders"),
                BTreeMap::from([("DisplayName".into(), "Orders".into())]),
                vec![("team".into(), "a".into())],
            )
            .unwrap();
        let filter = BTreeMap::from([
            ("FilterPolicy".into(), r#"{"kind":["paid"]}"#.into()),
            ("RawMessageDelivery".into(), "true".into()),
        ]);
        let queue_sub = topics
            .subscribe(
                &arn("orders"),
                Protocol::Sqs,
                &queue("paid"),
                &filter,
                "000000000000",
            )
            .unwrap();
        let hook = topics
            .subscribe(
                &arn("orders"),
                Protocol::Http,
                "http://localhost:1/hook",
                &BTreeMap::new(),
                "000000000000",
            )
            .unwrap();
        topics
            .create(
                arn("jobs.fifo"),
                BTreeMap::from([("FifoTopic".into(), "true".into())]),
                vec![],
            )
            .unwrap();
        topics.topic_mut(&arn("jobs.fifo")).unwrap().sequence = 41;

        let snapshot = topics.snapshot_after(None, usize::MAX);
        let mut imported = Topics::default();
        imported.enable_journal();
        assert_eq!(imported.import(snapshot.clone()).unwrap(), Vec::<String>::new());
        assert_eq!(imported.snapshot_after(None, usize::MAX), snapshot);
        let sub = imported.subscription(&queue_sub.arn).unwrap();
        assert!(sub.filter.is_some() && sub.raw(), "the filter is compiled again");
        let token = hook.pending_token.unwrap();
        assert_eq!(
            imported.confirm(&arn("orders").to_string(), &token).unwrap(),
            hook.arn
        );
        // What the import changed is recorded for the store, and a load of
        // those records gives the same registry.
        let records = imported.take_changes();
        assert!(records.len() >= 4, "{records:?}");
        let reloaded = Topics::restore(imported.records()).unwrap();
        assert_eq!(
            reloaded.snapshot_after(None, usize::MAX),
            imported.snapshot_after(None, usize::MAX)
        );
    }

    #[test]
    fn an_import_skips_topics_that_exist_and_is_refused_whole_for_one_wrong_subscription() {
        let mut topics = Topics::default();
        topics.create(arn("kept"), BTreeMap::new(), vec![]).unwrap();
        let new = |name: &str, subscriptions| TopicSnapshot {
            arn: arn(name),
            attributes: BTreeMap::new(),
            tags: BTreeMap::new(),
            sequence: 0,
            subscriptions,
        };
        let skipped = topics
            .import(vec![new("kept", vec![]), new("added", vec![])])
            .unwrap();
        assert_eq!(skipped, vec![arn("kept").to_string()]);
        assert_eq!(topics.len(), 2);

        let wrong = SubscriptionSnapshot {
            id: None,
            protocol: Protocol::Sqs,
            endpoint: queue("q"),
            owner: None,
            attributes: BTreeMap::from([("FilterPolicy".into(), r#"{"a":[{"nope":1}]}"#.into())]),
            pending: false,
            token: None,
        };
        let refused = topics
            .import(vec![new("third", vec![]), new("fourth", vec![wrong])])
            .unwrap_err();
        assert!(refused.message.contains("fourth"), "{}", refused.message);
        assert_eq!(topics.len(), 2, "nothing of the refused import is kept");
        let standard_with_sequence = TopicSnapshot {
            sequence: 3,
            ..new("plain", vec![])
        };
        assert!(topics.import(vec![standard_with_sequence]).is_err());
    }
}
