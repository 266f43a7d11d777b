//! Replica-acknowledged writes (`--redis-min-replicas`): with a primary and
//! one replica on loopback, an acknowledged message is on the replica when
//! the client hears of it; with the replica frozen, writes are refused
//! rather than acknowledged, the leader steps down (its renewals cannot be
//! confirmed), and it serves again once the replica is back.

use std::process::Command;
use std::time::Duration;

use crate::common::*;

/// The message bodies the Redis on `port` holds for queue `queue`.
fn bodies_on(port: u16, queue: &str) -> String {
    redis_cli(port, &["hgetall", &format!("{{ssq}}:q:{queue}:bodies")])
}

fn node_with_replicas(primary: &RedisServer, node_id: &str, min_replicas: &str) -> Server {
    let replicas = [
        "--redis-min-replicas",
        min_replicas,
        "--redis-replica-timeout",
        "150ms",
    ];
    Server::start_node_with(&primary.url(), node_id, &replicas)
}

#[tokio::test]
async fn with_min_replicas_nothing_is_acknowledged_that_no_replica_holds() {
    let primary = RedisServer::start();
    let replica = primary.start_replica().await;
    let server = node_with_replicas(&primary, "confirmed", "1");
    wait_for(Duration::from_secs(10), || async { server.is_ready().await })
        .await
        .expect("the instance leads with its replica confirming");
    let sqs = client_without_retries(&server.url);
    let url = create_queue_url(&sqs, "held", &[]).await;
    send_body(&sqs, &url, "kept").await;
    assert!(
        bodies_on(replica.port, "held").contains("kept"),
        "acknowledged means the replica holds it"
    );

    replica.signal("STOP");
    let refused = sqs
        .send_message()
        .queue_url(&url)
        .message_body("unconfirmed")
        .send()
        .await;
    assert_eq!(
        error_code(refused),
        "ServiceUnavailable",
        "no replica confirmed it"
    );
    let stepped_down = wait_for(Duration::from_secs(5), || async { !server.is_ready().await }).await;
    assert!(
        stepped_down.is_some(),
        "renewals no replica confirms do not keep a leader"
    );

    replica.signal("CONT");
    wait_for(Duration::from_secs(15), || async { server.is_ready().await })
        .await
        .expect("leads again once the replica confirms");
    send_body(&sqs, &url, "after").await;
    let bodies = receive_bodies(&sqs, &url, 10).await;
    assert!(
        bodies.contains(&"kept".to_string()) && bodies.contains(&"after".to_string()),
        "{bodies:?}"
    );
}

#[tokio::test]
async fn without_min_replicas_a_frozen_replica_changes_nothing() {
    let primary = RedisServer::start();
    let replica = primary.start_replica().await;
    let server = node_with_replicas(&primary, "unconfirmed", "0");
    wait_for(Duration::from_secs(10), || async { server.is_ready().await })
        .await
        .expect("the instance leads");
    let sqs = client_without_retries(&server.url);
    let url = create_queue_url(&sqs, "async", &[]).await;
    replica.signal("STOP");
    send_body(&sqs, &url, "acknowledged by the primary alone").await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert!(server.is_ready().await, "the leader keeps serving");
    replica.signal("CONT");
}

#[tokio::test]
async fn a_replica_timeout_as_long_as_a_renewal_interval_is_refused_at_start() {
    let status = Command::new(env!("CARGO_BIN_EXE_ssq"))
        .args(["--redis-url", "redis://127.0.0.1:1", "--redis-min-replicas", "1"])
        .args(["--lock-renew", "500ms", "--redis-replica-timeout", "500ms"])
        .output()
        .expect("ssq runs");
    assert!(!status.status.success());
    let stderr = String::from_utf8_lossy(&status.stderr);
    assert!(stderr.contains("--redis-replica-timeout"), "{stderr}");
}
