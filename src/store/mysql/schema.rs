//! ssq's tables and procedures in MySQL and MariaDB, made or upgraded by
//! the first instance to start, under a named lock (`GET_LOCK`), one
//! version at a time. MySQL commits each DDL statement by itself, so a
//! step cut short (its connection lost or timed out) has made some of its
//! tables and not recorded its version: every statement of a step can run
//! again (`IF NOT EXISTS`, procedures dropped first), and the next try
//! runs the whole step. A migration is bounded by [`LIMIT`], not by
//! `--mysql-timeout`: making a table takes several flushes, which a busy
//! disk makes slower than any one call ought to be.
//!
//! Keys are `VARBINARY`, compared byte for byte as `codec.rs` writes them;
//! records are `LONGBLOB`, UTF-8 JSON text. Every write of a commit is
//! one statement over a `JSON_TABLE` of its array (`ssq_commit`), each
//! finding its rows by primary key: `STRAIGHT_JOIN` puts the array first,
//! so that a delete of a few rows never scans a table.

use std::time::Duration;

use mysql_async::Conn;
use mysql_async::prelude::Queryable;

use super::MysqlError;

/// The named lock of migrations, one per database.
const MIGRATIONS_LOCK: &str = "CONCAT('ssq:', SHA1(DATABASE()), ':schema')";

/// Each migration, in order: the schema's version is how many have run.
const STEPS: &[&[&str]] = &[FIRST, LOCK_REVISIONS];

/// How long making or upgrading the tables may take, waiting for another
/// instance's migration included.
pub const LIMIT: Duration = Duration::from_secs(60);

/// Makes or upgrades ssq's tables, once, whoever else starts now, within
/// [`LIMIT`].
pub async fn migrate(conn: &mut Conn) -> Result<(), MysqlError> {
    tokio::time::timeout(LIMIT, migrate_unbounded(conn))
        .await
        .map_err(|_| MysqlError::TimedOut(LIMIT))?
}

async fn migrate_unbounded(conn: &mut Conn) -> Result<(), MysqlError> {
    let taken: Option<i64> = conn
        .query_first(format!("SELECT GET_LOCK({MIGRATIONS_LOCK}, {})", LIMIT.as_secs()))
        .await?;
    if taken != Some(1) {
        return Err(MysqlError::TimedOut(LIMIT));
    }
    let result = upgrade(conn).await;
    conn.query_drop(format!("DO RELEASE_LOCK({MIGRATIONS_LOCK})"))
        .await?;
    result
}

async fn upgrade(conn: &mut Conn) -> Result<(), MysqlError> {
    conn.query_drop("CREATE TABLE IF NOT EXISTS ssq_schema (version INT NOT NULL) ENGINE=InnoDB")
        .await?;
    let found: Option<i32> = conn
        .query_first("SELECT max(version) FROM ssq_schema")
        .await?
        .flatten();
    let found = found.unwrap_or(0);
    let known = STEPS.len() as i32;
    if found > known {
        return Err(MysqlError::NewerSchema { found, known });
    }
    for (version, step) in STEPS.iter().enumerate().skip(found as usize) {
        for statement in *step {
            conn.query_drop(*statement).await?;
        }
        conn.query_drop("DELETE FROM ssq_schema").await?;
        conn.exec_drop("INSERT INTO ssq_schema VALUES (?)", (version as i32 + 1,))
            .await?;
    }
    if found < known {
        // Procedures hold no data: each upgrade puts in the current ones.
        for statement in PROCEDURES {
            conn.query_drop(*statement).await?;
        }
        tracing::info!(from = found, to = known, "ssq's tables in MySQL made or upgraded");
    }
    Ok(())
}

/// Version 2: with a lock kept apart from the database (`--lock-url`),
/// the revision of the holder last recorded for each shard; a holder with
/// a smaller one is refused (`lock.rs`, `record_revision`).
const LOCK_REVISIONS: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS ssq_lock_revisions (shard INT PRIMARY KEY, revision BIGINT NOT NULL) ENGINE=InnoDB",
];

/// Version 1: the lease, the records, and what a sharded group shares.
const FIRST: &[&str] = &[
    // One row per shard: who leads it (token = epoch|node|nonce|url), since
    // when (renewed_at, the database's clock, UTC) for how long, and the
    // load its leader's memory came from.
    "CREATE TABLE IF NOT EXISTS ssq_lease (
        shard INT PRIMARY KEY,
        epoch BIGINT NOT NULL DEFAULT 0,
        token VARBINARY(2048) NULL,
        renewed_at DATETIME(6) NULL,
        ttl_ms BIGINT NULL,
        load_id VARBINARY(128) NULL
    ) ENGINE=InnoDB",
    "CREATE TABLE IF NOT EXISTS ssq_queues (name VARBINARY(1024) PRIMARY KEY, record LONGBLOB NOT NULL) ENGINE=InnoDB",
    "CREATE TABLE IF NOT EXISTS ssq_sequences (name VARBINARY(1024) PRIMARY KEY, ceiling BIGINT NOT NULL) ENGINE=InnoDB",
    // A message is one row: its body, and its state once it differs from
    // what the body implies (received, delayed...). InnoDB updates a row
    // in place and undoes only the columns changed, so a receive rewrites
    // the state, not the body, and a delete removes one row.
    "CREATE TABLE IF NOT EXISTS ssq_messages (
        queue VARBINARY(1024) NOT NULL, seq BIGINT NOT NULL,
        body LONGBLOB NOT NULL, state LONGBLOB NULL,
        PRIMARY KEY (queue, seq)
    ) ENGINE=InnoDB",
    "CREATE TABLE IF NOT EXISTS ssq_dedup (
        queue VARBINARY(1024) NOT NULL, `key` VARBINARY(1024) NOT NULL, record LONGBLOB NOT NULL,
        PRIMARY KEY (queue, `key`)
    ) ENGINE=InnoDB",
    "CREATE TABLE IF NOT EXISTS ssq_attempts (
        queue VARBINARY(1024) NOT NULL, id VARBINARY(1024) NOT NULL, record LONGBLOB NOT NULL,
        PRIMARY KEY (queue, id)
    ) ENGINE=InnoDB",
    // SNS: topics, subscriptions and FIFO topics' deduplication ids.
    "CREATE TABLE IF NOT EXISTS ssq_sns (`key` VARBINARY(1024) PRIMARY KEY, record LONGBLOB NOT NULL) ENGINE=InnoDB",
    // The shard count the data is for: one row, written by the first instance.
    "CREATE TABLE IF NOT EXISTS ssq_group (one TINYINT PRIMARY KEY, shards INT NOT NULL) ENGINE=InnoDB",
    // The live members of a sharded group, each until its heartbeat's
    // expiry on the database's clock.
    "CREATE TABLE IF NOT EXISTS ssq_members (node VARBINARY(255) PRIMARY KEY, expires_at DATETIME(6) NOT NULL) ENGINE=InnoDB",
    // Messages on their way to a queue of another shard: first in the
    // outbox of the shard they left (`delivered` 0), then, moved in one
    // step, in the inbox of the shard they go to (`delivered` 1, `shard`
    // the target's).
    "CREATE TABLE IF NOT EXISTS ssq_transfers (
        id BIGINT AUTO_INCREMENT PRIMARY KEY,
        shard INT NOT NULL,
        delivered TINYINT NOT NULL DEFAULT 0,
        to_queue VARBINARY(1024) NOT NULL,
        from_queue VARBINARY(1024) NOT NULL,
        seq BIGINT NOT NULL,
        body LONGBLOB NOT NULL,
        state LONGBLOB NOT NULL,
        dead_letter_source VARBINARY(1024) NULL,
        KEY ssq_transfers_box (shard, delivered, id)
    ) ENGINE=InnoDB",
];

/// The procedures ssq calls, put in (again) by every upgrade.
const PROCEDURES: &[&str] = &[
    "DROP PROCEDURE IF EXISTS ssq_commit",
    // One group commit, whole or not at all, or a part of one (`p_begin`
    // starts the transaction, `p_end` commits it: a commit larger than a
    // packet is sent in several calls, its removals in the first). Refused
    // with error 30001 when the shard's lease has another epoch (another
    // instance leads: this one steps down), 30002 when memory was loaded
    // again since the writes were made. The lease row is read with a shared
    // lock held to the end, so a takeover or a load's fence (which update
    // it) waits for a commit in flight. Each array is NULL when empty;
    // each key appears once in it (`store/batch.rs` folds the writes).
    // p_messages puts whole messages (body, and state or null where the
    // body implies it); p_states rewrites the state of stored ones.
    "CREATE PROCEDURE ssq_commit(
        p_shard INT, p_epoch BIGINT, p_load VARBINARY(128), p_begin BOOLEAN, p_end BOOLEAN,
        p_wiped LONGTEXT CHARACTER SET utf8mb4, p_gone LONGTEXT CHARACTER SET utf8mb4,
        p_queues LONGTEXT CHARACTER SET utf8mb4, p_sequences LONGTEXT CHARACTER SET utf8mb4,
        p_removed LONGTEXT CHARACTER SET utf8mb4, p_messages LONGTEXT CHARACTER SET utf8mb4,
        p_states LONGTEXT CHARACTER SET utf8mb4, p_dedup_gone LONGTEXT CHARACTER SET utf8mb4,
        p_dedup LONGTEXT CHARACTER SET utf8mb4, p_attempts_gone LONGTEXT CHARACTER SET utf8mb4,
        p_attempts LONGTEXT CHARACTER SET utf8mb4, p_sns_gone LONGTEXT CHARACTER SET utf8mb4,
        p_sns LONGTEXT CHARACTER SET utf8mb4, p_outbox LONGTEXT CHARACTER SET utf8mb4,
        p_delivered LONGTEXT CHARACTER SET utf8mb4, p_taken_in LONGTEXT CHARACTER SET utf8mb4)
    MODIFIES SQL DATA
    BEGIN
        DECLARE held_epoch BIGINT;
        DECLARE held_load VARBINARY(128);
        DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
        IF p_begin THEN START TRANSACTION; END IF;
        SELECT epoch, load_id INTO held_epoch, held_load FROM ssq_lease WHERE shard = p_shard LOCK IN SHARE MODE;
        IF held_epoch IS NULL OR held_epoch <> p_epoch THEN
            SIGNAL SQLSTATE '45000' SET MYSQL_ERRNO = 30001, MESSAGE_TEXT = 'FENCED: another instance leads this shard';
        END IF;
        IF NOT (held_load <=> p_load) THEN
            SIGNAL SQLSTATE '45000' SET MYSQL_ERRNO = 30002, MESSAGE_TEXT = 'STALE: the state was loaded again since these writes were made';
        END IF;

        IF p_wiped IS NOT NULL THEN
            DELETE t FROM JSON_TABLE(p_wiped, '$[*]' COLUMNS (q VARCHAR(1024) CHARACTER SET utf8mb4 PATH '$')) g
                STRAIGHT_JOIN ssq_messages t ON t.queue = g.q;
            DELETE t FROM JSON_TABLE(p_wiped, '$[*]' COLUMNS (q VARCHAR(1024) CHARACTER SET utf8mb4 PATH '$')) g
                STRAIGHT_JOIN ssq_dedup t ON t.queue = g.q;
            DELETE t FROM JSON_TABLE(p_wiped, '$[*]' COLUMNS (q VARCHAR(1024) CHARACTER SET utf8mb4 PATH '$')) g
                STRAIGHT_JOIN ssq_attempts t ON t.queue = g.q;
        END IF;
        IF p_gone IS NOT NULL THEN
            DELETE t FROM JSON_TABLE(p_gone, '$[*]' COLUMNS (q VARCHAR(1024) CHARACTER SET utf8mb4 PATH '$')) g
                STRAIGHT_JOIN ssq_queues t ON t.name = g.q;
            DELETE t FROM JSON_TABLE(p_gone, '$[*]' COLUMNS (q VARCHAR(1024) CHARACTER SET utf8mb4 PATH '$')) g
                STRAIGHT_JOIN ssq_sequences t ON t.name = g.q;
        END IF;
        IF p_removed IS NOT NULL THEN
            DELETE t FROM JSON_TABLE(p_removed, '$[*]' COLUMNS (q VARCHAR(1024) CHARACTER SET utf8mb4 PATH '$[0]', s BIGINT PATH '$[1]')) g
                STRAIGHT_JOIN ssq_messages t ON t.queue = g.q AND t.seq = g.s;
        END IF;
        IF p_dedup_gone IS NOT NULL THEN
            DELETE t FROM JSON_TABLE(p_dedup_gone, '$[*]' COLUMNS (q VARCHAR(1024) CHARACTER SET utf8mb4 PATH '$[0]', k VARCHAR(1024) CHARACTER SET utf8mb4 PATH '$[1]')) g
                STRAIGHT_JOIN ssq_dedup t ON t.queue = g.q AND t.`key` = g.k;
        END IF;
        IF p_attempts_gone IS NOT NULL THEN
            DELETE t FROM JSON_TABLE(p_attempts_gone, '$[*]' COLUMNS (q VARCHAR(1024) CHARACTER SET utf8mb4 PATH '$[0]', k VARCHAR(1024) CHARACTER SET utf8mb4 PATH '$[1]')) g
                STRAIGHT_JOIN ssq_attempts t ON t.queue = g.q AND t.id = g.k;
        END IF;
        IF p_sns_gone IS NOT NULL THEN
            DELETE t FROM JSON_TABLE(p_sns_gone, '$[*]' COLUMNS (k VARCHAR(1024) CHARACTER SET utf8mb4 PATH '$')) g
                STRAIGHT_JOIN ssq_sns t ON t.`key` = g.k;
        END IF;
        IF p_delivered IS NOT NULL THEN
            DELETE t FROM JSON_TABLE(p_delivered, '$[*]' COLUMNS (i BIGINT PATH '$')) g
                STRAIGHT_JOIN ssq_transfers t ON t.id = g.i WHERE t.shard = p_shard AND t.delivered = 0;
        END IF;
        IF p_taken_in IS NOT NULL THEN
            DELETE t FROM JSON_TABLE(p_taken_in, '$[*]' COLUMNS (i BIGINT PATH '$')) g
                STRAIGHT_JOIN ssq_transfers t ON t.id = g.i WHERE t.shard = p_shard AND t.delivered = 1;
        END IF;

        IF p_queues IS NOT NULL THEN
            INSERT INTO ssq_queues (name, record)
                SELECT g.q, g.r FROM JSON_TABLE(p_queues, '$[*]' COLUMNS (q VARCHAR(1024) CHARACTER SET utf8mb4 PATH '$[0]', r LONGTEXT CHARACTER SET utf8mb4 PATH '$[1]')) g
                ON DUPLICATE KEY UPDATE record = g.r;
        END IF;
        IF p_sequences IS NOT NULL THEN
            INSERT INTO ssq_sequences (name, ceiling)
                SELECT g.q, g.c FROM JSON_TABLE(p_sequences, '$[*]' COLUMNS (q VARCHAR(1024) CHARACTER SET utf8mb4 PATH '$[0]', c BIGINT PATH '$[1]')) g
                ON DUPLICATE KEY UPDATE ceiling = g.c;
        END IF;
        IF p_messages IS NOT NULL THEN
            INSERT INTO ssq_messages (queue, seq, body, state)
                SELECT g.q, g.s, g.b, g.st FROM JSON_TABLE(p_messages, '$[*]' COLUMNS (q VARCHAR(1024) CHARACTER SET utf8mb4 PATH '$[0]', s BIGINT PATH '$[1]', b LONGTEXT CHARACTER SET utf8mb4 PATH '$[2]', st LONGTEXT CHARACTER SET utf8mb4 PATH '$[3]')) g
                ON DUPLICATE KEY UPDATE body = g.b, state = g.st;
        END IF;
        IF p_states IS NOT NULL THEN
            UPDATE JSON_TABLE(p_states, '$[*]' COLUMNS (q VARCHAR(1024) CHARACTER SET utf8mb4 PATH '$[0]', s BIGINT PATH '$[1]', r LONGTEXT CHARACTER SET utf8mb4 PATH '$[2]')) g
                STRAIGHT_JOIN ssq_messages t ON t.queue = g.q AND t.seq = g.s
                SET t.state = g.r;
        END IF;
        IF p_dedup IS NOT NULL THEN
            INSERT INTO ssq_dedup (queue, `key`, record)
                SELECT g.q, g.k, g.r FROM JSON_TABLE(p_dedup, '$[*]' COLUMNS (q VARCHAR(1024) CHARACTER SET utf8mb4 PATH '$[0]', k VARCHAR(1024) CHARACTER SET utf8mb4 PATH '$[1]', r LONGTEXT CHARACTER SET utf8mb4 PATH '$[2]')) g
                ON DUPLICATE KEY UPDATE record = g.r;
        END IF;
        IF p_attempts IS NOT NULL THEN
            INSERT INTO ssq_attempts (queue, id, record)
                SELECT g.q, g.k, g.r FROM JSON_TABLE(p_attempts, '$[*]' COLUMNS (q VARCHAR(1024) CHARACTER SET utf8mb4 PATH '$[0]', k VARCHAR(1024) CHARACTER SET utf8mb4 PATH '$[1]', r LONGTEXT CHARACTER SET utf8mb4 PATH '$[2]')) g
                ON DUPLICATE KEY UPDATE record = g.r;
        END IF;
        IF p_sns IS NOT NULL THEN
            INSERT INTO ssq_sns (`key`, record)
                SELECT g.k, g.r FROM JSON_TABLE(p_sns, '$[*]' COLUMNS (k VARCHAR(1024) CHARACTER SET utf8mb4 PATH '$[0]', r LONGTEXT CHARACTER SET utf8mb4 PATH '$[1]')) g
                ON DUPLICATE KEY UPDATE record = g.r;
        END IF;
        IF p_outbox IS NOT NULL THEN
            INSERT INTO ssq_transfers (shard, to_queue, from_queue, seq, body, state, dead_letter_source)
                SELECT p_shard, g.t, g.f, g.s, g.b, g.st, g.d FROM JSON_TABLE(p_outbox, '$[*]' COLUMNS (
                    t VARCHAR(1024) CHARACTER SET utf8mb4 PATH '$[0]', f VARCHAR(1024) CHARACTER SET utf8mb4 PATH '$[1]',
                    s BIGINT PATH '$[2]', b LONGTEXT CHARACTER SET utf8mb4 PATH '$[3]',
                    st LONGTEXT CHARACTER SET utf8mb4 PATH '$[4]', d VARCHAR(1024) CHARACTER SET utf8mb4 PATH '$[5]')) g;
        END IF;
        IF p_end THEN COMMIT; END IF;
    END",
    "DROP PROCEDURE IF EXISTS ssq_deliver",
    // Moves outbox entries `p_ids` of shard p_shard (fenced as a commit is)
    // into the inbox of shard p_target, unless the queue they go to does
    // not exist. Answers the ids left in the outbox: their queue is missing.
    "CREATE PROCEDURE ssq_deliver(p_shard INT, p_epoch BIGINT, p_ids LONGTEXT CHARACTER SET utf8mb4, p_target INT)
    MODIFIES SQL DATA
    BEGIN
        DECLARE held_epoch BIGINT;
        DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
        START TRANSACTION;
        SELECT epoch INTO held_epoch FROM ssq_lease WHERE shard = p_shard LOCK IN SHARE MODE;
        IF held_epoch IS NULL OR held_epoch <> p_epoch THEN
            SIGNAL SQLSTATE '45000' SET MYSQL_ERRNO = 30001, MESSAGE_TEXT = 'FENCED: another instance leads this shard';
        END IF;
        UPDATE JSON_TABLE(p_ids, '$[*]' COLUMNS (i BIGINT PATH '$')) g STRAIGHT_JOIN ssq_transfers t ON t.id = g.i
            SET t.shard = p_target, t.delivered = 1
            WHERE t.shard = p_shard AND t.delivered = 0
                AND EXISTS (SELECT 1 FROM ssq_queues q WHERE q.name = t.to_queue);
        SELECT t.id FROM JSON_TABLE(p_ids, '$[*]' COLUMNS (i BIGINT PATH '$')) g STRAIGHT_JOIN ssq_transfers t ON t.id = g.i
            WHERE t.shard = p_shard AND t.delivered = 0 ORDER BY t.id;
        COMMIT;
    END",
    "DROP PROCEDURE IF EXISTS ssq_beat",
    // A heartbeat of a sharded group's member (or, p_leaving, its leaving):
    // the expired members dropped, the live members answered in order.
    "CREATE PROCEDURE ssq_beat(p_node VARBINARY(255), p_ttl_ms BIGINT, p_leaving BOOLEAN)
    MODIFIES SQL DATA
    BEGIN
        DELETE FROM ssq_members WHERE expires_at <= NOW(6);
        IF p_leaving THEN
            DELETE FROM ssq_members WHERE node = p_node;
        ELSE
            INSERT INTO ssq_members (node, expires_at) VALUES (p_node, NOW(6) + INTERVAL p_ttl_ms * 1000 MICROSECOND)
                ON DUPLICATE KEY UPDATE expires_at = NOW(6) + INTERVAL p_ttl_ms * 1000 MICROSECOND;
        END IF;
        SELECT node FROM ssq_members ORDER BY node;
    END",
    "DROP PROCEDURE IF EXISTS ssq_shard_count",
    // The group's shard count: recorded by the first instance (1 if the
    // database already holds an unsharded group's data), then answered.
    "CREATE PROCEDURE ssq_shard_count(p_shards INT)
    MODIFIES SQL DATA
    BEGIN
        IF NOT EXISTS (SELECT 1 FROM ssq_group) THEN
            IF p_shards <> 1 AND (EXISTS (SELECT 1 FROM ssq_queues) OR EXISTS (SELECT 1 FROM ssq_lease WHERE epoch > 0)) THEN
                SET p_shards = 1;
            END IF;
            INSERT IGNORE INTO ssq_group (one, shards) VALUES (1, p_shards);
        END IF;
        SELECT shards FROM ssq_group WHERE one = 1;
    END",
];
