//! A group on Postgres (`--postgres-url`): the tests every SQL store passes
//! (`databases.rs`) on a private Postgres per test (`initdb` in a
//! temporary directory), and Postgres's own: a synchronous standby
//! promoted, TLS, a release announced.

use std::time::Duration;

use crate::common::{PostgresServer, Server, create_queue_url, drain, wait_for};
use crate::databases::{self, leader_of, send};

#[tokio::test]
async fn a_leader_killed_under_load_loses_nothing_it_acknowledged() {
    databases::a_leader_killed_under_load_loses_nothing_it_acknowledged::<PostgresServer>().await;
}

#[tokio::test]
async fn a_frozen_leader_is_replaced_and_its_epoch_no_longer_commits() {
    databases::a_frozen_leader_is_replaced_and_its_epoch_no_longer_commits::<PostgresServer>().await;
}

#[tokio::test]
async fn postgres_killed_restarted_and_stalled_the_leader_serves_again_with_everything() {
    databases::killed_restarted_and_stalled_the_leader_serves_again_with_everything::<PostgresServer>().await;
}

#[tokio::test]
async fn postgres_with_another_store_is_refused_at_start() {
    databases::refused_beside_another_store::<PostgresServer>("postgres://ssq@127.0.0.1:1/ssq");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn of_locks_racing_one_wins_and_a_live_lease_is_never_taken() {
    databases::of_locks_racing_one_wins_and_a_live_lease_is_never_taken::<PostgresServer>().await;
}

/// With a synchronous standby, a primary killed under load and the
/// standby promoted lose nothing ssq acknowledged, and ssq finds the new
/// primary by itself (its URL names both, `target_session_attrs=read-write`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_primary_killed_under_load_and_its_synchronous_standby_promoted_lose_nothing() {
    databases::a_primary_killed_under_load_and_its_replica_promoted_lose_nothing::<PostgresServer>().await;
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

#[tokio::test]
async fn a_database_of_version_2_is_upgraded_with_its_messages() {
    let postgres = PostgresServer::start();
    let first = Server::start_postgres_node(&postgres, "old");
    wait_for(Duration::from_secs(15), || first.is_ready())
        .await
        .expect("the first instance leads");
    let queue = create_queue_url(&first.client(), "kept", &[]).await;
    assert!(send(&first.client(), &queue, "from version 2").await);
    drop(first);
    // As the last release left it: no lock revision, version 2.
    postgres.psql(
        "ssq",
        "ALTER TABLE ssq_lease DROP COLUMN lock_revision; UPDATE ssq_schema SET version = 2",
    );
    let second = Server::start_postgres_node(&postgres, "new");
    wait_for(Duration::from_secs(15), || second.is_ready())
        .await
        .expect("the next instance upgrades the tables and leads");
    assert_eq!(postgres.psql("ssq", "SELECT max(version) FROM ssq_schema"), "3");
    assert_eq!(
        postgres.psql("ssq", "SELECT lock_revision FROM ssq_lease WHERE shard = 0"),
        "0"
    );
    assert_eq!(drain(&second.client(), &queue).await, ["from version 2"]);
}
