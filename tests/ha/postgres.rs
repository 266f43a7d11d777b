//! A group on Postgres (`--postgres-url`): real ssq processes and a private
//! Postgres per test (`initdb` in a temporary directory), with the leader
//! killed and frozen, Postgres killed, restarted and stalled, and the
//! fence checked in the database itself.

use std::time::{Duration, Instant};

use aws_sdk_sqs::Client;

use crate::common::{PostgresServer, Server, create_queue_url, drain, single_leader, ssq_binary, wait_for};

/// Sends `body`; whether ssq acknowledged it.
async fn send(sqs: &Client, url: &str, body: &str) -> bool {
    sqs.send_message()
        .queue_url(url)
        .message_body(body)
        .send()
        .await
        .is_ok()
}

/// Waits until one of `nodes` serves and returns its index.
async fn leader_of(nodes: &[Server]) -> usize {
    single_leader(nodes, Duration::from_secs(15)).await
}

#[tokio::test]
async fn a_leader_killed_under_load_loses_nothing_it_acknowledged() {
    let postgres = PostgresServer::start();
    let nodes = [
        Server::start_postgres_node(&postgres, "p1"),
        Server::start_postgres_node(&postgres, "p2"),
    ];
    let first = leader_of(&nodes).await;
    assert_eq!(nodes[first].status().await["storage"]["mode"], "postgres");
    assert_eq!(nodes[1 - first].get("/ready").await.unwrap().0, 503);
    let sqs = nodes[first].client();
    let url = create_queue_url(&sqs, "jobs", &[]).await;
    // Eight senders, each acknowledged send recorded, until the kill.
    let mut senders = tokio::task::JoinSet::new();
    for sender in 0..8 {
        let (sqs, url) = (sqs.clone(), url.clone());
        senders.spawn(async move {
            let mut acknowledged = Vec::new();
            for n in 0.. {
                let body = format!("{sender}-{n}");
                if !send(&sqs, &url, &body).await {
                    break;
                }
                acknowledged.push(body);
            }
            acknowledged
        });
    }
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let mut nodes = nodes;
    nodes[first].signal("KILL");
    let killed_at = Instant::now();
    let acknowledged: Vec<String> = senders.join_all().await.into_iter().flatten().collect();
    assert!(
        acknowledged.len() > 100,
        "only {} sends before the kill",
        acknowledged.len()
    );
    let second = 1 - first;
    wait_for(Duration::from_secs(15), || nodes[second].is_ready())
        .await
        .expect("the passive takes over");
    let took = killed_at.elapsed();
    // The lease (2 s) runs out, then one retry (200 ms) takes it.
    assert!(took < Duration::from_secs(5), "served again after {took:?}");
    let mut received = drain(&nodes[second].client(), &url).await;
    received.sort();
    let lost: Vec<&String> = acknowledged
        .iter()
        .filter(|body| received.binary_search(body).is_err())
        .collect();
    eprintln!(
        "leader killed: {} sends acknowledged, {} lost, the passive serving {took:?} after the kill",
        acknowledged.len(),
        lost.len()
    );
    assert!(
        lost.is_empty(),
        "{} acknowledged sends lost: {lost:?}",
        lost.len()
    );
    nodes[first].wait_exit(Duration::from_secs(5));
}

#[tokio::test]
async fn a_frozen_leader_is_replaced_and_its_epoch_no_longer_commits() {
    let postgres = PostgresServer::start();
    let nodes = [
        Server::start_postgres_node(&postgres, "f1"),
        Server::start_postgres_node(&postgres, "f2"),
    ];
    let first = leader_of(&nodes).await;
    let sqs = nodes[first].client();
    let url = create_queue_url(&sqs, "frozen", &[]).await;
    assert!(send(&sqs, &url, "before").await);
    let old_epoch: i64 = postgres
        .psql("ssq", "SELECT epoch FROM ssq_lease WHERE shard = 0")
        .parse()
        .unwrap();
    // Frozen, its lock session lives on: the passive must end it once the
    // lease has expired, not wait for it for ever.
    nodes[first].signal("STOP");
    let second = 1 - first;
    let took = wait_for(Duration::from_secs(15), || nodes[second].is_ready())
        .await
        .expect("the passive takes over from a frozen leader");
    assert!(took < Duration::from_secs(6), "took over after {took:?}");
    let new_epoch: i64 = postgres
        .psql("ssq", "SELECT epoch FROM ssq_lease WHERE shard = 0")
        .parse()
        .unwrap();
    assert!(new_epoch > old_epoch, "epoch {old_epoch} then {new_epoch}");
    let sqs = nodes[second].client();
    assert!(send(&sqs, &url, "after").await);
    // The old epoch's commit is refused in the database itself.
    let load: String = postgres.psql("ssq", "SELECT load_id FROM ssq_lease WHERE shard = 0");
    // Every array empty: a commit that changes nothing, refused all the same.
    let arrays = ["'{}'"; 35].join(", ");
    let stale = format!("SELECT ssq_commit(0, {old_epoch}::bigint, '{load}', {arrays})");
    let refused = std::process::Command::new("psql")
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &postgres.port.to_string(),
            "-U",
            "ssq",
            "-d",
            "ssq",
        ])
        .args(["-X", "-v", "ON_ERROR_STOP=1", "-c", &stale])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("FENCED"), "{said}");
    // Woken, the old leader serves no more: its deadline has passed.
    nodes[first].signal("CONT");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(nodes[first].get("/ready").await.unwrap().0, 503);
    assert_eq!(nodes[first].status().await["role"], "passive");
    let mut bodies = drain(&sqs, &url).await;
    bodies.sort();
    assert_eq!(bodies, ["after", "before"]);
}

#[tokio::test]
async fn postgres_killed_restarted_and_stalled_the_leader_serves_again_with_everything() {
    let mut postgres = PostgresServer::start();
    let node = Server::start_postgres_node(&postgres, "r1");
    wait_for(Duration::from_secs(15), || node.is_ready())
        .await
        .expect("leads");
    let sqs = node.client();
    let url = create_queue_url(&sqs, "kept", &[]).await;
    assert!(send(&sqs, &url, "one").await);

    // Killed whole, as a crash; back on the same data.
    postgres.kill();
    wait_for(Duration::from_secs(5), || async { !node.is_ready().await })
        .await
        .expect("stops serving without its database");
    postgres.restart();
    let restarted = Instant::now();
    wait_for(Duration::from_secs(15), || node.is_ready())
        .await
        .expect("leads again once Postgres is back");
    assert!(
        restarted.elapsed() < Duration::from_secs(6),
        "after {:?}",
        restarted.elapsed()
    );
    assert!(send(&sqs, &url, "two").await);

    // Stalled past the step-down deadline: stops serving, then serves again.
    postgres.signal("STOP");
    wait_for(Duration::from_secs(5), || async { !node.is_ready().await })
        .await
        .expect("steps down while Postgres does not answer");
    postgres.signal("CONT");
    let resumed = Instant::now();
    wait_for(Duration::from_secs(15), || node.is_ready())
        .await
        .expect("leads again once Postgres answers");
    assert!(
        resumed.elapsed() < Duration::from_secs(6),
        "after {:?}",
        resumed.elapsed()
    );
    assert!(send(&sqs, &url, "three").await);
    let mut bodies = drain(&sqs, &url).await;
    bodies.sort();
    assert_eq!(bodies, ["one", "three", "two"]);
}

#[tokio::test]
async fn postgres_with_another_store_is_refused_at_start() {
    let cases: [(&[&str], &str); 2] = [
        (&["--redis-url", "redis://127.0.0.1:1"], "--redis-url"),
        (&["--data-dir", "/nonexistent/ssq"], "--data-dir"),
    ];
    for (extra, said) in cases {
        let output = std::process::Command::new(ssq_binary())
            .args([
                "--listen",
                "127.0.0.1:0",
                "--postgres-url",
                "postgres://ssq@127.0.0.1:1/ssq",
            ])
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{extra:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(said), "{extra:?}: {stderr}");
    }
}

/// With a synchronous standby, a primary killed under load and the
/// standby promoted lose nothing ssq acknowledged, and ssq finds the new
/// primary by itself (its URL names both, `target_session_attrs=read-write`).
#[tokio::test]
async fn a_primary_killed_under_load_and_its_synchronous_standby_promoted_lose_nothing() {
    let mut primary = PostgresServer::start();
    let standby = primary.start_standby();
    primary.psql("postgres", "ALTER SYSTEM SET synchronous_standby_names = '*'");
    primary.psql("postgres", "SELECT pg_reload_conf()");
    wait_for(Duration::from_secs(10), || async {
        primary.psql(
            "postgres",
            "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'",
        ) == "1"
    })
    .await
    .expect("the standby is synchronous");
    let url = format!(
        "postgres://ssq@127.0.0.1:{},127.0.0.1:{}/ssq?target_session_attrs=read-write",
        primary.port, standby.port
    );
    let mut args = vec!["--postgres-url", url.as_str(), "--node-id", "s1"];
    args.extend_from_slice(crate::common::FAST_LOCK);
    args.extend_from_slice(&["--postgres-timeout", "500ms"]);
    let node = Server::start_with(&args);
    wait_for(Duration::from_secs(15), || node.is_ready())
        .await
        .expect("leads");
    let sqs = node.client();
    let url = create_queue_url(&sqs, "replicated", &[]).await;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut senders = tokio::task::JoinSet::new();
    for sender in 0..8 {
        let (sqs, url, stop) = (sqs.clone(), url.clone(), stop.clone());
        senders.spawn(async move {
            let mut acknowledged = Vec::new();
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let body = format!("{sender}-{n}");
                n += 1;
                if send(&sqs, &url, &body).await {
                    acknowledged.push(body);
                }
            }
            acknowledged
        });
    }
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    primary.kill();
    let killed_at = Instant::now();
    tokio::time::sleep(Duration::from_millis(300)).await;
    standby.promote();
    wait_for(Duration::from_secs(20), || async {
        send(&sqs, &url, "after the failover").await
    })
    .await
    .expect("ssq serves again on the promoted standby");
    let took = killed_at.elapsed();
    // Sending goes on a moment on the new primary.
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let acknowledged: Vec<String> = senders.join_all().await.into_iter().flatten().collect();
    let mut received = drain(&sqs, &url).await;
    received.sort();
    let lost: Vec<&String> = acknowledged
        .iter()
        .filter(|body| received.binary_search(body).is_err())
        .collect();
    eprintln!(
        "synchronous failover: {} sends acknowledged, {} lost, serving again {took:?} after the kill",
        acknowledged.len(),
        lost.len()
    );
    assert!(
        acknowledged.len() > 100,
        "only {} acknowledged",
        acknowledged.len()
    );
    assert!(
        lost.is_empty(),
        "{} acknowledged sends lost: {lost:?}",
        lost.len()
    );
    assert!(took < Duration::from_secs(10), "served again after {took:?}");
}

/// Six instances' locks asking at once: one wins; while its lease lives
/// nobody else takes it, even once its lock session is gone (its holder may
/// still serve); released, it goes to exactly one other, at a new epoch.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn of_locks_racing_one_wins_and_a_live_lease_is_never_taken() {
    use ssq::cluster::lock::{Acquire, LockStore};
    use ssq::store::postgres::PostgresLock;
    let postgres = PostgresServer::start();
    let target = ssq::store::postgres::Target::parse(&postgres.url(), None, Duration::from_secs(5)).unwrap();
    let lock = |n: usize| {
        std::sync::Arc::new(PostgresLock::new(
            target.clone(),
            0,
            &format!("racer{n}"),
            "http://x",
            Duration::from_secs(60),
            std::sync::Arc::default(),
        ))
    };
    let mut locks: Vec<_> = (0..6).map(lock).collect();
    let race = async |locks: &[std::sync::Arc<PostgresLock>]| {
        let calls = locks.iter().map(|lock| {
            let lock = lock.clone();
            tokio::spawn(async move { lock.acquire().await.unwrap() })
        });
        let mut answers = Vec::new();
        for call in calls.collect::<Vec<_>>() {
            answers.push(call.await.unwrap());
        }
        answers
    };
    let won = |answers: &[Acquire]| -> Vec<(usize, String)> {
        answers
            .iter()
            .enumerate()
            .filter_map(|(i, a)| match a {
                Acquire::Won(token) => Some((i, token.clone())),
                Acquire::Held(_) => None,
            })
            .collect()
    };
    let first = won(&race(&locks).await);
    assert_eq!(first.len(), 1, "{first:?}");
    let (winner, token) = first[0].clone();
    assert!(token.starts_with("1|"), "{token}");
    // Its session gone (the process cut off), its lease still lives.
    locks.remove(winner);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(won(&race(&locks).await).is_empty(), "a live lease was taken");
    // Released by its holder (a new session of the same node), it goes once.
    let holder = lock(winner);
    assert!(holder.release(&token).await.unwrap());
    let second = won(&race(&locks).await);
    assert_eq!(second.len(), 1, "{second:?}");
    assert!(second[0].1.starts_with("2|"), "{second:?}");
}

/// `sslmode=require`: ssq leads only over TLS with a certificate it trusts
/// (`--postgres-ca-file`), and every one of its sessions is encrypted.
#[tokio::test]
async fn over_tls_ssq_trusts_only_the_ca_it_is_given_and_every_session_is_encrypted() {
    let (postgres, ca) = PostgresServer::start_tls();
    let url = format!("{}?sslmode=require", postgres.url());
    let start = |extra: &[&str]| {
        let mut args = vec!["--postgres-url", url.as_str()];
        args.extend_from_slice(crate::common::FAST_LOCK);
        args.extend_from_slice(&["--postgres-timeout", "500ms"]);
        args.extend_from_slice(extra);
        Server::start_with(&args)
    };
    // The system's roots do not hold the test CA: no session, no leading.
    let untrusting = start(&[]);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(!untrusting.is_ready().await, "led without a trusted certificate");
    drop(untrusting);
    let node = start(&["--postgres-ca-file", ca.to_str().unwrap()]);
    wait_for(Duration::from_secs(15), || node.is_ready())
        .await
        .expect("leads over TLS");
    let sqs = node.client();
    let url = create_queue_url(&sqs, "secret", &[]).await;
    assert!(send(&sqs, &url, "over TLS").await);
    assert_eq!(drain(&sqs, &url).await, ["over TLS"]);
    let sessions = postgres.psql(
        "postgres",
        "SELECT count(*) FILTER (WHERE ssl), count(*) FILTER (WHERE NOT ssl) \
         FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) WHERE application_name = 'ssq'",
    );
    let (encrypted, plain) = sessions.split_once('|').unwrap();
    assert!(encrypted.parse::<u32>().unwrap() >= 2, "{sessions}");
    assert_eq!(plain, "0", "{sessions}");
}

/// A leader stopped with SIGTERM lets go and announces it: the passive
/// takes over at once, not at its next try (5 s apart here).
#[tokio::test]
async fn a_leader_that_lets_go_is_replaced_at_once() {
    let postgres = PostgresServer::start();
    let url = postgres.url();
    let start = |id: &str| {
        Server::start_with(&[
            "--postgres-url",
            url.as_str(),
            "--node-id",
            id,
            "--lock-ttl",
            "10s",
            "--lock-renew",
            "250ms",
            "--lock-step-down",
            "1200ms",
            "--lock-retry",
            "5s",
            "--postgres-timeout",
            "500ms",
        ])
    };
    let nodes = [start("t1"), start("t2")];
    let first = leader_of(&nodes).await;
    let second = 1 - first;
    nodes[first].signal("TERM");
    let took = wait_for(Duration::from_secs(8), || nodes[second].is_ready())
        .await
        .expect("the passive takes over");
    eprintln!("SIGTERM of the leader: the passive serving {took:?} after");
    assert!(
        took < Duration::from_secs(2),
        "took over after {took:?}, not at once"
    );
}
