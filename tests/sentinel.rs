//! Redis's own failover through Sentinel: ssq reaches Redis with a
//! redis-sentinel:// URL; when the Redis primary dies and Sentinel promotes
//! its replica, an ssq instance leads again on the new primary and every
//! message acknowledged (and replicated) before is still there.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{FAST_LOCK, RedisServer, Server, client_for, free_port, queue_url, single_leader};

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

fn start_sentinel(primary_port: u16) -> Sentinel {
    let port = free_port();
    let dir = std::env::temp_dir().join(format!("ssq-test-sentinel-{}-{port}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("sentinel.conf");
    std::fs::write(
        &config,
        format!(
            "port {port}\nbind 127.0.0.1\ndir {}\nsentinel monitor ssq-redis 127.0.0.1 {primary_port} 1\n\
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
    let replica_of = primary.port.to_string();
    let replica = RedisServer::start_with(&["--appendonly", "no", "--replicaof", "127.0.0.1", &replica_of]);
    // The replica's first full sync forks the primary; start once it is done.
    let synced = common::wait_for(Duration::from_secs(10), || async {
        let info = Command::new("redis-cli")
            .args(["-p", &replica.port.to_string(), "info", "replication"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&info.stdout).contains("master_link_status:up")
    })
    .await;
    assert!(synced.is_some(), "the replica synced with the primary");
    let sentinel = start_sentinel(primary.port);
    tokio::time::sleep(Duration::from_millis(500)).await;

    let url = format!(
        "redis-sentinel://127.0.0.1:{}?sentinelServiceName=ssq-redis",
        sentinel.port
    );
    let nodes: Vec<Server> = ["s1", "s2"]
        .iter()
        .map(|id| {
            let mut args = vec!["--redis-url", url.as_str(), "--node-id", id];
            args.extend_from_slice(FAST_LOCK);
            Server::start_with(&args)
        })
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
        .map(|n| common::client_without_retries(&n.url))
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
