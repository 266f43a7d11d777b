//! SNS with a store: topics, subscriptions and a FIFO topic's
//! deduplication ids kept across a SIGKILL on `--data-dir` and across a
//! failover on Redis; and a Publish's fan-out, which is answered only once
//! every subscribed queue holds its copy and, killed half-way, leaves every
//! copy of a publication or none.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{
    RedisServer, Server, create_fifo_topic, create_queue_url, create_topic, drain, message_of,
    sns_client_for, subscribe_queue, wait_for,
};
use crate::disk::{DataDir, kill_9, start_on};

/// The `Message` of every envelope in the queue at `url`, drained.
async fn notes(sqs: &aws_sdk_sqs::Client, url: &str) -> Vec<String> {
    drain(sqs, url)
        .await
        .iter()
        .map(|body| message_of(body))
        .collect()
}

#[tokio::test]
async fn topics_subscriptions_and_deduplication_survive_a_kill_on_disk() {
    let dir = DataDir::new("sns-restart");
    let mut server = start_on(&dir, &[]).await;
    let (sqs, sns) = (server.client(), sns_client_for(&server.url));
    let news = sns
        .create_topic()
        .name("news")
        .attributes("DisplayName", "News")
        .tags(
            aws_sdk_sns::types::Tag::builder()
                .key("team")
                .value("a")
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap()
        .topic_arn
        .unwrap();
    let orders = create_fifo_topic(&sns, "orders.fifo", &[]).await;
    let plain = create_queue_url(&sqs, "plain", &[]).await;
    let ordered = create_queue_url(&sqs, "ordered.fifo", &[("FifoQueue", "true")]).await;
    let filtered = subscribe_queue(
        &sns,
        &sqs,
        &news,
        &plain,
        &[("FilterPolicy", r#"{"kind": ["a"]}"#)],
    )
    .await;
    subscribe_queue(&sns, &sqs, &orders, &ordered, &[("RawMessageDelivery", "true")]).await;
    let first = publish_in_order(&sns, &orders, "m1").await;

    kill_9(&mut server);
    let server = start_on(&dir, &[]).await;
    let (sqs, sns) = (server.client(), sns_client_for(&server.url));

    let attributes = sns
        .get_topic_attributes()
        .topic_arn(&news)
        .send()
        .await
        .unwrap()
        .attributes
        .unwrap();
    assert_eq!(attributes["DisplayName"], "News");
    let tags = sns
        .list_tags_for_resource()
        .resource_arn(&news)
        .send()
        .await
        .unwrap()
        .tags
        .unwrap();
    assert_eq!((tags[0].key.as_str(), tags[0].value.as_str()), ("team", "a"));
    let subscription = sns
        .get_subscription_attributes()
        .subscription_arn(&filtered)
        .send()
        .await
        .unwrap();
    assert_eq!(
        subscription.attributes.unwrap()["FilterPolicy"],
        r#"{"kind": ["a"]}"#
    );
    // The filter policy was compiled again at the load.
    let kind = |value: &str| {
        aws_sdk_sns::types::MessageAttributeValue::builder()
            .data_type("String")
            .string_value(value)
            .build()
            .unwrap()
    };
    sns.publish()
        .topic_arn(&news)
        .message("b")
        .message_attributes("kind", kind("b"))
        .send()
        .await
        .unwrap();
    sns.publish()
        .topic_arn(&news)
        .message("a")
        .message_attributes("kind", kind("a"))
        .send()
        .await
        .unwrap();
    let got = notes(&sqs, &plain).await;
    assert_eq!(got, vec!["a"]);
    // Within five minutes the same message is the same publication, and
    // the sequence goes on from where it was.
    let again = publish_in_order(&sns, &orders, "m1").await;
    assert_eq!(again.message_id, first.message_id);
    let next = publish_in_order(&sns, &orders, "m2").await;
    assert!(
        next.sequence_number > first.sequence_number,
        "{next:?} after {first:?}"
    );
    assert_eq!(drain(&sqs, &ordered).await, vec!["m1", "m2"]);
}

/// Publishes `message` to the FIFO topic `topic` in the group `g`.
async fn publish_in_order(
    sns: &aws_sdk_sns::Client,
    topic: &str,
    message: &str,
) -> aws_sdk_sns::operation::publish::PublishOutput {
    sns.publish()
        .topic_arn(topic)
        .message(message)
        .message_group_id("g")
        .send()
        .await
        .unwrap()
}

/// A Redis with two instances on it, the first leading.
async fn leader_and_passive(redis: &RedisServer, prefix: &str) -> (Server, Server) {
    let first = Server::start_node(redis, &format!("{prefix}-a"));
    assert!(
        wait_for(Duration::from_secs(10), || first.is_ready())
            .await
            .is_some()
    );
    (first, Server::start_node(redis, &format!("{prefix}-b")))
}

#[tokio::test]
async fn a_new_leader_serves_the_topics_of_the_old_one() {
    let redis = RedisServer::start();
    let (mut first, second) = leader_and_passive(&redis, "sns").await;
    let (sqs, sns) = (first.client(), sns_client_for(&first.url));
    let topic = create_topic(&sns, "events").await;
    let queue = create_queue_url(&sqs, "events-copy", &[]).await;
    let subscription = subscribe_queue(&sns, &sqs, &topic, &queue, &[]).await;
    sns.publish()
        .topic_arn(&topic)
        .message("before")
        .send()
        .await
        .unwrap();

    first.signal("KILL");
    assert!(first.wait_exit(Duration::from_secs(5)));
    assert!(
        wait_for(Duration::from_secs(15), || second.is_ready())
            .await
            .is_some()
    );
    let (sqs, sns) = (second.client(), sns_client_for(&second.url));
    let listed = sns
        .list_subscriptions_by_topic()
        .topic_arn(&topic)
        .send()
        .await
        .unwrap();
    assert_eq!(
        listed.subscriptions.unwrap()[0].subscription_arn.as_deref(),
        Some(subscription.as_str())
    );
    sns.publish()
        .topic_arn(&topic)
        .message("after")
        .send()
        .await
        .unwrap();
    let envelopes: Vec<serde_json::Value> = drain(&sqs, &queue)
        .await
        .iter()
        .map(|body| serde_json::from_str(body).unwrap())
        .collect();
    let got: Vec<&str> = envelopes.iter().map(|e| e["Message"].as_str().unwrap()).collect();
    assert_eq!(got, vec!["before", "after"]);
    // The signing key is the state's: the certificate of a message signed
    // before the failover is the one the new leader signs with and serves.
    let path = |envelope: &serde_json::Value| {
        let url = envelope["SigningCertURL"].as_str().unwrap();
        url[url.find("/_ssq/").unwrap()..].to_string()
    };
    assert_eq!(path(&envelopes[0]), path(&envelopes[1]));
    let certificate = reqwest::get(format!("{}{}", second.url, path(&envelopes[0])))
        .await
        .unwrap();
    assert_eq!(certificate.status().as_u16(), 200);
    assert!(
        certificate
            .text()
            .await
            .unwrap()
            .starts_with("-----BEGIN CERTIFICATE-----")
    );
}

/// Publishers publish to a topic with five subscribed queues while ssq is
/// killed; then every queue must hold the same publications (every copy
/// of one, or none), each once, and every acknowledged one.
async fn fan_out_killed_half_way(mut restart: impl AsyncFnMut() -> Server, first: &mut Server) {
    let (sqs, sns) = (first.client(), sns_client_for(&first.url));
    let topic = create_topic(&sns, "fan").await;
    let mut queues = Vec::new();
    for n in 0..5 {
        let url = create_queue_url(&sqs, &format!("fan-{n}"), &[]).await;
        subscribe_queue(&sns, &sqs, &topic, &url, &[]).await;
        queues.push(url);
    }
    let acknowledged = Arc::new(Mutex::new(BTreeSet::new()));
    let publishers: Vec<_> = (0..8)
        .map(|p| {
            let (sns, topic, acknowledged) = (sns.clone(), topic.clone(), acknowledged.clone());
            tokio::spawn(async move {
                for n in 0.. {
                    let message = format!("p{p}-{n}");
                    match sns.publish().topic_arn(&topic).message(&message).send().await {
                        Ok(_) => acknowledged.lock().unwrap().insert(message),
                        Err(_) => return,
                    };
                }
            })
        })
        .collect();
    let started = wait_for(Duration::from_secs(10), || async {
        acknowledged.lock().unwrap().len() > 200
    })
    .await;
    assert!(started.is_some(), "publishes did not get going");
    first.signal("KILL");
    assert!(first.wait_exit(Duration::from_secs(5)));
    for publisher in publishers {
        publisher.await.unwrap();
    }
    let server = restart().await;
    let sqs = server.client();
    let mut held: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for url in &queues {
        let mut got = notes(&sqs, url).await;
        got.sort();
        let unique: BTreeSet<&String> = got.iter().collect();
        assert_eq!(unique.len(), got.len(), "{url} holds a publication twice");
        held.insert(url, got);
    }
    let acknowledged = acknowledged.lock().unwrap().clone();
    let reference = &held[queues[0].as_str()];
    for (url, got) in &held {
        assert_eq!(
            got, reference,
            "{url} holds other publications than {}: a partial fan-out",
            queues[0]
        );
        let got: BTreeSet<&String> = got.iter().collect();
        let lost: Vec<&String> = acknowledged.iter().filter(|m| !got.contains(m)).collect();
        assert!(lost.is_empty(), "{url} lost acknowledged publications: {lost:?}");
    }
    assert!(acknowledged.len() > 200);
}

#[tokio::test]
async fn a_kill_during_fan_out_leaves_every_copy_or_none_on_disk() {
    let dir = DataDir::new("sns-fan-out");
    let mut server = start_on(&dir, &[]).await;
    fan_out_killed_half_way(async || start_on(&dir, &[]).await, &mut server).await;
}

#[tokio::test]
async fn a_kill_during_fan_out_leaves_every_copy_or_none_on_redis() {
    let redis = RedisServer::start();
    let (mut first, second) = leader_and_passive(&redis, "fan").await;
    let second = Mutex::new(Some(second));
    fan_out_killed_half_way(
        async || {
            let server = second.lock().unwrap().take().expect("one takeover");
            assert!(
                wait_for(Duration::from_secs(15), || server.is_ready())
                    .await
                    .is_some()
            );
            server
        },
        &mut first,
    )
    .await;
}

/// The archive's envelopes in the queue at `url`, drained: (MessageId,
/// Message, whether it says it was replayed).
async fn envelopes(sqs: &aws_sdk_sqs::Client, url: &str) -> Vec<(String, String, bool)> {
    drain(sqs, url)
        .await
        .iter()
        .map(|body| {
            let envelope: serde_json::Value = serde_json::from_str(body).unwrap();
            (
                envelope["MessageId"].as_str().unwrap().to_string(),
                envelope["Message"].as_str().unwrap().to_string(),
                envelope["Replayed"] == "true",
            )
        })
        .collect()
}

async fn replay_status(sns: &aws_sdk_sns::Client, subscription: &str) -> String {
    sns.get_subscription_attributes()
        .subscription_arn(subscription)
        .send()
        .await
        .unwrap()
        .attributes
        .unwrap_or_default()
        .remove("ReplayStatus")
        .unwrap_or_default()
}

/// A FIFO topic's archive replays to a queue subscribed later: the
/// publications since the starting point, in order, with their first
/// MessageIds and `Replayed`, then new ones directly; the archive and the
/// replay's state are durable across a SIGKILL on disk, so a queue
/// subscribed after the restart replays the same.
#[tokio::test]
async fn a_fifo_topics_archive_replays_to_a_new_subscription_and_survives_a_kill() {
    let dir = DataDir::new("sns-replay");
    let mut server = start_on(&dir, &[]).await;
    let (sqs, sns) = (server.client(), sns_client_for(&server.url));
    let first = create_queue_url(&sqs, "first.fifo", &[("FifoQueue", "true")]).await;
    let topic = create_fifo_topic(
        &sns,
        "events.fifo",
        &[("ArchivePolicy", r#"{"MessageRetentionPeriod":"7"}"#)],
    )
    .await;
    subscribe_queue(&sns, &sqs, &topic, &first, &[]).await;
    for body in ["one", "two", "three"] {
        sns.publish()
            .topic_arn(&topic)
            .message(body)
            .message_group_id("g")
            .send()
            .await
            .unwrap();
    }
    let attributes = sns
        .get_topic_attributes()
        .topic_arn(&topic)
        .send()
        .await
        .unwrap()
        .attributes
        .unwrap_or_default();
    let beginning = attributes["BeginningArchiveTime"].clone();
    let policy = format!(r#"{{"PointType":"Timestamp","StartingPoint":"{beginning}"}}"#);

    let late = create_queue_url(&sqs, "late.fifo", &[("FifoQueue", "true")]).await;
    let replaying = subscribe_queue(&sns, &sqs, &topic, &late, &[("ReplayPolicy", &policy)]).await;
    let done = wait_for(Duration::from_secs(10), || async {
        replay_status(&sns, &replaying).await == "Completed"
    })
    .await;
    assert!(done.is_some(), "the replay completes");
    sns.publish()
        .topic_arn(&topic)
        .message("four")
        .message_group_id("g")
        .send()
        .await
        .unwrap();
    let originals = envelopes(&sqs, &first).await;
    let replayed = envelopes(&sqs, &late).await;
    let bodies = |list: &[(String, String, bool)]| list.iter().map(|e| e.1.clone()).collect::<Vec<_>>();
    assert_eq!(bodies(&originals), vec!["one", "two", "three", "four"]);
    assert_eq!(
        bodies(&replayed),
        bodies(&originals),
        "the archive, then the new one"
    );
    for (original, copy) in originals.iter().zip(&replayed) {
        assert_eq!(original.0, copy.0, "a replayed message keeps its MessageId");
    }
    let marks: Vec<bool> = replayed.iter().map(|e| e.2).collect();
    assert_eq!(marks, vec![true, true, true, false]);

    kill_9(&mut server);
    let server = start_on(&dir, &[]).await;
    let (sqs, sns) = (server.client(), sns_client_for(&server.url));
    assert_eq!(replay_status(&sns, &replaying).await, "Completed");
    let again = create_queue_url(&sqs, "again.fifo", &[("FifoQueue", "true")]).await;
    let replaying = subscribe_queue(&sns, &sqs, &topic, &again, &[("ReplayPolicy", &policy)]).await;
    let done = wait_for(Duration::from_secs(10), || async {
        replay_status(&sns, &replaying).await == "Completed"
    })
    .await;
    assert!(done.is_some(), "a replay after the restart completes");
    let after_restart = envelopes(&sqs, &again).await;
    assert_eq!(bodies(&after_restart), vec!["one", "two", "three", "four"]);
}
