//! ssq's tables in Postgres, and the function every group commit calls.
//!
//! The schema is versioned (`ssq_schema`): each instance, before it first
//! touches the lock, runs the migrations the database lacks in one
//! transaction under a transaction-level advisory lock, so that instances
//! starting together make the tables once, and a database made by a newer
//! ssq is refused rather than misread.
//!
//! The records are the ones Redis and the disk keep (`codec.rs`): a
//! message's body and its state in two tables, so that a receive or a
//! visibility change rewrites a small state row, never the body. Keys are
//! compared bytewise (`COLLATE "C"`). The tables that every send and
//! delete churn vacuum early (1 % of their rows dead, not 20 %), so that
//! steady send-and-delete reuses space rather than grows.

use tokio_postgres::Client;

use super::PostgresError;

/// The advisory lock class of ssq's locks: "SSQ1" as a 32-bit number. The
/// second half names the lock: 0 for migrations, 1 + K for shard K.
pub const LOCK_CLASS: i32 = 0x5353_5131;

/// The advisory lock class ("SSQ2") of the fence between a shard's
/// commits and what changes its lease's epoch or load id: each commit holds
/// it shared for its transaction, a takeover and a load's fence exclusive,
/// so that they wait for a commit in flight and a commit that follows them
/// reads what they wrote. The second half is the shard. (A lock in
/// memory: unlike a row lock, taking it writes nothing.)
pub const FENCE_CLASS: i32 = 0x5353_5132;

/// The second half of the migrations' advisory lock.
const MIGRATIONS: i32 = 0;

/// Each migration, in order: the schema's version is how many have run.
const STEPS: &[&str] = &[FIRST, GROUPS, LOCK_REVISION];

/// Makes or upgrades ssq's tables, once, whoever else starts now.
pub async fn migrate(client: &mut Client) -> Result<(), PostgresError> {
    let transaction = client.transaction().await?;
    transaction
        .execute(
            "SELECT pg_advisory_xact_lock($1, $2)",
            &[&LOCK_CLASS, &MIGRATIONS],
        )
        .await?;
    let exists: bool = transaction
        .query_one("SELECT to_regclass('ssq_schema') IS NOT NULL", &[])
        .await?
        .get(0);
    if !exists {
        transaction
            .batch_execute("CREATE TABLE ssq_schema (version integer NOT NULL)")
            .await?;
    }
    let found: Option<i32> = transaction
        .query_one("SELECT max(version) FROM ssq_schema", &[])
        .await?
        .get(0);
    let found = found.unwrap_or(0);
    let known = STEPS.len() as i32;
    if found > known {
        return Err(PostgresError::NewerSchema { found, known });
    }
    for step in &STEPS[found as usize..] {
        transaction.batch_execute(step).await?;
    }
    if found < known {
        // Functions hold no data: each upgrade puts in the current ones.
        transaction.batch_execute(FUNCTIONS).await?;
        transaction.execute("DELETE FROM ssq_schema", &[]).await?;
        transaction
            .execute("INSERT INTO ssq_schema VALUES ($1)", &[&known])
            .await?;
        tracing::info!(
            from = found,
            to = known,
            "ssq's tables in Postgres made or upgraded"
        );
    }
    transaction.commit().await?;
    Ok(())
}

/// Version 1: the lease and the records.
const FIRST: &str = r#"
-- One row per shard: who leads it (token = epoch|node|nonce|url), since
-- when (renewed_at, the database's clock) for how long, and the load its
-- leader's memory came from.
CREATE TABLE ssq_lease (
    shard integer PRIMARY KEY,
    epoch bigint NOT NULL DEFAULT 0,
    token text,
    renewed_at timestamptz,
    ttl_ms bigint,
    load_id text
);

CREATE TABLE ssq_queues (name text COLLATE "C" PRIMARY KEY, record text NOT NULL);
CREATE TABLE ssq_sequences (name text COLLATE "C" PRIMARY KEY, ceiling bigint NOT NULL);
CREATE TABLE ssq_bodies (
    queue text COLLATE "C",
    seq bigint,
    record text NOT NULL,
    PRIMARY KEY (queue, seq)
) WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_insert_scale_factor = 0.01);
-- Rewritten on every receive: room on each page for the new version, so
-- that the update stays on its page (a HOT update, no index entry).
CREATE TABLE ssq_states (
    queue text COLLATE "C",
    seq bigint,
    record text NOT NULL,
    PRIMARY KEY (queue, seq)
) WITH (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_insert_scale_factor = 0.01);
CREATE TABLE ssq_dedup (
    queue text COLLATE "C",
    key text COLLATE "C",
    record text NOT NULL,
    PRIMARY KEY (queue, key)
) WITH (autovacuum_vacuum_scale_factor = 0.01);
CREATE TABLE ssq_attempts (
    queue text COLLATE "C",
    id text COLLATE "C",
    record text NOT NULL,
    PRIMARY KEY (queue, id)
) WITH (autovacuum_vacuum_scale_factor = 0.01);
-- SNS: topics, subscriptions and FIFO topics' deduplication ids.
CREATE TABLE ssq_sns (key text COLLATE "C" PRIMARY KEY, record text NOT NULL);

"#;

/// Version 2: what a sharded group shares: its shard count, its members,
/// and the messages between shards.
const GROUPS: &str = r#"
-- The shard count the data is for: one row, written by the first instance.
CREATE TABLE ssq_group (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    shards integer NOT NULL
);
-- The live members of a sharded group, each until its heartbeat's expiry
-- on the database's clock.
CREATE TABLE ssq_members (node text COLLATE "C" PRIMARY KEY, expires_at timestamptz NOT NULL);
-- Messages on their way to a queue of another shard (a dead letter, a
-- moved message, a topic's copy): first in the outbox of the shard they
-- left (`delivered` false), then, moved in one step, in the inbox of the
-- shard they go to (`delivered` true, `shard` the target's).
CREATE TABLE ssq_transfers (
    id bigserial PRIMARY KEY,
    shard integer NOT NULL,
    delivered boolean NOT NULL DEFAULT false,
    to_queue text COLLATE "C" NOT NULL,
    from_queue text COLLATE "C" NOT NULL,
    seq bigint NOT NULL,
    body text NOT NULL,
    state text NOT NULL,
    dead_letter_source text
) WITH (autovacuum_vacuum_scale_factor = 0.01);
CREATE INDEX ssq_transfers_box ON ssq_transfers (shard, delivered, id);
"#;

/// Version 3: with a lock kept apart from the database (`--lock-url`),
/// the revision of the holder last recorded in each shard's lease; a
/// holder with a smaller one is refused (`lock.rs`, `record_revision`).
const LOCK_REVISION: &str = r#"
ALTER TABLE ssq_lease ADD COLUMN lock_revision bigint NOT NULL DEFAULT 0;
"#;

/// The functions ssq calls, put in (again) by every upgrade.
const FUNCTIONS: &str = r#"
DROP FUNCTION IF EXISTS ssq_commit;
-- One group commit, whole or not at all: refused with SSQFN when the
-- shard's lease has another epoch (another instance leads: this one steps
-- down), with SSQST when memory was loaded again since the writes were
-- made. The shard's fence (advisory lock class 1397969202, FENCE_CLASS) is
-- held shared, so that a takeover or a load's fence (which hold it
-- exclusive) waits for a commit in flight, and the new leader loads after
-- it; the lease is read after the lock is granted, in a snapshot of its own.
-- Messages that leave for another shard go into its outbox, and the
-- transfers settled (delivered from the outbox, taken in from the inbox)
-- leave it. Each key appears once per array (`batch.rs` folds the writes): wiped
-- queues first, then removals, then the rows put. Every statement finds its
-- rows by primary key, one probe per array element: the planner cannot
-- know an array's length, and left alone it joined a removal's array to a
-- whole scan of the table (measured: 1,512 scans of 12 million rows in
-- five seconds of round trips), so the function plans without them.
CREATE FUNCTION ssq_commit(
    p_shard integer, p_epoch bigint, p_load text,
    p_wiped text[],
    p_queues_gone text[],
    p_queue_names text[], p_queue_records text[],
    p_sequence_names text[], p_sequence_ceilings bigint[],
    p_removed_queues text[], p_removed_seqs bigint[],
    p_body_queues text[], p_body_seqs bigint[], p_body_records text[],
    p_state_queues text[], p_state_seqs bigint[], p_state_records text[],
    p_dedup_gone_queues text[], p_dedup_gone_keys text[],
    p_dedup_queues text[], p_dedup_keys text[], p_dedup_records text[],
    p_attempts_gone_queues text[], p_attempts_gone_ids text[],
    p_attempt_queues text[], p_attempt_ids text[], p_attempt_records text[],
    p_sns_gone text[],
    p_sns_keys text[], p_sns_records text[],
    p_outbox_to text[], p_outbox_from text[], p_outbox_seqs bigint[],
    p_outbox_bodies text[], p_outbox_states text[], p_outbox_sources text[],
    p_delivered bigint[], p_taken_in bigint[]
) RETURNS void LANGUAGE plpgsql
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
AS $$
DECLARE
    held_epoch bigint;
    held_load text;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(1397969202, p_shard);
    SELECT epoch, load_id INTO held_epoch, held_load FROM ssq_lease WHERE shard = p_shard;
    IF held_epoch IS DISTINCT FROM p_epoch THEN
        RAISE EXCEPTION 'FENCED: shard % is led at epoch %, not %', p_shard, held_epoch, p_epoch
            USING ERRCODE = 'SSQFN';
    END IF;
    IF held_load IS DISTINCT FROM p_load THEN
        RAISE EXCEPTION 'STALE: the state was loaded again since these writes were made'
            USING ERRCODE = 'SSQST';
    END IF;

    IF cardinality(p_wiped) > 0 THEN
        DELETE FROM ssq_bodies WHERE queue = ANY (p_wiped);
        DELETE FROM ssq_states WHERE queue = ANY (p_wiped);
        DELETE FROM ssq_dedup WHERE queue = ANY (p_wiped);
        DELETE FROM ssq_attempts WHERE queue = ANY (p_wiped);
    END IF;
    IF cardinality(p_queues_gone) > 0 THEN
        DELETE FROM ssq_queues WHERE name = ANY (p_queues_gone);
        DELETE FROM ssq_sequences WHERE name = ANY (p_queues_gone);
    END IF;
    IF cardinality(p_removed_queues) > 0 THEN
        DELETE FROM ssq_bodies AS t USING unnest(p_removed_queues, p_removed_seqs) AS g (queue, seq)
            WHERE t.queue = g.queue AND t.seq = g.seq;
        DELETE FROM ssq_states AS t USING unnest(p_removed_queues, p_removed_seqs) AS g (queue, seq)
            WHERE t.queue = g.queue AND t.seq = g.seq;
    END IF;
    IF cardinality(p_dedup_gone_queues) > 0 THEN
        DELETE FROM ssq_dedup AS t USING unnest(p_dedup_gone_queues, p_dedup_gone_keys) AS g (queue, key)
            WHERE t.queue = g.queue AND t.key = g.key;
    END IF;
    IF cardinality(p_attempts_gone_queues) > 0 THEN
        DELETE FROM ssq_attempts AS t USING unnest(p_attempts_gone_queues, p_attempts_gone_ids) AS g (queue, id)
            WHERE t.queue = g.queue AND t.id = g.id;
    END IF;
    IF cardinality(p_sns_gone) > 0 THEN
        DELETE FROM ssq_sns WHERE key = ANY (p_sns_gone);
    END IF;
    IF cardinality(p_delivered) > 0 THEN
        DELETE FROM ssq_transfers WHERE id = ANY (p_delivered) AND shard = p_shard AND NOT delivered;
    END IF;
    IF cardinality(p_taken_in) > 0 THEN
        DELETE FROM ssq_transfers WHERE id = ANY (p_taken_in) AND shard = p_shard AND delivered;
    END IF;

    IF cardinality(p_queue_names) > 0 THEN
        INSERT INTO ssq_queues SELECT * FROM unnest(p_queue_names, p_queue_records)
            ON CONFLICT (name) DO UPDATE SET record = excluded.record;
    END IF;
    IF cardinality(p_sequence_names) > 0 THEN
        INSERT INTO ssq_sequences SELECT * FROM unnest(p_sequence_names, p_sequence_ceilings)
            ON CONFLICT (name) DO UPDATE SET ceiling = excluded.ceiling;
    END IF;
    IF cardinality(p_body_queues) > 0 THEN
        INSERT INTO ssq_bodies SELECT * FROM unnest(p_body_queues, p_body_seqs, p_body_records)
            ON CONFLICT (queue, seq) DO UPDATE SET record = excluded.record;
    END IF;
    IF cardinality(p_state_queues) > 0 THEN
        INSERT INTO ssq_states SELECT * FROM unnest(p_state_queues, p_state_seqs, p_state_records)
            ON CONFLICT (queue, seq) DO UPDATE SET record = excluded.record;
    END IF;
    IF cardinality(p_dedup_queues) > 0 THEN
        INSERT INTO ssq_dedup SELECT * FROM unnest(p_dedup_queues, p_dedup_keys, p_dedup_records)
            ON CONFLICT (queue, key) DO UPDATE SET record = excluded.record;
    END IF;
    IF cardinality(p_attempt_queues) > 0 THEN
        INSERT INTO ssq_attempts SELECT * FROM unnest(p_attempt_queues, p_attempt_ids, p_attempt_records)
            ON CONFLICT (queue, id) DO UPDATE SET record = excluded.record;
    END IF;
    IF cardinality(p_sns_keys) > 0 THEN
        INSERT INTO ssq_sns SELECT * FROM unnest(p_sns_keys, p_sns_records)
            ON CONFLICT (key) DO UPDATE SET record = excluded.record;
    END IF;
    IF cardinality(p_outbox_to) > 0 THEN
        INSERT INTO ssq_transfers (shard, to_queue, from_queue, seq, body, state, dead_letter_source)
            SELECT p_shard, * FROM unnest(p_outbox_to, p_outbox_from, p_outbox_seqs,
                p_outbox_bodies, p_outbox_states, p_outbox_sources);
    END IF;
END
$$;


-- Moves outbox entries of shard p_shard (fenced as a commit is) into the
-- inbox of their target shards, each in p_targets beside its id, unless
-- the queue they go to does not exist; wakes the targets' inbox tasks.
-- Returns the ids left in the outbox: their queue is missing.
DROP FUNCTION IF EXISTS ssq_deliver;
CREATE FUNCTION ssq_deliver(p_shard integer, p_epoch bigint, p_ids bigint[], p_targets integer[])
RETURNS bigint[] LANGUAGE plpgsql
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
AS $$
DECLARE
    held_epoch bigint;
    reached integer[];
    missing bigint[];
BEGIN
    PERFORM pg_advisory_xact_lock_shared(1397969202, p_shard);
    SELECT epoch INTO held_epoch FROM ssq_lease WHERE shard = p_shard;
    IF held_epoch IS DISTINCT FROM p_epoch THEN
        RAISE EXCEPTION 'FENCED: shard % is led at epoch %, not %', p_shard, held_epoch, p_epoch
            USING ERRCODE = 'SSQFN';
    END IF;
    WITH moved AS (
        UPDATE ssq_transfers AS t SET shard = g.target, delivered = true
        FROM unnest(p_ids, p_targets) AS g (id, target)
        WHERE t.id = g.id AND t.shard = p_shard AND NOT t.delivered
            AND EXISTS (SELECT 1 FROM ssq_queues q WHERE q.name = t.to_queue)
        RETURNING g.target
    )
    SELECT array_agg(DISTINCT target) INTO reached FROM moved;
    PERFORM pg_notify('ssq_inbox_' || target, '') FROM unnest(reached) AS target;
    SELECT array_agg(t.id ORDER BY t.id) INTO missing
        FROM ssq_transfers t JOIN unnest(p_ids) AS g (id) ON t.id = g.id
        WHERE t.shard = p_shard AND NOT t.delivered;
    RETURN coalesce(missing, '{}');
END
$$;

-- A heartbeat of a sharded group's member (or, p_leaving, its leaving):
-- the expired members dropped, a change announced on ssq_members, the
-- live members returned in order.
DROP FUNCTION IF EXISTS ssq_beat;
CREATE FUNCTION ssq_beat(p_node text, p_ttl_ms bigint, p_leaving boolean)
RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    changed boolean;
    joined boolean;
BEGIN
    DELETE FROM ssq_members WHERE expires_at <= clock_timestamp();
    changed := FOUND;
    IF p_leaving THEN
        DELETE FROM ssq_members WHERE node = p_node;
        changed := changed OR FOUND;
    ELSE
        INSERT INTO ssq_members VALUES (p_node, clock_timestamp() + p_ttl_ms * interval '1 millisecond')
            ON CONFLICT (node) DO UPDATE SET expires_at = excluded.expires_at
            RETURNING xmax = 0 INTO joined;
        changed := changed OR joined;
    END IF;
    IF changed THEN
        PERFORM pg_notify('ssq_members', p_node);
    END IF;
    RETURN QUERY SELECT node FROM ssq_members ORDER BY node;
END
$$;

-- The group's shard count: recorded by the first instance (1 if the
-- database already holds an unsharded group's data), then answered.
DROP FUNCTION IF EXISTS ssq_shard_count;
CREATE FUNCTION ssq_shard_count(p_shards integer) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    recorded integer;
BEGIN
    SELECT shards INTO recorded FROM ssq_group;
    IF recorded IS NOT NULL THEN
        RETURN recorded;
    END IF;
    IF p_shards <> 1 AND (EXISTS (SELECT 1 FROM ssq_queues) OR EXISTS (SELECT 1 FROM ssq_lease WHERE epoch > 0)) THEN
        p_shards := 1;
    END IF;
    INSERT INTO ssq_group (shards) VALUES (p_shards) ON CONFLICT DO NOTHING;
    SELECT shards INTO recorded FROM ssq_group;
    RETURN recorded;
END
$$;
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_commit_function_takes_the_fence_this_crate_names() {
        let shared = format!("pg_advisory_xact_lock_shared({FENCE_CLASS}, p_shard)");
        assert!(FUNCTIONS.contains(&shared), "{shared}");
    }
}
