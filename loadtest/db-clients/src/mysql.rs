//! mysql_async beside sqlx: a commit is one `CALL` of a procedure with the
//! batch as JSON arrays, applied through `JSON_TABLE` in one transaction,
//! as `ssq_commit` takes them (MariaDB: its sequence tables fill the load).

use futures_util::TryStreamExt;
use mysql_async::prelude::Queryable;
use sqlx::Connection;

use crate::{BATCH, BODY_BYTES, Clients, Clock, LOAD_ROWS, Run, commit_for};

const COMMIT: &str = "CALL bench_commit(?, ?)";
const LOAD: &str = "SELECT queue, seq, body, state FROM bench_loaded ORDER BY queue, seq";

/// A batch as the procedure takes it: the rows put, and the keys of the
/// previous batch's rows, removed.
fn batch(number: i64) -> (String, String) {
    let seqs = (0..BATCH).map(|i| number * BATCH + i);
    let body = "b".repeat(BODY_BYTES);
    let put: Vec<String> = seqs
        .clone()
        .map(|seq| format!("[\"queue-{}\",{seq},\"{body}\",\"{{\\\"r\\\":{seq}}}\"]", seq % 8))
        .collect();
    let gone: Vec<String> = seqs
        .map(|seq| format!("[\"queue-{}\",{}]", (seq - BATCH).rem_euclid(8), seq - BATCH))
        .collect();
    (format!("[{}]", put.join(",")), format!("[{}]", gone.join(",")))
}

pub struct Mysql;

impl Clients for Mysql {
    const NAMES: [&'static str; 2] = ["mysql_async", "sqlx"];

    async fn set_up(url: &str) {
        let mut setup = mysql_async::Conn::from_url(url).await.unwrap();
        for statement in [
            "DROP TABLE IF EXISTS bench_messages, bench_loaded".to_string(),
            "DROP PROCEDURE IF EXISTS bench_commit".to_string(),
            "CREATE TABLE bench_messages (queue VARBINARY(64), seq BIGINT, body LONGBLOB, state LONGBLOB, \
             PRIMARY KEY (queue, seq)) ENGINE=InnoDB"
                .to_string(),
            format!(
                "CREATE TABLE bench_loaded ENGINE=InnoDB AS SELECT CONCAT('queue-', seq % 8) AS queue, CAST(seq AS SIGNED) AS seq, \
                 REPEAT('b', {BODY_BYTES}) AS body, CONCAT('{{\"r\":', seq, '}}') AS state FROM seq_1_to_{LOAD_ROWS}"
            ),
            "CREATE PROCEDURE bench_commit(p_put LONGTEXT CHARACTER SET utf8mb4, p_gone LONGTEXT CHARACTER SET utf8mb4)
             MODIFIES SQL DATA
             BEGIN
                 START TRANSACTION;
                 DELETE t FROM JSON_TABLE(p_gone, '$[*]' COLUMNS (q VARCHAR(64) PATH '$[0]', s BIGINT PATH '$[1]')) g
                     STRAIGHT_JOIN bench_messages t ON t.queue = g.q AND t.seq = g.s;
                 INSERT INTO bench_messages SELECT g.q, g.s, g.b, g.st FROM JSON_TABLE(p_put, '$[*]' COLUMNS (
                     q VARCHAR(64) PATH '$[0]', s BIGINT PATH '$[1]', b LONGTEXT CHARACTER SET utf8mb4 PATH '$[2]',
                     st LONGTEXT CHARACTER SET utf8mb4 PATH '$[3]')) g;
                 COMMIT;
             END"
                .to_string(),
        ] {
            setup.query_drop(statement).await.unwrap();
        }
    }

    async fn commits(client: usize, url: &str, seconds: u64) -> Run {
        match client {
            0 => {
                let mut conn = mysql_async::Conn::from_url(url).await.unwrap();
                conn.query_drop("TRUNCATE bench_messages").await.unwrap();
                commit_for(seconds, async |number| {
                    conn.exec_drop(COMMIT, batch(number)).await.unwrap();
                })
                .await
            }
            _ => {
                let mut connection = sqlx::MySqlConnection::connect(url).await.unwrap();
                sqlx::query("TRUNCATE bench_messages").execute(&mut connection).await.unwrap();
                commit_for(seconds, async |number| {
                    let (put, gone) = batch(number);
                    sqlx::query(COMMIT).bind(put).bind(gone).execute(&mut connection).await.unwrap();
                })
                .await
            }
        }
    }

    async fn load(client: usize, url: &str) -> Run {
        let mut operations = 0;
        match client {
            0 => {
                let mut conn = mysql_async::Conn::from_url(url).await.unwrap();
                let clock = Clock::start();
                let mut rows = conn.exec_iter(LOAD, ()).await.unwrap();
                rows.for_each(|row| {
                    let row: (Vec<u8>, i64, Vec<u8>, Vec<u8>) = mysql_async::from_row(row);
                    std::hint::black_box(row);
                    operations += 1;
                })
                .await
                .unwrap();
                drop(rows);
                clock.stop(operations)
            }
            _ => {
                let mut connection = sqlx::MySqlConnection::connect(url).await.unwrap();
                let clock = Clock::start();
                let mut rows = sqlx::query_as::<_, (Vec<u8>, i64, Vec<u8>, Vec<u8>)>(LOAD).fetch(&mut connection);
                while let Some(row) = rows.try_next().await.unwrap() {
                    std::hint::black_box(row);
                    operations += 1;
                }
                clock.stop(operations)
            }
        }
    }
}
