use std::collections::BTreeMap;

use super::*;

fn arn(name: &str) -> TopicArn {
    TopicArn::new("us-east-1", "000000000000", name)
}

fn attrs(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn publication(message: &str, fifo: bool) -> Publication {
    let input = PublishInput {
        message: Some(message.into()),
        group_id: fifo.then(|| "g".to_string()),
        ..PublishInput::default()
    };
    let rules = publish::Rules {
        fifo,
        content_dedup: fifo,
        max_bytes: publish::DEFAULT_MAX_MESSAGE_BYTES,
    };
    Publication::check(input, rules, "").unwrap()
}

#[test]
fn create_topic_is_idempotent_only_when_attributes_and_tags_agree() {
    let mut topics = Topics::default();
    let tags = vec![
        ("a".to_string(), "1".to_string()),
        ("b".to_string(), "2".to_string()),
    ];
    topics
        .create(arn("t"), attrs(&[("DisplayName", "v1")]), tags.clone())
        .unwrap();
    assert!(topics.create(arn("t"), attrs(&[]), vec![]).is_ok());
    assert!(
        topics
            .create(arn("t"), attrs(&[("DisplayName", "v1")]), tags[..1].to_vec())
            .is_ok()
    );
    assert!(
        topics
            .create(arn("t"), attrs(&[("FifoTopic", "false")]), vec![])
            .is_ok()
    );
    let different = topics
        .create(arn("t"), attrs(&[("DisplayName", "v2")]), vec![])
        .unwrap_err();
    assert!(different.message.contains("different attributes"));
    let more_tags = topics
        .create(arn("t"), attrs(&[]), vec![("c".into(), "3".into())])
        .unwrap_err();
    assert!(more_tags.message.contains("different tags"));
    assert_eq!(
        topics
            .create(arn("bad.name"), attrs(&[]), vec![])
            .unwrap_err()
            .message,
        "Invalid parameter: Topic Name"
    );
    assert!(
        topics
            .create(arn("f"), attrs(&[("FifoTopic", "true")]), vec![])
            .is_err()
    );
    assert!(
        topics
            .create(arn("f.fifo"), attrs(&[("FifoTopic", "true")]), vec![])
            .is_ok()
    );
}

#[test]
fn subscriptions_are_counted_listed_confirmed_and_removed_with_their_topic() {
    let mut topics = Topics::default();
    topics.create(arn("t"), attrs(&[]), vec![]).unwrap();
    let queue = "arn:aws:sqs:us-east-1:000000000000:q";
    let sqs = topics
        .subscribe(&arn("t"), Protocol::Sqs, queue, &attrs(&[]), "000000000000")
        .unwrap();
    assert!(sqs.pending_token.is_none());
    let again = topics
        .subscribe(&arn("t"), Protocol::Sqs, queue, &attrs(&[]), "000000000000")
        .unwrap();
    assert_eq!(again.arn, sqs.arn);
    let raw = attrs(&[("RawMessageDelivery", "true")]);
    assert!(
        topics
            .subscribe(&arn("t"), Protocol::Sqs, queue, &raw, "000000000000")
            .is_err()
    );
    let http = topics
        .subscribe(
            &arn("t"),
            Protocol::Http,
            "http://127.0.0.1:1/hook",
            &attrs(&[]),
            "000000000000",
        )
        .unwrap();
    let token = http.pending_token.unwrap();
    let counts = topics.topic_attributes(&arn("t"), 0).unwrap();
    assert_eq!(
        (
            counts["SubscriptionsConfirmed"].as_str(),
            counts["SubscriptionsPending"].as_str()
        ),
        ("1", "1")
    );
    let topic = arn("t").to_string();
    // AWS's words, as recorded: a token that cannot be one, and one of
    // the right form that is not known.
    assert_eq!(
        topics.confirm(&topic, "randomtoken").unwrap_err().message,
        "Invalid token"
    );
    assert_eq!(
        topics
            .confirm(&topic, &"51b2ff3e".repeat(36))
            .unwrap_err()
            .message,
        "Invalid parameter: Token"
    );
    assert_eq!(
        topics.confirm("not-an-arn", &token).unwrap_err().message,
        "Invalid parameter: Topic"
    );
    let elsewhere = TopicArn::new("eu-west-1", "000000000000", "t").to_string();
    assert_eq!(
        topics.confirm(&elsewhere, &token).unwrap_err().message,
        "Invalid parameter: Topic"
    );
    // The token names the subscription; any topic of its region will do,
    // and confirming again answers the same.
    assert_eq!(
        topics.confirm(&arn("other").to_string(), &token).unwrap(),
        http.arn
    );
    assert_eq!(topics.confirm(&topic, &token).unwrap(), http.arn);
    assert_eq!(topics.list_by_topic(&arn("t"), None).unwrap().0.len(), 2);
    assert!(topics.unsubscribe(&http.arn).is_some());
    assert_eq!(
        topics.topic_attributes(&arn("t"), 0).unwrap()["SubscriptionsDeleted"],
        "1"
    );
    assert_eq!(topics.delete(&arn("t")).len(), 1);
    assert!(topics.subscription(&sqs.arn).is_err());
}

#[test]
fn pages_hold_a_hundred_and_go_on_from_their_token() {
    let mut topics = Topics::default();
    topics.create(arn("t"), attrs(&[]), vec![]).unwrap();
    for i in 0..150 {
        let endpoint = format!("+1555000{i:04}");
        topics
            .subscribe(&arn("t"), Protocol::Sms, &endpoint, &attrs(&[]), "000000000000")
            .unwrap();
        topics
            .create(arn(&format!("topic-{i:03}")), attrs(&[]), vec![])
            .unwrap();
    }
    let (first, next) = topics.list_by_topic(&arn("t"), None).unwrap();
    let (second, end) = topics.list_by_topic(&arn("t"), next.as_deref()).unwrap();
    assert_eq!((first.len(), second.len(), end), (100, 50, None));
    let (first, next) = topics.list("us-east-1", "000000000000", None).unwrap();
    let (second, end) = topics.list("us-east-1", "000000000000", next.as_deref()).unwrap();
    assert_eq!((first.len(), second.len(), end), (100, 51, None));
    assert!(
        topics
            .list("eu-west-1", "000000000000", None)
            .unwrap()
            .0
            .is_empty()
    );
    let (all, next) = topics.list_subscriptions("000000000000", None).unwrap();
    assert_eq!(all.len(), 100);
    assert_eq!(
        topics
            .list_subscriptions("000000000000", next.as_deref())
            .unwrap()
            .0
            .len(),
        50
    );
}

#[test]
fn a_publish_goes_to_confirmed_subscriptions_its_filter_lets_through() {
    let mut topics = Topics::default();
    topics.create(arn("t"), attrs(&[]), vec![]).unwrap();
    let q = |name: &str| format!("arn:aws:sqs:us-east-1:000000000000:{name}");
    let all = topics
        .subscribe(&arn("t"), Protocol::Sqs, &q("all"), &attrs(&[]), "o")
        .unwrap();
    let filter = attrs(&[
        ("FilterPolicy", r#"{"kind": ["order"]}"#),
        ("FilterPolicyScope", "MessageBody"),
    ]);
    topics
        .subscribe(&arn("t"), Protocol::Sqs, &q("orders"), &filter, "o")
        .unwrap();
    topics
        .subscribe(&arn("t"), Protocol::Http, "http://127.0.0.1:1/", &attrs(&[]), "o")
        .unwrap();
    let published = topics
        .publish(
            &arn("t"),
            &publication(r#"{"kind": "refund"}"#, false),
            "m1".into(),
            0,
        )
        .unwrap();
    let targets: Vec<&str> = published.deliveries.iter().map(|sub| sub.arn.as_str()).collect();
    assert_eq!(targets, vec![all.arn.as_str()]);
    let published = topics
        .publish(
            &arn("t"),
            &publication(r#"{"kind": "order"}"#, false),
            "m2".into(),
            0,
        )
        .unwrap();
    assert_eq!(published.deliveries.len(), 2);
}

#[test]
fn a_fifo_topic_numbers_its_messages_and_drops_duplicates_for_five_minutes() {
    let mut topics = Topics::default();
    topics
        .create(
            arn("t.fifo"),
            attrs(&[("FifoTopic", "true"), ("ContentBasedDeduplication", "true")]),
            vec![],
        )
        .unwrap();
    topics
        .subscribe(
            &arn("t.fifo"),
            Protocol::Sqs,
            "arn:aws:sqs:us-east-1:0:q.fifo",
            &attrs(&[]),
            "o",
        )
        .unwrap();
    let first = topics
        .publish(&arn("t.fifo"), &publication("m", true), "id-1".into(), 0)
        .unwrap();
    let again = topics
        .publish(&arn("t.fifo"), &publication("m", true), "id-2".into(), 1_000)
        .unwrap();
    assert_eq!((again.message_id.as_str(), again.deliveries.len()), ("id-1", 0));
    assert_eq!(again.sequence_number, first.sequence_number);
    let later = topics
        .publish(
            &arn("t.fifo"),
            &publication("m", true),
            "id-3".into(),
            DEDUP_WINDOW_MS,
        )
        .unwrap();
    assert_eq!((later.message_id.as_str(), later.deliveries.len()), ("id-3", 1));
    assert!(later.sequence_number > first.sequence_number);
}

#[test]
fn permissions_are_statements_in_the_policy() {
    let mut topics = Topics::default();
    topics.create(arn("t"), attrs(&[]), vec![]).unwrap();
    let accounts = vec!["111111111111".to_string()];
    topics
        .add_permission(&arn("t"), "p", &accounts, &["Publish".into()])
        .unwrap();
    assert!(
        topics
            .add_permission(&arn("t"), "p", &accounts, &["Publish".into()])
            .is_err()
    );
    let policy = &topics.topic_attributes(&arn("t"), 0).unwrap()["Policy"];
    assert!(policy.contains("\"Sid\":\"p\"") && policy.contains("SNS:Publish"));
    topics.remove_permission(&arn("t"), "p").unwrap();
    assert!(!topics.topic_attributes(&arn("t"), 0).unwrap()["Policy"].contains("\"Sid\":\"p\""));
}

/// The store's view: every change the journal gave, applied in order.
fn replay(store: &mut BTreeMap<String, String>, topics: &mut Topics) {
    for change in topics.take_changes() {
        match change {
            SnsChange::Put { key, record } => {
                store.insert(key, record);
            }
            SnsChange::Delete { key } => {
                store.remove(&key);
            }
        }
    }
}

#[test]
fn the_journal_leaves_the_records_a_load_restores_the_same_topics_from() {
    let mut topics = Topics::default();
    topics.enable_journal();
    let mut store = BTreeMap::new();
    let fifo = attrs(&[("FifoTopic", "true"), ("ContentBasedDeduplication", "true")]);
    topics
        .create(arn("t.fifo"), fifo, vec![("k".into(), "v".into())])
        .unwrap();
    topics.create(arn("gone"), attrs(&[]), vec![]).unwrap();
    let q = "arn:aws:sqs:us-east-1:000000000000:q.fifo";
    let filter = attrs(&[("FilterPolicy", r#"{"a": ["b"]}"#)]);
    let kept = topics
        .subscribe(&arn("t.fifo"), Protocol::Sqs, q, &filter, "o")
        .unwrap();
    let hook = topics
        .subscribe(
            &arn("t.fifo"),
            Protocol::Http,
            "http://127.0.0.1:1/",
            &attrs(&[]),
            "o",
        )
        .unwrap();
    topics
        .subscribe(
            &arn("gone"),
            Protocol::Sqs,
            "arn:aws:sqs:us-east-1:0:x",
            &attrs(&[]),
            "o",
        )
        .unwrap();
    topics
        .set_topic_attribute(&arn("t.fifo"), "DisplayName", "shown")
        .unwrap();
    let first = topics
        .publish(&arn("t.fifo"), &publication("m", true), "id-1".into(), 0)
        .unwrap();
    topics
        .publish(
            &arn("t.fifo"),
            &publication("n", true),
            "id-2".into(),
            DEDUP_WINDOW_MS - 1,
        )
        .unwrap();
    topics.unsubscribe(&hook.arn);
    topics.delete(&arn("gone"));
    // The first id's five minutes are over: its record goes.
    topics
        .publish(
            &arn("t.fifo"),
            &publication("o", true),
            "id-3".into(),
            DEDUP_WINDOW_MS,
        )
        .unwrap();
    replay(&mut store, &mut topics);
    assert_eq!(store.into_iter().collect::<Vec<_>>(), {
        let mut all = topics.records();
        all.sort();
        all
    });
    let mut restored = Topics::restore(topics.records()).unwrap();
    assert_eq!(
        restored.topic_attributes(&arn("t.fifo"), 0).unwrap(),
        topics.topic_attributes(&arn("t.fifo"), 0).unwrap()
    );
    assert!(restored.topic(&arn("gone")).is_err());
    assert_eq!(
        restored.subscription(&kept.arn).unwrap().describe(),
        topics.subscription(&kept.arn).unwrap().describe()
    );
    assert!(restored.subscription(&kept.arn).unwrap().filter.is_some());
    // Deduplication and the sequence go on where they were.
    let again = restored
        .publish(
            &arn("t.fifo"),
            &publication("n", true),
            "id-4".into(),
            DEDUP_WINDOW_MS + 1,
        )
        .unwrap();
    assert_eq!((again.message_id.as_str(), again.deliveries.len()), ("id-2", 0));
    let next = restored
        .publish(
            &arn("t.fifo"),
            &publication("p", true),
            "id-5".into(),
            DEDUP_WINDOW_MS + 1,
        )
        .unwrap();
    assert!(next.sequence_number > first.sequence_number);
    assert_eq!(next.sequence_number.unwrap(), format!("{:020}", 4));
    let broken = vec![("s:x".to_string(), "{".to_string())];
    assert_eq!(Topics::restore(broken).unwrap_err().key, "s:x");
}

/// A FIFO topic with a 1-day archive, created at `now`.
fn archiving_topic(topics: &mut Topics, now: u64) -> TopicArn {
    topics.set_time(now);
    topics
        .create(
            arn("t.fifo"),
            attrs(&[
                ("FifoTopic", "true"),
                ("ContentBasedDeduplication", "true"),
                ("ArchivePolicy", r#"{"MessageRetentionPeriod":"1"}"#),
            ]),
            vec![],
        )
        .unwrap()
}

fn replay_policy(from: u64) -> String {
    format!(
        r#"{{"PointType":"Timestamp","StartingPoint":"{}"}}"#,
        envelope::timestamp(from)
    )
}

#[test]
fn a_replay_walks_the_archive_from_its_start_then_takes_new_publications_directly() {
    let day = 24 * 60 * 60 * 1000;
    let mut topics = Topics::default();
    topics.enable_journal();
    let topic = archiving_topic(&mut topics, 1_000_000);
    let queue = "arn:aws:sqs:us-east-1:000000000000:q.fifo";
    for (n, at) in [(1, 1_000_000), (2, 2_000_000), (3, 3_000_000)] {
        topics
            .publish(&topic, &publication(&format!("m{n}"), true), format!("id{n}"), at)
            .unwrap();
    }
    assert_eq!(topics.archived().0, 3);
    let attributes = topics.topic_attributes(&topic, 3_000_000).unwrap();
    assert_eq!(attributes["BeginningArchiveTime"], envelope::timestamp(1_000_000));

    // A start before the archive's beginning is refused; from the second
    // publication on, the replay brings m2 and m3.
    topics.set_time(3_000_000);
    assert!(topics.check_replay(&topic, &replay_policy(999_999)).is_err());
    let sub = topics
        .subscribe(&topic, Protocol::Sqs, queue, &attrs(&[]), "000000000000")
        .unwrap()
        .arn;
    topics
        .set_subscription_attribute(&sub, "ReplayPolicy", &replay_policy(2_000_000))
        .unwrap();
    let home = crate::queue::key::Home {
        account: "000000000000".into(),
        region: "us-east-1".into(),
    };
    topics.start_replay(&sub, "http://h", &home).unwrap();
    assert_eq!(
        topics.subscription(&sub).unwrap().describe()["ReplayStatus"],
        "Pending"
    );
    // While it runs, a new publication reaches the subscription through
    // the archive only, after the replayed ones.
    let live = topics
        .publish(&topic, &publication("m4", true), "id4".into(), 3_500_000)
        .unwrap();
    assert!(
        live.deliveries.is_empty(),
        "not delivered directly during a replay"
    );
    let ReplayStep::Deliver { publications, .. } = topics.replay_step(&sub, 2).unwrap() else {
        panic!("a first batch");
    };
    let ids: Vec<&str> = publications.iter().map(|p| p.message_id.as_str()).collect();
    assert_eq!(ids, vec!["id2"], "m1 is before the start; two looked at");
    assert_eq!(
        topics.subscription(&sub).unwrap().describe()["ReplayStatus"],
        "In progress"
    );
    let ReplayStep::Deliver { publications, .. } = topics.replay_step(&sub, 2).unwrap() else {
        panic!("a second batch");
    };
    let ids: Vec<&str> = publications.iter().map(|p| p.message_id.as_str()).collect();
    assert_eq!(ids, vec!["id3", "id4"]);
    assert!(matches!(topics.replay_step(&sub, 2).unwrap(), ReplayStep::Done));
    assert_eq!(
        topics.subscription(&sub).unwrap().describe()["ReplayStatus"],
        "Completed"
    );
    let after = topics
        .publish(&topic, &publication("m5", true), "id5".into(), 3_600_000)
        .unwrap();
    assert_eq!(after.deliveries.len(), 1, "delivered directly again");

    // The archive and the replay's state come back from the records.
    let restored = Topics::restore(topics.records()).unwrap();
    assert_eq!(restored.archived(), topics.archived());
    assert_eq!(
        restored.subscription(&sub).unwrap().replay,
        topics.subscription(&sub).unwrap().replay
    );
    // Past retention, a publication drops what is older than a day.
    let mut topics = restored;
    topics
        .publish(&topic, &publication("m6", true), "id6".into(), 2_500_000 + day)
        .unwrap();
    assert_eq!(topics.archived().0, 4, "m1 and m2 dropped, m6 kept");
    // `{}` turns the archive off and drops it all.
    topics.set_time(2_500_000 + day);
    topics.set_topic_attribute(&topic, "ArchivePolicy", "{}").unwrap();
    assert_eq!(topics.archived(), (0, 0));
    assert!(
        !topics
            .topic_attributes(&topic, 0)
            .unwrap()
            .contains_key("ArchivePolicy")
    );
}

#[test]
fn archive_and_replay_policies_are_for_fifo_topics() {
    let mut topics = Topics::default();
    let refused = topics
        .create(
            arn("t"),
            attrs(&[("ArchivePolicy", r#"{"MessageRetentionPeriod":"1"}"#)]),
            vec![],
        )
        .unwrap_err();
    assert!(refused.message.contains("FIFO"), "{}", refused.message);
    topics.create(arn("t"), attrs(&[]), vec![]).unwrap();
    let sub = topics
        .subscribe(
            &arn("t"),
            Protocol::Sqs,
            "arn:aws:sqs:us-east-1:000000000000:q",
            &attrs(&[]),
            "000000000000",
        )
        .unwrap()
        .arn;
    assert!(
        topics
            .set_subscription_attribute(&sub, "ReplayPolicy", &replay_policy(0))
            .is_err()
    );
    // A FIFO topic without an archive has nothing to replay from.
    let fifo = topics
        .create(arn("f.fifo"), attrs(&[("FifoTopic", "true")]), vec![])
        .unwrap();
    let error = topics.check_replay(&fifo, &replay_policy(0)).unwrap_err();
    assert!(error.message.contains("no ArchivePolicy"), "{}", error.message);
}

/// A filter policy of `bytes` bytes that AWS's other limits allow: one key
/// with one long value.
fn filter_policy_of(bytes: usize) -> String {
    let frame = r#"{"k":[""]}"#.len();
    format!(r#"{{"k":["{}"]}}"#, "v".repeat(bytes - frame))
}

#[test]
fn filter_policies_are_at_most_256_kb_in_both_scopes() {
    let mut topics = Topics::default();
    topics.create(arn("filtered"), attrs(&[]), vec![]).unwrap();
    let queue = |name: &str| format!("arn:aws:sqs:us-east-1:000000000000:{name}");
    let largest = filter_policy_of(filter::MAX_BYTES);
    let over = filter_policy_of(filter::MAX_BYTES + 1);
    assert_eq!(largest.len(), 256 * 1024);
    for scope in ["MessageAttributes", "MessageBody"] {
        let given = |policy: &str| attrs(&[("FilterPolicyScope", scope), ("FilterPolicy", policy)]);
        let kept = topics
            .subscribe(
                &arn("filtered"),
                Protocol::Sqs,
                &queue(&format!("at-{scope}")),
                &given(&largest),
                "000000000000",
            )
            .unwrap();
        let refused = topics
            .subscribe(
                &arn("filtered"),
                Protocol::Sqs,
                &queue(&format!("over-{scope}")),
                &given(&over),
                "000000000000",
            )
            .unwrap_err();
        assert!(
            refused
                .message
                .contains("FilterPolicy: Filter policy is too large"),
            "{scope}: {}",
            refused.message
        );
        let set = topics
            .set_subscription_attribute(&kept.arn, "FilterPolicy", &over)
            .unwrap_err();
        assert!(
            set.message.contains("Filter policy is too large"),
            "{scope}: {}",
            set.message
        );
        assert_eq!(
            topics.subscription(&kept.arn).unwrap().attributes["FilterPolicy"],
            largest,
            "{scope}: the refused policy changed nothing"
        );
    }
}

#[test]
fn no_attribute_of_a_topic_or_subscription_is_longer_than_30720_bytes() {
    let mut topics = Topics::default();
    let policy = |bytes: usize| format!(r#"{{"Statement":[],"Id":"{}"}}"#, "i".repeat(bytes - 24));
    assert_eq!(policy(30_720).len(), 30_720);
    topics
        .create(arn("bounded"), attrs(&[("Policy", &policy(30_720))]), vec![])
        .unwrap();
    let refused = topics
        .set_topic_attribute(&arn("bounded"), "DeliveryPolicy", &policy(30_721))
        .unwrap_err();
    assert!(
        refused.message.contains("more than the 30720"),
        "{}",
        refused.message
    );
    let sub = topics
        .subscribe(
            &arn("bounded"),
            Protocol::Sqs,
            "arn:aws:sqs:us-east-1:000000000000:q",
            &attrs(&[]),
            "000000000000",
        )
        .unwrap();
    let refused = topics
        .set_subscription_attribute(&sub.arn, "DeliveryPolicy", &policy(30_721))
        .unwrap_err();
    assert!(
        refused.message.contains("more than the 30720"),
        "{}",
        refused.message
    );
}
