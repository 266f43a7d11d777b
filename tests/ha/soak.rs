//! A soak across forced failovers: a producer and a consumer run without
//! pause while the leader is killed three times (each replaced by a fresh
//! instance). At the end every acknowledged message was delivered at least
//! once, and no message whose delete was acknowledged came back.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{
    Endpoints, RedisServer, Server, client_without_retries, delete_received, poll_once, queue_url,
    single_leader,
};
use aws_sdk_sqs::types::QueueAttributeName;

#[derive(Default)]
struct Ledger {
    acknowledged: BTreeSet<String>,
    delivered: BTreeSet<String>,
    deleted: BTreeSet<String>,
    reappeared: Vec<String>,
}

#[tokio::test]
async fn no_acknowledged_message_is_lost_across_three_failovers() {
    let redis = RedisServer::start();
    let mut nodes: Vec<Server> = (0..3)
        .map(|i| Server::start_node(&redis, &format!("s{i}")))
        .collect();
    let endpoints = Endpoints::default();
    endpoints.set(nodes.iter().map(|n| n.url.clone()).collect());
    let leader = single_leader(&nodes, Duration::from_secs(8)).await;
    let url = queue_url("soak");
    client_without_retries(&nodes[leader].url)
        .create_queue()
        .queue_name("soak")
        .attributes(QueueAttributeName::VisibilityTimeout, "2")
        .send()
        .await
        .unwrap();

    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let producing = Arc::new(AtomicBool::new(true));
    let consuming = Arc::new(AtomicBool::new(true));

    let producer = {
        let (endpoints, ledger, producing, url) =
            (endpoints.clone(), ledger.clone(), producing.clone(), url.clone());
        tokio::spawn(async move {
            let mut i = 0;
            while producing.load(Ordering::Relaxed) {
                let body = format!("m{i}");
                for sqs in endpoints.clients() {
                    if sqs
                        .send_message()
                        .queue_url(&url)
                        .message_body(&body)
                        .send()
                        .await
                        .is_ok()
                    {
                        ledger.lock().unwrap().acknowledged.insert(body.clone());
                        break;
                    }
                }
                i += 1;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    };
    let consumer = {
        let (endpoints, ledger, consuming, url) =
            (endpoints.clone(), ledger.clone(), consuming.clone(), url.clone());
        tokio::spawn(async move {
            while consuming.load(Ordering::Relaxed) {
                for sqs in endpoints.clients() {
                    let Some(messages) = poll_once(&sqs, &url).await else {
                        continue;
                    };
                    for message in &messages {
                        let body = message.body().unwrap().to_string();
                        {
                            let mut ledger = ledger.lock().unwrap();
                            if ledger.deleted.contains(&body) {
                                ledger.reappeared.push(body.clone());
                            }
                            ledger.delivered.insert(body.clone());
                        }
                        if delete_received(&sqs, &url, message).await {
                            ledger.lock().unwrap().deleted.insert(body);
                        }
                    }
                    break;
                }
            }
        })
    };

    for round in 0..3 {
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        let leader = single_leader(&nodes, Duration::from_secs(8)).await;
        nodes.remove(leader).signal("KILL");
        nodes.push(Server::start_node(&redis, &format!("s{}", round + 3)));
        endpoints.set(nodes.iter().map(|n| n.url.clone()).collect());
        single_leader(&nodes, Duration::from_secs(8)).await;
    }
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    producing.store(false, Ordering::Relaxed);
    producer.await.unwrap();

    // Let the consumer catch up: in-flight messages of killed leaders come
    // back after their 2 s visibility timeout.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let missing = {
            let ledger = ledger.lock().unwrap();
            ledger.acknowledged.difference(&ledger.delivered).count()
        };
        if missing == 0 || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    consuming.store(false, Ordering::Relaxed);
    consumer.await.unwrap();

    let ledger = ledger.lock().unwrap();
    let missing: Vec<_> = ledger.acknowledged.difference(&ledger.delivered).collect();
    assert!(
        ledger.acknowledged.len() > 100,
        "the producer made progress: {}",
        ledger.acknowledged.len()
    );
    assert!(
        missing.is_empty(),
        "{} acknowledged messages never delivered: {missing:?}",
        missing.len()
    );
    assert!(
        ledger.reappeared.is_empty(),
        "deleted messages came back: {:?}",
        ledger.reappeared
    );
    println!(
        "soak: {} acknowledged, {} delivered, {} deletes acknowledged",
        ledger.acknowledged.len(),
        ledger.delivered.len(),
        ledger.deleted.len()
    );
}
