//! tokio-postgres beside sqlx: a commit is one statement with the batch as
//! arrays (`unnest`), as `ssq_commit`'s call sends them.

use futures_util::TryStreamExt;
use sqlx::Connection;

use crate::{BATCH, BODY_BYTES, Clients, Clock, LOAD_ROWS, Run, commit_for};

const COMMIT: &str = "WITH added AS (
    INSERT INTO bench_messages SELECT * FROM unnest($1::text[], $2::bigint[], $3::bytea[], $4::bytea[])
) DELETE FROM bench_messages WHERE (queue, seq) IN (SELECT * FROM unnest($5::text[], $6::bigint[]))";
const LOAD: &str = "SELECT queue, seq, body, state FROM bench_loaded ORDER BY queue, seq";

/// A batch's arrays: queue names, sequence numbers, bodies, states.
struct Batch {
    queues: Vec<String>,
    seqs: Vec<i64>,
    bodies: Vec<Vec<u8>>,
    states: Vec<Vec<u8>>,
}

fn batch(number: i64) -> Batch {
    let seqs: Vec<i64> = (0..BATCH).map(|i| number * BATCH + i).collect();
    Batch {
        queues: seqs.iter().map(|seq| format!("queue-{}", seq % 8)).collect(),
        bodies: seqs.iter().map(|seq| vec![(seq % 251) as u8; BODY_BYTES]).collect(),
        states: seqs.iter().map(|seq| seq.to_le_bytes().to_vec()).collect(),
        seqs,
    }
}

pub struct Postgres;

impl Clients for Postgres {
    const NAMES: [&'static str; 2] = ["tokio-postgres", "sqlx"];

    async fn set_up(url: &str) {
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
    }

    async fn commits(client: usize, url: &str, seconds: u64) -> Run {
        match client {
            0 => {
                let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
                tokio::spawn(connection);
                client.batch_execute("TRUNCATE bench_messages").await.unwrap();
                let statement = client.prepare(COMMIT).await.unwrap();
                commit_for(seconds, async |number| {
                    let (next, previous) = (batch(number), batch(number - 1));
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
            _ => {
                let mut connection = sqlx::PgConnection::connect(url).await.unwrap();
                sqlx::query("TRUNCATE bench_messages").execute(&mut connection).await.unwrap();
                commit_for(seconds, async |number| {
                    let (next, previous) = (batch(number), batch(number - 1));
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
        }
    }

    async fn load(client: usize, url: &str) -> Run {
        let mut operations = 0;
        match client {
            0 => {
                let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
                tokio::spawn(connection);
                let statement = client.prepare(LOAD).await.unwrap();
                let clock = Clock::start();
                let rows = client.query_raw(&statement, std::iter::empty::<i64>()).await.unwrap();
                futures_util::pin_mut!(rows);
                while let Some(row) = rows.try_next().await.unwrap() {
                    let row: (String, i64, Vec<u8>, Vec<u8>) = (row.get(0), row.get(1), row.get(2), row.get(3));
                    std::hint::black_box(row);
                    operations += 1;
                }
                clock.stop(operations)
            }
            _ => {
                let mut connection = sqlx::PgConnection::connect(url).await.unwrap();
                let clock = Clock::start();
                let mut rows = sqlx::query_as::<_, (String, i64, Vec<u8>, Vec<u8>)>(LOAD).fetch(&mut connection);
                while let Some(row) = rows.try_next().await.unwrap() {
                    std::hint::black_box(row);
                    operations += 1;
                }
                clock.stop(operations)
            }
        }
    }
}
