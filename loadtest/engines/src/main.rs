//! ssq's write pattern against three embedded engines (redb, SQLite, fjall):
//! group commits of 1 to 30 writes, deletes as frequent as inserts. Two
//! patterns:
//! - `mixed`: each message written once as a body and a state record, later
//!   removed; bodies from 100 bytes to 1 MiB;
//! - `roundtrip`: what `make bench`'s round trip asks of the store: 256-byte
//!   bodies, each message sent (its body), received (its state), deleted
//!   (both removed).
//!
//! Prints commits and writes per second, the process's CPU time per write
//! (every thread, an engine's background work included), commit latency
//! percentiles and the files' size against the live data at the end.
//!
//! Run: `cargo run --release --manifest-path loadtest/engines/Cargo.toml -- DIR [SECONDS] [mixed|roundtrip]`
//! (DIR on the disk to measure; each engine runs for SECONDS, 10 by default).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// One group commit: the requests it carries, messages sent (seq, body
/// size), state records written and messages deleted (body and state).
struct Commit {
    /// A send in the mixed pattern writes a body and a state: one request.
    requests: usize,
    sends: Vec<(u64, usize)>,
    states: Vec<u64>,
    deletes: Vec<u64>,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Mixed,
    RoundTrip,
}

/// The same pattern for every engine: a seeded stream of commits.
struct Pattern {
    kind: Kind,
    rng: StdRng,
    next_seq: u64,
    /// Sent and not yet deleted; in the round trip, not yet received.
    live: VecDeque<(u64, usize)>,
    /// The round trip's received messages, not yet deleted.
    received: VecDeque<(u64, usize)>,
}

/// The round trip's body size, as `make bench` sends.
const ROUND_TRIP_BODY: usize = 256;

impl Pattern {
    fn new(kind: Kind) -> Pattern {
        Pattern {
            kind,
            rng: StdRng::seed_from_u64(29),
            next_seq: 1,
            live: VecDeque::new(),
            received: VecDeque::new(),
        }
    }

    /// Bodies: mostly small, some of a few KiB, a few of 256 KiB to 1 MiB.
    fn body_size(&mut self) -> usize {
        match self.rng.gen_range(0..1000) {
            0..=799 => self.rng.gen_range(100..1024),
            800..=989 => self.rng.gen_range(1024..16 * 1024),
            990..=997 => self.rng.gen_range(16 * 1024..256 * 1024),
            _ => self.rng.gen_range(256 * 1024..=1024 * 1024),
        }
    }

    fn next(&mut self) -> Commit {
        let writes = self.rng.gen_range(1..=30);
        let mut commit = Commit {
            requests: writes,
            sends: Vec::new(),
            states: Vec::new(),
            deletes: Vec::new(),
        };
        if self.kind == Kind::RoundTrip {
            for _ in 0..writes {
                self.round_trip_step(&mut commit);
            }
            return commit;
        }
        for _ in 0..writes {
            // Keep a backlog of about 2,000 messages: delete as often as send.
            if self.live.len() > 2_000 || (!self.live.is_empty() && self.rng.gen_bool(0.5)) {
                let (seq, _) = self.live.pop_front().expect("not empty");
                commit.deletes.push(seq);
            } else {
                let size = self.body_size();
                let seq = self.send(size, &mut commit);
                commit.states.push(seq);
            }
        }
        commit
    }

    /// One request of the round trip: a send, a receive or a delete, each
    /// about as often (a backlog of about 2,000 messages either side).
    fn round_trip_step(&mut self, commit: &mut Commit) {
        match self.rng.gen_range(0..3) {
            0 if self.live.len() < 2_000 => {
                self.send(ROUND_TRIP_BODY, commit);
            }
            1 if !self.live.is_empty() && self.received.len() < 2_000 => {
                let message = self.live.pop_front().expect("not empty");
                self.received.push_back(message);
                commit.states.push(message.0);
            }
            _ if !self.received.is_empty() => {
                let (seq, _) = self.received.pop_front().expect("not empty");
                commit.deletes.push(seq);
            }
            // Nothing received to delete: a send.
            _ => {
                self.send(ROUND_TRIP_BODY, commit);
            }
        }
    }

    /// A new message of `size` bytes, sent in `commit`: its sequence number.
    fn send(&mut self, size: usize, commit: &mut Commit) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.live.push_back((seq, size));
        commit.sends.push((seq, size));
        seq
    }

    fn live_bytes(&self) -> u64 {
        self.live
            .iter()
            .chain(&self.received)
            .map(|(_, size)| *size as u64 + 64)
            .sum()
    }
}

trait Engine {
    fn name(&self) -> &'static str;
    fn commit(&mut self, commit: &Commit, body: &[u8]);
    fn files(&self) -> Vec<PathBuf>;
}

const STATE: &[u8] = br#"{"s":"i","u":1700000060000,"r":1700000000000,"n":1,"k":123456789}"#;

struct Redb {
    db: redb::Database,
    path: PathBuf,
    durability: redb::Durability,
    label: &'static str,
}

const BODIES: redb::TableDefinition<(&str, u64), &[u8]> = redb::TableDefinition::new("bodies");
const STATES: redb::TableDefinition<(&str, u64), &[u8]> = redb::TableDefinition::new("states");

impl Engine for Redb {
    fn name(&self) -> &'static str {
        self.label
    }

    fn commit(&mut self, commit: &Commit, body: &[u8]) {
        let mut tx = self.db.begin_write().unwrap();
        tx.set_durability(self.durability).unwrap();
        {
            let mut bodies = tx.open_table(BODIES).unwrap();
            let mut states = tx.open_table(STATES).unwrap();
            for (seq, size) in &commit.sends {
                bodies.insert(("orders", *seq), &body[..*size]).unwrap();
            }
            for seq in &commit.states {
                states.insert(("orders", *seq), STATE).unwrap();
            }
            for seq in &commit.deletes {
                bodies.remove(("orders", *seq)).unwrap();
                states.remove(("orders", *seq)).unwrap();
            }
        }
        tx.commit().unwrap();
    }

    fn files(&self) -> Vec<PathBuf> {
        vec![self.path.clone()]
    }
}

struct Sqlite {
    db: rusqlite::Connection,
    path: PathBuf,
    label: &'static str,
}

impl Sqlite {
    fn open(path: PathBuf, synchronous: &str, label: &'static str) -> Sqlite {
        let db = rusqlite::Connection::open(&path).unwrap();
        db.pragma_update(None, "journal_mode", "WAL").unwrap();
        db.pragma_update(None, "synchronous", synchronous).unwrap();
        db.execute_batch(
            "CREATE TABLE bodies (queue TEXT, seq INTEGER, body BLOB, PRIMARY KEY (queue, seq)) WITHOUT ROWID;
             CREATE TABLE states (queue TEXT, seq INTEGER, state BLOB, PRIMARY KEY (queue, seq)) WITHOUT ROWID;",
        )
        .unwrap();
        Sqlite { db, path, label }
    }
}

impl Engine for Sqlite {
    fn name(&self) -> &'static str {
        self.label
    }

    fn commit(&mut self, commit: &Commit, body: &[u8]) {
        let tx = self.db.transaction().unwrap();
        {
            let mut put_body = tx
                .prepare_cached("INSERT OR REPLACE INTO bodies VALUES ('orders', ?1, ?2)")
                .unwrap();
            let mut put_state = tx
                .prepare_cached("INSERT OR REPLACE INTO states VALUES ('orders', ?1, ?2)")
                .unwrap();
            let mut drop_body = tx
                .prepare_cached("DELETE FROM bodies WHERE queue = 'orders' AND seq = ?1")
                .unwrap();
            let mut drop_state = tx
                .prepare_cached("DELETE FROM states WHERE queue = 'orders' AND seq = ?1")
                .unwrap();
            for (seq, size) in &commit.sends {
                put_body
                    .execute(rusqlite::params![*seq as i64, &body[..*size]])
                    .unwrap();
            }
            for seq in &commit.states {
                put_state.execute(rusqlite::params![*seq as i64, STATE]).unwrap();
            }
            for seq in &commit.deletes {
                drop_body.execute([*seq as i64]).unwrap();
                drop_state.execute([*seq as i64]).unwrap();
            }
        }
        tx.commit().unwrap();
    }

    fn files(&self) -> Vec<PathBuf> {
        let wal = PathBuf::from(format!("{}-wal", self.path.display()));
        vec![self.path.clone(), wal]
    }
}

/// fjall, a log-structured engine: a commit appends its writes to one
/// journal (synced per commit when `sync`), and flushes and compactions run
/// on threads of its own.
struct Fjall {
    db: fjall::Database,
    bodies: fjall::Keyspace,
    states: fjall::Keyspace,
    dir: PathBuf,
    sync: bool,
    label: &'static str,
}

impl Fjall {
    fn open(dir: PathBuf, sync: bool, label: &'static str) -> Fjall {
        let db = fjall::Database::builder(&dir).open().unwrap();
        let bodies = db
            .keyspace("bodies", fjall::KeyspaceCreateOptions::default)
            .unwrap();
        let states = db
            .keyspace("states", fjall::KeyspaceCreateOptions::default)
            .unwrap();
        Fjall {
            db,
            bodies,
            states,
            dir,
            sync,
            label,
        }
    }
}

/// A message's key: its queue, then its sequence number, big-endian so that
/// keys sort as numbers.
fn fjall_key(seq: u64) -> Vec<u8> {
    let mut key = b"orders/".to_vec();
    key.extend_from_slice(&seq.to_be_bytes());
    key
}

impl Engine for Fjall {
    fn name(&self) -> &'static str {
        self.label
    }

    fn commit(&mut self, commit: &Commit, body: &[u8]) {
        let mut batch = self.db.batch();
        for (seq, size) in &commit.sends {
            batch.insert(&self.bodies, fjall_key(*seq), &body[..*size]);
        }
        for seq in &commit.states {
            batch.insert(&self.states, fjall_key(*seq), STATE);
        }
        for seq in &commit.deletes {
            batch.remove(&self.bodies, fjall_key(*seq));
            batch.remove(&self.states, fjall_key(*seq));
        }
        batch.commit().unwrap();
        if self.sync {
            self.db.persist(fjall::PersistMode::SyncData).unwrap();
        }
    }

    fn files(&self) -> Vec<PathBuf> {
        fn walk(dir: &Path, into: &mut Vec<PathBuf>) {
            for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    walk(&path, into);
                } else {
                    into.push(path);
                }
            }
        }
        let mut files = Vec::new();
        walk(&self.dir, &mut files);
        files
    }
}

/// CPU time this process has used, every thread's (user and system).
fn cpu_time() -> Duration {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1_000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

fn run(engine: &mut dyn Engine, seconds: u64, kind: Kind) {
    let body = vec![b'x'; 1024 * 1024];
    let mut pattern = Pattern::new(kind);
    let mut latencies = Vec::new();
    let (mut writes, mut bytes) = (0u64, 0u64);
    let cpu_at_start = cpu_time();
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(seconds) {
        let commit = pattern.next();
        writes += commit.requests as u64;
        bytes += commit.sends.iter().map(|(_, size)| *size as u64).sum::<u64>();
        let at = Instant::now();
        engine.commit(&commit, &body);
        latencies.push(at.elapsed());
    }
    let elapsed = started.elapsed().as_secs_f64();
    let cpu = (cpu_time() - cpu_at_start).as_secs_f64();
    latencies.sort();
    let percentile = |p: f64| latencies[((latencies.len() - 1) as f64 * p) as usize].as_secs_f64() * 1000.0;
    let size: u64 = engine
        .files()
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum();
    println!(
        "| {} | {:.0} | {:.0} | {:.1} | {:.1} | {:.2} | {:.2} | {:.2} | {:.1} | {:.1} |",
        engine.name(),
        latencies.len() as f64 / elapsed,
        writes as f64 / elapsed,
        cpu * 1e6 / writes as f64,
        bytes as f64 / elapsed / 1e6,
        percentile(0.5),
        percentile(0.99),
        percentile(0.999),
        size as f64 / 1e6,
        pattern.live_bytes() as f64 / 1e6,
    );
}

fn fresh(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    path
}

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "usage: ssq-engines DIR [SECONDS] [mixed|roundtrip]";
    let dir = PathBuf::from(args.next().expect(usage));
    let seconds: u64 = args
        .next()
        .map_or(10, |s| s.parse().expect("SECONDS is a number"));
    let kind = match args.next().as_deref() {
        None | Some("mixed") => Kind::Mixed,
        Some("roundtrip") => Kind::RoundTrip,
        Some(_) => panic!("{usage}"),
    };
    std::fs::create_dir_all(&dir).unwrap();
    println!(
        "| engine | commits/s | writes/s | CPU µs/write | MB/s written | p50 ms | p99 ms | p99.9 ms | file MB at end | live MB |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for _round in 0..2 {
        let path = fresh(&dir, "engines.redb");
        let mut redb = Redb {
            db: redb::Database::create(&path).unwrap(),
            path,
            durability: redb::Durability::Immediate,
            label: "redb 4.6, fsync per commit",
        };
        run(&mut redb, seconds, kind);
        let path = fresh(&dir, "engines.sqlite");
        run(
            &mut Sqlite::open(path, "FULL", "SQLite 3 (rusqlite), WAL, synchronous=FULL"),
            seconds,
            kind,
        );
        let path = fresh(&dir, "engines.sqlite");
        run(
            &mut Sqlite::open(path, "NORMAL", "SQLite 3 (rusqlite), WAL, synchronous=NORMAL"),
            seconds,
            kind,
        );
        for (sync, label) in [
            (true, "fjall 3.1, fsync per commit"),
            (false, "fjall 3.1, no sync"),
        ] {
            let path = dir.join("engines.fjall");
            let _ = std::fs::remove_dir_all(&path);
            run(&mut Fjall::open(path, sync, label), seconds, kind);
        }
    }
}
