//! etcd as the lock (`--lock-url`) beside a store: a three-member etcd
//! cluster on loopback per test (`EtcdCluster`), real ssq processes. The
//! SQL stores' tests run with the lock taken from etcd (`WithEtcd`): the
//! leader killed under load, frozen past its lease (its epoch's commits
//! refused in the database). And etcd's own faults on Redis: its leader
//! killed (ssq keeps serving), a majority lost (ssq stops within the lease,
//! serves again with quorum), the ssq leader cut off from etcd but not from
//! the store, a release seen through the watch, and a sharded group's keys.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ssq::cluster::lock::LockStore;

use crate::common::{
    EtcdCluster, FAST_LOCK, HoldingRelay, MariadbServer, PostgresServer, RedisServer, Server,
    create_queue_url, drain, redis_cli, wait_for,
};
use crate::databases::{self, Database, DatabaseServer, leader_of, lost, send};

/// A database whose group takes its lock from etcd.
pub struct WithEtcd<D> {
    database: D,
    etcd: EtcdCluster,
}

impl<D: Database> DatabaseServer for WithEtcd<D> {
    fn name(&self) -> &'static str {
        self.database.name()
    }
    fn node_via(&self, port: u16, node_id: &str, extra: &[&str]) -> Server {
        let url = self.etcd.url();
        let mut args = extra.to_vec();
        args.extend(["--lock-url", &url]);
        self.database.node_via(port, node_id, &args)
    }
    fn kill(&mut self) {
        self.database.kill()
    }
    fn restart(&mut self) {
        self.database.restart()
    }
    fn signal(&self, signal: &str) {
        self.database.signal(signal)
    }
    fn is_running(&self) -> bool {
        self.database.is_running()
    }
}

impl<D: Database> Database for WithEtcd<D> {
    const MESSAGES: &'static str = D::MESSAGES;
    const FLAG: &'static str = D::FLAG;
    const TIMEOUT_FLAG: &'static str = D::TIMEOUT_FLAG;
    const MODE: &'static str = D::MODE;

    fn start() -> Self {
        WithEtcd {
            database: D::start(),
            etcd: EtcdCluster::start(3),
        }
    }
    fn port(&self) -> u16 {
        self.database.port()
    }
    fn rows(&self, table: &str) -> u64 {
        self.database.rows(table)
    }
    fn url(&self) -> String {
        self.database.url()
    }
    fn epoch(&self) -> i64 {
        self.database.epoch()
    }
    fn commit_at(&self, epoch: i64) -> Result<(), String> {
        self.database.commit_at(epoch)
    }
    /// The store's own lock: what records the revisions etcd's holders bring.
    fn lock(&self, node_id: &str) -> Arc<dyn LockStore> {
        self.database.lock(node_id)
    }
}

#[tokio::test]
async fn on_postgres_a_leader_killed_under_load_loses_nothing_it_acknowledged() {
    databases::a_leader_killed_under_load_loses_nothing_it_acknowledged::<WithEtcd<PostgresServer>>().await;
}

#[tokio::test]
async fn on_postgres_a_frozen_leader_is_replaced_and_its_epoch_no_longer_commits() {
    databases::a_frozen_leader_is_replaced_and_its_epoch_no_longer_commits::<WithEtcd<PostgresServer>>()
        .await;
}

#[tokio::test]
async fn on_mysql_a_frozen_leader_is_replaced_and_its_epoch_no_longer_commits() {
    databases::a_frozen_leader_is_replaced_and_its_epoch_no_longer_commits::<WithEtcd<MariadbServer>>().await;
}

/// An ssq instance on `redis`, its lock in etcd at `lock_url`.
fn node(redis: &RedisServer, lock_url: &str, node_id: &str, extra: &[&str]) -> Server {
    let mut args = vec!["--lock-url", lock_url];
    args.extend_from_slice(extra);
    Server::start_node_with(&redis.url(), node_id, &args)
}

/// The same with the test timings but for `timings` (flag, value).
fn node_timed(redis: &RedisServer, lock_url: &str, node_id: &str, timings: &[(&str, &str)]) -> Server {
    let redis_url = redis.url();
    let mut args = vec![
        "--redis-url",
        &redis_url,
        "--lock-url",
        lock_url,
        "--node-id",
        node_id,
    ];
    let kept = FAST_LOCK
        .chunks(2)
        .filter(|flag| timings.iter().all(|(name, _)| *name != flag[0]));
    args.extend(kept.flatten());
    args.extend(timings.iter().flat_map(|(name, value)| [*name, *value]));
    Server::start_with(&args)
}

/// Sends on `url` for `period`: the bodies acknowledged, and how many sends failed.
async fn send_for(sqs: &aws_sdk_sqs::Client, url: &str, period: Duration) -> (Vec<String>, usize) {
    let (mut acknowledged, mut failed) = (Vec::new(), 0);
    let until = Instant::now() + period;
    for n in 0.. {
        if Instant::now() >= until {
            break;
        }
        let body = format!("m-{n}");
        match send(sqs, url, &body).await {
            true => acknowledged.push(body),
            false => failed += 1,
        }
    }
    (acknowledged, failed)
}

#[tokio::test]
async fn the_etcd_leader_killed_under_load_ssq_keeps_serving() {
    let redis = RedisServer::start();
    let mut etcd = EtcdCluster::start(3);
    // The default timings: renewals every second, stepping down after 3 s
    // without one, which an etcd election (500 ms here) stays well within.
    let timings = [
        ("--lock-ttl", "5s"),
        ("--lock-renew", "1s"),
        ("--lock-step-down", "3s"),
    ];
    let nodes = [
        node_timed(&redis, &etcd.url(), "e1", &timings),
        node_timed(&redis, &etcd.url(), "e2", &timings),
    ];
    let first = leader_of(&nodes).await;
    let sqs = nodes[first].client();
    let url = create_queue_url(&sqs, "through-etcd-failover", &[]).await;
    let sending = tokio::spawn({
        let (sqs, url) = (sqs.clone(), url.clone());
        async move { send_for(&sqs, &url, Duration::from_secs(5)).await }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    let killed = etcd.leader().expect("etcd has a leader");
    etcd.kill(killed);
    let (acknowledged, failed) = sending.await.unwrap();
    let elected = etcd.leader().expect("etcd elected another leader");
    assert_ne!(elected, killed);
    assert_eq!(failed, 0, "sends failed while etcd changed its leader");
    assert!(nodes[first].is_ready().await, "the ssq leader still serves");
    let mut received = drain(&sqs, &url).await;
    let lost = lost(&acknowledged, &mut received);
    eprintln!(
        "etcd leader killed: {} sends acknowledged, {failed} failed, {} lost",
        acknowledged.len(),
        lost.len()
    );
    assert!(lost.is_empty(), "lost {lost:?}");
}

#[tokio::test]
async fn without_an_etcd_quorum_ssq_stops_within_the_lease_and_serves_again_with_it() {
    let redis = RedisServer::start();
    let mut etcd = EtcdCluster::start(3);
    let nodes = [
        node(&redis, &etcd.url(), "q1", &[]),
        node(&redis, &etcd.url(), "q2", &[]),
    ];
    let first = leader_of(&nodes).await;
    let sqs = nodes[first].client();
    let url = create_queue_url(&sqs, "quorum", &[]).await;
    assert!(send(&sqs, &url, "before").await);
    let survivor = etcd.leader().expect("etcd has a leader");
    let lost_members: Vec<usize> = (0..3).filter(|&member| member != survivor).collect();
    for &member in &lost_members {
        etcd.kill(member);
    }
    let lost_at = Instant::now();
    // The lease is 2 s; the leader steps down 1.2 s after its last good
    // renewal was sent, and never leads alone.
    let stopped = wait_for(Duration::from_secs(5), || async {
        !nodes[0].is_ready().await && !nodes[1].is_ready().await
    })
    .await
    .expect("ssq stops serving without an etcd quorum");
    eprintln!("etcd quorum lost: no ssq instance serving {stopped:?} after");
    assert!(stopped < Duration::from_secs(2), "stopped after {stopped:?}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    for node in &nodes {
        assert!(
            !node.is_ready().await,
            "an instance serves without an etcd quorum"
        );
    }
    for member in lost_members {
        etcd.restart(member);
    }
    let back = Instant::now();
    let leader = leader_of(&nodes).await;
    eprintln!(
        "etcd quorum back: ssq serving {:?} after ({:?} after it was lost)",
        back.elapsed(),
        lost_at.elapsed()
    );
    let sqs = nodes[leader].client();
    assert!(send(&sqs, &url, "after").await);
    let mut bodies = drain(&sqs, &url).await;
    bodies.sort();
    assert_eq!(bodies, ["after", "before"]);
}

#[tokio::test]
async fn a_leader_cut_off_from_etcd_is_replaced_and_fenced_out_of_the_store() {
    let redis = RedisServer::start();
    let etcd = EtcdCluster::start(3);
    let mut relays = Vec::new();
    for member in 0..3 {
        relays.push(HoldingRelay::start(etcd.client_port(member)).await);
    }
    let ports: Vec<u16> = relays.iter().map(|relay| relay.port).collect();
    let cut = node(&redis, &etcd.url_of(&ports), "c1", &[]);
    wait_for(Duration::from_secs(15), || cut.is_ready())
        .await
        .expect("the first instance leads");
    let other = node(&redis, &etcd.url(), "c2", &[]);
    let sqs = cut.client();
    let url = create_queue_url(&sqs, "cut-off", &[]).await;
    assert!(send(&sqs, &url, "before").await);
    let epoch_before: u64 = redis_cli(redis.port, &["get", "{ssq}:epoch"])
        .trim()
        .parse()
        .unwrap();
    for relay in &relays {
        relay.cut_off();
    }
    let took = wait_for(Duration::from_secs(10), || other.is_ready())
        .await
        .expect("the other instance takes over");
    eprintln!("leader cut off from etcd: the other serving {took:?} after");
    assert!(!cut.is_ready().await, "the cut-off leader stepped down");
    // The store holds the successor's token: the old one's commits are refused.
    let holder = redis_cli(redis.port, &["get", "{ssq}:leader"]);
    assert!(holder.contains("|c2|"), "the store's fence names {holder}");
    let epoch_after: u64 = redis_cli(redis.port, &["get", "{ssq}:epoch"])
        .trim()
        .parse()
        .unwrap();
    assert!(epoch_after > epoch_before);
    let sqs = other.client();
    assert!(send(&sqs, &url, "after").await);
    for relay in &relays {
        relay.release();
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        !cut.is_ready().await,
        "the old leader stays passive once it hears etcd again"
    );
    assert!(other.is_ready().await);
    let mut bodies = drain(&sqs, &url).await;
    bodies.sort();
    assert_eq!(bodies, ["after", "before"]);
}

#[tokio::test]
async fn a_released_lock_is_seen_through_the_watch_not_at_the_next_try() {
    let redis = RedisServer::start();
    let etcd = EtcdCluster::start(3);
    let leader = node(&redis, &etcd.url(), "w1", &[]);
    wait_for(Duration::from_secs(15), || leader.is_ready())
        .await
        .expect("w1 leads");
    // A passive that would try only every 20 s.
    let passive = node_timed(&redis, &etcd.url(), "w2", &[("--lock-retry", "20s")]);
    tokio::time::sleep(Duration::from_secs(1)).await;
    leader.signal("TERM");
    let took = wait_for(Duration::from_secs(10), || passive.is_ready())
        .await
        .expect("the passive takes the released lock");
    eprintln!("lock released: the passive serving {took:?} after");
    assert!(took < Duration::from_secs(3), "took {took:?}");
}

#[tokio::test]
async fn in_a_sharded_group_each_shard_has_its_own_key_and_leader() {
    let redis = RedisServer::start();
    let etcd = EtcdCluster::start(3);
    let sharded = ["--shards", "4"];
    let nodes = [
        node(&redis, &etcd.url(), "s1", &sharded),
        node(&redis, &etcd.url(), "s2", &sharded),
    ];
    let shared = wait_for(Duration::from_secs(20), || async {
        let keys = etcd.keys("ssq/lock/");
        let held_by = |node: &str| {
            keys.iter()
                .filter(|(_, token)| token.contains(&format!("|{node}|")))
                .count()
        };
        keys.len() == 4 && held_by("s1") == 2 && held_by("s2") == 2
    })
    .await;
    assert!(shared.is_some(), "keys: {:?}", etcd.keys("ssq/lock/"));
    let names: Vec<String> = etcd.keys("ssq/lock/").into_iter().map(|(key, _)| key).collect();
    assert_eq!(names, ["ssq/lock/0", "ssq/lock/1", "ssq/lock/2", "ssq/lock/3"]);
    // Every queue is reachable from either instance, whichever shard it is on.
    let sqs = nodes[0].client();
    for n in 0..8 {
        let url = create_queue_url(&sqs, &format!("q{n}"), &[]).await;
        assert!(send(&nodes[1].client(), &url, "x").await, "queue q{n} through s2");
    }
}

#[test]
fn a_lock_url_without_a_shared_store_is_refused_at_start() {
    let output = std::process::Command::new(crate::common::ssq_binary())
        .args(["--listen", "127.0.0.1:0", "--lock-url", "etcd://127.0.0.1:2379"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let error = String::from_utf8_lossy(&output.stderr);
    assert!(
        error.contains("--lock-url needs a store the group shares"),
        "{error}"
    );
}

#[tokio::test]
async fn over_tls_a_client_certificate_is_what_lets_an_instance_lead() {
    let etcd = EtcdCluster::start_tls(3);
    let tls = etcd.tls.as_ref().unwrap();
    let (ca, cert, key) = (
        tls.ca.to_str().unwrap(),
        tls.server.to_str().unwrap(),
        tls.key.to_str().unwrap(),
    );
    let redis = RedisServer::start();
    let with_certificate = [
        "--lock-ca-file",
        ca,
        "--lock-cert-file",
        cert,
        "--lock-key-file",
        key,
    ];
    let nodes = [
        node(&redis, &etcd.url(), "t1", &with_certificate),
        node(&redis, &etcd.url(), "t2", &with_certificate),
    ];
    let first = leader_of(&nodes).await;
    let sqs = nodes[first].client();
    let url = create_queue_url(&sqs, "over-tls", &[]).await;
    assert!(send(&sqs, &url, "kept").await);
    nodes[first].signal("KILL");
    let took = wait_for(Duration::from_secs(10), || nodes[1 - first].is_ready())
        .await
        .expect("the other instance takes over through TLS");
    eprintln!("etcd over TLS: the passive serving {took:?} after the leader's kill");
    assert_eq!(drain(&nodes[1 - first].client(), &url).await, ["kept"]);
    // Trusting etcd's CA is not enough: etcd asks for a client certificate.
    let other_group = RedisServer::start();
    let without = node(&other_group, &etcd.url(), "t3", &["--lock-ca-file", ca]);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        !without.is_ready().await,
        "an instance without a client certificate leads"
    );
}

#[tokio::test]
async fn with_authentication_a_user_of_its_prefix_leads_and_signs_in_again_after_etcd_restarts() {
    let mut etcd = EtcdCluster::start(3);
    etcd.enable_auth("ssq", "s3cret", "team/");
    let lock_url = etcd.url().replace("etcd://", "etcd://ssq:s3cret@") + "/team";
    let redis = RedisServer::start();
    let nodes = [
        node(&redis, &lock_url, "a1", &[]),
        node(&redis, &lock_url, "a2", &[]),
    ];
    let first = leader_of(&nodes).await;
    assert_eq!(etcd.keys("team/lock/").len(), 1);
    let status = nodes[first].status().await;
    assert_eq!(status["storage"]["lock"], "etcd", "{status}");
    // Without --credentials anyone is an admin, and sees etcd's URL, but
    // never its password.
    let shown = status["storage"]["lock_url"].as_str().unwrap_or_default();
    assert!(shown.starts_with("etcd://ssq:***@127.0.0.1:"), "{status}");
    assert!(!status.to_string().contains("s3cret"));
    nodes[first].signal("KILL");
    let second = 1 - first;
    wait_for(Duration::from_secs(10), || nodes[second].is_ready())
        .await
        .expect("the other instance takes over, its lease and key within its permissions");
    // etcd's tokens live in its members' memory: after a restart of them
    // all, the token ssq holds is unknown, and it must sign in again.
    for member in 0..3 {
        etcd.kill(member);
    }
    for member in 0..3 {
        etcd.restart(member);
    }
    etcd.wait_for_leader(Duration::from_secs(20));
    wait_for(Duration::from_secs(15), || nodes[second].is_ready())
        .await
        .expect("the instance signs in again and leads");
    let other_group = RedisServer::start();
    let wrong = etcd.url().replace("etcd://", "etcd://ssq:wrong@") + "/team";
    let refused = node(&other_group, &wrong, "a3", &[]);
    let outside = etcd.url().replace("etcd://", "etcd://ssq:s3cret@") + "/elsewhere";
    let forbidden = node(&other_group, &outside, "a4", &["--redis-prefix", "other"]);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!refused.is_ready().await, "a wrong password leads");
    assert!(
        !forbidden.is_ready().await,
        "a key outside the user's permissions was taken"
    );
    // The first member of the URL down: signing in goes to the next. (A
    // group of its own: keys of its own, within the user's prefix.)
    etcd.kill(0);
    etcd.wait_for_leader(Duration::from_secs(20));
    let third_group = RedisServer::start();
    let late = node(&third_group, &format!("{lock_url}/third"), "a5", &[]);
    wait_for(Duration::from_secs(15), || late.is_ready())
        .await
        .expect("an instance signs in through the second member when the first is down");
}

#[tokio::test]
async fn a_stuck_etcd_endpoint_named_first_holds_up_nothing() {
    let etcd = EtcdCluster::start(3);
    // Takes connections (the kernel's backlog) and never answers.
    let stuck = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let stuck_port = stuck.local_addr().unwrap().port();
    let ports: Vec<u16> = std::iter::once(stuck_port)
        .chain((0..3).map(|m| etcd.client_port(m)))
        .collect();
    let lock_url = etcd.url_of(&ports);
    let redis = RedisServer::start();
    let started = Instant::now();
    let nodes = [
        node(&redis, &lock_url, "k1", &[]),
        node(&redis, &lock_url, "k2", &[]),
    ];
    let first = leader_of(&nodes).await;
    eprintln!(
        "a stuck endpoint first: leading {:?} after the start",
        started.elapsed()
    );
    for _ in 0..6 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(
            nodes[first].is_ready().await,
            "the leader stepped down beside a stuck endpoint"
        );
    }
    nodes[first].signal("KILL");
    let took = wait_for(Duration::from_secs(10), || nodes[1 - first].is_ready())
        .await
        .expect("the other instance takes over");
    assert!(took < Duration::from_secs(4), "took over after {took:?}");
    drop(stuck);
}
