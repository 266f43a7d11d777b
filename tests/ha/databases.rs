//! What every SQL store of a group must do, run on each (`postgres.rs`,
//! `mysql.rs` call these with their server): real ssq processes and a
//! private database per test, with the leader killed and frozen, the
//! database killed, restarted and stalled, locks racing, and the fence
//! checked in the database itself.

use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_sqs::Client;
use ssq::cluster::lock::{Acquire, LockStore};

use crate::common::{
    MariadbServer, PostgresServer, Server, create_queue_url, drain, single_leader, ssq_binary, wait_for,
};

/// A database server as faults drive it (`chaos.rs` holds one as a trait
/// object): started again, killed, frozen, reached through a relay.
pub trait DatabaseServer: Send {
    /// Its name, for messages.
    fn name(&self) -> &'static str;
    /// An ssq instance reaching it through `port` (its own, or a relay's),
    /// with the test timings and `extra` flags.
    fn node_via(&self, port: u16, node_id: &str, extra: &[&str]) -> Server;
    fn kill(&mut self);
    fn restart(&mut self);
    fn signal(&self, signal: &str);
    fn is_running(&self) -> bool;
}

impl DatabaseServer for PostgresServer {
    fn name(&self) -> &'static str {
        "Postgres"
    }
    fn node_via(&self, port: u16, node_id: &str, extra: &[&str]) -> Server {
        Server::start_postgres_node_with(&format!("postgres://ssq@127.0.0.1:{port}/ssq"), node_id, extra)
    }
    fn kill(&mut self) {
        PostgresServer::kill(self)
    }
    fn restart(&mut self) {
        PostgresServer::restart(self)
    }
    fn signal(&self, signal: &str) {
        PostgresServer::signal(self, signal)
    }
    fn is_running(&self) -> bool {
        PostgresServer::is_running(self)
    }
}

impl DatabaseServer for MariadbServer {
    fn name(&self) -> &'static str {
        "MariaDB"
    }
    fn node_via(&self, port: u16, node_id: &str, extra: &[&str]) -> Server {
        Server::start_mysql_node_with(&format!("mysql://ssq@127.0.0.1:{port}/ssq"), node_id, extra)
    }
    fn kill(&mut self) {
        MariadbServer::kill(self)
    }
    fn restart(&mut self) {
        MariadbServer::restart(self)
    }
    fn signal(&self, signal: &str) {
        MariadbServer::signal(self, signal)
    }
    fn is_running(&self) -> bool {
        MariadbServer::is_running(self)
    }
}

/// A database server a group of ssq instances shares, as a test drives it.
pub trait Database: DatabaseServer + Sized {
    fn start() -> Self;
    /// An ssq instance on it, with the test timings.
    fn node(&self, node_id: &str) -> Server {
        self.node_with(node_id, &[])
    }
    /// The same with `extra` flags.
    fn node_with(&self, node_id: &str, extra: &[&str]) -> Server {
        self.node_via(self.port(), node_id, extra)
    }
    fn port(&self) -> u16;
    /// How many rows `table` of ssq's holds.
    fn rows(&self, table: &str) -> u64;
    /// The table with a row per message.
    const MESSAGES: &'static str;
    /// The flag that names it, its time limit's, and `/status`'s storage mode.
    const FLAG: &'static str;
    const TIMEOUT_FLAG: &'static str;
    /// The URL ssq reaches it at.
    fn url(&self) -> String;
    const MODE: &'static str;
    /// Shard 0's epoch in the lease table.
    fn epoch(&self) -> i64;
    /// A commit at `epoch` that changes nothing: the database's error, if it refused it.
    fn commit_at(&self, epoch: i64) -> Result<(), String>;
    /// A lock of shard 0 for `node_id`, with a TTL of a minute.
    fn lock(&self, node_id: &str) -> Arc<dyn LockStore>;
}

impl Database for PostgresServer {
    const FLAG: &'static str = "--postgres-url";
    const TIMEOUT_FLAG: &'static str = "--postgres-timeout";
    const MODE: &'static str = "postgres";
    const MESSAGES: &'static str = "ssq_bodies";

    fn start() -> Self {
        PostgresServer::start()
    }
    fn url(&self) -> String {
        PostgresServer::url(self)
    }
    fn port(&self) -> u16 {
        self.port
    }
    fn rows(&self, table: &str) -> u64 {
        self.psql("ssq", &format!("SELECT count(*) FROM {table}"))
            .parse()
            .unwrap()
    }
    fn epoch(&self) -> i64 {
        self.psql("ssq", "SELECT epoch FROM ssq_lease WHERE shard = 0")
            .parse()
            .unwrap()
    }
    fn commit_at(&self, epoch: i64) -> Result<(), String> {
        let load = self.psql("ssq", "SELECT load_id FROM ssq_lease WHERE shard = 0");
        // Every array empty: a commit that changes nothing.
        let arrays = ["'{}'"; 35].join(", ");
        let commit = format!("SELECT ssq_commit(0, {epoch}::bigint, '{load}', {arrays})");
        let output = std::process::Command::new("psql")
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "ssq",
                "-d",
                "ssq",
            ])
            .args(["-X", "-v", "ON_ERROR_STOP=1", "-c", &commit])
            .output()
            .unwrap();
        match output.status.success() {
            true => Ok(()),
            false => Err(String::from_utf8_lossy(&output.stderr).into_owned()),
        }
    }
    fn lock(&self, node_id: &str) -> Arc<dyn LockStore> {
        let target = ssq::store::postgres::Target::parse(&self.url(), None, Duration::from_secs(5)).unwrap();
        Arc::new(ssq::store::postgres::PostgresLock::new(
            target,
            0,
            node_id,
            "http://x",
            Duration::from_secs(60),
            Arc::default(),
        ))
    }
}

impl Database for MariadbServer {
    const FLAG: &'static str = "--mysql-url";
    const TIMEOUT_FLAG: &'static str = "--mysql-timeout";
    const MODE: &'static str = "mysql";
    const MESSAGES: &'static str = "ssq_messages";

    fn start() -> Self {
        MariadbServer::start()
    }
    fn url(&self) -> String {
        MariadbServer::url(self)
    }
    fn port(&self) -> u16 {
        self.port
    }
    fn rows(&self, table: &str) -> u64 {
        self.sql(&format!("SELECT count(*) FROM ssq.{table}"))
            .parse()
            .unwrap()
    }
    fn epoch(&self) -> i64 {
        self.sql("SELECT epoch FROM ssq.ssq_lease WHERE shard = 0")
            .parse()
            .unwrap()
    }
    fn commit_at(&self, epoch: i64) -> Result<(), String> {
        let nulls = ["NULL"; 16].join(", ");
        let commit = format!(
            "USE ssq; SELECT load_id INTO @load FROM ssq_lease WHERE shard = 0; \
             CALL ssq_commit(0, {epoch}, @load, TRUE, TRUE, {nulls})"
        );
        self.try_sql_err(&commit).map(drop)
    }
    fn lock(&self, node_id: &str) -> Arc<dyn LockStore> {
        let target = ssq::store::mysql::Target::parse(&self.url(), None, Duration::from_secs(5)).unwrap();
        Arc::new(ssq::store::mysql::MysqlLock::new(
            target,
            0,
            node_id,
            "http://x",
            Duration::from_secs(60),
        ))
    }
}

/// A database with a replica that has every commit before its primary
/// acknowledges it, and a URL on which ssq finds whichever is writable.
pub trait Replicated: Database {
    /// A primary and its replica, replicating synchronously.
    fn start_pair() -> (Self, Self);
    fn url_of_both(primary: &Self, replica: &Self) -> String;
    fn node_on(url: &str, node_id: &str) -> Server;
    /// Makes the replica the primary.
    fn promote(&self);
}

impl Replicated for PostgresServer {
    fn start_pair() -> (Self, Self) {
        let primary = PostgresServer::start();
        let standby = primary.start_standby();
        primary.psql("postgres", "ALTER SYSTEM SET synchronous_standby_names = '*'");
        primary.psql("postgres", "SELECT pg_reload_conf()");
        for _ in 0..500 {
            let synchronous = "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'";
            if primary.psql("postgres", synchronous) == "1" {
                return (primary, standby);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("the standby never became synchronous");
    }
    fn url_of_both(primary: &Self, replica: &Self) -> String {
        format!(
            "postgres://ssq@127.0.0.1:{},127.0.0.1:{}/ssq?target_session_attrs=read-write",
            primary.port, replica.port
        )
    }
    fn node_on(url: &str, node_id: &str) -> Server {
        Server::start_postgres_node_with(url, node_id, &[])
    }
    fn promote(&self) {
        PostgresServer::promote(self)
    }
}

impl Replicated for MariadbServer {
    fn start_pair() -> (Self, Self) {
        let primary = MariadbServer::start_semi_sync_primary();
        let replica = primary.start_replica();
        (primary, replica)
    }
    fn url_of_both(primary: &Self, replica: &Self) -> String {
        format!(
            "mysql://ssq@127.0.0.1:{},127.0.0.1:{}/ssq",
            primary.port, replica.port
        )
    }
    fn node_on(url: &str, node_id: &str) -> Server {
        Server::start_mysql_node_with(url, node_id, &[])
    }
    fn promote(&self) {
        MariadbServer::promote(self)
    }
}

/// Sends `body`; whether ssq acknowledged it.
pub async fn send(sqs: &Client, url: &str, body: &str) -> bool {
    sqs.send_message()
        .queue_url(url)
        .message_body(body)
        .send()
        .await
        .is_ok()
}

/// Waits until one of `nodes` serves and returns its index.
pub async fn leader_of(nodes: &[Server]) -> usize {
    single_leader(nodes, Duration::from_secs(15)).await
}

/// Eight senders on `url`, each acknowledged send recorded, until one fails.
fn senders(sqs: &Client, url: &str) -> tokio::task::JoinSet<Vec<String>> {
    let mut senders = tokio::task::JoinSet::new();
    for sender in 0..8 {
        let (sqs, url) = (sqs.clone(), url.to_string());
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
    senders
}

/// The acknowledged bodies missing from `received`.
pub fn lost<'a>(acknowledged: &'a [String], received: &mut [String]) -> Vec<&'a String> {
    received.sort();
    acknowledged
        .iter()
        .filter(|body| received.binary_search(body).is_err())
        .collect()
}

pub async fn a_leader_killed_under_load_loses_nothing_it_acknowledged<D: Database>() {
    let database = D::start();
    let mut nodes = [database.node("p1"), database.node("p2")];
    let first = leader_of(&nodes).await;
    assert_eq!(nodes[first].status().await["storage"]["mode"], D::MODE);
    assert_eq!(nodes[1 - first].get("/ready").await.unwrap().0, 503);
    let sqs = nodes[first].client();
    let url = create_queue_url(&sqs, "jobs", &[]).await;
    let senders = senders(&sqs, &url);
    tokio::time::sleep(Duration::from_millis(1_500)).await;
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
    let lost = lost(&acknowledged, &mut received);
    eprintln!(
        "{}: leader killed: {} sends acknowledged, {} lost, the passive serving {took:?} after the kill",
        D::MODE,
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

pub async fn a_frozen_leader_is_replaced_and_its_epoch_no_longer_commits<D: Database>() {
    let database = D::start();
    let nodes = [database.node("f1"), database.node("f2")];
    let first = leader_of(&nodes).await;
    let sqs = nodes[first].client();
    let url = create_queue_url(&sqs, "frozen", &[]).await;
    assert!(send(&sqs, &url, "before").await);
    let old_epoch = database.epoch();
    assert_eq!(
        database.commit_at(old_epoch),
        Ok(()),
        "the leader's epoch commits"
    );
    // Frozen, its lock connection lives on: the passive must end it once
    // the lease has expired, not wait for it for ever.
    nodes[first].signal("STOP");
    let second = 1 - first;
    let took = wait_for(Duration::from_secs(15), || nodes[second].is_ready())
        .await
        .expect("the passive takes over from a frozen leader");
    eprintln!("{}: leader frozen: the passive serving {took:?} after", D::MODE);
    assert!(took < Duration::from_secs(6), "took over after {took:?}");
    let new_epoch = database.epoch();
    assert!(new_epoch > old_epoch, "epoch {old_epoch} then {new_epoch}");
    let sqs = nodes[second].client();
    assert!(send(&sqs, &url, "after").await);
    // The old epoch's commit is refused in the database itself.
    let refused = database
        .commit_at(old_epoch)
        .expect_err("the old epoch commits no more");
    assert!(refused.contains("FENCED"), "{refused}");
    // Woken, the old leader serves no more: its deadline has passed.
    nodes[first].signal("CONT");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(nodes[first].get("/ready").await.unwrap().0, 503);
    assert_eq!(nodes[first].status().await["role"], "passive");
    let mut bodies = drain(&sqs, &url).await;
    bodies.sort();
    assert_eq!(bodies, ["after", "before"]);
}

pub async fn killed_restarted_and_stalled_the_leader_serves_again_with_everything<D: Database>() {
    let mut database = D::start();
    let node = database.node("r1");
    wait_for(Duration::from_secs(15), || node.is_ready())
        .await
        .expect("leads");
    let sqs = node.client();
    let url = create_queue_url(&sqs, "kept", &[]).await;
    assert!(send(&sqs, &url, "one").await);

    // Killed whole, as a crash; back on the same data.
    database.kill();
    wait_for(Duration::from_secs(5), || async { !node.is_ready().await })
        .await
        .expect("stops serving without its database");
    database.restart();
    let restarted = Instant::now();
    wait_for(Duration::from_secs(15), || node.is_ready())
        .await
        .expect("leads again once the database is back");
    eprintln!(
        "{}: database killed and restarted: serving {:?} after",
        D::MODE,
        restarted.elapsed()
    );
    assert!(
        restarted.elapsed() < Duration::from_secs(6),
        "after {:?}",
        restarted.elapsed()
    );
    assert!(send(&sqs, &url, "two").await);

    // Stalled past the step-down deadline: stops serving, then serves again.
    database.signal("STOP");
    wait_for(Duration::from_secs(5), || async { !node.is_ready().await })
        .await
        .expect("steps down while the database does not answer");
    database.signal("CONT");
    let resumed = Instant::now();
    wait_for(Duration::from_secs(15), || node.is_ready())
        .await
        .expect("leads again once the database answers");
    eprintln!(
        "{}: database stalled and resumed: serving {:?} after",
        D::MODE,
        resumed.elapsed()
    );
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

pub fn refused_beside_another_store<D: Database>(url: &str) {
    let others: [(&str, &str); 4] = [
        ("--redis-url", "redis://127.0.0.1:1"),
        ("--data-dir", "/nonexistent/ssq"),
        ("--postgres-url", "postgres://ssq@127.0.0.1:1/ssq"),
        ("--mysql-url", "mysql://ssq@127.0.0.1:1/ssq"),
    ];
    for (flag, value) in others.into_iter().filter(|(flag, _)| *flag != D::FLAG) {
        let output = std::process::Command::new(ssq_binary())
            .args(["--listen", "127.0.0.1:0", D::FLAG, url, flag, value])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{flag}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(flag), "{flag}: {stderr}");
    }
}

/// Six instances' locks asking at once: one wins; while its lease lives
/// nobody else takes it, even once its lock connection is gone (its holder
/// may still serve); released, it goes to exactly one other, at a new epoch.
pub async fn of_locks_racing_one_wins_and_a_live_lease_is_never_taken<D: Database>() {
    let database = D::start();
    let mut locks: Vec<_> = (0..6).map(|n| database.lock(&format!("racer{n}"))).collect();
    let race = async |locks: &[Arc<dyn LockStore>]| {
        let calls: Vec<_> = locks
            .iter()
            .map(|lock| {
                let lock = lock.clone();
                tokio::spawn(async move { lock.acquire().await.unwrap() })
            })
            .collect();
        let mut answers = Vec::new();
        for call in calls {
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
    // Its connection gone (the process cut off), its lease still lives.
    locks.remove(winner);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(won(&race(&locks).await).is_empty(), "a live lease was taken");
    // Released by its holder (a new connection of the same node), it goes once.
    let holder = database.lock(&format!("racer{winner}"));
    assert!(holder.release(&token).await.unwrap());
    let second = won(&race(&locks).await);
    assert_eq!(second.len(), 1, "{second:?}");
    assert!(second[0].1.starts_with("2|"), "{second:?}");
}

/// With a replica that has every commit first, a primary killed under
/// load and the replica promoted lose nothing ssq acknowledged, and ssq
/// finds the new primary by itself (its URL names both).
pub async fn a_primary_killed_under_load_and_its_replica_promoted_lose_nothing<D: Replicated>() {
    let (mut primary, standby) = D::start_pair();
    let url = D::url_of_both(&primary, &standby);
    let node = D::node_on(&url, "s1");
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
    tokio::task::block_in_place(|| standby.promote());
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
        "{}: synchronous failover: {} sends acknowledged, {} lost, serving again {took:?} after the kill",
        D::MODE,
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
