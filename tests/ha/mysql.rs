//! A group on MariaDB (`--mysql-url`): the tests every SQL store passes
//! (`databases.rs`) on a private `mariadbd` per test.

use crate::common::MariadbServer;
use crate::databases;

#[tokio::test]
async fn a_leader_killed_under_load_loses_nothing_it_acknowledged() {
    databases::a_leader_killed_under_load_loses_nothing_it_acknowledged::<MariadbServer>().await;
}

#[tokio::test]
async fn a_frozen_leader_is_replaced_and_its_epoch_no_longer_commits() {
    databases::a_frozen_leader_is_replaced_and_its_epoch_no_longer_commits::<MariadbServer>().await;
}

#[tokio::test]
async fn mariadb_killed_restarted_and_stalled_the_leader_serves_again_with_everything() {
    databases::killed_restarted_and_stalled_the_leader_serves_again_with_everything::<MariadbServer>().await;
}

#[tokio::test]
async fn mysql_with_another_store_is_refused_at_start() {
    databases::refused_beside_another_store::<MariadbServer>("mysql://ssq@127.0.0.1:1/ssq");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn of_locks_racing_one_wins_and_a_live_lease_is_never_taken() {
    databases::of_locks_racing_one_wins_and_a_live_lease_is_never_taken::<MariadbServer>().await;
}

#[test]
fn a_bad_url_is_refused_saying_what_is_expected() {
    let refused = |url: &str| {
        let output = std::process::Command::new(crate::common::ssq_binary())
            .args(["--listen", "127.0.0.1:0", "--mysql-url", url])
            .output()
            .unwrap();
        assert_ne!(output.status.code(), Some(0), "{url}");
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    for url in [
        "postgres://h/db",
        "mysql://h:port/db",
        "mysql://h",
        "mysql://h/db?sslmode=maybe",
    ] {
        let said = refused(url);
        assert!(
            said.contains("--mysql-url is not a valid MySQL URL"),
            "{url}: {said}"
        );
        assert!(!said.contains("panicked"), "{url}: {said}");
    }
    let said = refused("mysql://ssq:SECRET@h/db?ssl-mode=DISABLED&x=1");
    assert!(!said.contains("SECRET"), "{said}");
}

/// With a semi-synchronous replica (`AFTER_SYNC`), a primary killed under
/// load and its replica promoted lose nothing ssq acknowledged, and ssq
/// finds the new primary by itself (its URL names both; the replica was
/// read-only until promoted).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_primary_killed_under_load_and_its_semi_synchronous_replica_promoted_lose_nothing() {
    databases::a_primary_killed_under_load_and_its_replica_promoted_lose_nothing::<MariadbServer>().await;
}

/// `ssl-mode=REQUIRED`: ssq leads only over TLS with a certificate it
/// trusts (`--mysql-ca-file`), its host name checked; the server lets the
/// user `ssq` in over TLS only, so leading at all proves every connection
/// is encrypted.
#[tokio::test]
async fn over_tls_ssq_trusts_only_the_ca_it_is_given() {
    use std::time::Duration;

    use crate::common::{Server, create_queue_url, drain, wait_for};
    let (mariadb, ca) = MariadbServer::start_tls();
    let url = format!("{}?ssl-mode=REQUIRED", mariadb.url());
    // The system's roots do not hold the test CA: no connection, no leading.
    let untrusting = Server::start_mysql_node_with(&url, "untrusting", &[]);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(!untrusting.is_ready().await, "led without a trusted certificate");
    drop(untrusting);
    // Plain text is refused by the server: the user must use TLS.
    let plain = Server::start_mysql_node_with(&mariadb.url(), "plain", &[]);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(!plain.is_ready().await, "led over plain text");
    drop(plain);
    let node = Server::start_mysql_node_with(&url, "trusting", &["--mysql-ca-file", ca.to_str().unwrap()]);
    wait_for(Duration::from_secs(15), || node.is_ready())
        .await
        .expect("leads over TLS");
    let sqs = node.client();
    let queue = create_queue_url(&sqs, "secret", &[]).await;
    assert!(crate::databases::send(&sqs, &queue, "over TLS").await);
    assert_eq!(drain(&sqs, &queue).await, ["over TLS"]);
    let encrypted = mariadb.sql("SELECT count(*) FROM information_schema.PROCESSLIST WHERE USER = 'ssq'");
    assert!(encrypted.parse::<u32>().unwrap() >= 2, "{encrypted}");
}

/// MySQL commits each table it makes on its own, so a migration cut short
/// (its connection timed out or lost) leaves some tables made and the
/// schema's version unwritten: the next instance runs the step again and
/// leads, with what was already stored.
#[tokio::test]
async fn a_migration_cut_short_is_completed_by_the_next_instance() {
    use std::time::Duration;

    use crate::common::{Server, create_queue_url, drain, wait_for};
    let mariadb = MariadbServer::start();
    let first = Server::start_mysql_node_with(&mariadb.url(), "first", &[]);
    wait_for(Duration::from_secs(15), || first.is_ready())
        .await
        .expect("the first instance leads");
    let queue = create_queue_url(&first.client(), "kept", &[]).await;
    assert!(crate::databases::send(&first.client(), &queue, "before the cut").await);
    drop(first);
    // The first step's last tables, the second's table and the procedures
    // are gone, the version too.
    mariadb.sql(
        "DELETE FROM ssq.ssq_schema; DROP TABLE ssq.ssq_transfers, ssq.ssq_members, ssq.ssq_lock_revisions; \
         DROP PROCEDURE ssq.ssq_commit; DROP PROCEDURE ssq.ssq_shard_count",
    );
    let second = Server::start_mysql_node_with(&mariadb.url(), "second", &[]);
    wait_for(Duration::from_secs(15), || second.is_ready())
        .await
        .expect("the next instance completes the migration and leads");
    assert_eq!(mariadb.sql("SELECT version FROM ssq.ssq_schema"), "2");
    assert_eq!(mariadb.sql("SELECT count(*) FROM ssq.ssq_lock_revisions"), "0");
    let queue = create_queue_url(&second.client(), "kept", &[]).await;
    assert_eq!(drain(&second.client(), &queue).await, ["before the cut"]);
}
