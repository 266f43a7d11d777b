//! The two clients ssq could use on each SQL store, side by side on the
//! two calls it makes on its hot and its slow path, each on one connection
//! on a current-thread runtime (as ssq's committer and loader use theirs),
//! rounds alternating:
//! - commit: one call carrying a group commit's writes (arrays on Postgres,
//!   JSON arrays to a procedure on MySQL), inserting this batch's rows and
//!   deleting the previous batch's, as `ssq_commit` does;
//! - load: every row of a table of queued messages, decoded into owned
//!   values, as a takeover's load reads them.
//!
//! For each: calls (or rows) per second and this process's CPU per call
//! (or per thousand rows): the database's work is the same for both.
//!   db-clients postgres|mysql URL [SECONDS] [ROUNDS]
//! (`postgres.rs`: tokio-postgres beside sqlx; `mysql.rs`: mysql_async
//! beside sqlx.)

mod mysql;
mod postgres;

use std::time::{Duration, Instant};

const BATCH: i64 = 40;
const BODY_BYTES: usize = 200;
const LOAD_ROWS: i64 = 100_000;

/// Two clients of one database, and the tables their calls use.
trait Clients {
    /// The two clients' names, in the order `client` numbers them.
    const NAMES: [&'static str; 2];
    /// Makes the tables: one to commit to, one of LOAD_ROWS rows to load.
    async fn set_up(url: &str);
    /// Client `client`'s commits for `seconds`.
    async fn commits(client: usize, url: &str, seconds: u64) -> Run;
    /// Client `client`'s load of every row.
    async fn load(client: usize, url: &str) -> Run;
}

/// This process's CPU time, user and system.
fn cpu() -> Duration {
    // SAFETY: getrusage writes the struct it is given.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1_000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// What a run measured: operations, and the time and CPU they took.
struct Run {
    operations: u64,
    wall: Duration,
    cpu: Duration,
}

/// When a run started, by the clock and by this process's CPU time.
struct Clock {
    started: Instant,
    cpu: Duration,
}

impl Clock {
    fn start() -> Clock {
        Clock {
            started: Instant::now(),
            cpu: cpu(),
        }
    }

    fn stop(self, operations: u64) -> Run {
        Run {
            operations,
            wall: self.started.elapsed(),
            cpu: cpu() - self.cpu,
        }
    }
}

/// Calls `commit` for `seconds` with each new batch number.
async fn commit_for(seconds: u64, mut commit: impl AsyncFnMut(i64)) -> Run {
    let (clock, until) = (Clock::start(), Instant::now() + Duration::from_secs(seconds));
    let mut operations = 0;
    while Instant::now() < until {
        commit(operations as i64).await;
        operations += 1;
    }
    clock.stop(operations)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

async fn compare<C: Clients>(url: &str, seconds: u64, rounds: usize) {
    C::set_up(url).await;
    let mut figures: [(Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>); 2] = Default::default();
    for round in 0..rounds {
        for client in [round % 2, 1 - round % 2] {
            let commit = C::commits(client, url, seconds).await;
            let load = C::load(client, url).await;
            assert_eq!(load.operations, LOAD_ROWS as u64, "every row loaded");
            let f = &mut figures[client];
            f.0.push(commit.operations as f64 / commit.wall.as_secs_f64());
            f.1.push(commit.cpu.as_secs_f64() * 1e6 / commit.operations as f64);
            f.2.push(load.operations as f64 / load.wall.as_secs_f64());
            // µs per 1,000 rows: ns per row.
            f.3.push(load.cpu.as_secs_f64() * 1e9 / load.operations as f64);
        }
    }
    println!(
        "one connection, median of {rounds} rounds; commit: {BATCH} writes of {BODY_BYTES} B a call; load: {LOAD_ROWS} rows"
    );
    println!(
        "{:<15} {:>10} {:>16} {:>10} {:>16}",
        "client", "commits/s", "µs CPU/commit", "rows/s", "µs CPU/1000 rows"
    );
    for (name, (commits, commit_cpu, rows, row_cpu)) in C::NAMES.iter().zip(figures) {
        println!(
            "{name:<15} {:>10.0} {:>16.1} {:>10.0} {:>16.1}",
            median(commits),
            median(commit_cpu),
            median(rows),
            median(row_cpu)
        );
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: db-clients postgres|mysql URL [SECONDS] [ROUNDS]";
    let url = args.get(2).expect(usage);
    let seconds: u64 = args.get(3).map_or(5, |s| s.parse().unwrap());
    let rounds: usize = args.get(4).map_or(3, |s| s.parse().unwrap());
    match args.get(1).map(String::as_str) {
        Some("postgres") => compare::<postgres::Postgres>(url, seconds, rounds).await,
        Some("mysql") => compare::<mysql::Mysql>(url, seconds, rounds).await,
        _ => panic!("{usage}"),
    }
}
