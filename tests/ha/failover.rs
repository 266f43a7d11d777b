//! Active/passive with real processes: one redis-server per test, several
//! ssq instances, and failures made with SIGKILL, SIGTERM and SIGSTOP.
//! Lock timings are the short ones of `crate::common::FAST_LOCK`.

use std::time::Duration;

use crate::common::{RedisServer, Server, single_leader, wait_for};

const TTL: Duration = Duration::from_secs(2);
const RENEW: Duration = Duration::from_millis(250);
const STEP_DOWN: Duration = Duration::from_millis(1_200);
const RETRY: Duration = Duration::from_millis(200);

fn three_nodes(redis: &RedisServer) -> Vec<Server> {
    ["n1", "n2", "n3"]
        .iter()
        .map(|id| Server::start_node(redis, id))
        .collect()
}

#[tokio::test]
async fn of_three_instances_exactly_one_serves() {
    let redis = RedisServer::start();
    let nodes = three_nodes(&redis);
    let leader = single_leader(&nodes, Duration::from_secs(5)).await;
    let mut gauges = 0;
    for (i, node) in nodes.iter().enumerate() {
        gauges += node.leader_gauge().await;
        let status = node.status().await;
        if i == leader {
            assert_eq!(node.queue_call_status().await, Some(200));
            assert_eq!(status["role"], "leader");
        } else {
            assert_eq!(
                node.queue_call_status().await,
                Some(503),
                "a passive refuses queue calls"
            );
            assert_eq!(node.get("/ready").await.unwrap().0, 503);
            assert_eq!(node.get("/health").await.unwrap().0, 200, "a passive is healthy");
            assert_eq!(status["role"], "passive");
            assert_eq!(status["leader"]["url"], nodes[leader].url.as_str());
        }
    }
    assert_eq!(gauges, 1, "the ssq_leader gauges sum to 1");
}

#[tokio::test]
async fn a_passive_names_the_leader_and_asks_for_a_retry() {
    let redis = RedisServer::start();
    let nodes = three_nodes(&redis);
    let leader = single_leader(&nodes, Duration::from_secs(5)).await;
    let passive = &nodes[(leader + 1) % 3];
    let response = reqwest::Client::new()
        .post(&passive.url)
        .header("x-amz-target", "AmazonSQS.CreateQueue")
        .header("content-type", "application/x-amz-json-1.0")
        .body(r#"{"QueueName":"q"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(response.headers()["retry-after"], "1");
    assert_eq!(response.headers()["x-ssq-leader"], nodes[leader].url.as_str());
    assert_eq!(
        response.headers()["x-amzn-query-error"],
        "ServiceUnavailable;Receiver"
    );
    let body: serde_json::Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
    assert_eq!(body["__type"], "com.amazonaws.sqs#ServiceUnavailable");
}

#[tokio::test]
async fn a_killed_leader_is_replaced_within_ttl_plus_retry() {
    let redis = RedisServer::start();
    let mut nodes = three_nodes(&redis);
    let leader = single_leader(&nodes, Duration::from_secs(5)).await;
    let killed = nodes.remove(leader);
    killed.signal("KILL");
    let started = std::time::Instant::now();
    single_leader(&nodes, TTL + RETRY + Duration::from_secs(1)).await;
    let took = started.elapsed();
    assert!(took <= TTL + RETRY + Duration::from_secs(1), "took {took:?}");
}

#[tokio::test]
async fn a_leader_stopped_gracefully_hands_over_within_a_second() {
    let redis = RedisServer::start();
    let mut nodes = three_nodes(&redis);
    let leader = single_leader(&nodes, Duration::from_secs(5)).await;
    let mut stopping = nodes.remove(leader);
    stopping.signal("TERM");
    let took = wait_for(Duration::from_secs(1), || async {
        let mut ready = 0;
        for node in &nodes {
            ready += usize::from(node.is_ready().await);
        }
        ready == 1
    })
    .await;
    assert!(took.is_some(), "no passive took over within 1 s of SIGTERM");
    let exit = stopping.child.wait().unwrap();
    assert!(exit.success(), "graceful shutdown exits 0, got {exit}");
}

#[tokio::test]
async fn a_frozen_leader_is_deposed_and_never_serves_again() {
    let redis = RedisServer::start();
    let nodes = three_nodes(&redis);
    let leader = single_leader(&nodes, Duration::from_secs(5)).await;
    let old_epoch = nodes[leader].status().await["epoch"].as_u64().unwrap();
    nodes[leader].signal("STOP");
    tokio::time::sleep(TTL + Duration::from_millis(500)).await;
    let others: Vec<&Server> = nodes
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != leader)
        .map(|(_, n)| n)
        .collect();
    let took = wait_for(Duration::from_secs(3), || async {
        let mut ready = 0;
        for node in &others {
            ready += usize::from(node.is_ready().await);
        }
        ready == 1
    })
    .await;
    assert!(
        took.is_some(),
        "another instance took over while the leader was frozen"
    );

    nodes[leader].signal("CONT");
    let refused = wait_for(RENEW, || async {
        nodes[leader].queue_call_status().await == Some(503)
    })
    .await;
    assert!(
        refused.is_some(),
        "the old leader refuses queue calls within one renew interval of SIGCONT"
    );
    // And it never serves again with its old lease: watch it for a while.
    for _ in 0..40 {
        assert_eq!(nodes[leader].queue_call_status().await, Some(503));
        assert!(!nodes[leader].is_ready().await);
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let status = nodes[leader].status().await;
    assert_eq!(status["role"], "passive");
    assert!(
        status["epoch"].as_u64().unwrap() > old_epoch,
        "it sees the new leader's epoch: {status}"
    );
}

#[tokio::test]
async fn without_redis_the_leader_steps_down_and_comes_back_after() {
    let mut redis = RedisServer::start();
    let nodes = three_nodes(&redis);
    let leader = single_leader(&nodes, Duration::from_secs(5)).await;
    redis.kill();
    let started = std::time::Instant::now();
    let stepped_down = wait_for(STEP_DOWN + Duration::from_secs(1), || async {
        !nodes[leader].is_ready().await
    })
    .await;
    assert!(
        stepped_down.is_some(),
        "the leader still serves {:?} after Redis died",
        started.elapsed()
    );
    // The deadline counts from the last good renewal sent, before the kill.
    assert!(
        started.elapsed() <= STEP_DOWN + Duration::from_millis(300),
        "took {:?}",
        started.elapsed()
    );
    for node in &nodes {
        assert!(!node.is_ready().await, "no instance serves without Redis");
        assert_eq!(
            node.get("/health").await.unwrap().0,
            200,
            "every instance stays alive"
        );
    }
    redis.restart();
    single_leader(&nodes, Duration::from_secs(6)).await;
}
