//! Durability with real processes: what a client was told succeeded is in
//! Redis, and a new leader continues exactly where the old one stopped.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::common::{
    RedisServer, Server, client_without_retries, create_queue_url, queue_url, single_leader,
};
use aws_sdk_sqs::types::{
    MessageAttributeValue, MessageSystemAttributeName, QueueAttributeName, SendMessageBatchRequestEntry,
};

fn attr(value: &str) -> MessageAttributeValue {
    MessageAttributeValue::builder()
        .data_type("String")
        .string_value(value)
        .build()
        .unwrap()
}

/// Receives until the queue answers empty; returns (body → message) of all.
async fn drain(
    sqs: &aws_sdk_sqs::Client,
    url: &str,
    delete: bool,
) -> BTreeMap<String, aws_sdk_sqs::types::Message> {
    drain_allowing_repeats(sqs, url, delete, &BTreeSet::new()).await
}

/// Receives (and deletes, if `delete`) until the queue answers empty. A body
/// must come once, except those in `may_repeat`: sends that were retried
/// after an error, whose first try may have been stored though its answer
/// was lost (at-least-once, as SQS allows). A receive or delete that fails
/// (a leader stepping down for a moment) is retried for up to 10 s.
async fn drain_allowing_repeats(
    sqs: &aws_sdk_sqs::Client,
    url: &str,
    delete: bool,
    may_repeat: &BTreeSet<String>,
) -> BTreeMap<String, aws_sdk_sqs::types::Message> {
    let mut seen = BTreeMap::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        assert!(
            std::time::Instant::now() < deadline,
            "the queue did not drain within 60 s"
        );
        let out = match sqs
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .message_attribute_names("All")
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .send()
            .await
        {
            Ok(out) => out,
            Err(error) => {
                assert!(
                    std::time::Instant::now() + Duration::from_secs(50) < deadline,
                    "receives kept failing: {error:?}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        if out.messages().is_empty() {
            return seen;
        }
        for message in out.messages() {
            if delete {
                let mut tries = 0;
                while let Err(error) = sqs
                    .delete_message()
                    .queue_url(url)
                    .receipt_handle(message.receipt_handle().unwrap())
                    .send()
                    .await
                {
                    tries += 1;
                    assert!(tries < 100, "a delete kept failing: {error:?}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
            let body = message.body().unwrap().to_string();
            let previous = seen.insert(body.clone(), message.clone());
            assert!(
                previous.is_none() || may_repeat.contains(&body),
                "{body:?} delivered twice, though it was sent once"
            );
        }
    }
}

async fn leader_of(nodes: &[Server]) -> usize {
    single_leader(nodes, Duration::from_secs(8)).await
}

#[tokio::test]
async fn every_acknowledged_message_survives_a_leader_crash() {
    let redis = RedisServer::start();
    let mut nodes: Vec<Server> = ["d1", "d2"]
        .iter()
        .map(|id| Server::start_node(&redis, id))
        .collect();
    let leader = leader_of(&nodes).await;
    let sqs = client_without_retries(&nodes[leader].url);
    let url = queue_url("orders");
    sqs.create_queue()
        .queue_name("orders")
        .tags("team", "core")
        .attributes(QueueAttributeName::VisibilityTimeout, "45")
        .send()
        .await
        .unwrap();

    let mut sent = BTreeMap::new();
    for i in 0..100 {
        let body = format!("single {i} ✓");
        sqs.send_message()
            .queue_url(&url)
            .message_body(&body)
            .message_attributes("i", attr(&i.to_string()))
            .send()
            .await
            .unwrap();
        sent.insert(body, i.to_string());
    }
    for batch in 0..10 {
        let mut request = sqs.send_message_batch().queue_url(&url);
        for j in 0..10 {
            let body = format!("batch {batch}-{j}");
            request = request.entries(
                SendMessageBatchRequestEntry::builder()
                    .id(format!("e{j}"))
                    .message_body(&body)
                    .message_attributes("i", attr(&format!("{batch}{j}")))
                    .build()
                    .unwrap(),
            );
            sent.insert(body, format!("{batch}{j}"));
        }
        assert!(request.send().await.unwrap().failed().is_empty());
    }

    nodes.remove(leader).signal("KILL");
    let new_leader = leader_of(&nodes).await;
    let sqs = client_without_retries(&nodes[new_leader].url);

    let attributes = sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(QueueAttributeName::All)
        .send()
        .await
        .unwrap()
        .attributes
        .unwrap();
    assert_eq!(
        attributes[&QueueAttributeName::VisibilityTimeout],
        "45",
        "queue settings survive"
    );
    assert_eq!(
        attributes[&QueueAttributeName::ApproximateNumberOfMessages],
        "200"
    );
    let tags = sqs
        .list_queue_tags()
        .queue_url(&url)
        .send()
        .await
        .unwrap()
        .tags
        .unwrap();
    assert_eq!(tags["team"], "core");

    let received = drain(&sqs, &url, true).await;
    assert_eq!(received.len(), sent.len(), "none missing, none invented");
    for (body, value) in &sent {
        let message = &received[body];
        assert_eq!(
            message.message_attributes.as_ref().unwrap()["i"].string_value(),
            Some(value.as_str())
        );
        assert_eq!(
            message.attributes.as_ref().unwrap()[&MessageSystemAttributeName::ApproximateReceiveCount],
            "1"
        );
    }
}

#[tokio::test]
async fn in_flight_messages_stay_hidden_and_keep_their_receive_counts() {
    let redis = RedisServer::start();
    let mut nodes: Vec<Server> = ["f1", "f2"]
        .iter()
        .map(|id| Server::start_node(&redis, id))
        .collect();
    let leader = leader_of(&nodes).await;
    let sqs = client_without_retries(&nodes[leader].url);
    let url = queue_url("work");
    sqs.create_queue().queue_name("work").send().await.unwrap();
    for body in ["free", "busy"] {
        sqs.send_message()
            .queue_url(&url)
            .message_body(body)
            .send()
            .await
            .unwrap();
    }
    // "free" is received once and released; "busy" twice and kept in flight.
    let first = sqs
        .receive_message()
        .queue_url(&url)
        .max_number_of_messages(2)
        .visibility_timeout(1)
        .send()
        .await
        .unwrap();
    assert_eq!(first.messages().len(), 2);
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let second = sqs
        .receive_message()
        .queue_url(&url)
        .max_number_of_messages(2)
        .visibility_timeout(60)
        .send()
        .await
        .unwrap();
    let mut busy_handle = None;
    for message in second.messages() {
        if message.body() == Some("free") {
            sqs.change_message_visibility()
                .queue_url(&url)
                .receipt_handle(message.receipt_handle().unwrap())
                .visibility_timeout(0)
                .send()
                .await
                .unwrap();
        } else {
            busy_handle = message.receipt_handle().map(str::to_string);
        }
    }
    let busy_handle = busy_handle.expect("busy was received");
    // A delayed message, never received: it has no state record in Redis,
    // its delay comes back from its body record.
    sqs.send_message()
        .queue_url(&url)
        .message_body("later")
        .delay_seconds(900)
        .send()
        .await
        .unwrap();

    nodes.remove(leader).signal("KILL");
    let new_leader = leader_of(&nodes).await;
    let sqs = client_without_retries(&nodes[new_leader].url);

    let visible = sqs
        .receive_message()
        .queue_url(&url)
        .max_number_of_messages(10)
        .visibility_timeout(60)
        .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
        .send()
        .await
        .unwrap();
    let bodies: Vec<_> = visible.messages().iter().map(|m| m.body().unwrap()).collect();
    assert_eq!(
        bodies,
        ["free"],
        "the in-flight message stays hidden on the new leader"
    );
    assert_eq!(
        visible.messages()[0].attributes.as_ref().unwrap()
            [&MessageSystemAttributeName::ApproximateReceiveCount],
        "3"
    );
    let counts = sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesDelayed)
        .send()
        .await
        .unwrap();
    assert_eq!(
        counts.attributes().unwrap()[&QueueAttributeName::ApproximateNumberOfMessagesDelayed],
        "1",
        "the delayed message is still delayed on the new leader"
    );

    // The receipt handle from the old leader still works on the new one.
    sqs.change_message_visibility()
        .queue_url(&url)
        .receipt_handle(&busy_handle)
        .visibility_timeout(0)
        .send()
        .await
        .unwrap();
    let busy = sqs
        .receive_message()
        .queue_url(&url)
        .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
        .send()
        .await
        .unwrap();
    assert_eq!(busy.messages()[0].body(), Some("busy"));
    assert_eq!(
        busy.messages()[0].attributes.as_ref().unwrap()[&MessageSystemAttributeName::ApproximateReceiveCount],
        "3"
    );
}

#[tokio::test]
async fn a_deleted_message_never_comes_back() {
    let redis = RedisServer::start();
    let mut nodes: Vec<Server> = ["x1", "x2"]
        .iter()
        .map(|id| Server::start_node(&redis, id))
        .collect();
    let leader = leader_of(&nodes).await;
    let sqs = client_without_retries(&nodes[leader].url);
    let url = queue_url("deletions");
    sqs.create_queue()
        .queue_name("deletions")
        .attributes(QueueAttributeName::VisibilityTimeout, "1")
        .send()
        .await
        .unwrap();
    for i in 0..20 {
        sqs.send_message()
            .queue_url(&url)
            .message_body(format!("m{i}"))
            .send()
            .await
            .unwrap();
    }
    let mut kept = BTreeSet::new();
    let mut deleted = 0;
    for (body, message) in drain(&sqs, &url, false).await {
        if deleted < 10 {
            sqs.delete_message()
                .queue_url(&url)
                .receipt_handle(message.receipt_handle().unwrap())
                .send()
                .await
                .unwrap();
            deleted += 1;
        } else {
            kept.insert(body);
        }
    }
    nodes.remove(leader).signal("KILL");
    let new_leader = leader_of(&nodes).await;
    let sqs = client_without_retries(&nodes[new_leader].url);
    tokio::time::sleep(Duration::from_millis(1_100)).await; // the kept ones' visibility runs out
    let after: BTreeSet<String> = drain(&sqs, &url, true).await.into_keys().collect();
    assert_eq!(after, kept);
}

#[tokio::test]
async fn a_frozen_leader_is_fenced_and_redis_keeps_the_new_leaders_data() {
    let redis = RedisServer::start();
    let nodes: Vec<Server> = ["z1", "z2"]
        .iter()
        .map(|id| Server::start_node(&redis, id))
        .collect();
    let old = leader_of(&nodes).await;
    let new = 1 - old;
    let url = queue_url("fenced");
    client_without_retries(&nodes[old].url)
        .create_queue()
        .queue_name("fenced")
        .send()
        .await
        .unwrap();

    nodes[old].signal("STOP");
    // A send that reaches the frozen leader: it waits in its socket buffer.
    let stale_send = {
        let client = client_without_retries(&nodes[old].url);
        let url = url.clone();
        tokio::spawn(async move {
            client
                .send_message()
                .queue_url(url)
                .message_body("from the old leader")
                .send()
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(2_500)).await; // past the TTL
    single_leader(&nodes[new..=new], Duration::from_secs(5)).await;
    let sqs = client_without_retries(&nodes[new].url);
    sqs.send_message()
        .queue_url(&url)
        .message_body("from the new leader")
        .send()
        .await
        .unwrap();

    nodes[old].signal("CONT");
    let stale = stale_send.await.unwrap();
    let error = stale.expect_err("the old leader must not acknowledge anything");
    assert_eq!(error.raw_response().map(|r| r.status().as_u16()), Some(503));

    let bodies: Vec<String> = drain(&sqs, &url, true).await.into_keys().collect();
    assert_eq!(bodies, ["from the new leader"]);
    assert_eq!(nodes[old].status().await["role"], "passive");
}

#[tokio::test]
async fn with_redis_down_sends_fail_and_acknowledged_ones_survive() {
    let mut redis = RedisServer::start_with(&["--appendonly", "yes", "--appendfsync", "always"]);
    let nodes: Vec<Server> = ["r1", "r2"]
        .iter()
        .map(|id| Server::start_node(&redis, id))
        .collect();
    let leader = leader_of(&nodes).await;
    let url = queue_url("outage");
    client_without_retries(&nodes[leader].url)
        .create_queue()
        .queue_name("outage")
        .send()
        .await
        .unwrap();

    let clients: Vec<_> = nodes.iter().map(|n| client_without_retries(&n.url)).collect();
    let mut acknowledged = BTreeSet::new();
    let mut failed = 0;
    // Each message is offered to every instance, `attempts` times 100 ms
    // apart: while Redis is up, a leader that steps down for a moment on a
    // loaded machine (as it must when a renewal is late) costs a retry, not
    // the test.
    // Each round offers a message to the leader it starts with first, so
    // that a try counts as failed only when a leader (or nobody) refused it.
    let send_round = |from: usize, to: usize, attempts: usize, leader: usize| {
        let clients = &clients;
        let url = &url;
        async move {
            let mut outcomes = Vec::new();
            for i in from..to {
                let body = format!("m{i}");
                let mut ok = false;
                let mut tries = 0;
                for attempt in 0..attempts {
                    if attempt > 0 {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    for sqs in clients.iter().cycle().skip(leader).take(clients.len()) {
                        tries += 1;
                        if sqs
                            .send_message()
                            .queue_url(url)
                            .message_body(&body)
                            .send()
                            .await
                            .is_ok()
                        {
                            ok = true;
                            break;
                        }
                    }
                    if ok {
                        break;
                    }
                }
                outcomes.push((body, ok, tries > 1));
            }
            outcomes
        }
    };
    // A send tried more than once (its first try failed, on a passive or a
    // leader stepping down) may have been stored by a try whose answer was
    // lost: it may come twice. Nothing else may.
    let mut retried = BTreeSet::new();
    for (body, ok, tried_again) in send_round(0, 50, 50, leader).await {
        assert!(ok, "{body} failed while Redis was up");
        if tried_again {
            retried.insert(body.clone());
        }
        acknowledged.insert(body);
    }
    redis.kill();
    for (body, ok, tried_again) in send_round(50, 80, 1, leader).await {
        if tried_again {
            retried.insert(body.clone());
        }
        if ok {
            acknowledged.insert(body);
        } else {
            failed += 1;
        }
    }
    assert!(failed > 0, "with Redis down, sends must fail");
    redis.restart();
    let leader = single_leader(&nodes, Duration::from_secs(10)).await;
    for (body, ok, tried_again) in send_round(80, 100, 50, leader).await {
        assert!(ok, "{body} failed after Redis came back");
        if tried_again {
            retried.insert(body.clone());
        }
        acknowledged.insert(body);
    }
    let received: BTreeSet<String> = drain_allowing_repeats(&clients[leader], &url, true, &retried)
        .await
        .into_keys()
        .collect();
    let lost: Vec<_> = acknowledged.difference(&received).collect();
    assert!(lost.is_empty(), "acknowledged but lost: {lost:?}");
}

/// Sends the same FIFO message, with the same deduplication id, each time;
/// returns the MessageId.
async fn send_once(sqs: &aws_sdk_sqs::Client, url: &str) -> String {
    let request = sqs
        .send_message()
        .queue_url(url)
        .message_body("once")
        .message_group_id("g")
        .message_deduplication_id("once");
    crate::common::message_id_of(request, url).await
}

#[tokio::test]
async fn fifo_order_deduplication_and_dead_letters_survive_a_failover() {
    let redis = RedisServer::start();
    let mut nodes: Vec<Server> = ["q1", "q2"]
        .iter()
        .map(|id| Server::start_node(&redis, id))
        .collect();
    let leader = leader_of(&nodes).await;
    let sqs = client_without_retries(&nodes[leader].url);
    sqs.create_queue().queue_name("dead").send().await.unwrap();
    sqs.create_queue()
        .queue_name("jobs.fifo")
        .attributes(QueueAttributeName::FifoQueue, "true")
        .send()
        .await
        .unwrap();
    sqs.create_queue()
        .queue_name("flaky")
        .attributes(
            QueueAttributeName::RedrivePolicy,
            r#"{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dead","maxReceiveCount":1}"#,
        )
        .send()
        .await
        .unwrap();
    let (fifo, flaky, dead) = (queue_url("jobs.fifo"), queue_url("flaky"), queue_url("dead"));
    // Group 1 comes back from a receive (by a visibility change) while
    // group 2 waits: after the failover group 2 must still go first.
    let turns = create_queue_url(
        &sqs,
        "turns.fifo",
        &[("FifoQueue", "true"), ("ContentBasedDeduplication", "true")],
    )
    .await;
    for (body, group) in [("g1-m1", "1"), ("g1-m2", "1"), ("g2-m1", "2")] {
        crate::common::send_grouped(&sqs, &turns, body, group).await;
    }
    let taken = sqs
        .receive_message()
        .queue_url(&turns)
        .max_number_of_messages(2)
        .visibility_timeout(60)
        .send()
        .await
        .unwrap();
    sqs.change_message_visibility()
        .queue_url(&turns)
        .receipt_handle(taken.messages()[0].receipt_handle().unwrap())
        .visibility_timeout(0)
        .send()
        .await
        .unwrap();
    let mut first_id = None;
    for i in 0..5 {
        let sent = sqs
            .send_message()
            .queue_url(&fifo)
            .message_body(format!("m{i}"))
            .message_group_id("g")
            .message_deduplication_id(format!("d{i}"))
            .send()
            .await
            .unwrap();
        first_id.get_or_insert(sent.message_id.unwrap());
    }
    sqs.send_message()
        .queue_url(&flaky)
        .message_body("poison")
        .send()
        .await
        .unwrap();
    sqs.receive_message()
        .queue_url(&flaky)
        .visibility_timeout(0)
        .send()
        .await
        .unwrap();
    assert!(
        sqs.receive_message()
            .queue_url(&flaky)
            .send()
            .await
            .unwrap()
            .messages()
            .is_empty(),
        "moved to dead"
    );

    // A purge forgets the deduplication ids, in Redis too.
    let purged = create_queue_url(&sqs, "purged.fifo", &[("FifoQueue", "true")]).await;
    let before_purge = send_once(&sqs, &purged).await;
    sqs.purge_queue().queue_url(&purged).send().await.unwrap();

    // Sequence numbers keep growing across the failover, though every
    // message that had one is gone.
    let numbered = create_queue_url(
        &sqs,
        "numbered.fifo",
        &[("FifoQueue", "true"), ("ContentBasedDeduplication", "true")],
    )
    .await;
    let send_numbered = |sqs: aws_sdk_sqs::Client, body: &'static str| {
        let numbered = numbered.clone();
        async move {
            let sent = sqs
                .send_message()
                .queue_url(&numbered)
                .message_body(body)
                .message_group_id("g")
                .send()
                .await
                .unwrap();
            sent.sequence_number.unwrap().parse::<u128>().unwrap()
        }
    };
    let numbers_before = [
        send_numbered(sqs.clone(), "n1").await,
        send_numbered(sqs.clone(), "n2").await,
    ];
    assert_eq!(drain(&sqs, &numbered, true).await.len(), 2);

    nodes.remove(leader).signal("KILL");
    let leader = leader_of(&nodes).await;
    let sqs = client_without_retries(&nodes[leader].url);

    let duplicate = sqs
        .send_message()
        .queue_url(&fifo)
        .message_body("m0")
        .message_group_id("g")
        .message_deduplication_id("d0")
        .send()
        .await
        .unwrap();
    assert_eq!(
        duplicate.message_id, first_id,
        "the deduplication window survives"
    );
    assert_eq!(
        crate::common::receive_bodies(&sqs, &fifo, 10).await,
        ["m0", "m1", "m2", "m3", "m4"],
        "order survives, and the duplicate added nothing"
    );
    assert!(
        sqs.receive_message()
            .queue_url(&fifo)
            .send()
            .await
            .unwrap()
            .messages()
            .is_empty(),
        "the group is blocked"
    );
    let dead_letters = sqs.receive_message().queue_url(&dead).send().await.unwrap();
    assert_eq!(dead_letters.messages()[0].body(), Some("poison"));
    assert_eq!(
        crate::common::receive_bodies(&sqs, &turns, 3).await,
        ["g2-m1", "g1-m1"],
        "the groups' turns survive the failover"
    );
    let after_purge = send_once(&sqs, &purged).await;
    assert_ne!(after_purge, before_purge, "the purge forgot the deduplication id");
    let number_after = send_numbered(sqs.clone(), "n3").await;
    assert!(
        number_after > numbers_before[1],
        "sequence numbers grow across a failover: {numbers_before:?} then {number_after}"
    );
}

/// Queues of another region than the instance's own are stored under their
/// region, and a new leader restores them there.
#[tokio::test]
async fn queues_of_other_regions_survive_a_failover() {
    let redis = RedisServer::start();
    let mut nodes: Vec<Server> = ["r1", "r2"]
        .iter()
        .map(|id| Server::start_node(&redis, id))
        .collect();
    let leader = leader_of(&nodes).await;
    let europe = crate::common::client_in_region(&nodes[leader].url, "eu-central-1");
    let home = client_without_retries(&nodes[leader].url);
    let europe_url = create_queue_url(&europe, "same", &[]).await;
    create_queue_url(&home, "same", &[]).await;
    crate::common::send_body(&europe, &europe_url, "kept in europe").await;

    nodes.remove(leader).signal("KILL");
    let leader = leader_of(&nodes).await;
    let europe = crate::common::client_in_region(&nodes[leader].url, "eu-central-1");
    let home = client_without_retries(&nodes[leader].url);
    let found = europe.get_queue_url().queue_name("same").send().await.unwrap();
    let europe_url = found.queue_url().unwrap().to_string();
    assert!(
        europe_url.contains("/queue/eu-central-1/000000000000/same"),
        "{europe_url}"
    );
    let received = crate::common::receive_plain(&europe, &europe_url).await;
    assert_eq!(received[0].body(), Some("kept in europe"));
    let home_url = home.get_queue_url().queue_name("same").send().await.unwrap();
    assert!(
        crate::common::receive_plain(&home, home_url.queue_url().unwrap())
            .await
            .is_empty()
    );
}

/// AWS: a FIFO receive retried with the same ReceiveRequestAttemptId, while
/// its messages are still in flight, returns the same messages with the same
/// receipt handles. That holds across a leader crash: the attempt is stored
/// in Redis with the receive.
#[tokio::test]
async fn a_fifo_receive_retried_with_its_attempt_id_after_a_failover_gets_the_same_messages() {
    let redis = RedisServer::start();
    let mut nodes: Vec<Server> = ["a1", "a2"]
        .iter()
        .map(|id| Server::start_node(&redis, id))
        .collect();
    let leader = leader_of(&nodes).await;
    let sqs = client_without_retries(&nodes[leader].url);
    let url = create_queue_url(
        &sqs,
        "attempts.fifo",
        &[("FifoQueue", "true"), ("ContentBasedDeduplication", "true")],
    )
    .await;
    for body in ["first", "second", "third"] {
        crate::common::send_grouped(&sqs, &url, body, "g").await;
    }
    let receive = |sqs: aws_sdk_sqs::Client| {
        let url = url.clone();
        async move {
            sqs.receive_message()
                .queue_url(&url)
                .max_number_of_messages(2)
                .visibility_timeout(120)
                .receive_request_attempt_id("attempt-1")
                .send()
                .await
                .unwrap()
                .messages()
                .iter()
                .map(|m| {
                    (
                        m.body().unwrap().to_string(),
                        m.receipt_handle().unwrap().to_string(),
                    )
                })
                .collect::<Vec<_>>()
        }
    };
    let first = receive(sqs).await;
    assert_eq!(
        first.iter().map(|(b, _)| b.as_str()).collect::<Vec<_>>(),
        ["first", "second"]
    );

    nodes.remove(leader).signal("KILL");
    let leader = leader_of(&nodes).await;
    let sqs = client_without_retries(&nodes[leader].url);
    assert_eq!(receive(sqs.clone()).await, first, "the same messages and handles");
    for (_, handle) in &first {
        sqs.delete_message()
            .queue_url(&url)
            .receipt_handle(handle)
            .send()
            .await
            .unwrap();
    }
    assert_eq!(
        crate::common::receive_bodies(&sqs, &url, 10).await,
        ["third"],
        "the handles deleted them"
    );
}

/// A message move task outlives its leader: its record is stored with its
/// source queue and every step commits its progress with the messages it
/// moved, so the next leader continues it, and every message arrives once.
#[tokio::test]
async fn a_message_move_task_survives_a_leader_crash_and_moves_every_message_once() {
    let redis = RedisServer::start();
    let mut nodes: Vec<Server> = ["t1", "t2"]
        .iter()
        .map(|id| Server::start_node(&redis, id))
        .collect();
    let leader = leader_of(&nodes).await;
    let sqs = client_without_retries(&nodes[leader].url);
    let dlq = create_queue_url(&sqs, "dlq", &[]).await;
    let dlq_arn = "arn:aws:sqs:us-east-1:000000000000:dlq";
    let policy = format!(r#"{{"deadLetterTargetArn":"{dlq_arn}","maxReceiveCount":1}}"#);
    create_queue_url(&sqs, "work", &[("RedrivePolicy", policy.as_str())]).await;
    let target = create_queue_url(&sqs, "target", &[]).await;
    const MESSAGES: usize = 300;
    let bodies: Vec<String> = (0..MESSAGES).map(|i| format!("m{i}")).collect();
    crate::common::send_batches(&sqs, &dlq, &bodies).await;
    let handle = sqs
        .start_message_move_task()
        .source_arn(dlq_arn)
        .destination_arn("arn:aws:sqs:us-east-1:000000000000:target")
        .max_number_of_messages_per_second(60)
        .send()
        .await
        .unwrap()
        .task_handle
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1_500)).await;

    nodes.remove(leader).signal("KILL");
    let leader = leader_of(&nodes).await;
    let sqs = client_without_retries(&nodes[leader].url);
    let completed = crate::common::wait_for(Duration::from_secs(30), || async {
        let listed = sqs.list_message_move_tasks().source_arn(dlq_arn).send().await;
        listed.is_ok_and(|l| l.results().first().and_then(|t| t.status()) == Some("COMPLETED"))
    })
    .await;
    assert!(completed.is_some(), "the new leader finished the task");
    let listed = sqs
        .list_message_move_tasks()
        .source_arn(dlq_arn)
        .send()
        .await
        .unwrap();
    let task = &listed.results()[0];
    assert_eq!(task.approximate_number_of_messages_moved(), MESSAGES as i64);
    assert_eq!(
        task.approximate_number_of_messages_to_move(),
        Some(MESSAGES as i64)
    );
    let cancel_finished = sqs.cancel_message_move_task().task_handle(&handle).send().await;
    assert_eq!(
        crate::common::error_code(cancel_finished),
        "InvalidParameterValue"
    );

    let mut bodies = Vec::new();
    loop {
        let got = crate::common::receive_bodies(&sqs, &target, 10).await;
        if got.is_empty() {
            break;
        }
        bodies.extend(got);
    }
    let distinct: std::collections::BTreeSet<&String> = bodies.iter().collect();
    assert_eq!(
        (bodies.len(), distinct.len()),
        (MESSAGES, MESSAGES),
        "every message arrived once"
    );
    assert!(
        crate::common::receive_bodies(&sqs, &dlq, 10).await.is_empty(),
        "none left behind"
    );
}

/// A load that Redis is restarted under still reads every message: the
/// leader is frozen mid-load, Redis restarts, and the load goes on. HSCAN's
/// cursor means something only to the Redis process that returned it: a
/// load that went on with it on the new process would skip entries without
/// any error, and the leader would serve without messages Redis holds. (The
/// load's next page fails here, as the connection it was asked on is gone;
/// the loader also throws away any load during which the client
/// reconnected, for a restart that falls between two pages.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_load_that_redis_restarts_under_still_reads_every_message() {
    const MESSAGES: usize = 60_000;
    let mut redis = RedisServer::start_with(&["--appendonly", "yes", "--appendfsync", "always"]);
    // Default lock timings: the restart must not end the loading leader's term.
    let start =
        |redis: &RedisServer| Server::start_with(&["--redis-url", &redis.url(), "--node-id", "loader"]);
    let filler = start(&redis);
    single_leader(std::slice::from_ref(&filler), Duration::from_secs(10)).await;
    let sqs = client_without_retries(&filler.url);
    let url = create_queue_url(&sqs, "backlog", &[]).await;
    let batches: Vec<_> = (0..8)
        .map(|task| {
            let (sqs, url) = (sqs.clone(), url.clone());
            tokio::spawn(async move {
                for batch in (task..MESSAGES / 10).step_by(8) {
                    let entries = (0..10).map(|i| {
                        aws_sdk_sqs::types::SendMessageBatchRequestEntry::builder()
                            .id(i.to_string())
                            .message_body(format!("m{}", batch * 10 + i))
                            .build()
                            .unwrap()
                    });
                    sqs.send_message_batch()
                        .queue_url(&url)
                        .set_entries(Some(entries.collect()))
                        .send()
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for batch in batches {
        batch.await.unwrap();
    }
    let stored = || -> usize {
        crate::common::redis_cli(redis.port, &["HLEN", "{ssq}:q:backlog:bodies"])
            .trim()
            .parse()
            .unwrap()
    };
    assert_eq!(stored(), MESSAGES);
    drop(filler);

    let mut mismatches = Vec::new();
    for round in 0..4u64 {
        // Same node id: it takes over its own lease at once, and loads. It
        // is frozen mid-load (while it decodes a page, most likely), Redis
        // is restarted and has read its data again, and then it goes on.
        let loader = start(&redis);
        tokio::time::sleep(Duration::from_millis(20 + 40 * round)).await;
        loader.signal("STOP");
        redis.kill();
        redis.restart();
        let up = crate::common::wait_for(Duration::from_secs(20), || async {
            crate::common::redis_cli(redis.port, &["PING"]).trim() == "PONG"
        })
        .await;
        assert!(up.is_some(), "Redis has loaded its data again");
        loader.signal("CONT");
        assert!(
            crate::common::wait_for(Duration::from_secs(60), || loader.is_ready())
                .await
                .is_some(),
            "the leader serves after the restart"
        );
        let sqs = client_without_retries(&loader.url);
        let out = sqs
            .get_queue_attributes()
            .queue_url(&url)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .send()
            .await
            .unwrap();
        let held: usize = out.attributes().unwrap()[&QueueAttributeName::ApproximateNumberOfMessages]
            .parse()
            .unwrap();
        if held != MESSAGES {
            mismatches.push(format!(
                "round {round}: the leader holds {held} of {MESSAGES} stored messages"
            ));
        }
        drop(loader);
    }
    assert!(mismatches.is_empty(), "{mismatches:?}");
}

/// The control API's reset is a write like any other: stored in Redis
/// before its answer, so that the next leader starts from nothing too.
#[tokio::test]
async fn a_reset_through_the_control_api_is_durable() {
    let redis = RedisServer::start();
    let mut first = Server::start_node_with(&redis.url(), "r1", &["--control-api"]);
    single_leader(std::slice::from_ref(&first), Duration::from_secs(8)).await;
    let sqs = client_without_retries(&first.url);
    let url = create_queue_url(&sqs, "orders", &[]).await;
    sqs.send_message()
        .queue_url(&url)
        .message_body("before")
        .send()
        .await
        .unwrap();
    let answer = reqwest::Client::new()
        .post(format!("{}/_ssq/reset", first.url))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(
        answer.text().await.unwrap(),
        r#"{"queues_deleted":1,"topics_deleted":0}"#
    );
    first.signal("KILL");
    assert!(first.wait_exit(Duration::from_secs(5)));

    let second = Server::start_node_with(&redis.url(), "r2", &["--control-api"]);
    single_leader(std::slice::from_ref(&second), Duration::from_secs(15)).await;
    let listed = client_without_retries(&second.url)
        .list_queues()
        .send()
        .await
        .unwrap();
    assert!(listed.queue_urls().is_empty(), "the reset was stored: {listed:?}");
}
