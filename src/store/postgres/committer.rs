//! The Postgres call of a group commit (`store/folded_commit.rs`): the
//! folded writes (`store/batch.rs`) sent as arrays to one call of
//! `ssq_commit` (`schema.rs`), on a connection of its own, which raises
//! SQLSTATE SSQFN when another instance leads (fenced) and SSQST when
//! memory was loaded again since (stale).

use tokio::sync::Mutex;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Statement};

use super::{PostgresError, Target};
use crate::store::batch::{Arguments, Batch};
use crate::store::folded_commit::FoldedCall;
use crate::store::group_commit::Outcome;

/// A batch stops growing at this many bytes of records.
const MAX_BATCH_BYTES: usize = 8 * 1024 * 1024;

/// The SQLSTATE `ssq_commit` raises when another instance leads.
const FENCED: &str = "SSQFN";

pub struct PostgresCall {
    pub target: Target,
    pub shard: i32,
    /// The connection commits go on, and the call prepared on it.
    connection: Mutex<Option<(Client, Statement)>>,
}

/// Why a group commit did not count.
#[derive(Debug, thiserror::Error)]
#[error("the write to Postgres failed ({0})")]
pub struct CommitError(#[from] PostgresError);

impl PostgresCall {
    pub fn new(target: Target, shard: i32) -> PostgresCall {
        PostgresCall {
            target,
            shard,
            connection: Mutex::new(None),
        }
    }

    async fn try_call(&self, epoch: i64, load_id: &str, mut batch: Batch) -> Result<(), PostgresError> {
        let target = &self.target;
        let mut connection = self.connection.lock().await;
        // A connection that broke while idle (Postgres restarted) is made
        // again before the call rather than failing it.
        if connection.as_ref().is_some_and(|(client, _)| client.is_closed()) {
            *connection = None;
        }
        if connection.is_none() {
            let client = target.connect().await?;
            let statement = target.bounded(client.prepare(CALL)).await?;
            *connection = Some((client, statement));
        }
        let (client, statement) = connection.as_ref().expect("connected above");
        let bytes = batch.bytes();
        let mut arguments = batch.arguments();
        arguments.states_apart();
        let mut values: Vec<&(dyn ToSql + Sync)> = vec![&self.shard, &epoch, &load_id];
        values.extend(parameters(&arguments));
        let result = (target.bounded_for(bytes, client.execute(statement, &values))).await;
        if result.as_ref().is_err_and(PostgresError::connection_lost) {
            *connection = None;
        }
        result.map(drop)
    }
}

impl FoldedCall for PostgresCall {
    type Error = CommitError;
    const STORE: &'static str = "Postgres";

    fn max_batch_bytes(&self) -> usize {
        MAX_BATCH_BYTES
    }

    async fn call(&self, epoch: i64, load_id: &str, batch: Batch) -> Outcome<CommitError> {
        match self.try_call(epoch, load_id, batch).await {
            Ok(()) => Outcome::Applied,
            Err(PostgresError::Call(error)) if error.code().is_some_and(|code| code.code() == FENCED) => {
                Outcome::Fenced
            }
            Err(error) => Outcome::Failed(error.into()),
        }
    }
}

/// `arguments`' arrays as statement parameters, in `ssq_commit`'s order.
fn parameters<'a>(a: &'a Arguments<'_>) -> [&'a (dyn ToSql + Sync); 35] {
    [
        &a.wiped,
        &a.queues_gone,
        &a.queue_names,
        &a.queue_records,
        &a.sequence_names,
        &a.sequence_ceilings,
        &a.removed_queues,
        &a.removed_seqs,
        &a.body_queues,
        &a.body_seqs,
        &a.body_records,
        &a.state_queues,
        &a.state_seqs,
        &a.state_records,
        &a.dedup_gone_queues,
        &a.dedup_gone_keys,
        &a.dedup_queues,
        &a.dedup_keys,
        &a.dedup_records,
        &a.attempts_gone_queues,
        &a.attempts_gone_ids,
        &a.attempt_queues,
        &a.attempt_ids,
        &a.attempt_records,
        &a.sns_gone,
        &a.sns_keys,
        &a.sns_records,
        &a.outbox_to,
        &a.outbox_from,
        &a.outbox_seqs,
        &a.outbox_bodies,
        &a.outbox_states,
        &a.outbox_sources,
        &a.delivered,
        &a.taken_in,
    ]
}

/// The call, with every parameter typed, so that the arrays are sent in
/// binary without Postgres guessing their types.
const CALL: &str = "SELECT ssq_commit($1::integer, $2::bigint, $3::text, \
     $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::bigint[], \
     $10::text[], $11::bigint[], $12::text[], $13::bigint[], $14::text[], \
     $15::text[], $16::bigint[], $17::text[], $18::text[], $19::text[], \
     $20::text[], $21::text[], $22::text[], $23::text[], $24::text[], \
     $25::text[], $26::text[], $27::text[], $28::text[], $29::text[], $30::text[], \
     $31::text[], $32::text[], $33::bigint[], $34::text[], $35::text[], $36::text[], \
     $37::bigint[], $38::bigint[])";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_call_names_every_array() {
        let a = Arguments::default();
        assert_eq!(parameters(&a).len() + 3, CALL.matches('$').count());
    }
}
