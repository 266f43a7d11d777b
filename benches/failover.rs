//! Failover time with the default lock timings (TTL 5 s, renew 1 s,
//! step-down 3 s, retry 500 ms): from the leader's SIGKILL or SIGTERM to the
//! moment another instance answers /ready with 200. Three instances, one
//! private redis-server; several runs, median reported.
//!
//! A last line kills a leader holding 100,000 messages, 10,000 of them in
//! flight: the new leader must load them all before it serves.
//!
//! Run: `cargo bench --bench failover` (about a minute).

use ssq_test_support as common;

use std::time::{Duration, Instant};

use common::{RedisServer, Server, single_leader};

const RUNS: usize = 5;

/// Sends `count` messages through `url` in batches of 10 from 16 tasks, then
/// receives `in_flight` of them (leaving them in flight).
async fn load(url: &str, count: usize, in_flight: usize) {
    let sqs = common::client_for(url);
    sqs.create_queue().queue_name("loaded").send().await.unwrap();
    let queue = common::queue_url("loaded");
    let mut tasks = Vec::new();
    for t in 0..16 {
        let (sqs, queue) = (sqs.clone(), queue.clone());
        tasks.push(tokio::spawn(async move {
            for b in (t * 10..count).step_by(160) {
                let mut request = sqs.send_message_batch().queue_url(&queue);
                for i in b..(b + 10).min(count) {
                    request = request.entries(
                        aws_sdk_sqs::types::SendMessageBatchRequestEntry::builder()
                            .id(format!("e{i}"))
                            .message_body(format!("message {i}"))
                            .build()
                            .unwrap(),
                    );
                }
                request.send().await.unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let mut received = 0;
    while received < in_flight {
        let out = sqs
            .receive_message()
            .queue_url(&queue)
            .max_number_of_messages(10)
            .visibility_timeout(600)
            .send()
            .await
            .unwrap();
        received += out.messages().len();
    }
}

async fn failover_time(signal: &str) -> Duration {
    failover_time_with(signal, 0, 0).await
}

async fn failover_time_with(signal: &str, messages: usize, in_flight: usize) -> Duration {
    let redis = RedisServer::start();
    let url = redis.url();
    let mut nodes: Vec<Server> = ["a", "b", "c"]
        .iter()
        .map(|id| Server::start_with(&["--redis-url", &url, "--node-id", id]))
        .collect();
    let leader = single_leader(&nodes, Duration::from_secs(10)).await;
    if messages > 0 {
        load(&nodes[leader].url, messages, in_flight).await;
    }
    // Let the passives settle into their retry rhythm.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let old = nodes.remove(leader);
    let started = Instant::now();
    old.signal(signal);
    single_leader(&nodes, Duration::from_secs(30)).await;
    started.elapsed()
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

#[tokio::main]
async fn main() {
    for signal in ["KILL", "TERM"] {
        let mut samples = Vec::new();
        for _ in 0..RUNS {
            samples.push(failover_time(signal).await);
        }
        let shown: Vec<String> = samples
            .iter()
            .map(|d| format!("{:.0} ms", d.as_secs_f64() * 1e3))
            .collect();
        println!(
            "SIG{signal:<4}: median {:>6.0} ms over {RUNS} runs ({})",
            median(samples).as_secs_f64() * 1e3,
            shown.join(", ")
        );
    }
    let mut samples = Vec::new();
    for _ in 0..3 {
        samples.push(failover_time_with("KILL", 100_000, 10_000).await);
    }
    println!(
        "SIGKILL with 100,000 messages (10,000 in flight): median {:.0} ms over 3 runs",
        median(samples).as_secs_f64() * 1e3
    );
}
