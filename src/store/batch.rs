//! A group commit of the SQL stores (Postgres, MySQL) folded: the writes
//! of every request in it, in order, into the last change of each row (a
//! message sent and deleted in the same commit is one removal; a queue
//! purged and then sent to is wiped, then written), as one array per
//! column. Each store sends the arrays to its commit procedure in one call
//! (`postgres/committer.rs`, `mysql/committer.rs`): the database's cost per
//! commit stays about that of one row per change.

use std::collections::HashMap;

use crate::journal::{Transfer, Write};
use crate::queue::Change;
use crate::store::codec;
use crate::topic::SnsChange;

/// The rows one queue's writes leave, as they stand after every write so far.
#[derive(Default)]
struct QueueRows {
    /// Purged or deleted: every message, deduplication id and attempt
    /// goes before anything below is written.
    wiped: bool,
    /// Deleted: its settings and sequence ceiling go too.
    deleted: bool,
    meta: Option<String>,
    ceiling: Option<i64>,
    /// A body put, or `None`: the message and its state removed.
    bodies: HashMap<u64, Option<String>>,
    states: HashMap<u64, String>,
    dedup: HashMap<String, Option<String>>,
    attempts: HashMap<String, Option<String>>,
}

impl QueueRows {
    fn wipe(&mut self) {
        self.wiped = true;
        self.bodies.clear();
        self.states.clear();
        self.dedup.clear();
        self.attempts.clear();
    }

    fn apply(&mut self, change: &Change) {
        let state = |message| record(|out| codec::write_state(message, out));
        match change {
            Change::Meta(meta) => self.meta = Some(record(|out| codec::write_queue(meta, out))),
            Change::Sent(message) => {
                let body = record(|out| codec::write_body(message, out));
                self.bodies.insert(message.seq, Some(body));
                if !codec::state_implied_by_body(message) {
                    self.states.insert(message.seq, state(message));
                }
            }
            Change::State(message) => {
                self.states.insert(message.seq, state(message));
            }
            Change::Removed(seq) => {
                self.bodies.insert(*seq, None);
                self.states.remove(seq);
            }
            Change::Purged => self.wipe(),
            Change::Deduplicated(key, entry) => {
                let entry = record(|out| codec::write_dedup(entry, out));
                self.dedup.insert(key.clone(), Some(entry));
            }
            Change::DedupExpired(key) => {
                self.dedup.insert(key.clone(), None);
            }
            Change::Attempt(id, attempt) => {
                let attempt = record(|out| codec::write_attempt(attempt, out));
                self.attempts.insert(id.clone(), Some(attempt));
            }
            Change::AttemptExpired(id) => {
                self.attempts.insert(id.clone(), None);
            }
            Change::SequencesReserved(ceiling) => self.ceiling = Some(*ceiling as i64),
        }
    }
}

/// The writes of one group commit, folded.
#[derive(Default)]
pub struct Batch {
    queues: HashMap<String, QueueRows>,
    sns: HashMap<String, Option<String>>,
    /// Messages leaving for another shard, in order: `ssq_transfers` rows.
    outbox: Vec<Transfer>,
    /// Transfers settled: delivered from the outbox, taken in from the inbox.
    delivered: Vec<i64>,
    taken_in: Vec<i64>,
    /// Bytes of records so far: a batch stops growing past a cap.
    bytes: usize,
}

impl Batch {
    pub fn push(&mut self, write: &Write) {
        match write {
            Write::Queue { name, changes } => {
                let rows = self.queues.entry(name.clone()).or_default();
                for change in changes {
                    self.bytes += change_bytes(change);
                    rows.apply(change);
                }
            }
            Write::DeleteQueue { name } => {
                let rows = self.queues.entry(name.clone()).or_default();
                rows.wipe();
                rows.deleted = true;
                rows.meta = None;
                rows.ceiling = None;
            }
            Write::Sns(changes) => {
                for change in changes {
                    match change {
                        SnsChange::Put { key, record } => {
                            self.bytes += record.len();
                            self.sns.insert(key.clone(), Some(record.clone()));
                        }
                        SnsChange::Delete { key } => {
                            self.sns.insert(key.clone(), None);
                        }
                    }
                }
            }
            Write::Outbox(transfers) => {
                self.bytes += transfers
                    .iter()
                    .map(|t| t.message.body.len() + 256)
                    .sum::<usize>();
                self.outbox.extend(transfers.iter().cloned());
            }
            Write::Delivered(ids) => self.delivered.extend(ids.iter().filter_map(|id| transfer_id(id))),
            Write::TakenIn(ids) => self.taken_in.extend(ids.iter().filter_map(|id| transfer_id(id))),
        }
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The arguments of the commit procedure after the shard, epoch and load id,
    /// in its order: the records moved out, the queues' names borrowed
    /// (one per row, and most rows of a commit are of a few queues). A
    /// message sent in this commit carries its state beside its body
    /// (`body_states`); `state_*` are the states of the others.
    pub fn arguments(&mut self) -> Arguments<'_> {
        let mut a = Arguments::default();
        for (name, rows) in &mut self.queues {
            let name = name.as_str();
            if rows.wiped {
                a.wiped.push(name);
            }
            if rows.deleted {
                a.queues_gone.push(name);
            }
            if let Some(meta) = rows.meta.take() {
                a.queue_names.push(name);
                a.queue_records.push(meta);
            }
            if let Some(ceiling) = rows.ceiling {
                a.sequence_names.push(name);
                a.sequence_ceilings.push(ceiling);
            }
            for (seq, body) in rows.bodies.drain() {
                match body {
                    Some(body) => {
                        a.body_queues.push(name);
                        a.body_seqs.push(seq as i64);
                        a.body_records.push(body);
                        a.body_states.push(rows.states.remove(&seq));
                    }
                    None => {
                        a.removed_queues.push(name);
                        a.removed_seqs.push(seq as i64);
                    }
                }
            }
            for (seq, state) in rows.states.drain() {
                a.state_queues.push(name);
                a.state_seqs.push(seq as i64);
                a.state_records.push(state);
            }
            split(
                &mut rows.dedup,
                name,
                (&mut a.dedup_gone_queues, &mut a.dedup_gone_keys),
                (&mut a.dedup_queues, &mut a.dedup_keys, &mut a.dedup_records),
            );
            split(
                &mut rows.attempts,
                name,
                (&mut a.attempts_gone_queues, &mut a.attempts_gone_ids),
                (&mut a.attempt_queues, &mut a.attempt_ids, &mut a.attempt_records),
            );
        }
        for (key, record) in self.sns.drain() {
            match record {
                Some(record) => {
                    a.sns_keys.push(key);
                    a.sns_records.push(record);
                }
                None => a.sns_gone.push(key),
            }
        }
        for transfer in &self.outbox {
            a.outbox_to.push(&transfer.to);
            a.outbox_from.push(&transfer.from);
            a.outbox_seqs.push(transfer.message.seq as i64);
            a.outbox_bodies
                .push(record(|out| codec::write_body(&transfer.message, out)));
            a.outbox_states
                .push(record(|out| codec::write_state(&transfer.message, out)));
            a.outbox_sources.push(transfer.dead_letter_source.as_deref());
        }
        a.delivered = std::mem::take(&mut self.delivered);
        a.taken_in = std::mem::take(&mut self.taken_in);
        a
    }
}

/// Rows keyed by text, put or removed, into the arrays of each.
fn split<'a>(
    rows: &mut HashMap<String, Option<String>>,
    queue: &'a str,
    gone: (&mut Vec<&'a str>, &mut Vec<String>),
    put: (&mut Vec<&'a str>, &mut Vec<String>, &mut Vec<String>),
) {
    for (key, record) in rows.drain() {
        match record {
            Some(record) => {
                put.0.push(queue);
                put.1.push(key);
                put.2.push(record);
            }
            None => {
                gone.0.push(queue);
                gone.1.push(key);
            }
        }
    }
}

/// The commit procedure's arrays, in its order.
#[derive(Default, Debug)]
pub struct Arguments<'a> {
    pub wiped: Vec<&'a str>,
    pub queues_gone: Vec<&'a str>,
    pub queue_names: Vec<&'a str>,
    pub queue_records: Vec<String>,
    pub sequence_names: Vec<&'a str>,
    pub sequence_ceilings: Vec<i64>,
    pub removed_queues: Vec<&'a str>,
    pub removed_seqs: Vec<i64>,
    pub body_queues: Vec<&'a str>,
    pub body_seqs: Vec<i64>,
    pub body_records: Vec<String>,
    /// The state of each message sent, if it has one already (a message
    /// received in the commit that sent it; a delayed one).
    pub body_states: Vec<Option<String>>,
    pub state_queues: Vec<&'a str>,
    pub state_seqs: Vec<i64>,
    pub state_records: Vec<String>,
    pub dedup_gone_queues: Vec<&'a str>,
    pub dedup_gone_keys: Vec<String>,
    pub dedup_queues: Vec<&'a str>,
    pub dedup_keys: Vec<String>,
    pub dedup_records: Vec<String>,
    pub attempts_gone_queues: Vec<&'a str>,
    pub attempts_gone_ids: Vec<String>,
    pub attempt_queues: Vec<&'a str>,
    pub attempt_ids: Vec<String>,
    pub attempt_records: Vec<String>,
    pub sns_gone: Vec<String>,
    pub sns_keys: Vec<String>,
    pub sns_records: Vec<String>,
    pub outbox_to: Vec<&'a str>,
    pub outbox_from: Vec<&'a str>,
    pub outbox_seqs: Vec<i64>,
    pub outbox_bodies: Vec<String>,
    pub outbox_states: Vec<String>,
    pub outbox_sources: Vec<Option<&'a str>>,
    pub delivered: Vec<i64>,
    pub taken_in: Vec<i64>,
}

impl Arguments<'_> {
    /// Moves the states of the messages sent into `state_*`, for a store
    /// that keeps states in a table of their own (Postgres).
    pub fn states_apart(&mut self) {
        let sent = self.body_queues.iter().zip(&self.body_seqs);
        for ((queue, seq), state) in sent.zip(&mut self.body_states) {
            if let Some(state) = state.take() {
                self.state_queues.push(queue);
                self.state_seqs.push(*seq);
                self.state_records.push(state);
            }
        }
    }
}

/// A rough size of a change's records, to cap a batch.
fn change_bytes(change: &Change) -> usize {
    match change {
        Change::Sent(message) => message.body.len() + 256,
        _ => 128,
    }
}

/// A transfer's row id, as the transfers task names it (see
/// `store/postgres/mailboxes.rs`).
fn transfer_id(id: &str) -> Option<i64> {
    id.parse()
        .inspect_err(|_| tracing::error!(id, "a transfer id that is not a row id is not settled"))
        .ok()
}

/// A record as `codec.rs` writes it (JSON text).
fn record(fill: impl FnOnce(&mut bytes::BytesMut)) -> String {
    let mut out = bytes::BytesMut::new();
    fill(&mut out);
    String::from_utf8(Vec::from(out)).expect("records are JSON text")
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::queue::{NewMessage, Queue, QueueAttributes};

    const T0: u64 = 1_700_000_000_000;

    fn queue() -> Queue {
        let attributes = QueueAttributes::for_new_queue("jobs", &BTreeMap::new()).unwrap();
        let mut queue = Queue::new("jobs".into(), attributes, BTreeMap::new(), T0);
        queue.enable_journal();
        queue.record_meta();
        queue
    }

    fn write(queue: &mut Queue) -> Write {
        Write::Queue {
            name: queue.name.clone(),
            changes: queue.take_changes(),
        }
    }

    #[test]
    fn a_message_sent_and_deleted_in_one_commit_is_one_removal() {
        let mut queue = queue();
        queue.send(NewMessage::plain("gone"), T0).unwrap();
        queue.send(NewMessage::plain("kept"), T0).unwrap();
        let mut batch = Batch::default();
        batch.push(&write(&mut queue));
        let received = queue.receive(1, None, None, None, T0 + 1);
        assert!(queue.delete(received[0].receipt_handle, T0 + 2).unwrap());
        batch.push(&write(&mut queue));
        let a = batch.arguments();
        assert_eq!(a.queue_names, ["jobs"]);
        assert_eq!(a.body_seqs.len(), 1, "{a:?}");
        assert!(a.body_records[0].contains("kept"), "{a:?}");
        assert_eq!(a.removed_seqs.len(), 1);
        assert!(
            a.state_seqs.is_empty(),
            "the removed message's state is not written: {a:?}"
        );
        assert!(a.wiped.is_empty() && a.queues_gone.is_empty());
    }

    #[test]
    fn a_message_sent_carries_its_state_and_others_states_go_apart() {
        let mut queue = queue();
        queue.send(NewMessage::plain("earlier"), T0).unwrap();
        let mut batch = Batch::default();
        batch.push(&write(&mut queue));
        let _ = batch.arguments();
        queue.send(NewMessage::plain("received"), T0).unwrap();
        queue.send(NewMessage::plain("waiting"), T0).unwrap();
        assert_eq!(queue.receive(2, None, None, None, T0 + 1).len(), 2);
        batch.push(&write(&mut queue));
        let mut a = batch.arguments();
        let mut sent: Vec<(&str, bool)> = a
            .body_records
            .iter()
            .zip(&a.body_states)
            .map(|(body, state)| {
                (
                    if body.contains("received") {
                        "received"
                    } else {
                        "other"
                    },
                    state.is_some(),
                )
            })
            .collect();
        sent.sort();
        assert_eq!(sent, [("other", false), ("received", true)], "{a:?}");
        assert_eq!(a.state_seqs.len(), 1, "the earlier message's state alone: {a:?}");
        assert!(!a.body_seqs.contains(&a.state_seqs[0]));
        let received = a.body_states.iter().position(Option::is_some).unwrap();
        a.states_apart();
        assert_eq!(a.state_seqs.len(), 2, "{a:?}");
        assert!(a.state_seqs.contains(&a.body_seqs[received]));
        assert!(a.body_states.iter().all(Option::is_none));
    }

    #[test]
    fn a_purge_drops_what_came_before_it_and_keeps_what_came_after() {
        let mut queue = queue();
        queue.send(NewMessage::plain("before"), T0).unwrap();
        let mut batch = Batch::default();
        batch.push(&write(&mut queue));
        queue.purge(T0).unwrap();
        queue.send(NewMessage::plain("after"), T0).unwrap();
        batch.push(&write(&mut queue));
        let a = batch.arguments();
        assert_eq!(a.wiped, ["jobs"]);
        assert_eq!(a.body_records.len(), 1);
        assert!(a.body_records[0].contains("after"), "{a:?}");
        assert!(a.queues_gone.is_empty());
    }

    #[test]
    fn a_queue_deleted_then_made_again_is_gone_then_put() {
        let mut queue = queue();
        queue.send(NewMessage::plain("old"), T0).unwrap();
        let mut batch = Batch::default();
        batch.push(&write(&mut queue));
        batch.push(&Write::DeleteQueue { name: "jobs".into() });
        let mut again = self::queue();
        batch.push(&write(&mut again));
        let a = batch.arguments();
        assert_eq!(a.wiped, ["jobs"]);
        assert_eq!(a.queues_gone, ["jobs"]);
        assert_eq!(a.queue_names, ["jobs"], "the new queue's settings, written after");
        assert!(a.body_records.is_empty(), "{a:?}");
    }
}
