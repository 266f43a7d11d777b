//! The MySQL call of a group commit (`store/folded_commit.rs`): the folded
//! writes (`store/batch.rs`) as JSON arrays, one per kind of row, sent to
//! one call of `ssq_commit` (`schema.rs`) on a connection of its own; a
//! message sent in the commit is one element, its state beside its body. A
//! commit larger than half of the server's `max_allowed_packet` (a
//! snapshot's import) goes in several calls of one transaction: its
//! removals in the first, its rows put spread over the rest.

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Params, Value};
use serde::Serialize;
use tokio::sync::Mutex;

use super::{MysqlError, Target};
use crate::store::batch::{Arguments, Batch};
use crate::store::folded_commit::FoldedCall;
use crate::store::group_commit::Outcome;

/// A batch stops growing at this many bytes of records.
const MAX_BATCH_BYTES: usize = 4 * 1024 * 1024;

/// The arrays of `ssq_commit`, after its shard, epoch, load and the
/// transaction's two flags.
const ARRAYS: usize = 16;

const CALL: &str = "CALL ssq_commit(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";

pub struct MysqlCall {
    target: Target,
    shard: i32,
    /// The connection commits go on, and how many bytes one call may
    /// carry on it (half the server's `max_allowed_packet`).
    conn: Mutex<Option<(Conn, usize)>>,
}

/// Why a group commit did not count.
#[derive(Debug, thiserror::Error)]
#[error("the write to MySQL failed ({0})")]
pub struct CommitError(#[from] MysqlError);

impl MysqlCall {
    pub fn new(target: Target, shard: i32) -> MysqlCall {
        MysqlCall {
            target,
            shard,
            conn: Mutex::new(None),
        }
    }

    async fn try_call(&self, epoch: i64, load_id: &str, mut batch: Batch) -> Result<(), MysqlError> {
        let target = &self.target;
        let mut slot = self.conn.lock().await;
        if slot.is_none() {
            let mut conn = target.connect().await?;
            let packet: Option<u64> = target
                .bounded(conn.query_first("SELECT @@max_allowed_packet"))
                .await?;
            let per_call = (packet.unwrap_or(4 << 20) as usize / 2)
                .saturating_sub(64 * 1024)
                .max(512 * 1024);
            *slot = Some((conn, per_call));
        }
        let (conn, per_call) = slot.as_mut().expect("connected above");
        let calls = encode(&batch.arguments(), *per_call);
        let last = calls.len() - 1;
        let mut result = Ok(());
        for (index, arrays) in calls.into_iter().enumerate() {
            let bytes: usize = arrays.iter().flatten().map(String::len).sum();
            let mut values: Vec<Value> = vec![
                self.shard.into(),
                epoch.into(),
                load_id.into(),
                (index == 0).into(),
                (index == last).into(),
            ];
            values.extend(
                arrays
                    .into_iter()
                    .map(|array| array.map_or(Value::NULL, Value::from)),
            );
            result = target
                .bounded_for(bytes, conn.exec_drop(CALL, Params::Positional(values)))
                .await;
            if result.is_err() {
                break;
            }
        }
        // A connection left in a transaction (a call of several went
        // unanswered) is dropped: MySQL rolls it back.
        if result
            .as_ref()
            .is_err_and(|error| error.connection_lost() || last > 0)
        {
            *slot = None;
        }
        result
    }
}

impl FoldedCall for MysqlCall {
    type Error = CommitError;
    const STORE: &'static str = "MySQL";

    fn max_batch_bytes(&self) -> usize {
        MAX_BATCH_BYTES
    }

    async fn call(&self, epoch: i64, load_id: &str, batch: Batch) -> Outcome<CommitError> {
        match self.try_call(epoch, load_id, batch).await {
            Ok(()) => Outcome::Applied,
            Err(error) if error.fenced() => Outcome::Fenced,
            Err(error) => Outcome::Failed(error.into()),
        }
    }
}

/// `ssq_commit`'s arrays, in its order, for each call: one element at a
/// time, a new call begun when the next row put would take this one past
/// `per_call` bytes (the removals, which carry no records, all go first).
fn encode(a: &Arguments<'_>, per_call: usize) -> Vec<[Option<String>; ARRAYS]> {
    let mut elements: Vec<(usize, String)> = Vec::new();
    let mut add = |array: usize, element: String| elements.push((array, element));
    // Removals: p_wiped, p_gone, p_removed, p_dedup_gone, p_attempts_gone,
    // p_sns_gone, p_delivered, p_taken_in.
    a.wiped.iter().for_each(|q| add(0, json(q)));
    a.queues_gone.iter().for_each(|q| add(1, json(q)));
    pairs(&a.removed_queues, &a.removed_seqs).for_each(|e| add(4, e));
    pairs(&a.dedup_gone_queues, &a.dedup_gone_keys).for_each(|e| add(7, e));
    pairs(&a.attempts_gone_queues, &a.attempts_gone_ids).for_each(|e| add(9, e));
    a.sns_gone.iter().for_each(|k| add(11, json(k)));
    a.delivered.iter().for_each(|id| add(14, json(id)));
    a.taken_in.iter().for_each(|id| add(15, json(id)));
    let removals = elements.len();
    let mut add = |array: usize, element: String| elements.push((array, element));
    pairs(&a.queue_names, &a.queue_records).for_each(|e| add(2, e));
    pairs(&a.sequence_names, &a.sequence_ceilings).for_each(|e| add(3, e));
    // A message sent in this commit is one row put whole, with its state
    // if it has one already; the other states are rewritten in place.
    let sent = a.body_queues.iter().zip(&a.body_seqs);
    for ((queue, seq), (body, state)) in sent.zip(a.body_records.iter().zip(&a.body_states)) {
        add(5, json(&(queue, seq, body, state)));
    }
    triples(&a.state_queues, &a.state_seqs, &a.state_records).for_each(|e| add(6, e));
    triples(&a.dedup_queues, &a.dedup_keys, &a.dedup_records).for_each(|e| add(8, e));
    triples(&a.attempt_queues, &a.attempt_ids, &a.attempt_records).for_each(|e| add(10, e));
    pairs(&a.sns_keys, &a.sns_records).for_each(|e| add(12, e));
    for (index, to) in a.outbox_to.iter().enumerate() {
        let row = (
            to,
            a.outbox_from[index],
            a.outbox_seqs[index],
            &a.outbox_bodies[index],
            &a.outbox_states[index],
            a.outbox_sources[index],
        );
        add(13, json(&row));
    }

    let mut calls = Vec::new();
    let mut arrays: [Vec<String>; ARRAYS] = Default::default();
    let mut bytes = 0;
    for (index, (array, element)) in elements.into_iter().enumerate() {
        if index >= removals && bytes > 0 && bytes + element.len() > per_call {
            calls.push(std::mem::take(&mut arrays));
            bytes = 0;
        }
        bytes += element.len() + 1;
        arrays[array].push(element);
    }
    calls.push(arrays);
    calls
        .into_iter()
        .map(|arrays| {
            arrays.map(|elements| (!elements.is_empty()).then(|| format!("[{}]", elements.join(","))))
        })
        .collect()
}

fn json(value: &impl Serialize) -> String {
    serde_json::to_string(value).expect("strings and numbers serialize")
}

fn pairs<'a, A: Serialize, B: Serialize>(a: &'a [A], b: &'a [B]) -> impl Iterator<Item = String> + 'a {
    a.iter().zip(b).map(|pair| json(&pair))
}

fn triples<'a, A: Serialize, B: Serialize, C: Serialize>(
    a: &'a [A],
    b: &'a [B],
    c: &'a [C],
) -> impl Iterator<Item = String> + 'a {
    a.iter().zip(b).zip(c).map(|((a, b), c)| json(&(a, b, c)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commit_too_large_for_one_call_puts_its_removals_in_the_first() {
        let records: Vec<String> = (0..4).map(|i| format!("{i}{}", "x".repeat(100))).collect();
        let a = Arguments {
            wiped: vec!["gone"],
            removed_queues: vec!["q"],
            removed_seqs: vec![9],
            body_queues: vec!["q"; 4],
            body_seqs: vec![1, 2, 3, 4],
            body_records: records,
            body_states: vec![None; 4],
            ..Arguments::default()
        };
        let calls = encode(&a, 250);
        assert_eq!(calls.len(), 2, "{calls:?}");
        assert_eq!(calls[0][0].as_deref(), Some(r#"["gone"]"#));
        assert_eq!(calls[0][4].as_deref(), Some(r#"[["q",9]]"#));
        assert!(calls[1][0].is_none() && calls[1][4].is_none());
        let bodies =
            |call: &[Option<String>; ARRAYS]| call[5].as_ref().map_or(0, |b| b.matches("[\"q\"").count());
        assert_eq!(bodies(&calls[0]) + bodies(&calls[1]), 4);
        let one = encode(&a, 1 << 20);
        assert_eq!(one.len(), 1);
        assert!(one[0][2].is_none(), "no queue record: the array is NULL");
    }

    #[test]
    fn a_message_sent_in_the_commit_is_put_whole_and_other_states_alone() {
        let a = Arguments {
            body_queues: vec!["q", "q"],
            body_seqs: vec![1, 2],
            body_records: vec!["b1".into(), "b2".into()],
            body_states: vec![None, Some("s2".into())],
            state_queues: vec!["q"],
            state_seqs: vec![7],
            state_records: vec!["s7".into()],
            ..Arguments::default()
        };
        let call = &encode(&a, 1 << 20)[0];
        let mut messages: Vec<(String, i64, String, Option<String>)> =
            serde_json::from_str(call[5].as_deref().unwrap()).unwrap();
        messages.sort();
        assert_eq!(
            messages,
            [
                ("q".into(), 1, "b1".into(), None),
                ("q".into(), 2, "b2".into(), Some("s2".into()))
            ]
        );
        assert_eq!(call[6].as_deref(), Some(r#"[["q",7,"s7"]]"#));
    }

    #[test]
    fn a_record_is_a_json_string_whatever_it_holds() {
        let a = Arguments {
            sns_keys: vec!["t:\"x\"".into()],
            sns_records: vec!["{\"a\":\"\\\"é\\u0000\"}".into()],
            ..Arguments::default()
        };
        let call = &encode(&a, 1 << 20)[0];
        let parsed: Vec<(String, String)> = serde_json::from_str(call[12].as_deref().unwrap()).unwrap();
        assert_eq!(parsed, [(a.sns_keys[0].clone(), a.sns_records[0].clone())]);
    }
}
