//! The topics' side of snapshots (`store/snapshot.rs`): every topic, its
//! subscriptions and its archive as plain values to write out, a piece at
//! a time, and a snapshot's topics taken in, each checked as CreateTopic,
//! Subscribe and Publish check theirs.
//!
//! A subscription keeps its ARN (the clients that hold it can still
//! unsubscribe and change it after an import) and its confirmation token
//! while it is pending; an archived publication its sequence number,
//! message id and time, so that a replay after the import sends what it
//! would have sent before. What is left out, as a queue's snapshot leaves
//! out its FIFO deduplication ids: a FIFO topic's deduplication ids, which
//! live five minutes, and where a subscription's replay stands.

use std::collections::BTreeMap;
use std::ops::Bound;

use super::archive::Archived;
use super::error::{Result, SnsError};
use super::subscriptions::confirmation_token;
use super::{MAX_SUBSCRIPTIONS_PER_TOPIC, MAX_TOPICS, Protocol, Subscription, TopicArn, Topics};

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
    /// With an ArchivePolicy: when archiving was turned on (the earliest
    /// point a replay may start from); the import's time when `None`.
    pub archive_since: Option<u64>,
    pub subscriptions: Vec<SubscriptionSnapshot>,
    /// A FIFO topic's archived publications, by sequence number.
    pub archived: Vec<Archived>,
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

/// Where an export stands in a topic's subscriptions: the index and ARN
/// of the last one written, so that a subscription removed meanwhile
/// neither repeats nor skips one that stayed.
#[derive(Debug, Clone, Default)]
pub struct SubscriptionCursor {
    next: usize,
    last: Option<String>,
}

impl Topics {
    /// At most `max` topics after the ARN `after` (from the first when
    /// `None`), without their subscriptions and archives, which
    /// [`Topics::subscriptions_page`] and [`Topics::archived_after`] read a
    /// piece at a time.
    pub fn topics_after(&self, after: Option<&str>, max: usize) -> Vec<TopicSnapshot> {
        let start = match after {
            Some(arn) => Bound::Excluded(arn.to_string()),
            None => Bound::Unbounded,
        };
        self.topics
            .range((start, Bound::Unbounded))
            .take(max)
            .map(|(_, topic)| TopicSnapshot {
                arn: topic.arn.clone(),
                attributes: topic.attributes.clone(),
                tags: topic.tags.clone(),
                sequence: topic.sequence,
                archive_since: topic.archive.as_ref().map(|archive| archive.since),
                subscriptions: Vec::new(),
                archived: Vec::new(),
            })
            .collect()
    }

    /// The next subscriptions of a topic from `cursor`, in the order they
    /// were made: at most `max`, and once `max_bytes` of attributes are
    /// reached no more (at least one). Empty at the end, or when the topic
    /// is gone.
    pub fn subscriptions_page(
        &self,
        topic: &TopicArn,
        cursor: &mut SubscriptionCursor,
        max: usize,
        max_bytes: usize,
    ) -> Vec<SubscriptionSnapshot> {
        let Some(held) = self.topics.get(&topic.to_string()) else {
            return Vec::new();
        };
        let arns = &held.subscriptions;
        // Where the last one written is now (earlier if some were removed).
        let start = match &cursor.last {
            Some(last) if cursor.next.checked_sub(1).and_then(|at| arns.get(at)) == Some(last) => cursor.next,
            Some(last) => arns
                .iter()
                .position(|arn| arn == last)
                .map_or(cursor.next.min(arns.len()), |at| at + 1),
            None => 0,
        };
        let mut page = Vec::new();
        let mut bytes = 0;
        for (at, arn) in arns.iter().enumerate().skip(start) {
            if page.len() >= max || (bytes >= max_bytes && !page.is_empty()) {
                break;
            }
            let Some(sub) = self.subscriptions.get(arn) else {
                continue;
            };
            bytes += sub.attributes.values().map(String::len).sum::<usize>() + sub.endpoint.len();
            page.push(SubscriptionSnapshot {
                id: sub.arn.rsplit(':').next().map(str::to_string),
                protocol: sub.protocol,
                endpoint: sub.endpoint.clone(),
                owner: Some(sub.owner.clone()),
                attributes: sub.attributes.clone(),
                pending: sub.pending,
                token: sub.token.clone().filter(|_| sub.pending),
            });
            *cursor = SubscriptionCursor {
                next: at + 1,
                last: Some(arn.clone()),
            };
        }
        page
    }

    /// A topic's archived publications after sequence number `after`: at
    /// most `max`, and once `max_bytes` are reached no more (at least one).
    pub fn archived_after(&self, topic: &TopicArn, after: u64, max: usize, max_bytes: u64) -> Vec<Archived> {
        let Some(archive) = self
            .topics
            .get(&topic.to_string())
            .and_then(|t| t.archive.as_ref())
        else {
            return Vec::new();
        };
        let mut bytes = 0;
        archive
            .after(after, max)
            .take_while(|archived| {
                let more = bytes < max_bytes;
                bytes += archived.size();
                more
            })
            .cloned()
            .collect()
    }

    /// Topics with all their subscriptions and archives, in ARN order (an
    /// export reads them a piece at a time).
    #[cfg(test)]
    pub fn snapshot_whole(&self) -> Vec<TopicSnapshot> {
        let mut topics = self.topics_after(None, usize::MAX);
        for topic in &mut topics {
            let mut cursor = SubscriptionCursor::default();
            topic.subscriptions = self.subscriptions_page(&topic.arn, &mut cursor, usize::MAX, usize::MAX);
            topic.archived = self.archived_after(&topic.arn, 0, usize::MAX, u64::MAX);
        }
        topics
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
            archive_since,
            subscriptions,
            archived,
        } = snapshot;
        let fifo = arn.is_fifo();
        if fifo {
            attributes.insert("FifoTopic".into(), "true".into());
        }
        if sequence > 0 && !fifo {
            return Err(SnsError::parameter("only FIFO topics have a sequence number"));
        }
        self.create(arn.clone(), attributes, tags.into_iter().collect())?;
        let topic = self.topic_mut(&arn)?;
        topic.sequence = sequence;
        match (&mut topic.archive, archive_since) {
            (Some(archive), Some(since)) => archive.since = since,
            (None, Some(_)) => {
                return Err(SnsError::parameter(
                    "archive_since: the topic has no ArchivePolicy",
                ));
            }
            _ => {}
        }
        self.record_topic(&arn);
        for subscription in subscriptions {
            self.import_subscription(&arn, subscription)?;
        }
        for publication in archived {
            self.import_archived(&arn, publication)?;
        }
        Ok(())
    }

    /// Takes in an archived publication of a topic, checked as a Publish
    /// to it was: its sequence number one the topic has handed out, and
    /// none it holds already.
    pub fn import_archived(&mut self, topic: &TopicArn, archived: Archived) -> Result<()> {
        let held = self.topic(topic)?;
        let Some(archive) = &held.archive else {
            return Err(SnsError::parameter(
                "an archived publication of a topic without an ArchivePolicy",
            ));
        };
        let sequence = archived.sequence;
        if !(1..=held.sequence).contains(&sequence) || archive.holds(sequence) {
            return Err(SnsError::parameter(format!(
                "archived publication {sequence}: its sequence number must be one the topic handed out \
                 (1 to {}), once",
                held.sequence
            )));
        }
        let publication = archived.publication()?;
        if publication.group_id.is_none() {
            return Err(SnsError::parameter(format!(
                "archived publication {sequence}: a FIFO topic's publication has a group id"
            )));
        }
        let record = super::records::archive_record(&archived);
        self.with_archive(topic, |archive| archive.push(archived));
        self.record(super::SnsChange::Put {
            key: super::records::archive_key(&topic.to_string(), sequence),
            record,
        });
        Ok(())
    }

    /// Takes in one subscription of a topic taken in already.
    pub fn import_subscription(&mut self, topic: &TopicArn, snapshot: SubscriptionSnapshot) -> Result<()> {
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
        topics.set_time(1_000);
        topics
            .create(
                arn("jobs.fifo"),
                BTreeMap::from([
                    ("FifoTopic".into(), "true".into()),
                    (
                        "ArchivePolicy".into(),
                        r#"{"MessageRetentionPeriod":"30"}"#.into(),
                    ),
                ]),
                vec![],
            )
            .unwrap();
        topics.topic_mut(&arn("jobs.fifo")).unwrap().sequence = 41;
        for n in 0..3 {
            let publication = super::super::Publication::check(
                super::super::PublishInput {
                    message: Some(format!("job {n}")),
                    group_id: Some("g".into()),
                    dedup_id: Some(format!("d{n}")),
                    ..Default::default()
                },
                super::super::publish::Rules::archived(),
                "",
            )
            .unwrap();
            topics
                .publish(&arn("jobs.fifo"), &publication, format!("id-{n}"), 2_000 + n)
                .unwrap();
        }

        let snapshot = topics.snapshot_whole();
        let jobs = snapshot
            .iter()
            .find(|topic| topic.arn == arn("jobs.fifo"))
            .unwrap();
        assert_eq!(jobs.archive_since, Some(1_000));
        let kept: Vec<u64> = jobs.archived.iter().map(|archived| archived.sequence).collect();
        assert_eq!(kept, [42, 43, 44]);
        let mut imported = Topics::default();
        imported.enable_journal();
        assert_eq!(imported.import(snapshot.clone()).unwrap(), Vec::<String>::new());
        assert_eq!(imported.snapshot_whole(), snapshot);
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
        assert_eq!(reloaded.snapshot_whole(), imported.snapshot_whole());
        assert_eq!(
            reloaded.archived(),
            topics.archived(),
            "what the archives hold is counted"
        );
    }

    #[test]
    fn subscriptions_are_read_a_page_at_a_time_and_a_removal_skips_none_that_stayed() {
        let mut topics = Topics::default();
        topics.create(arn("many"), BTreeMap::new(), vec![]).unwrap();
        let arns: Vec<String> = (0..10)
            .map(|n| {
                topics
                    .subscribe(
                        &arn("many"),
                        Protocol::Sqs,
                        &queue(&format!("q{n}")),
                        &BTreeMap::new(),
                        "000000000000",
                    )
                    .unwrap()
                    .arn
            })
            .collect();
        let mut cursor = SubscriptionCursor::default();
        let endpoints =
            |page: Vec<SubscriptionSnapshot>| page.into_iter().map(|s| s.endpoint).collect::<Vec<_>>();
        let first = endpoints(topics.subscriptions_page(&arn("many"), &mut cursor, 4, usize::MAX));
        assert_eq!(first, (0..4).map(|n| queue(&format!("q{n}"))).collect::<Vec<_>>());
        // One already written and one not yet go away between pages.
        topics.unsubscribe(&arns[1]);
        topics.unsubscribe(&arns[6]);
        let mut rest = Vec::new();
        loop {
            let page = endpoints(topics.subscriptions_page(&arn("many"), &mut cursor, 4, usize::MAX));
            if page.is_empty() {
                break;
            }
            rest.extend(page);
        }
        let expected: Vec<String> = [4, 5, 7, 8, 9].iter().map(|n| queue(&format!("q{n}"))).collect();
        assert_eq!(rest, expected);
        // A page stops at its byte budget, after one at least.
        let mut cursor = SubscriptionCursor::default();
        assert_eq!(
            topics.subscriptions_page(&arn("many"), &mut cursor, 100, 1).len(),
            1
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
            archive_since: None,
            subscriptions,
            archived: Vec::new(),
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
