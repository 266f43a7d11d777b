//! How long a new leader takes to load 1,000,000 small messages from Redis
//! and start serving, and how much memory it then holds.
//!
//! Fills a private redis-server through an in-process node (large group
//! commits), stops it (handing the lock over), starts a release `ssq` process
//! and times it from spawn to `/ready` = 200.
//!
//! Run: `cargo bench --bench restore` (about a minute; needs ~2 GiB).

use ssq_test_support as common;

use std::time::{Duration, Instant};

use common::{InProcessNode, RedisServer, Server, new_message};

const MESSAGES: usize = 1_000_000;
const BODY: usize = 100;

#[tokio::main]
async fn main() {
    let redis = RedisServer::start();
    let leader = InProcessNode::start_with_queue(&redis, "restore").await;
    let filling = Instant::now();
    let body = "x".repeat(BODY);
    for chunk in 0..MESSAGES / 10_000 {
        let batch = (0..10_000)
            .map(|i| new_message(&format!("{chunk:04}-{i:05}-{body}")))
            .collect();
        for result in leader.service.send("restore", batch).await.unwrap() {
            result.unwrap();
        }
    }
    println!(
        "filled {MESSAGES} messages of ~{BODY} B in {:.1} s",
        filling.elapsed().as_secs_f64()
    );
    leader.stop().await;

    let url = redis.url();
    let started = Instant::now();
    let node = Server::start_with(&["--redis-url", &url, "--node-id", "restorer"]);
    let mut ready = false;
    while started.elapsed() < Duration::from_secs(120) {
        if node.is_ready().await {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let took = started.elapsed();
    assert!(ready, "ssq did not become ready within 120 s");
    let attributes = reqwest::Client::new()
        .post(&node.url)
        .header("x-amz-target", "AmazonSQS.GetQueueAttributes")
        .header("content-type", "application/x-amz-json-1.0")
        .body(r#"{"QueueUrl":"/000000000000/restore","AttributeNames":["ApproximateNumberOfMessages"]}"#)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        attributes.contains(&format!("\"{MESSAGES}\"")),
        "all messages loaded: {attributes}"
    );
    let rss = node.rss_kib();
    println!(
        "restore of {MESSAGES} messages: {:.2} s from process start to /ready; RSS then {:.0} MiB ({:.0} B per message)",
        took.as_secs_f64(),
        rss as f64 / 1024.0,
        rss as f64 * 1024.0 / MESSAGES as f64
    );
}
