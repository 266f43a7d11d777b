//! Redis's own failover through Sentinel: ssq reaches Redis with a
//! redis-sentinel:// URL; when the Redis primary dies and Sentinel promotes
//! its replica, an ssq instance leads again on the new primary and every
//! message acknowledged (and replicated) before is still there. With
//! `--redis-min-replicas 1`, that holds under load through repeated kills of
//! whichever Redis is primary, with nothing waited for by hand.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::{
    RedisServer, Server, client_for, free_port, is_synced_replica, queue_url, single_leader,
};

struct Sentinel {
    child: Child,
    port: u16,
    dir: std::path::PathBuf,
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn start_sentinel(primary_port: u16, quorum: u32) -> Sentinel {
    let port = free_port();
    let dir = std::env::temp_dir().join(format!("ssq-test-sentinel-{}-{port}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("sentinel.conf");
    std::fs::write(
        &config,
        format!(
            "port {port}\nbind 127.0.0.1\ndir {}\nsentinel monitor ssq-redis 127.0.0.1 {primary_port} {quorum}\n\
             sentinel down-after-milliseconds ssq-redis 1000\nsentinel failover-timeout ssq-redis 5000\n",
            dir.display()
        ),
    )
    .unwrap();
    let child = Command::new("redis-server")
        .arg(&config)
        .arg("--sentinel")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("redis-server runs as a sentinel");
    Sentinel { child, port, dir }
}

#[tokio::test]
async fn a_sentinel_failover_of_redis_keeps_acknowledged_messages() {
    let mut primary = RedisServer::start();
    // The replica's first full sync forks the primary; start once it is done.
    let _replica = primary.start_replica().await;
    let sentinel = start_sentinel(primary.port, 1);
    tokio::time::sleep(Duration::from_millis(500)).await;

    let url = format!(
        "redis-sentinel://127.0.0.1:{}?sentinelServiceName=ssq-redis",
        sentinel.port
    );
    let nodes: Vec<Server> = ["s1", "s2"]
        .iter()
        .map(|id| Server::start_node_with(&url, id, &[]))
        .collect();
    single_leader(&nodes, Duration::from_secs(10)).await;
    let clients: Vec<_> = nodes.iter().map(|n| client_for(&n.url)).collect();
    // Through whichever instance leads, as behind a load balancer.
    let mut created = false;
    for _ in 0..50 {
        for sqs in &clients {
            created = created || sqs.create_queue().queue_name("replicated").send().await.is_ok();
        }
        if created {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(created);
    let queue = queue_url("replicated");
    for i in 0..20 {
        let mut sent = false;
        for _ in 0..50 {
            for sqs in &clients {
                if !sent
                    && sqs
                        .send_message()
                        .queue_url(&queue)
                        .message_body(format!("m{i}"))
                        .send()
                        .await
                        .is_ok()
                {
                    sent = true;
                }
            }
            if sent {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(sent, "m{i} was acknowledged");
    }
    // Replication is asynchronous: give the replica a moment to catch up, as
    // an operator accepts when choosing Sentinel (docs/operations.md).
    tokio::time::sleep(Duration::from_millis(500)).await;

    primary.kill();
    single_leader(&nodes, Duration::from_secs(20)).await;
    // Drain through whichever instance serves: with the test's tight
    // timeouts, leadership may move once more while Redis settles.
    let clients: Vec<_> = nodes
        .iter()
        .map(|n| crate::common::client_without_retries(&n.url))
        .collect();
    let mut bodies = std::collections::BTreeSet::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while bodies.len() < 20 && std::time::Instant::now() < deadline {
        for sqs in &clients {
            if let Ok(out) = sqs
                .receive_message()
                .queue_url(&queue)
                .max_number_of_messages(10)
                .send()
                .await
            {
                for message in out.messages() {
                    bodies.insert(message.body().unwrap().to_string());
                    let _ = sqs
                        .delete_message()
                        .queue_url(&queue)
                        .receipt_handle(message.receipt_handle().unwrap())
                        .send()
                        .await;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        bodies.len(),
        20,
        "every acknowledged message survived the Redis failover: {bodies:?}"
    );
}

/// The port of the Redis the sentinel on `sentinel` names as primary.
fn primary_port(sentinel: u16) -> Option<u16> {
    let answer = crate::common::redis_cli(sentinel, &["sentinel", "get-master-addr-by-name", "ssq-redis"]);
    answer.lines().nth(1)?.trim().parse().ok()
}

/// What the clients were told succeeded.
#[derive(Default)]
struct Acknowledged {
    sent: std::collections::BTreeSet<String>,
    received: std::collections::BTreeSet<String>,
    deleted: std::collections::BTreeSet<String>,
}

/// What a run of [`primary_kills`] ended with.
struct Outcome {
    sent: usize,
    received: usize,
    deleted: usize,
    /// Acknowledged sends neither received during the run nor left at its end.
    lost: Vec<String>,
    /// Messages whose delete was acknowledged, found again at the end.
    undone: Vec<String>,
    /// /ready polls (every 50 ms) that found two instances serving.
    two_serving: usize,
}

/// With `--redis-min-replicas 2`, every replica of the two confirming each
/// commit, three kills of the Redis primary under load lose nothing and undo
/// no delete, and two instances never serve at once. With 1 of 2, Sentinel
/// may promote the replica that had not yet received the last confirmed
/// writes (it chooses by replication offsets it read up to 10 s before);
/// this test once lost a message that way (docs/operations.md).
#[tokio::test]
async fn with_min_replicas_repeated_primary_kills_lose_no_acknowledged_message() {
    let outcome = primary_kills("2").await;
    assert!(outcome.sent > 100, "the load ran");
    assert!(
        outcome.lost.is_empty(),
        "acknowledged messages lost: {:?}",
        outcome.lost
    );
    assert!(
        outcome.undone.is_empty(),
        "acknowledged deletes undone: {:?}",
        outcome.undone
    );
    assert_eq!(outcome.two_serving, 0, "two instances served at once");
}

/// The same without the option: a measurement of what asynchronous
/// replication loses (docs/operations.md), run on demand:
/// `cargo test --test ha sentinel:: -- --ignored --nocapture`.
#[tokio::test]
#[ignore = "a measurement for docs/operations.md, not a pass/fail check of a guarantee"]
async fn without_min_replicas_primary_kills_may_lose_what_was_not_yet_replicated() {
    let outcome = primary_kills("0").await;
    assert!(outcome.sent > 100, "the load ran");
    assert_eq!(outcome.two_serving, 0, "two instances served at once");
}

/// A Sentinel group on loopback (a primary and two replicas with AOF, three
/// sentinels with a quorum of two) and three ssq instances with
/// `--redis-min-replicas <min_replicas>`. Under a steady load of sends,
/// receives and deletes, whichever Redis is primary is killed with SIGKILL
/// three times; each time Sentinel promotes a replica and the killed one
/// rejoins. Every acknowledged operation is recorded, and /ready is polled
/// on every instance every 50 ms.
async fn primary_kills(min_replicas: &str) -> Outcome {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    let aof = ["--appendonly", "yes", "--appendfsync", "everysec"];
    let mut redises = vec![RedisServer::start_with(&aof)];
    let first_primary = redises[0].port.to_string();
    for _ in 0..2 {
        let mut args = aof.to_vec();
        args.extend(["--replicaof", "127.0.0.1", first_primary.as_str()]);
        let replica = RedisServer::start_with(&args);
        let synced = crate::common::wait_for(Duration::from_secs(10), || async {
            is_synced_replica(replica.port)
        })
        .await;
        assert!(synced.is_some(), "the replica synced");
        redises.push(replica);
    }
    let sentinels: Vec<Sentinel> = (0..3).map(|_| start_sentinel(redises[0].port, 2)).collect();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let url = format!(
        "redis-sentinel://127.0.0.1:{}?sentinelServiceName=ssq-redis",
        sentinels[0].port
    );
    let nodes: Arc<Vec<Server>> = Arc::new(
        ["k1", "k2", "k3"]
            .iter()
            .map(|id| {
                let replicas = [
                    "--redis-min-replicas",
                    min_replicas,
                    "--redis-replica-timeout",
                    "150ms",
                ];
                Server::start_node_with(&url, id, &replicas)
            })
            .collect(),
    );
    let leader = single_leader(&nodes, Duration::from_secs(15)).await;
    let clients: Arc<Vec<_>> = Arc::new(
        nodes
            .iter()
            .map(|n| crate::common::client_without_retries(&n.url))
            .collect(),
    );
    clients[leader]
        .create_queue()
        .queue_name("kept")
        .send()
        .await
        .unwrap();
    let queue = queue_url("kept");

    let acknowledged = Arc::new(Mutex::new(Acknowledged::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let two_serving = Arc::new(AtomicUsize::new(0));
    let producer = tokio::spawn({
        let (clients, acknowledged, stop, queue) =
            (clients.clone(), acknowledged.clone(), stop.clone(), queue.clone());
        async move {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let body = format!("m{i}");
                i += 1;
                for sqs in clients.iter() {
                    if sqs
                        .send_message()
                        .queue_url(&queue)
                        .message_body(&body)
                        .send()
                        .await
                        .is_ok()
                    {
                        acknowledged.lock().unwrap().sent.insert(body.clone());
                        break;
                    }
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    });
    let consumer = tokio::spawn({
        let (clients, acknowledged, stop, queue) =
            (clients.clone(), acknowledged.clone(), stop.clone(), queue.clone());
        async move {
            while !stop.load(Ordering::Relaxed) {
                for sqs in clients.iter() {
                    let Ok(out) = sqs
                        .receive_message()
                        .queue_url(&queue)
                        .max_number_of_messages(10)
                        .visibility_timeout(10)
                        .send()
                        .await
                    else {
                        continue;
                    };
                    for message in out.messages() {
                        let body = message.body().unwrap().to_string();
                        acknowledged.lock().unwrap().received.insert(body.clone());
                        for deleter in clients.iter() {
                            let handle = message.receipt_handle().unwrap();
                            if deleter
                                .delete_message()
                                .queue_url(&queue)
                                .receipt_handle(handle)
                                .send()
                                .await
                                .is_ok()
                            {
                                acknowledged.lock().unwrap().deleted.insert(body.clone());
                                break;
                            }
                        }
                    }
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    });
    let watcher = tokio::spawn({
        let (nodes, stop, two_serving) = (nodes.clone(), stop.clone(), two_serving.clone());
        async move {
            while !stop.load(Ordering::Relaxed) {
                let mut serving = 0;
                for node in nodes.iter() {
                    serving += usize::from(node.is_ready().await);
                }
                if serving > 1 {
                    two_serving.fetch_add(1, Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    });

    for round in 0..3 {
        tokio::time::sleep(Duration::from_secs(3)).await;
        let old = primary_port(sentinels[0].port).expect("the sentinel names a primary");
        let killed = redises
            .iter()
            .position(|r| r.port == old)
            .expect("the primary is one of ours");
        redises[killed].kill();
        let promoted = crate::common::wait_for(Duration::from_secs(30), || async {
            primary_port(sentinels[0].port).is_some_and(|now| now != old)
        })
        .await;
        assert!(promoted.is_some(), "round {round}: Sentinel promoted a replica");
        redises[killed].restart();
        let port = redises[killed].port;
        let rejoined =
            crate::common::wait_for(Duration::from_secs(30), || async { is_synced_replica(port) }).await;
        assert!(
            rejoined.is_some(),
            "round {round}: the killed Redis rejoined as a replica"
        );
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, Ordering::Relaxed);
    for task in [producer, consumer, watcher] {
        task.await.unwrap();
    }

    // Drain whatever is left, through whichever instance serves; messages
    // whose delete failed come back after their 10 s visibility timeout.
    let mut drained = std::collections::BTreeSet::new();
    let mut empty_since = None;
    let deadline = std::time::Instant::now() + Duration::from_secs(40);
    while std::time::Instant::now() < deadline {
        let mut got = 0;
        for sqs in clients.iter() {
            if let Ok(out) = sqs
                .receive_message()
                .queue_url(&queue)
                .max_number_of_messages(10)
                .send()
                .await
            {
                for message in out.messages() {
                    got += 1;
                    drained.insert(message.body().unwrap().to_string());
                    let _ = sqs
                        .delete_message()
                        .queue_url(&queue)
                        .receipt_handle(message.receipt_handle().unwrap())
                        .send()
                        .await;
                }
            }
        }
        if got > 0 {
            empty_since = None;
        } else if empty_since.get_or_insert_with(std::time::Instant::now).elapsed() > Duration::from_secs(12)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let acknowledged = acknowledged.lock().unwrap();
    let lost: Vec<&String> = acknowledged
        .sent
        .iter()
        .filter(|b| !acknowledged.received.contains(*b) && !drained.contains(*b))
        .collect();
    let undone: Vec<&String> = drained
        .iter()
        .filter(|b| acknowledged.deleted.contains(*b))
        .collect();
    let outcome = Outcome {
        sent: acknowledged.sent.len(),
        received: acknowledged.received.len(),
        deleted: acknowledged.deleted.len(),
        lost: lost.into_iter().cloned().collect(),
        undone: undone.into_iter().cloned().collect(),
        two_serving: two_serving.load(Ordering::Relaxed),
    };
    eprintln!(
        "--redis-min-replicas {min_replicas}: {} sends, {} receives, {} deletes acknowledged through 3 Redis primary kills; \
         {} lost, {} deletes undone, {} polls with two serving",
        outcome.sent,
        outcome.received,
        outcome.deleted,
        outcome.lost.len(),
        outcome.undone.len(),
        outcome.two_serving
    );
    outcome
}
