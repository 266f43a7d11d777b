//! ssq's write pattern against two embedded engines: group commits of 1 to
//! 30 writes, deletes as frequent as inserts (each message written once as
//! a body and a state record, later removed), bodies from 100 bytes to
//! 1 MiB. Prints commits per second, commit latency percentiles and the
//! file size against the live data at the end.
//!
//! Run: `cargo run --release --manifest-path loadtest/engines/Cargo.toml -- DIR [SECONDS]`
//! (DIR on the disk to measure; each engine runs for SECONDS, 10 by default).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// One group commit: messages sent (seq, body size) and messages deleted.
struct Commit {
    sends: Vec<(u64, usize)>,
    deletes: Vec<u64>,
}

/// The same pattern for every engine: a seeded stream of commits.
struct Pattern {
    rng: StdRng,
    next_seq: u64,
    live: VecDeque<(u64, usize)>,
}

impl Pattern {
    fn new() -> Pattern {
        Pattern {
            rng: StdRng::seed_from_u64(29),
            next_seq: 1,
            live: VecDeque::new(),
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
            sends: Vec::new(),
            deletes: Vec::new(),
        };
        for _ in 0..writes {
            // Keep a backlog of about 2,000 messages: delete as often as send.
            if self.live.len() > 2_000 || (!self.live.is_empty() && self.rng.gen_bool(0.5)) {
                let (seq, _) = self.live.pop_front().expect("not empty");
                commit.deletes.push(seq);
            } else {
                let (seq, size) = (self.next_seq, self.body_size());
                self.next_seq += 1;
                self.live.push_back((seq, size));
                commit.sends.push((seq, size));
            }
        }
        commit
    }

    fn live_bytes(&self) -> u64 {
        self.live.iter().map(|(_, size)| *size as u64 + 64).sum()
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
            let mut put_body = tx.prepare_cached("INSERT OR REPLACE INTO bodies VALUES ('orders', ?1, ?2)").unwrap();
            let mut put_state = tx.prepare_cached("INSERT OR REPLACE INTO states VALUES ('orders', ?1, ?2)").unwrap();
            let mut drop_body = tx.prepare_cached("DELETE FROM bodies WHERE queue = 'orders' AND seq = ?1").unwrap();
            let mut drop_state = tx.prepare_cached("DELETE FROM states WHERE queue = 'orders' AND seq = ?1").unwrap();
            for (seq, size) in &commit.sends {
                put_body.execute(rusqlite::params![*seq as i64, &body[..*size]]).unwrap();
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

fn run(engine: &mut dyn Engine, seconds: u64) {
    let body = vec![b'x'; 1024 * 1024];
    let mut pattern = Pattern::new();
    let mut latencies = Vec::new();
    let (mut writes, mut bytes) = (0u64, 0u64);
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(seconds) {
        let commit = pattern.next();
        writes += (commit.sends.len() + commit.deletes.len()) as u64;
        bytes += commit.sends.iter().map(|(_, size)| *size as u64).sum::<u64>();
        let at = Instant::now();
        engine.commit(&commit, &body);
        latencies.push(at.elapsed());
    }
    let elapsed = started.elapsed().as_secs_f64();
    latencies.sort();
    let percentile = |p: f64| latencies[((latencies.len() - 1) as f64 * p) as usize].as_secs_f64() * 1000.0;
    let size: u64 = engine
        .files()
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum();
    println!(
        "| {} | {:.0} | {:.0} | {:.1} | {:.2} | {:.2} | {:.2} | {:.1} | {:.1} |",
        engine.name(),
        latencies.len() as f64 / elapsed,
        writes as f64 / elapsed,
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
    let dir = PathBuf::from(args.next().expect("usage: ssq-engines DIR [SECONDS]"));
    let seconds: u64 = args.next().map_or(10, |s| s.parse().expect("SECONDS is a number"));
    std::fs::create_dir_all(&dir).unwrap();
    println!("| engine | commits/s | writes/s | MB/s written | p50 ms | p99 ms | p99.9 ms | file MB at end | live MB |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for round in 0..2 {
        let _ = round;
        let path = fresh(&dir, "engines.redb");
        let mut redb = Redb {
            db: redb::Database::create(&path).unwrap(),
            path,
            durability: redb::Durability::Immediate,
            label: "redb 4.6, fsync per commit",
        };
        run(&mut redb, seconds);
        let path = fresh(&dir, "engines.sqlite");
        run(&mut Sqlite::open(path, "FULL", "SQLite 3 (rusqlite), WAL, synchronous=FULL"), seconds);
        let path = fresh(&dir, "engines.sqlite");
        run(&mut Sqlite::open(path, "NORMAL", "SQLite 3 (rusqlite), WAL, synchronous=NORMAL"), seconds);
    }
}
