//! tokio-postgres beside sqlx on the two calls ssq makes on its hot and its
//! slow path, each on one connection on a current-thread runtime (as ssq's
//! committer and loader use theirs), rounds alternating:
//! - commit: one statement carrying a group commit's writes as arrays
//!   (queue names, sequence numbers, bodies, states), inserting this
//!   batch's rows and deleting the previous batch's, as `ssq_commit` does;
//! - load: every row of a table of queued messages, decoded into owned
//!   values, as a takeover's load reads them.
//!
//! For each: calls (or rows) per second and this process's CPU per call
//! (or per thousand rows): the database's work is the same for both.
//!   postgres-clients URL [SECONDS] [ROUNDS]

use std::time::{Duration, Instant};

use futures_util::TryStreamExt;
use sqlx::Connection;

const BATCH: usize = 40;
const BODY_BYTES: usize = 200;
const LOAD_ROWS: i64 = 100_000;

const COMMIT: &str = "WITH added AS (
    INSERT INTO bench_messages SELECT * FROM unnest($1::text[], $2::bigint[], $3::bytea[], $4::bytea[])
) DELETE FROM bench_messages WHERE (queue, seq) IN (SELECT * FROM unnest($5::text[], $6::bigint[]))";
const LOAD: &str = "SELECT queue, seq, body, state FROM bench_loaded ORDER BY queue, seq";

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

/// A batch's arrays: queue names, sequence numbers, bodies, states.
struct Batch {
    queues: Vec<String>,
    seqs: Vec<i64>,
    bodies: Vec<Vec<u8>>,
    states: Vec<Vec<u8>>,
}

fn batch(number: i64) -> Batch {
    let seqs: Vec<i64> = (0..BATCH as i64).map(|i| number * BATCH as i64 + i).collect();
    Batch {
        queues: seqs.iter().map(|seq| format!("queue-{}", seq % 8)).collect(),
        bodies: seqs
            .iter()
            .map(|seq| vec![(seq % 251) as u8; BODY_BYTES])
            .collect(),
        states: seqs.iter().map(|seq| seq.to_le_bytes().to_vec()).collect(),
        seqs,
    }
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

/// Calls `commit` for `seconds` with each new batch and the one before it
/// (whose rows it deletes).
async fn commit_for(seconds: u64, mut commit: impl AsyncFnMut(&Batch, &Batch)) -> Run {
    let (clock, until) = (Clock::start(), Instant::now() + Duration::from_secs(seconds));
    let mut previous = batch(-1);
    let mut operations = 0;
    while Instant::now() < until {
        let next = batch(operations as i64);
        commit(&next, &previous).await;
        previous = next;
        operations += 1;
    }
    clock.stop(operations)
}

async fn commits_tokio_postgres(url: &str, seconds: u64) -> Run {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client.batch_execute("TRUNCATE bench_messages").await.unwrap();
    let statement = client.prepare(COMMIT).await.unwrap();
    commit_for(seconds, async |next, previous| {
        let parameters: [&(dyn tokio_postgres::types::ToSql + Sync); 6] = [
            &next.queues,
            &next.seqs,
            &next.bodies,
            &next.states,
            &previous.queues,
            &previous.seqs,
        ];
        client.execute(&statement, &parameters).await.unwrap();
    })
    .await
}

async fn commits_sqlx(url: &str, seconds: u64) -> Run {
    let mut connection = sqlx::PgConnection::connect(url).await.unwrap();
    sqlx::query("TRUNCATE bench_messages")
        .execute(&mut connection)
        .await
        .unwrap();
    commit_for(seconds, async |next, previous| {
        sqlx::query(COMMIT)
            .bind(&next.queues)
            .bind(&next.seqs)
            .bind(&next.bodies)
            .bind(&next.states)
            .bind(&previous.queues)
            .bind(&previous.seqs)
            .execute(&mut connection)
            .await
            .unwrap();
    })
    .await
}

async fn load_tokio_postgres(url: &str) -> Run {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let statement = client.prepare(LOAD).await.unwrap();
    let clock = Clock::start();
    let rows = client
        .query_raw(&statement, std::iter::empty::<i64>())
        .await
        .unwrap();
    futures_util::pin_mut!(rows);
    let mut operations = 0;
    while let Some(row) = rows.try_next().await.unwrap() {
        let row: (String, i64, Vec<u8>, Vec<u8>) = (row.get(0), row.get(1), row.get(2), row.get(3));
        std::hint::black_box(row);
        operations += 1;
    }
    clock.stop(operations)
}

async fn load_sqlx(url: &str) -> Run {
    let mut connection = sqlx::PgConnection::connect(url).await.unwrap();
    let clock = Clock::start();
    let mut rows = sqlx::query_as::<_, (String, i64, Vec<u8>, Vec<u8>)>(LOAD).fetch(&mut connection);
    let mut operations = 0;
    while let Some(row) = rows.try_next().await.unwrap() {
        std::hint::black_box(row);
        operations += 1;
    }
    clock.stop(operations)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let url = args
        .get(1)
        .expect("usage: postgres-clients URL [SECONDS] [ROUNDS]");
    let seconds: u64 = args.get(2).map_or(5, |s| s.parse().unwrap());
    let rounds: usize = args.get(3).map_or(3, |s| s.parse().unwrap());

    let (setup, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    setup
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS bench_messages, bench_loaded;
             CREATE TABLE bench_messages (queue text, seq bigint, body bytea, state bytea, PRIMARY KEY (queue, seq));
             CREATE TABLE bench_loaded AS SELECT 'queue-' || (n % 8) AS queue, n::bigint AS seq,
                 decode(repeat('ab', {BODY_BYTES}), 'hex') AS body, int8send(n::bigint) AS state
               FROM generate_series(1, {LOAD_ROWS}) AS n"
        ))
        .await
        .unwrap();
    setup.batch_execute("VACUUM ANALYZE bench_loaded").await.unwrap();

    let mut figures: [(Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>); 2] = Default::default();
    for round in 0..rounds {
        for client in [round % 2, 1 - round % 2] {
            let (commit, load) = match client {
                0 => (
                    commits_tokio_postgres(url, seconds).await,
                    load_tokio_postgres(url).await,
                ),
                _ => (commits_sqlx(url, seconds).await, load_sqlx(url).await),
            };
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
    for (name, (commits, commit_cpu, rows, row_cpu)) in ["tokio-postgres", "sqlx"].iter().zip(figures) {
        println!(
            "{name:<15} {:>10.0} {:>16.1} {:>10.0} {:>16.1}",
            median(commits),
            median(commit_cpu),
            median(rows),
            median(row_cpu)
        );
    }
}
