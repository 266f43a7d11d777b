//! Chaos with a history checker, on each store: producers and consumers of
//! a standard queue (its messages in tenants: fair queues), a FIFO queue
//! and a FIFO topic with two FIFO queues subscribed (raw delivery, each
//! publication deduplicated by its body), consumers that leave some
//! messages to time out, and publishers to a standard topic with three HTTP
//! endpoints subscribed (`common::webhook`: one answers 500 to one first
//! try in five, one answers slowly, one never answers), while faults follow
//! each other.
//!
//! - Redis: three ssq instances on one Redis (AOF, fsync always), each
//!   reaching it through a relay that can hold its traffic back; the leader
//!   killed (SIGKILL) or stopped (SIGTERM) and started again, frozen
//!   (SIGSTOP) for seconds, its Redis traffic held back; Redis killed and
//!   started again, or stalled with `DEBUG SLEEP`; Redis restarted while
//!   the leader is frozen or held back.
//! - Postgres: three ssq instances on one Postgres (synchronous_commit
//!   on), each through a relay that can hold its traffic back; the leader
//!   killed, stopped, frozen or held back; Postgres killed whole (the
//!   postmaster and every backend) and started again, or frozen whole
//!   (SIGSTOP) for seconds; Postgres killed while the leader is frozen or
//!   held back.
//! - MariaDB (`--mysql-url`): the same faults as on Postgres, on one
//!   `mariadbd` (InnoDB, its log flushed at every commit).
//! - Disk: one ssq on `--data-dir`, killed (SIGKILL) or stopped (SIGTERM)
//!   and started again on the same directory, or frozen (SIGSTOP).
//! - etcd as the lock (`--lock-url`) beside Redis or Postgres: a
//!   three-member etcd, each instance reaching each member through a relay
//!   of its own; besides the store's faults above, etcd's leader killed and
//!   started again, a member frozen, a majority killed for a while (no
//!   instance may serve), and the ssq leader cut off from every member.
//!
//! Then everything heals, the consumers drain the queues, a patient sweep
//! looks for what is still missing, and the history of every call is
//! checked for messages lost (acknowledged, never delivered), resurrected
//! (delivered after their delete was acknowledged), delivered early (again
//! before their visibility timeout ran out) or out of order (a FIFO
//! group's message before the one sent before it), and FIFO messages
//! stored twice; an acknowledged publication must reach both subscribed
//! queues, once each, in order, and reach the two endpoints that answer at
//! least once each; nothing is delivered that was not sent.
//!
//! `make chaos` runs them all (they are `#[ignore]`d by `cargo test`): two
//! to three minutes each. `CHAOS_SECONDS` sets how long faults go on (default
//! 45), `CHAOS_SEED` replays a run's faults (each run prints its seed).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::webhook::{Answer, Receiver};
use crate::common::{
    Endpoints, EtcdCluster, HoldingRelay, MariadbServer, PostgresServer, RedisServer, Server, redis_cli,
    sns_client_for, subscribe_queue,
};
use crate::databases::DatabaseServer;
use crate::disk::DataDir;
use aws_sdk_sqs::types::QueueAttributeName;
use rand::{Rng, SeedableRng};

/// The queues' visibility timeout: a message not deleted comes back after it.
const VISIBILITY: Duration = Duration::from_secs(4);
const FIFO_GROUPS: usize = 6;
const STANDARD_PRODUCERS: usize = 2;
/// Message groups publishing to the topic.
const TOPIC_GROUPS: usize = 2;
/// The topic (its account and region are the defaults).
const TOPIC_ARN: &str = "arn:aws:sns:us-east-1:000000000000:chaos-topic.fifo";
/// Publishers to the standard topic with HTTP endpoints.
const HOOK_PUBLISHERS: usize = 2;
const HOOK_TOPIC_ARN: &str = "arn:aws:sns:us-east-1:000000000000:chaos-hooks";
/// The endpoints' delivery policy: tries a second apart, enough of them to
/// outlast a 500 or a slow answer, not a stuck endpoint.
const HOOK_POLICY: &str =
    r#"{"healthyRetryPolicy": {"minDelayTarget": 1, "maxDelayTarget": 1, "numRetries": 5}}"#;
/// The backlog sent before the faults: groups (FIFO and standard in turn)
/// of this many messages each.
const BACKLOG_GROUPS: usize = 20;
const BACKLOG_PER_GROUP: usize = 1_000;
/// How long a producer keeps trying one send before it gives up on it.
const SEND_PATIENCE: Duration = Duration::from_secs(20);
/// One delivery in this many is not deleted: it comes back when its
/// visibility timeout runs out.
const LEFT_TO_TIME_OUT: u32 = 20;
/// The final sweep gives up after this long without finding a missing
/// message.
const SWEEP_PATIENCE: Duration = Duration::from_secs(30);

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Kind {
    Standard,
    Fifo,
    /// Publications to the FIFO topic (sent only).
    Topic,
    /// The topic's two subscribed queues (delivered only).
    FanA,
    FanB,
    /// Publications to the standard topic with HTTP endpoints (sent only).
    Hook,
    /// What its two answering endpoints received (delivered only).
    HookA,
    HookB,
}

impl Kind {
    /// Whether its messages are FIFO: deduplicated and ordered by group.
    fn fifo(self) -> bool {
        !matches!(self, Kind::Standard | Kind::Hook | Kind::HookA | Kind::HookB)
    }

    /// The queue a consumer of this kind receives from.
    fn queue(self) -> &'static str {
        match self {
            Kind::Standard => "chaos",
            Kind::Fifo | Kind::Topic => "chaos.fifo",
            Kind::FanA => "chaos-fan-a.fifo",
            Kind::FanB => "chaos-fan-b.fifo",
            Kind::Hook | Kind::HookA | Kind::HookB => unreachable!("no queue: an HTTP endpoint"),
        }
    }

    /// Where an acknowledged send of this kind must be delivered.
    fn delivered_as(self) -> &'static [Kind] {
        match self {
            Kind::Standard => &[Kind::Standard],
            Kind::Topic => &[Kind::FanA, Kind::FanB],
            Kind::Hook => &[Kind::HookA, Kind::HookB],
            _ => &[Kind::Fifo],
        }
    }
}

struct Sent {
    body: String,
    acknowledged: bool,
}

/// One message in one acknowledged receive.
struct Delivery {
    body: String,
    message_id: String,
    /// When the receive was sent and when its answer came.
    asked_at: Instant,
    answered_at: Instant,
    /// The message's place in its receive's answer.
    place: usize,
}

#[derive(Default)]
struct History {
    sent: Vec<(Kind, Sent)>,
    delivered: Vec<(Kind, Delivery)>,
    /// Message id → when its delete was acknowledged.
    deleted: HashMap<String, Instant>,
}

/// Where the instances under test keep their state.
enum Backing {
    /// One Redis, each instance behind its own relay to it.
    Redis {
        redis: Mutex<RedisServer>,
        relays: Vec<HoldingRelay>,
    },
    /// One SQL database (Postgres, MariaDB), each instance behind its own
    /// relay to it.
    Database {
        database: Mutex<Box<dyn DatabaseServer>>,
        relays: Vec<HoldingRelay>,
    },
    /// One instance on a data directory.
    Disk(DataDir),
}

/// etcd as the lock beside the store (`--lock-url`): a three-member
/// cluster, each instance reaching each member through a relay of its own.
struct EtcdLock {
    cluster: Mutex<EtcdCluster>,
    /// `relays[slot][member]`.
    relays: Vec<Vec<HoldingRelay>>,
}

impl EtcdLock {
    async fn start(slots: usize) -> EtcdLock {
        let cluster = tokio::task::block_in_place(|| EtcdCluster::start(3));
        let mut relays = Vec::new();
        for _ in 0..slots {
            let mut of_slot = Vec::new();
            for member in 0..3 {
                of_slot.push(HoldingRelay::start(cluster.client_port(member)).await);
            }
            relays.push(of_slot);
        }
        let cluster = Mutex::new(cluster);
        EtcdLock { cluster, relays }
    }

    /// The flags of the instance in `slot`: etcd through its relays.
    fn flags(&self, slot: usize) -> Vec<String> {
        let ports: Vec<u16> = self.relays[slot].iter().map(|relay| relay.port).collect();
        vec![
            "--lock-url".to_string(),
            self.cluster.lock().unwrap().url_of(&ports),
        ]
    }

    /// Every member up and unfrozen, nothing held.
    fn heal(&self) {
        for relay in self.relays.iter().flatten() {
            relay.release();
        }
        let mut cluster = self.cluster.lock().unwrap();
        for member in 0..3 {
            match cluster.is_running(member) {
                true => cluster.signal(member, "CONT"),
                false => tokio::task::block_in_place(|| cluster.restart(member)),
            }
        }
    }

    /// One fault of etcd, or of the ssq leader's way to it.
    async fn fault(&self, leader: Option<usize>, rng: &mut rand::rngs::StdRng) -> String {
        let elected = tokio::task::block_in_place(|| self.cluster.lock().unwrap().leader());
        let pause = Duration::from_millis(rng.gen_range(500..2_500));
        let kill_for = |members: &[usize]| {
            tokio::task::block_in_place(|| {
                for &member in members {
                    self.cluster.lock().unwrap().kill(member);
                }
                std::thread::sleep(pause);
                for &member in members {
                    self.cluster.lock().unwrap().restart(member);
                }
            })
        };
        match (rng.gen_range(0..4), leader, elected) {
            (0, _, Some(member)) => {
                kill_for(&[member]);
                format!("etcd's leader (member {member}) SIGKILL for {pause:?}, started again")
            }
            (1, _, Some(member)) => {
                let others: Vec<usize> = (0..3).filter(|&other| other != member).collect();
                kill_for(&others);
                format!("etcd's quorum lost: members {others:?} SIGKILL for {pause:?}, started again")
            }
            (2, Some(slot), _) => {
                for relay in &self.relays[slot] {
                    relay.cut_off();
                }
                tokio::time::sleep(pause + Duration::from_secs(2)).await;
                for relay in &self.relays[slot] {
                    relay.release();
                }
                format!(
                    "the leader (slot {slot}) cut off from etcd for {:?}",
                    pause + Duration::from_secs(2)
                )
            }
            _ => {
                let member = rng.gen_range(0..3);
                self.cluster.lock().unwrap().signal(member, "STOP");
                tokio::time::sleep(pause).await;
                self.cluster.lock().unwrap().signal(member, "CONT");
                format!("etcd member {member} frozen (SIGSTOP) for {pause:?}")
            }
        }
    }
}

/// The group under test: instances in slots (a killed one is started again
/// in its slot, on a new port).
struct Group {
    backing: Backing,
    /// With `--lock-url`: etcd, the lock beside the store.
    lock: Option<EtcdLock>,
    servers: Mutex<Vec<Option<Server>>>,
    endpoints: Endpoints,
}

impl Group {
    async fn start(backing: Backing) -> Group {
        Group::start_locked(backing, None).await
    }

    /// The group, its lock in etcd if `lock` is given.
    async fn start_locked(backing: Backing, lock: Option<EtcdLock>) -> Group {
        let slots = match &backing {
            Backing::Redis { relays, .. } | Backing::Database { relays, .. } => relays.len(),
            Backing::Disk(_) => 1,
        };
        let group = Group {
            backing,
            lock,
            servers: Mutex::new((0..slots).map(|_| None).collect()),
            endpoints: Endpoints::default(),
        };
        for slot in 0..slots {
            group.start_in(slot);
        }
        group
    }

    fn start_in(&self, slot: usize) {
        let flags = self
            .lock
            .as_ref()
            .map(|lock| lock.flags(slot))
            .unwrap_or_default();
        let extra: Vec<&str> = flags.iter().map(String::as_str).collect();
        let server = tokio::task::block_in_place(|| match &self.backing {
            Backing::Redis { relays, .. } => {
                Server::start_node_with(&relays[slot].url(), &format!("chaos-{slot}"), &extra)
            }
            Backing::Database { database, relays } => {
                database
                    .lock()
                    .unwrap()
                    .node_via(relays[slot].port, &format!("chaos-{slot}"), &extra)
            }
            Backing::Disk(dir) => Server::start_with(&["--data-dir", dir.path()]),
        });
        self.endpoints.set_at(slot, server.url.clone());
        self.servers.lock().unwrap()[slot] = Some(server);
    }

    /// Every instance and its store up, nothing held or frozen.
    fn heal(&self) {
        if let Some(lock) = &self.lock {
            lock.heal();
        }
        if let Backing::Redis { redis, relays } = &self.backing {
            for relay in relays {
                relay.release();
            }
            if !redis.lock().unwrap().is_running() {
                tokio::task::block_in_place(|| redis.lock().unwrap().restart());
            }
        }
        if let Backing::Database { database, relays } = &self.backing {
            for relay in relays {
                relay.release();
            }
            let mut database = database.lock().unwrap();
            match database.is_running() {
                true => database.signal("CONT"),
                false => tokio::task::block_in_place(|| database.restart()),
            }
        }
        let slots = self.servers.lock().unwrap().len();
        for slot in 0..slots {
            self.signal(slot, "CONT");
            if self.servers.lock().unwrap()[slot].is_none() {
                self.start_in(slot);
            }
        }
    }

    /// A client of every instance, in slot order.
    fn clients(&self) -> Vec<aws_sdk_sqs::Client> {
        self.endpoints.clients()
    }

    /// The slot of the instance that says it is ready, if one does.
    async fn leader(&self) -> Option<usize> {
        let urls = self.endpoints.urls();
        let http = reqwest::Client::builder()
            .timeout(Duration::from_millis(300))
            .build()
            .unwrap();
        for (slot, url) in urls.iter().enumerate() {
            if let Ok(response) = http.get(format!("{url}/ready")).send().await
                && response.status() == 200
            {
                return Some(slot);
            }
        }
        None
    }

    fn signal(&self, slot: usize, name: &str) {
        if let Some(server) = &self.servers.lock().unwrap()[slot] {
            server.signal(name);
        }
    }

    /// Stops the instance in `slot` with `signal` and waits until it has
    /// exited (dropping it kills what is left).
    fn kill(&self, slot: usize, signal: &str) {
        let server = self.servers.lock().unwrap()[slot].take();
        if let Some(mut server) = server {
            server.signal(signal);
            tokio::task::block_in_place(|| server.wait_exit(Duration::from_secs(35)));
        }
    }
}

fn queue_url(name: &str) -> String {
    crate::common::queue_url(name)
}

/// Publishes `body` to the topic until an instance acknowledges it or
/// patience runs out (deduplicated by its body, so a retry is no second
/// publication).
async fn publish(group: &Group, kind: Kind, body: &str, group_id: &str, stop: &AtomicBool) -> bool {
    let started = Instant::now();
    while started.elapsed() < SEND_PATIENCE {
        for url in group.endpoints.urls() {
            let request = sns_client_for(&url).publish().message(body);
            // The standard topic deduplicates nothing: a publication
            // retried after an answer that was lost may reach an endpoint
            // twice, which at-least-once allows.
            let request = match kind {
                Kind::Hook => request.topic_arn(HOOK_TOPIC_ARN),
                _ => request
                    .topic_arn(TOPIC_ARN)
                    .message_group_id(group_id)
                    .message_deduplication_id(body),
            }
            .send();
            if matches!(
                tokio::time::timeout(Duration::from_secs(5), request).await,
                Ok(Ok(_))
            ) {
                return true;
            }
        }
        if stop.load(Ordering::Relaxed) && started.elapsed() > Duration::from_secs(5) {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// Sends `body` until an instance acknowledges it or patience runs out.
async fn send(group: &Group, kind: Kind, body: &str, group_id: &str, stop: &AtomicBool) -> bool {
    if matches!(kind, Kind::Topic | Kind::Hook) {
        return publish(group, kind, body, group_id, stop).await;
    }
    let started = Instant::now();
    while started.elapsed() < SEND_PATIENCE {
        for sqs in group.clients() {
            let request = sqs.send_message().message_body(body);
            let request = match kind {
                // A tenant of its own (fair queues), so that choosing among
                // tenants and finding them again after a load run too.
                Kind::Standard => request.queue_url(queue_url("chaos")).message_group_id(group_id),
                _ => request
                    .queue_url(queue_url(kind.queue()))
                    .message_group_id(group_id)
                    .message_deduplication_id(body),
            };
            let answer = tokio::time::timeout(Duration::from_secs(5), request.send()).await;
            if matches!(answer, Ok(Ok(_))) {
                return true;
            }
        }
        if stop.load(Ordering::Relaxed) && started.elapsed() > Duration::from_secs(5) {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

async fn produce(
    group: Arc<Group>,
    history: Arc<Mutex<History>>,
    kind: Kind,
    name: String,
    stop: Arc<AtomicBool>,
) {
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        let body = format!("{name}-{n}");
        let acknowledged = send(&group, kind, &body, &name, &stop).await;
        history
            .lock()
            .unwrap()
            .sent
            .push((kind, Sent { body, acknowledged }));
        n += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Receives and deletes until `stop`, with the handle just received,
/// leaving one delivery in [`LEFT_TO_TIME_OUT`] (chosen by `seed`) to come
/// back when its visibility timeout runs out.
async fn consume(
    group: Arc<Group>,
    history: Arc<Mutex<History>>,
    kind: Kind,
    seed: u64,
    stop: Arc<AtomicBool>,
) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let url = queue_url(kind.queue());
    while !stop.load(Ordering::Relaxed) {
        let mut answered = false;
        for sqs in group.clients() {
            let asked_at = Instant::now();
            let receive = sqs
                .receive_message()
                .queue_url(&url)
                .max_number_of_messages(10)
                .wait_time_seconds(1)
                .send();
            let Ok(Ok(out)) = tokio::time::timeout(Duration::from_secs(5), receive).await else {
                continue;
            };
            let answered_at = Instant::now();
            answered = true;
            for (place, message) in out.messages().iter().enumerate() {
                let (body, id) = (
                    message.body().unwrap_or_default(),
                    message.message_id().unwrap_or_default(),
                );
                history.lock().unwrap().delivered.push((
                    kind,
                    Delivery {
                        body: body.to_string(),
                        message_id: id.to_string(),
                        asked_at,
                        answered_at,
                        place,
                    },
                ));
                if rng.gen_range(0..LEFT_TO_TIME_OUT) == 0 {
                    continue;
                }
                let delete = sqs
                    .delete_message()
                    .queue_url(&url)
                    .receipt_handle(message.receipt_handle().unwrap_or_default())
                    .send();
                if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_secs(5), delete).await {
                    history
                        .lock()
                        .unwrap()
                        .deleted
                        .insert(id.to_string(), Instant::now());
                }
            }
            break;
        }
        if !answered {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// One fault, chosen by `rng`, for the group's store.
async fn fault(group: &Group, rng: &mut rand::rngs::StdRng) -> String {
    if let Some(lock) = &group.lock
        && rng.gen_bool(0.4)
    {
        return lock.fault(group.leader().await, rng).await;
    }
    match &group.backing {
        Backing::Redis { redis, relays } => redis_fault(group, redis, relays, rng).await,
        Backing::Database { database, relays } => database_fault(group, database, relays, rng).await,
        Backing::Disk(_) => disk_fault(group, rng).await,
    }
}

/// One fault of a group on a SQL database: the leader's (as on Redis), or
/// the database's own, killed or frozen whole.
async fn database_fault(
    group: &Group,
    database: &Mutex<Box<dyn DatabaseServer>>,
    relays: &[HoldingRelay],
    rng: &mut rand::rngs::StdRng,
) -> String {
    let leader = group.leader().await;
    let name = database.lock().unwrap().name();
    let choice = rng.gen_range(0..8);
    let restart = || {
        tokio::task::block_in_place(|| {
            let mut database = database.lock().unwrap();
            database.kill();
            std::thread::sleep(Duration::from_millis(300));
            database.restart();
        })
    };
    match (choice, leader) {
        (0..=3, Some(slot)) => leader_fault(group, relays, slot, choice, rng, name).await,
        (4, Some(slot)) => {
            let stop = rng.gen_bool(0.5);
            restart_while_leader_away(group, relays, slot, stop, rng, name, restart).await
        }
        (5 | 6, _) => {
            tokio::task::block_in_place(|| database.lock().unwrap().kill());
            tokio::time::sleep(Duration::from_millis(rng.gen_range(100..1_500))).await;
            tokio::task::block_in_place(|| database.lock().unwrap().restart());
            format!("{name} SIGKILL, started again")
        }
        _ => {
            let frozen = Duration::from_millis(rng.gen_range(1_000..3_000));
            database.lock().unwrap().signal("STOP");
            tokio::time::sleep(frozen).await;
            database.lock().unwrap().signal("CONT");
            format!("{name} frozen whole (SIGSTOP) for {frozen:?}")
        }
    }
}

/// One fault of the lone instance on a data directory: SIGKILL or
/// SIGTERM and started again on the same directory, or frozen.
async fn disk_fault(group: &Group, rng: &mut rand::rngs::StdRng) -> String {
    match rng.gen_range(0..6) {
        0 | 1 => {
            group.kill(0, "KILL");
            tokio::time::sleep(Duration::from_millis(rng.gen_range(100..1_000))).await;
            group.start_in(0);
            "SIGKILL, started again".to_string()
        }
        2..=4 => {
            group.kill(0, "TERM");
            group.start_in(0);
            "SIGTERM, started again".to_string()
        }
        _ => {
            let frozen = Duration::from_millis(rng.gen_range(2_500..4_000));
            group.signal(0, "STOP");
            tokio::time::sleep(frozen).await;
            group.signal(0, "CONT");
            format!("SIGSTOP for {frozen:?}")
        }
    }
}

/// One fault of a Redis-backed group.
async fn redis_fault(
    group: &Group,
    redis: &Mutex<RedisServer>,
    relays: &[HoldingRelay],
    rng: &mut rand::rngs::StdRng,
) -> String {
    let leader = group.leader().await;
    let choice = rng.gen_range(0..9);
    let restart = || {
        tokio::task::block_in_place(|| {
            let mut redis = redis.lock().unwrap();
            redis.kill();
            std::thread::sleep(Duration::from_millis(300));
            redis.restart();
        })
    };
    match (choice, leader) {
        // Redis killed and started again while the leader is frozen or its
        // traffic held back: the mix that failed in issue 27.
        (7 | 8, Some(slot)) => {
            restart_while_leader_away(group, relays, slot, choice == 7, rng, "Redis", restart).await
        }
        (0..=3, Some(slot)) => leader_fault(group, relays, slot, choice, rng, "Redis").await,
        (4 | 5, _) => {
            redis.lock().unwrap().kill();
            tokio::time::sleep(Duration::from_millis(rng.gen_range(100..1_500))).await;
            tokio::task::block_in_place(|| redis.lock().unwrap().restart());
            "Redis SIGKILL, started again".to_string()
        }
        _ => {
            let port = redis.lock().unwrap().port;
            let seconds = rng.gen_range(1..3);
            std::thread::spawn(move || redis_cli(port, &["DEBUG", "SLEEP", &seconds.to_string()]));
            tokio::time::sleep(Duration::from_secs(seconds)).await;
            format!("Redis DEBUG SLEEP {seconds}")
        }
    }
}

/// A fault of the leader in `slot` (`which`, 0 to 3): SIGKILL or SIGTERM and
/// started again, frozen (SIGSTOP), or its traffic to the store held back.
async fn leader_fault(
    group: &Group,
    relays: &[HoldingRelay],
    slot: usize,
    which: u32,
    rng: &mut rand::rngs::StdRng,
    store: &str,
) -> String {
    match which {
        0 => {
            group.kill(slot, "KILL");
            tokio::time::sleep(Duration::from_millis(rng.gen_range(200..1500))).await;
            group.start_in(slot);
            format!("SIGKILL of the leader (slot {slot}), started again")
        }
        1 => {
            group.kill(slot, "TERM");
            group.start_in(slot);
            format!("SIGTERM of the leader (slot {slot}), started again")
        }
        2 => {
            let frozen = Duration::from_millis(rng.gen_range(2_000..4_000));
            group.signal(slot, "STOP");
            tokio::time::sleep(frozen).await;
            group.signal(slot, "CONT");
            format!("SIGSTOP of the leader (slot {slot}) for {frozen:?}")
        }
        _ => {
            let held = Duration::from_millis(rng.gen_range(2_500..4_000));
            relays[slot].hold();
            tokio::time::sleep(held).await;
            relays[slot].release();
            format!("the leader's (slot {slot}) {store} traffic held back for {held:?}")
        }
    }
}

/// The store killed and started again (`restart`) while the leader in
/// `slot` is frozen (`stop`) or its traffic held back.
async fn restart_while_leader_away(
    group: &Group,
    relays: &[HoldingRelay],
    slot: usize,
    stop: bool,
    rng: &mut rand::rngs::StdRng,
    store: &str,
    restart: impl FnOnce(),
) -> String {
    match stop {
        true => group.signal(slot, "STOP"),
        false => relays[slot].hold(),
    }
    tokio::time::sleep(Duration::from_millis(rng.gen_range(300..1_500))).await;
    restart();
    tokio::time::sleep(Duration::from_millis(rng.gen_range(300..2_000))).await;
    match stop {
        true => group.signal(slot, "CONT"),
        false => relays[slot].release(),
    }
    let how = if stop { "frozen" } else { "held back" };
    format!("{store} SIGKILL and restart while the leader (slot {slot}) is {how}")
}

/// Acknowledged sends not delivered yet, by the queue (kind) each should
/// have come from: a publication from each of the topic's queues.
fn missing(history: &History) -> Vec<(Kind, &str)> {
    let delivered: std::collections::HashSet<(Kind, &str)> = history
        .delivered
        .iter()
        .map(|(kind, d)| (*kind, d.body.as_str()))
        .collect();
    history
        .sent
        .iter()
        .filter(|(_, s)| s.acknowledged)
        .flat_map(|(kind, s)| kind.delivered_as().iter().map(|to| (*to, s.body.as_str())))
        .filter(|key| !delivered.contains(key))
        .collect()
}

/// What the history breaks, one line each.
fn violations(history: &History) -> Vec<String> {
    let mut found = missing(history)
        .into_iter()
        .map(|(kind, body)| format!("lost: {body} was acknowledged and never delivered from {kind:?}"))
        .collect::<Vec<_>>();
    let sent: std::collections::HashSet<&str> = history.sent.iter().map(|(_, s)| s.body.as_str()).collect();
    for (kind, delivery) in &history.delivered {
        if !sent.contains(delivery.body.as_str()) {
            found.push(format!(
                "invented: {kind:?} delivered {:?}, which was never sent",
                delivery.body
            ));
        }
    }
    let mut by_id: HashMap<&str, Vec<&Delivery>> = HashMap::new();
    for (_, delivery) in &history.delivered {
        by_id
            .entry(delivery.message_id.as_str())
            .or_default()
            .push(delivery);
    }
    for (id, deliveries) in &mut by_id {
        deliveries.sort_by_key(|d| d.asked_at);
        if let Some(deleted_at) = history.deleted.get(*id)
            && let Some(late) = deliveries.iter().find(|d| d.asked_at > *deleted_at)
        {
            found.push(format!(
                "resurrected: {} delivered again after its delete was acknowledged",
                late.body
            ));
        }
        for pair in deliveries.windows(2) {
            let tolerance = Duration::from_millis(100);
            if pair[1].answered_at + tolerance < pair[0].asked_at + VISIBILITY {
                found.push(format!(
                    "early: {} delivered again {:?} after it was received, within its visibility timeout",
                    pair[0].body,
                    pair[1].answered_at - pair[0].asked_at
                ));
            }
        }
    }
    // FIFO: one message id per body (deduplication), and each group's first
    // deliveries in the order its messages were sent (each after the last
    // was acknowledged).
    // Each queue apart: the topic's copies share their bodies.
    let mut ids_of_body: HashMap<(Kind, &str), std::collections::BTreeSet<&str>> = HashMap::new();
    let mut firsts: BTreeMap<(String, usize), &Delivery> = BTreeMap::new();
    for (kind, delivery) in &history.delivered {
        if !kind.fifo() {
            continue;
        }
        ids_of_body
            .entry((*kind, &delivery.body))
            .or_default()
            .insert(&delivery.message_id);
        let (group, n) = delivery.body.rsplit_once('-').expect("bodies are group-n");
        let key = (format!("{kind:?} {group}"), n.parse().expect("a number"));
        let first = firsts.entry(key).or_insert(delivery);
        if (delivery.asked_at, delivery.place) < (first.asked_at, first.place) {
            *first = delivery;
        }
    }
    for ((kind, body), ids) in ids_of_body {
        if ids.len() > 1 {
            found.push(format!(
                "stored twice: {kind:?} {body} delivered under {} message ids",
                ids.len()
            ));
        }
    }
    let firsts: Vec<(&(String, usize), &&Delivery)> = firsts.iter().collect();
    for pair in firsts.windows(2) {
        let ((group, n), earlier) = pair[0];
        let ((next_group, m), later) = pair[1];
        if group != next_group {
            continue;
        }
        let same_answer = earlier.asked_at == later.asked_at && earlier.answered_at == later.answered_at;
        let out_of_order = if same_answer {
            later.place < earlier.place
        } else {
            later.answered_at < earlier.asked_at
        };
        if out_of_order {
            found.push(format!(
                "out of order: {group}-{m} was first delivered before {group}-{n}"
            ));
        }
    }
    found
}

/// The patient sweep: while acknowledged messages are still missing, the
/// consumers go on receiving, until none is or [`SWEEP_PATIENCE`] passes
/// without one turning up (an instance that holds messages and never
/// hands them out has lost them for its users).
async fn sweep(history: &Mutex<History>) {
    let missing = || missing(&history.lock().unwrap()).len();
    let mut last = missing();
    let mut progress_at = Instant::now();
    while last > 0 && progress_at.elapsed() < SWEEP_PATIENCE {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = missing();
        if now < last {
            progress_at = Instant::now();
        }
        last = now;
    }
    if last > 0 {
        eprintln!("chaos: the sweep ends with {last} acknowledged messages never delivered");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "a two-minute fault run: make chaos"]
async fn on_redis_no_fault_loses_resurrects_hastens_or_reorders_a_message() {
    run(on_redis(None).await).await;
}

/// Three instances on one Redis (AOF, fsync always), each behind its own
/// relay, the lock in etcd if `lock` is given.
async fn on_redis(lock: Option<EtcdLock>) -> Group {
    let redis = RedisServer::start_with(&["--appendonly", "yes", "--appendfsync", "always"]);
    let mut relays = Vec::new();
    for _ in 0..3 {
        relays.push(HoldingRelay::start(redis.port).await);
    }
    let redis = Mutex::new(redis);
    Group::start_locked(Backing::Redis { redis, relays }, lock).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "a two-minute fault run: make chaos"]
async fn on_postgres_no_fault_loses_resurrects_hastens_or_reorders_a_message() {
    let postgres = PostgresServer::start();
    run(on_database(postgres.port, Box::new(postgres)).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "a two-minute fault run: make chaos"]
async fn on_mariadb_no_fault_loses_resurrects_hastens_or_reorders_a_message() {
    let mariadb = MariadbServer::start();
    run(on_database(mariadb.port, Box::new(mariadb)).await).await;
}

/// Three instances on `database` (listening on `port`), each behind its own relay.
async fn on_database(port: u16, database: Box<dyn DatabaseServer>) -> Group {
    on_database_locked(port, database, None).await
}

/// The same, the lock in etcd if `lock` is given.
async fn on_database_locked(port: u16, database: Box<dyn DatabaseServer>, lock: Option<EtcdLock>) -> Group {
    let mut relays = Vec::new();
    for _ in 0..3 {
        relays.push(HoldingRelay::start(port).await);
    }
    let database = Mutex::new(database);
    Group::start_locked(Backing::Database { database, relays }, lock).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "a two-minute fault run: make chaos"]
async fn on_redis_with_etcd_as_the_lock_no_fault_loses_resurrects_hastens_or_reorders_a_message() {
    run(on_redis(Some(EtcdLock::start(3).await)).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "a two-minute fault run: make chaos"]
async fn on_postgres_with_etcd_as_the_lock_no_fault_loses_resurrects_hastens_or_reorders_a_message() {
    let postgres = PostgresServer::start();
    let lock = EtcdLock::start(3).await;
    run(on_database_locked(postgres.port, Box::new(postgres), Some(lock)).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "a two-minute fault run: make chaos"]
async fn on_disk_no_fault_loses_resurrects_hastens_or_reorders_a_message() {
    run(Group::start(Backing::Disk(DataDir::new("chaos"))).await).await;
}

/// The standard topic with its three HTTP endpoints, subscribed with raw
/// delivery and confirmed: the two that answer (one with 500 to one first
/// try in five, one slowly), by the kind their deliveries are recorded
/// under, and the stuck one, which must only never be handed anything
/// invented.
async fn hook_endpoints(sns: &aws_sdk_sns::Client) -> Vec<(Kind, Arc<Receiver>)> {
    sns.create_topic().name("chaos-hooks").send().await.unwrap();
    let answers = [
        (Kind::HookA, Answer::FailFirstTryOneIn(5)),
        (Kind::HookB, Answer::Trickle(Duration::from_millis(1))),
        (Kind::Hook, Answer::Stuck),
    ];
    let mut hooks = Vec::new();
    for (kind, answer) in answers {
        let receiver = Arc::new(Receiver::start(Answer::Healthy).await);
        sns.subscribe()
            .topic_arn(HOOK_TOPIC_ARN)
            .protocol("http")
            .endpoint(&receiver.url)
            .attributes("RawMessageDelivery", "true")
            .attributes("DeliveryPolicy", HOOK_POLICY)
            .send()
            .await
            .unwrap();
        let confirmed = crate::common::wait_for(Duration::from_secs(10), || async {
            receiver.confirm_all().await > 0
        })
        .await;
        assert!(confirmed.is_some(), "{} confirmed its subscription", receiver.url);
        receiver.answer(answer);
        hooks.push((kind, receiver));
    }
    hooks
}

/// Records what an HTTP endpoint receives as deliveries of `kind`, until
/// `stop` (each request apart: an endpoint may get one twice).
async fn listen(receiver: Arc<Receiver>, kind: Kind, history: Arc<Mutex<History>>, stop: Arc<AtomicBool>) {
    let mut seen = 0;
    loop {
        let stopping = stop.load(Ordering::Relaxed);
        let received = receiver.received();
        let now = Instant::now();
        let delivered = received
            .iter()
            .enumerate()
            .skip(seen)
            .filter(|(_, request)| request.kind == "Notification");
        let delivered: Vec<_> = delivered
            .map(|(n, request)| {
                let delivery = Delivery {
                    body: request.body.clone(),
                    message_id: format!("{kind:?}-{n}"),
                    asked_at: now,
                    answered_at: now,
                    place: 0,
                };
                (kind, delivery)
            })
            .collect();
        history.lock().unwrap().delivered.extend(delivered);
        seen = received.len();
        if stopping {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The run: a backlog, producers and consumers under faults, healing,
/// draining, the sweep, then the check.
async fn run(group: Group) {
    let fault_time = Duration::from_secs(
        std::env::var("CHAOS_SECONDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(45),
    );
    let seed = std::env::var("CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::thread_rng().r#gen::<u64>());
    eprintln!("chaos: seed {seed} (CHAOS_SEED={seed} replays these faults), {fault_time:?} of faults");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);

    let group = Arc::new(group);
    let leader = crate::common::wait_for(Duration::from_secs(15), || async {
        group.leader().await.is_some()
    })
    .await;
    assert!(leader.is_some(), "the group has a leader");
    let sqs = group.clients()[group.leader().await.unwrap()].clone();
    for (name, fifo) in [("chaos", false), ("chaos.fifo", true)] {
        let mut create = sqs.create_queue().queue_name(name).attributes(
            QueueAttributeName::VisibilityTimeout,
            VISIBILITY.as_secs().to_string(),
        );
        if fifo {
            create = create.attributes(QueueAttributeName::FifoQueue, "true");
        }
        create.send().await.unwrap();
    }
    let sns = sns_client_for(&group.endpoints.urls()[group.leader().await.unwrap()]);
    let topic = sns
        .create_topic()
        .name("chaos-topic.fifo")
        .attributes("FifoTopic", "true")
        .send()
        .await
        .unwrap();
    assert_eq!(topic.topic_arn(), Some(TOPIC_ARN));
    for kind in [Kind::FanA, Kind::FanB] {
        let url = queue_url(kind.queue());
        sqs.create_queue()
            .queue_name(kind.queue())
            .attributes(
                QueueAttributeName::VisibilityTimeout,
                VISIBILITY.as_secs().to_string(),
            )
            .attributes(QueueAttributeName::FifoQueue, "true")
            .send()
            .await
            .unwrap();
        subscribe_queue(&sns, &sqs, TOPIC_ARN, &url, &[("RawMessageDelivery", "true")]).await;
    }
    let hooks = hook_endpoints(&sns).await;

    let history = Arc::new(Mutex::new(History::default()));
    // A backlog, so that every load reads several HSCAN pages of each hash:
    // faults then strike in the middle of loads too.
    let backlog: Vec<_> = (0..BACKLOG_GROUPS)
        .map(|g| {
            let (sqs, history) = (sqs.clone(), history.clone());
            tokio::spawn(async move {
                let kind = if g % 2 == 0 { Kind::Fifo } else { Kind::Standard };
                let url = queue_url(kind.queue());
                for batch in 0..BACKLOG_PER_GROUP / 10 {
                    let bodies: Vec<String> = (0..10).map(|i| format!("b{g}-{}", batch * 10 + i)).collect();
                    let entries = bodies.iter().enumerate().map(|(i, body)| {
                        let entry = aws_sdk_sqs::types::SendMessageBatchRequestEntry::builder()
                            .id(i.to_string())
                            .message_body(body);
                        match kind {
                            // Tenants with a backlog: noisy while consumed.
                            Kind::Standard => entry.message_group_id(format!("b{g}")),
                            _ => entry
                                .message_group_id(format!("b{g}"))
                                .message_deduplication_id(body),
                        }
                        .build()
                        .unwrap()
                    });
                    let out = sqs
                        .send_message_batch()
                        .queue_url(&url)
                        .set_entries(Some(entries.collect()))
                        .send()
                        .await
                        .expect("the backlog is sent before any fault");
                    assert!(out.failed().is_empty());
                    let mut history = history.lock().unwrap();
                    for body in bodies {
                        history.sent.push((
                            kind,
                            Sent {
                                body,
                                acknowledged: true,
                            },
                        ));
                    }
                }
            })
        })
        .collect();
    for task in backlog {
        task.await.unwrap();
    }
    let (producing, consuming) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
    let names = (0..STANDARD_PRODUCERS)
        .map(|p| (Kind::Standard, format!("s{p}")))
        .chain((0..FIFO_GROUPS).map(|g| (Kind::Fifo, format!("g{g}"))))
        .chain((0..TOPIC_GROUPS).map(|g| (Kind::Topic, format!("t{g}"))))
        .chain((0..HOOK_PUBLISHERS).map(|p| (Kind::Hook, format!("h{p}"))));
    let producers: Vec<_> = names
        .map(|(kind, name)| {
            tokio::spawn(produce(
                group.clone(),
                history.clone(),
                kind,
                name,
                producing.clone(),
            ))
        })
        .collect();
    let consumers: Vec<_> = [
        Kind::Standard,
        Kind::Standard,
        Kind::Fifo,
        Kind::Fifo,
        Kind::Fifo,
        Kind::FanA,
        Kind::FanB,
    ]
    .into_iter()
    .enumerate()
    .map(|(n, kind)| {
        let seed = seed.wrapping_add(n as u64 + 1);
        tokio::spawn(consume(
            group.clone(),
            history.clone(),
            kind,
            seed,
            consuming.clone(),
        ))
    })
    .collect();
    let listening: Vec<_> = hooks
        .iter()
        .map(|(kind, receiver)| {
            tokio::spawn(listen(
                receiver.clone(),
                *kind,
                history.clone(),
                consuming.clone(),
            ))
        })
        .collect();

    let faults_end = Instant::now() + fault_time;
    while Instant::now() < faults_end {
        let what = fault(&group, &mut rng).await;
        eprintln!("chaos: {what}");
        tokio::time::sleep(Duration::from_millis(rng.gen_range(500..2_500))).await;
    }
    group.heal();
    producing.store(true, Ordering::Relaxed);
    for producer in producers {
        producer.await.unwrap();
    }
    // Drain: until nothing was delivered for twice the visibility timeout.
    let drain_end = Instant::now() + Duration::from_secs(180);
    loop {
        let last = history
            .lock()
            .unwrap()
            .delivered
            .last()
            .map(|(_, d)| d.answered_at);
        let quiet = last.is_none_or(|last| last.elapsed() > VISIBILITY * 2);
        if quiet || Instant::now() > drain_end {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    sweep(&history).await;
    consuming.store(true, Ordering::Relaxed);
    for task in consumers.into_iter().chain(listening) {
        task.await.unwrap();
    }
    drop(hooks);

    let history = history.lock().unwrap();
    let acknowledged = history.sent.iter().filter(|(_, s)| s.acknowledged).count();
    let count = |kinds: &[Kind]| {
        history
            .sent
            .iter()
            .filter(|(kind, _)| kinds.contains(kind))
            .count()
    };
    let (published, hooked) = (count(&[Kind::Topic, Kind::Hook]), count(&[Kind::Hook]));
    let received = history
        .delivered
        .iter()
        .filter(|(kind, _)| matches!(kind, Kind::HookA | Kind::HookB))
        .count();
    eprintln!(
        "chaos: {} sends ({acknowledged} acknowledged, {published} of them publications, {hooked} to the topic with \
         HTTP endpoints), {} deliveries ({received} to HTTP endpoints), {} deletes acknowledged",
        history.sent.len(),
        history.delivered.len(),
        history.deleted.len()
    );
    let found = violations(&history);
    for violation in found.iter().take(40) {
        eprintln!("chaos: {violation}");
    }
    assert!(
        found.is_empty(),
        "{} violations (seed {seed}); the first: {:?}",
        found.len(),
        found.first()
    );
}
