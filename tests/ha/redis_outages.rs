//! Whatever Redis does, some instance leads again within about one lock
//! retry interval of Redis answering normally: a Redis still loading a large
//! AOF when the instances start, and a Redis that stalls for longer than the
//! step-down deadline. Real redis-server and ssq processes.

use std::time::{Duration, Instant};

use crate::common::{RedisServer, Server};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Sends one inline command to Redis and returns its first reply line.
async fn redis_command(port: u16, command: &str) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.ok()?;
    stream.write_all(format!("{command}\r\n").as_bytes()).await.ok()?;
    let mut reply = vec![0u8; 4096];
    let n = stream.read(&mut reply).await.ok()?;
    Some(String::from_utf8_lossy(&reply[..n]).into_owned())
}

/// A Redis with AOF on whose data takes a while to load: a million keys.
async fn redis_with_a_large_aof() -> RedisServer {
    let mut redis = RedisServer::start_with(&["--appendonly", "yes", "--enable-debug-command", "yes"]);
    let populated = redis_command(redis.port, "DEBUG POPULATE 1000000 filler 64").await;
    assert_eq!(populated.as_deref(), Some("+OK\r\n"));
    redis_command(redis.port, "BGREWRITEAOF").await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let info = redis_command(redis.port, "INFO persistence")
            .await
            .unwrap_or_default();
        if info.contains("aof_rewrite_in_progress:0") && info.contains("aof_rewrite_scheduled:0") {
            break;
        }
        assert!(Instant::now() < deadline, "the AOF rewrite did not finish");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    redis.kill();
    redis
}

/// Restarts `redis` (which then loads its AOF), starts `count` instances at
/// the same moment, and returns how long after Redis first answered PONG
/// one of them was ready.
async fn lead_after_loading(count: usize) -> Duration {
    let mut redis = redis_with_a_large_aof().await;
    redis.restart();
    let nodes: Vec<Server> = (0..count)
        .map(|i| Server::start_node(&redis, &format!("node-{i}")))
        .collect();
    let started = Instant::now();
    let mut answered = None;
    while answered.is_none() {
        match redis_command(redis.port, "PING").await.as_deref() {
            Some("+PONG\r\n") => answered = Some(Instant::now()),
            Some(reply) => assert!(reply.starts_with("-LOADING"), "{reply}"),
            None => {}
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "Redis never finished loading"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let answered = answered.unwrap();
    assert!(
        answered - started > Duration::from_millis(300),
        "Redis loaded in {:?}: too fast to test anything",
        answered - started
    );
    crate::common::single_leader(&nodes, Duration::from_secs(20)).await;
    answered.elapsed()
}

#[tokio::test]
async fn a_lone_instance_started_while_redis_loads_leads_once_it_has_loaded() {
    let after = lead_after_loading(1).await;
    assert!(
        after < Duration::from_secs(2),
        "ready {after:?} after Redis answered"
    );
}

#[tokio::test]
async fn a_group_started_while_redis_loads_elects_a_leader_once_it_has_loaded() {
    let after = lead_after_loading(3).await;
    assert!(
        after < Duration::from_secs(2),
        "ready {after:?} after Redis answered"
    );
}

/// A stall longer than the step-down deadline makes the leader step down;
/// the renewals and acquisitions queued during it are applied late, and
/// once kept the lock held in a name nobody served under until its TTL ran
/// out. Service must be back within about one retry of Redis answering.
#[tokio::test]
async fn after_a_redis_stall_service_is_back_within_a_retry() {
    let redis = RedisServer::start_with(&["--appendonly", "no", "--enable-debug-command", "yes"]);
    let nodes: Vec<Server> = ["a", "b", "c"]
        .iter()
        .map(|id| Server::start_node(&redis, id))
        .collect();
    crate::common::single_leader(&nodes, Duration::from_secs(10)).await;
    tokio::time::sleep(Duration::from_millis(500)).await;

    // 2 s: longer than the 1.2 s step-down deadline, shorter than the TTL.
    let slept = redis_command(redis.port, "DEBUG SLEEP 2").await;
    assert_eq!(slept.as_deref(), Some("+OK\r\n"));
    let answered = Instant::now();
    crate::common::single_leader(&nodes, Duration::from_secs(10)).await;
    let after = answered.elapsed();
    assert!(
        after < Duration::from_millis(1_200),
        "served again {after:?} after Redis answered (retry 200 ms, TTL 2 s)"
    );
    // And it serves: a queue call goes through on the leader.
    let leader = crate::common::single_leader(&nodes, Duration::from_secs(1)).await;
    assert_eq!(nodes[leader].queue_call_status().await, Some(200));
}
