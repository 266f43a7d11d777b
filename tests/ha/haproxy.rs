//! End to end through HAProxy with docker/haproxy.cfg (only the addresses
//! replaced): a client sends and consumes without pause while the leader is
//! killed (SIGKILL) and later the next one is stopped gracefully (SIGTERM).
//! The client must see only short unavailability, and lose nothing it was
//! told was sent. Needs haproxy (`make test` installs it: tools/test-deps.sh).

use std::collections::BTreeSet;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{
    RedisServer, Server, client_without_retries, delete_received, free_port, poll_once, queue_url,
    single_leader,
};
use aws_sdk_sqs::types::QueueAttributeName;

struct Haproxy {
    child: Child,
    url: String,
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_haproxy(nodes: &[Server]) -> Haproxy {
    let port = free_port();
    let mut config =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docker/haproxy.cfg")).unwrap();
    config = config.replace("bind :9324", &format!("bind 127.0.0.1:{port}"));
    for (i, node) in nodes.iter().enumerate() {
        config = config.replace(&format!("ssq{}:9324", i + 1), &format!("127.0.0.1:{}", node.port));
    }
    let path = std::env::temp_dir().join(format!("ssq-haproxy-{}-{port}.cfg", std::process::id()));
    std::fs::write(&path, config).unwrap();
    let child = Command::new("haproxy")
        .arg("-db")
        .arg("-f")
        .arg(&path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect(
            "haproxy is installed: apt-get install haproxy (`make test` installs it: tools/test-deps.sh)",
        );
    Haproxy {
        child,
        url: format!("http://127.0.0.1:{port}"),
    }
}

/// The index of the instance that answers /ready, if any does.
async fn leader_index(nodes: &[Server]) -> Option<usize> {
    for (i, node) in nodes.iter().enumerate() {
        if node.is_ready().await {
            return Some(i);
        }
    }
    None
}

#[derive(Default)]
struct Ledger {
    acknowledged: BTreeSet<String>,
    delivered: BTreeSet<String>,
    send_times: Vec<Instant>,
}

#[tokio::test]
async fn clients_behind_haproxy_ride_through_a_crash_and_a_restart() {
    let redis = RedisServer::start();
    let mut nodes: Vec<Server> = (1..=3)
        .map(|i| Server::start_node(&redis, &format!("h{i}")))
        .collect();
    single_leader(&nodes, Duration::from_secs(8)).await;
    let haproxy = start_haproxy(&nodes);
    let sqs = client_without_retries(&haproxy.url);
    let started = Instant::now();
    while sqs.list_queues().send().await.is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "HAProxy did not find the leader"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    sqs.create_queue()
        .queue_name("ha")
        .attributes(QueueAttributeName::VisibilityTimeout, "2")
        .send()
        .await
        .unwrap();
    let url = queue_url("ha");

    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let (producing, consuming) = (Arc::new(AtomicBool::new(true)), Arc::new(AtomicBool::new(true)));
    let producer = {
        let (sqs, url, ledger, producing) = (sqs.clone(), url.clone(), ledger.clone(), producing.clone());
        tokio::spawn(async move {
            let mut i = 0;
            while producing.load(Ordering::Relaxed) {
                let body = format!("m{i}");
                if sqs
                    .send_message()
                    .queue_url(&url)
                    .message_body(&body)
                    .send()
                    .await
                    .is_ok()
                {
                    let mut ledger = ledger.lock().unwrap();
                    ledger.acknowledged.insert(body);
                    ledger.send_times.push(Instant::now());
                    i += 1;
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        })
    };
    let consumer = {
        let (sqs, url, ledger, consuming) = (sqs.clone(), url.clone(), ledger.clone(), consuming.clone());
        tokio::spawn(async move {
            while consuming.load(Ordering::Relaxed) {
                let Some(messages) = poll_once(&sqs, &url).await else {
                    continue;
                };
                for message in &messages {
                    ledger
                        .lock()
                        .unwrap()
                        .delivered
                        .insert(message.body().unwrap().to_string());
                    delete_received(&sqs, &url, message).await;
                }
            }
        })
    };

    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let crashed = leader_index(&nodes).await.expect("a leader");
    nodes.remove(crashed).signal("KILL");
    tokio::time::sleep(Duration::from_millis(4_000)).await;
    let stopped = leader_index(&nodes).await.expect("a new leader");
    nodes[stopped].signal("TERM");
    tokio::time::sleep(Duration::from_millis(3_000)).await;
    producing.store(false, Ordering::Relaxed);
    producer.await.unwrap();

    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline {
        let done = {
            let ledger = ledger.lock().unwrap();
            ledger.acknowledged.is_subset(&ledger.delivered)
        };
        if done {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    consuming.store(false, Ordering::Relaxed);
    consumer.await.unwrap();

    let ledger = ledger.lock().unwrap();
    let lost: Vec<_> = ledger.acknowledged.difference(&ledger.delivered).collect();
    assert!(lost.is_empty(), "acknowledged but never delivered: {lost:?}");
    let longest_gap = ledger
        .send_times
        .windows(2)
        .map(|w| w[1] - w[0])
        .max()
        .unwrap_or_default();
    println!(
        "haproxy: {} sends acknowledged; longest gap between acknowledged sends {:?} (lock TTL 2 s, retry 200 ms)",
        ledger.acknowledged.len(),
        longest_gap
    );
    assert!(ledger.acknowledged.len() > 200, "the client made progress");
    assert!(
        longest_gap < Duration::from_millis(4_500),
        "unavailable for {longest_gap:?}"
    );
}
