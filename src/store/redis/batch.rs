//! One commit script call, built from the writes of many requests.
//!
//! Redis runs the script on its single thread, so every write is reduced to
//! what Redis does least work for: a field set or removed in a hash, or a
//! whole key removed. The writes to one hash are then folded into one HSET
//! and one HDEL per call, the last write to a field winning (a message sent
//! and deleted within one batch never has its body written). Folding reorders
//! writes to different keys, which commute; each key keeps its own order,
//! because an UNLINK closes its key's fold and later writes open a new one.
//!
//! Field values are serialized into one buffer that is frozen once and
//! sliced into the arguments, so a batch of hundreds of writes costs a few
//! allocations rather than several per write.

use std::collections::HashMap;
use std::ops::Range;

use fred::bytes::{BufMut, Bytes, BytesMut};
use fred::types::{Key, Value};

use super::layout::Layout;
use crate::journal::Write;
use crate::queue::Change;
use crate::store::codec;
use crate::topic::SnsChange;

/// The most fields one HSET or HDEL carries, well inside what Lua's
/// `unpack` accepts.
const MAX_FIELDS_PER_COMMAND: usize = 500;

/// Indexes into [`Batch::keys`] of the keys every batch has, after the lock
/// and the load fence (KEYS[1] and KEYS[2] of the script, so 0 and 1).
const QUEUES: usize = 2;
const SEQUENCES: usize = 3;

pub struct Batch<'a> {
    layout: &'a Layout,
    keys: Vec<String>,
    /// Per key, at the same index as `keys`: its folds and unlinks in order.
    ops: Vec<Vec<KeyOp<'a>>>,
    /// The indexes of each queue's own keys, by queue name.
    queue_keys: HashMap<&'a str, QueueKeys>,
    /// The indexes of the [`Stream`]s, once a write touches them.
    streams: [Option<usize>; 2],
    /// The index of the SNS records' hash, once a write touches it.
    sns: Option<usize>,
    data: BytesMut,
}

#[derive(Clone, Copy)]
struct QueueKeys {
    bodies: usize,
    states: usize,
    /// The keys of [`Extra`] records, each added when a write touches them
    /// or empties the queue.
    extra: [Option<usize>; 2],
}

/// The streams of messages between shards (see `transfers.rs`).
#[derive(Clone, Copy)]
enum Stream {
    Outbox = 0,
    Inbox = 1,
}

/// A queue's keys that most writes do not touch.
#[derive(Clone, Copy)]
enum Extra {
    Dedup = 0,
    Attempts = 1,
}

enum KeyOp<'a> {
    /// Field → its new value (a range of the data buffer), or `None` when
    /// the field is removed.
    Fold(HashMap<Field<'a>, Option<Range<usize>>>),
    Unlink,
    /// A stream entry added: its fields and their values.
    Append(Vec<(&'static str, Range<usize>)>),
    /// Stream entries removed, by id.
    Trim(Vec<Range<usize>>),
}

#[derive(PartialEq, Eq, Hash)]
enum Field<'a> {
    /// A message's sequence number, in the bodies and states hashes.
    Seq(u64),
    /// A queue name or a deduplication key.
    Name(&'a str),
}

impl<'a> Batch<'a> {
    pub fn new(layout: &'a Layout) -> Batch<'a> {
        Batch {
            layout,
            keys: vec![
                layout.lock(),
                layout.load_fence(),
                layout.queues(),
                layout.sequences(),
            ],
            ops: vec![Vec::new(), Vec::new(), Vec::new(), Vec::new()],
            queue_keys: HashMap::new(),
            streams: [None; 2],
            sns: None,
            data: BytesMut::new(),
        }
    }

    /// Bytes of values gathered so far.
    pub fn bytes(&self) -> usize {
        self.data.len()
    }

    pub fn push(&mut self, write: &'a Write) {
        match write {
            Write::DeleteQueue { name } => {
                self.remove(QUEUES, Field::Name(name));
                self.remove(SEQUENCES, Field::Name(name));
                self.unlink_all(name);
            }
            Write::Outbox(transfers) => {
                let outbox = self.stream(Stream::Outbox);
                for transfer in transfers {
                    let fields = codec::write_transfer(transfer, &mut self.data);
                    self.ops[outbox].push(KeyOp::Append(fields));
                }
            }
            Write::Delivered(ids) => self.trim(Stream::Outbox, ids),
            Write::TakenIn(ids) => self.trim(Stream::Inbox, ids),
            Write::Sns(changes) => {
                let sns = *self.sns.get_or_insert_with(|| {
                    self.keys.push(self.layout.sns());
                    self.ops.push(Vec::new());
                    self.keys.len() - 1
                });
                for change in changes {
                    match change {
                        SnsChange::Put { key, record } => {
                            self.set(sns, Field::Name(key), |out| out.put_slice(record.as_bytes()))
                        }
                        SnsChange::Delete { key } => self.remove(sns, Field::Name(key)),
                    }
                }
            }
            Write::Queue { name, changes } => {
                let QueueKeys { bodies, states, .. } = self.queue(name);
                for change in changes {
                    match change {
                        Change::Meta(meta) => {
                            self.set(QUEUES, Field::Name(name), |out| codec::write_queue(meta, out))
                        }
                        Change::Sent(message) => {
                            self.set(bodies, Field::Seq(message.seq), |out| {
                                codec::write_body(message, out)
                            });
                            if !codec::state_implied_by_body(message) {
                                self.set(states, Field::Seq(message.seq), |out| {
                                    codec::write_state(message, out)
                                });
                            }
                        }
                        Change::State(message) => self.set(states, Field::Seq(message.seq), |out| {
                            codec::write_state(message, out)
                        }),
                        Change::Removed(seq) => {
                            self.remove(bodies, Field::Seq(*seq));
                            self.remove(states, Field::Seq(*seq));
                        }
                        Change::Purged => self.unlink_all(name),
                        Change::Deduplicated(key, entry) => {
                            let dedup = self.extra(name, Extra::Dedup);
                            self.set(dedup, Field::Name(key), |out| codec::write_dedup(entry, out));
                        }
                        Change::DedupExpired(key) => {
                            let dedup = self.extra(name, Extra::Dedup);
                            self.remove(dedup, Field::Name(key));
                        }
                        Change::Attempt(id, attempt) => {
                            let attempts = self.extra(name, Extra::Attempts);
                            self.set(attempts, Field::Name(id), |out| {
                                codec::write_attempt(attempt, out)
                            });
                        }
                        Change::AttemptExpired(id) => {
                            let attempts = self.extra(name, Extra::Attempts);
                            self.remove(attempts, Field::Name(id));
                        }
                        Change::SequencesReserved(ceiling) => self.set(SEQUENCES, Field::Name(name), |out| {
                            out.put_slice(ceiling.to_string().as_bytes())
                        }),
                    }
                }
            }
        }
    }

    /// Adds a key; callers add each key once (see `queue_keys`).
    fn add_key(&mut self, key: String) -> usize {
        self.keys.push(key);
        self.ops.push(Vec::new());
        self.keys.len() - 1
    }

    fn queue(&mut self, name: &'a str) -> QueueKeys {
        if let Some(keys) = self.queue_keys.get(name) {
            return *keys;
        }
        let keys = QueueKeys {
            bodies: self.add_key(self.layout.bodies(name)),
            states: self.add_key(self.layout.states(name)),
            extra: [None; 2],
        };
        self.queue_keys.insert(name, keys);
        keys
    }

    fn extra(&mut self, name: &'a str, which: Extra) -> usize {
        if let Some(key) = self.queue(name).extra[which as usize] {
            return key;
        }
        let key_name = match which {
            Extra::Dedup => self.layout.dedup(name),
            Extra::Attempts => self.layout.attempts(name),
        };
        let key = self.add_key(key_name);
        self.queue_keys.get_mut(name).expect("added by queue()").extra[which as usize] = Some(key);
        key
    }

    fn stream(&mut self, which: Stream) -> usize {
        if let Some(key) = self.streams[which as usize] {
            return key;
        }
        let key_name = match which {
            Stream::Outbox => self.layout.outbox(),
            Stream::Inbox => self.layout.inbox(),
        };
        let key = self.add_key(key_name);
        self.streams[which as usize] = Some(key);
        key
    }

    fn trim(&mut self, which: Stream, ids: &[String]) {
        let key = self.stream(which);
        let ids = ids.iter().map(|id| self.text_range(id)).collect();
        self.ops[key].push(KeyOp::Trim(ids));
    }

    /// Every key of the queue's messages and records goes (a purge, or the
    /// queue deleted).
    fn unlink_all(&mut self, name: &'a str) {
        let QueueKeys { bodies, states, .. } = self.queue(name);
        let dedup = self.extra(name, Extra::Dedup);
        let attempts = self.extra(name, Extra::Attempts);
        for key in [bodies, states, dedup, attempts] {
            self.ops[key].push(KeyOp::Unlink);
        }
    }

    fn fold(&mut self, key: usize) -> &mut HashMap<Field<'a>, Option<Range<usize>>> {
        let ops = &mut self.ops[key];
        if !matches!(ops.last(), Some(KeyOp::Fold(_))) {
            ops.push(KeyOp::Fold(HashMap::new()));
        }
        match ops.last_mut() {
            Some(KeyOp::Fold(fields)) => fields,
            _ => unreachable!("a fold was just pushed"),
        }
    }

    fn set(&mut self, key: usize, field: Field<'a>, value: impl FnOnce(&mut BytesMut)) {
        let start = self.data.len();
        value(&mut self.data);
        let range = start..self.data.len();
        self.fold(key).insert(field, Some(range));
    }

    fn remove(&mut self, key: usize, field: Field<'a>) {
        self.fold(key).insert(field, None);
    }

    /// The script call's keys and arguments; `token` is the writer's lock
    /// token, which the script compares with the lock before it writes.
    /// The script call, fenced by the lock's `token` and the id of the
    /// load (`load_id`) the memory that made these writes came from.
    pub fn finish(mut self, token: &str, load_id: &str) -> Call {
        let mut args = vec![self.text(token), self.text(load_id)];
        for (index, ops) in std::mem::take(&mut self.ops).into_iter().enumerate() {
            // Lua's KEYS counts from 1.
            let key = Arg::Number(index as i64 + 1);
            for op in ops {
                match op {
                    KeyOp::Unlink => args.extend([Arg::Op("K"), key.clone()]),
                    KeyOp::Append(fields) => {
                        args.extend([Arg::Op("X"), key.clone(), Arg::Number(fields.len() as i64)]);
                        for (name, value) in fields {
                            args.push(self.text(name));
                            args.push(Arg::Data(value));
                        }
                    }
                    KeyOp::Trim(ids) => {
                        for chunk in ids.chunks(MAX_FIELDS_PER_COMMAND) {
                            args.extend([Arg::Op("D"), key.clone(), Arg::Number(chunk.len() as i64)]);
                            args.extend(chunk.iter().cloned().map(Arg::Data));
                        }
                    }
                    KeyOp::Fold(fields) => {
                        let (sets, removes): (Vec<_>, Vec<_>) =
                            fields.into_iter().partition(|(_, value)| value.is_some());
                        for chunk in sets.chunks(MAX_FIELDS_PER_COMMAND) {
                            args.extend([Arg::Op("H"), key.clone(), Arg::Number(chunk.len() as i64)]);
                            for (field, value) in chunk {
                                args.push(self.field(field));
                                args.push(Arg::Data(value.clone().expect("partitioned on Some")));
                            }
                        }
                        for chunk in removes.chunks(MAX_FIELDS_PER_COMMAND) {
                            args.extend([Arg::Op("R"), key.clone(), Arg::Number(chunk.len() as i64)]);
                            for (field, _) in chunk {
                                args.push(self.field(field));
                            }
                        }
                    }
                }
            }
        }
        Call {
            keys: self.keys,
            args,
            data: self.data.freeze(),
        }
    }

    fn field(&mut self, field: &Field) -> Arg {
        match field {
            Field::Seq(seq) => Arg::Number(*seq as i64),
            Field::Name(name) => self.text(name),
        }
    }

    fn text(&mut self, text: &str) -> Arg {
        Arg::Data(self.text_range(text))
    }

    fn text_range(&mut self, text: &str) -> Range<usize> {
        let start = self.data.len();
        self.data.put_slice(text.as_bytes());
        start..self.data.len()
    }
}

#[derive(Clone)]
enum Arg {
    Op(&'static str),
    Number(i64),
    Data(Range<usize>),
}

/// A finished batch: KEYS and ARGV of the commit script, which can be
/// produced again without copying the values (for a retry after Redis lost
/// its script cache).
pub struct Call {
    keys: Vec<String>,
    args: Vec<Arg>,
    data: Bytes,
}

impl Call {
    pub fn keys(&self) -> Vec<Key> {
        self.keys.iter().map(Key::from).collect()
    }

    pub fn args(&self) -> Vec<Value> {
        self.args
            .iter()
            .map(|arg| match arg {
                Arg::Op(op) => Value::Bytes(Bytes::from_static(op.as_bytes())),
                Arg::Number(number) => Value::Integer(*number),
                Arg::Data(range) => Value::Bytes(self.data.slice(range.clone())),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::journal::Transfer;
    use crate::queue::attributes::DeduplicationScope;
    use crate::queue::message::MessageState;
    use crate::queue::{Attempt, DedupEntry, QueueAttributes, QueueMeta, ReceiptHandle, SEQUENCE_BLOCK};
    use crate::store::codec::{SAMPLE_VISIBLE, sample_message, text};

    /// Redis as the commit script sees it: key → hash.
    type Store = BTreeMap<String, BTreeMap<String, String>>;

    fn hset(store: &mut Store, key: String, field: String, value: String) {
        store.entry(key).or_default().insert(field, value);
    }

    fn hdel(store: &mut Store, key: &str, field: &str) {
        if let Some(hash) = store.get_mut(key) {
            hash.remove(field);
            if hash.is_empty() {
                store.remove(key);
            }
        }
    }

    /// A stream entry added, as a hash field: id (one past the highest) →
    /// its fields in order.
    fn xadd(store: &mut Store, key: String, fields: Vec<(String, String)>) {
        let stream = store.entry(key).or_default();
        let id = stream
            .keys()
            .last()
            .map_or(1, |id| id.parse::<u64>().unwrap() + 1);
        let entry = fields
            .iter()
            .map(|(f, v)| format!("{f}={v}"))
            .collect::<Vec<_>>()
            .join("\n");
        stream.insert(format!("{id:020}"), entry);
    }

    const LOAD_ID: &str = "load-1";

    /// What commit.lua does with a call.
    fn run_script(call: &Call, token: &str, store: &mut Store) -> usize {
        let args: Vec<String> = call
            .args()
            .iter()
            .map(|value| value.as_string().expect("every argument is text or a number"))
            .collect();
        assert_eq!(args[0], token);
        assert_eq!(args[1], LOAD_ID);
        let mut commands = 0;
        let mut i = 2;
        while i < args.len() {
            let key = &call.keys[args[i + 1].parse::<usize>().unwrap() - 1];
            commands += 1;
            match args[i].as_str() {
                "H" => {
                    let count: usize = args[i + 2].parse().unwrap();
                    for pair in args[i + 3..i + 3 + 2 * count].chunks(2) {
                        hset(store, key.clone(), pair[0].clone(), pair[1].clone());
                    }
                    i += 3 + 2 * count;
                }
                // A stream is modelled as a hash of entry id → entry.
                "R" | "D" => {
                    let count: usize = args[i + 2].parse().unwrap();
                    for field in &args[i + 3..i + 3 + count] {
                        hdel(store, key, field);
                    }
                    i += 3 + count;
                }
                "K" => {
                    store.remove(key);
                    i += 2;
                }
                "X" => {
                    let count: usize = args[i + 2].parse().unwrap();
                    let fields = args[i + 3..i + 3 + 2 * count]
                        .chunks(2)
                        .map(|pair| (pair[0].clone(), pair[1].clone()))
                        .collect();
                    xadd(store, key.clone(), fields);
                    i += 3 + 2 * count;
                }
                op => panic!("unknown op {op}"),
            }
        }
        commands
    }

    /// The meaning of a write, applied alone and in order: what folding
    /// must not change.
    fn apply_one(write: &Write, layout: &Layout, store: &mut Store) {
        match write {
            Write::DeleteQueue { name } => {
                hdel(store, &layout.queues(), name);
                hdel(store, &layout.sequences(), name);
                for key in [
                    layout.bodies(name),
                    layout.states(name),
                    layout.dedup(name),
                    layout.attempts(name),
                ] {
                    store.remove(&key);
                }
            }
            Write::Outbox(transfers) => {
                for transfer in transfers {
                    let mut out = BytesMut::new();
                    let fields = codec::write_transfer(transfer, &mut out)
                        .into_iter()
                        .map(|(name, range)| {
                            (
                                name.to_string(),
                                String::from_utf8_lossy(&out[range]).into_owned(),
                            )
                        })
                        .collect();
                    xadd(store, layout.outbox(), fields);
                }
            }
            Write::Delivered(ids) => ids.iter().for_each(|id| hdel(store, &layout.outbox(), id)),
            Write::TakenIn(ids) => ids.iter().for_each(|id| hdel(store, &layout.inbox(), id)),
            Write::Sns(changes) => {
                for change in changes {
                    match change {
                        SnsChange::Put { key, record } => {
                            hset(store, layout.sns(), key.clone(), record.clone())
                        }
                        SnsChange::Delete { key } => hdel(store, &layout.sns(), key),
                    }
                }
            }
            Write::Queue { name, changes } => {
                let (bodies, states) = (layout.bodies(name), layout.states(name));
                for change in changes {
                    match change {
                        Change::Meta(meta) => hset(
                            store,
                            layout.queues(),
                            name.clone(),
                            text(|out| codec::write_queue(meta, out)),
                        ),
                        Change::Sent(message) => {
                            let seq = message.seq.to_string();
                            hset(
                                store,
                                bodies.clone(),
                                seq.clone(),
                                text(|out| codec::write_body(message, out)),
                            );
                            if !codec::state_implied_by_body(message) {
                                hset(
                                    store,
                                    states.clone(),
                                    seq,
                                    text(|out| codec::write_state(message, out)),
                                );
                            }
                        }
                        Change::State(message) => hset(
                            store,
                            states.clone(),
                            message.seq.to_string(),
                            text(|out| codec::write_state(message, out)),
                        ),
                        Change::Removed(seq) => {
                            hdel(store, &bodies, &seq.to_string());
                            hdel(store, &states, &seq.to_string());
                        }
                        Change::Purged => {
                            for key in [&bodies, &states, &layout.dedup(name), &layout.attempts(name)] {
                                store.remove(key);
                            }
                        }
                        Change::Deduplicated(key, entry) => hset(
                            store,
                            layout.dedup(name),
                            key.clone(),
                            text(|out| codec::write_dedup(entry, out)),
                        ),
                        Change::DedupExpired(key) => hdel(store, &layout.dedup(name), key),
                        Change::Attempt(id, attempt) => hset(
                            store,
                            layout.attempts(name),
                            id.clone(),
                            text(|out| codec::write_attempt(attempt, out)),
                        ),
                        Change::AttemptExpired(id) => hdel(store, &layout.attempts(name), id),
                        Change::SequencesReserved(ceiling) => {
                            hset(store, layout.sequences(), name.clone(), ceiling.to_string())
                        }
                    }
                }
            }
        }
    }

    /// xorshift: a fixed seed, so a failure replays.
    struct Dice(u64);

    impl Dice {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    /// A random write to one of two queues, over few sequence numbers and
    /// deduplication keys, so that writes to the same field meet often.
    fn random_write(dice: &mut Dice, next_seq: &mut u64) -> Write {
        let name = ["a", "b"][dice.below(2) as usize].to_string();
        let stream_ids = |dice: &mut Dice| {
            (0..=dice.below(2))
                .map(|_| format!("{:020}", dice.below(6)))
                .collect()
        };
        match dice.below(22) {
            0 => return Write::DeleteQueue { name },
            20 | 21 => {
                // SNS records: puts and deletes over few keys, so that they meet.
                let changes = (0..=dice.below(3))
                    .map(|_| {
                        let key = format!("t:{}", dice.below(3));
                        match dice.below(3) {
                            0 => SnsChange::Delete { key },
                            _ => SnsChange::Put {
                                key,
                                record: format!("{{\"v\":{}}}", dice.below(100)),
                            },
                        }
                    })
                    .collect();
                return Write::Sns(changes);
            }
            1 => {
                *next_seq += 1;
                return Write::Outbox(vec![Transfer {
                    from: name,
                    to: "elsewhere".into(),
                    message: sample_message(*next_seq, SAMPLE_VISIBLE),
                    dead_letter_source: (dice.below(2) == 0).then(|| "arn:aws:sqs:us-east-1:1:a".into()),
                }]);
            }
            2 => return Write::Delivered(stream_ids(dice)),
            3 => return Write::TakenIn(stream_ids(dice)),
            _ => {}
        }
        let changes = (0..=dice.below(3))
            .map(|_| match dice.below(10) {
                0 => Change::Meta(QueueMeta {
                    name: name.clone(),
                    attributes: QueueAttributes::default(),
                    tags: BTreeMap::new(),
                    created_at: dice.below(1000),
                    last_modified_at: 0,
                    last_purge_at: None,
                    dedup_scope: DeduplicationScope::Queue,
                    move_tasks: Vec::new(),
                }),
                1 | 2 => {
                    *next_seq += 1;
                    let mut message = sample_message(*next_seq, SAMPLE_VISIBLE);
                    if dice.below(2) == 0 {
                        // Never received: no state record.
                        (
                            message.receive_count,
                            message.first_received_at,
                            message.receipt_key,
                        ) = (0, None, None);
                    }
                    Change::Sent(message)
                }
                3 => Change::State(sample_message(
                    dice.below(*next_seq + 1),
                    MessageState::Delayed {
                        until: dice.below(1000),
                    },
                )),
                4 => Change::Removed(dice.below(*next_seq + 1)),
                5 if dice.below(4) == 0 => Change::Purged,
                5 | 6 => Change::Deduplicated(
                    format!("d{}", dice.below(3)),
                    DedupEntry {
                        message_id: uuid::Uuid::nil(),
                        seq: dice.below(100),
                        expires_at: dice.below(1000),
                    },
                ),
                7 => Change::DedupExpired(format!("d{}", dice.below(3))),
                8 if dice.below(3) == 0 => Change::SequencesReserved(*next_seq + dice.below(1000)),
                8 => Change::Attempt(
                    format!("a{}", dice.below(3)),
                    Attempt {
                        expires_at: dice.below(1000),
                        handles: vec![ReceiptHandle::issue(dice.below(100), 1, 7)],
                    },
                ),
                _ => Change::AttemptExpired(format!("a{}", dice.below(3))),
            })
            .collect();
        Write::Queue { name, changes }
    }

    #[test]
    fn a_folded_batch_leaves_what_its_writes_leave_one_by_one() {
        let layout = Layout::new("t");
        let mut dice = Dice(0x9e37_79b9_7f4a_7c15);
        for round in 0..300 {
            let mut next_seq = 0;
            let earlier: Vec<Write> = (0..20).map(|_| random_write(&mut dice, &mut next_seq)).collect();
            let mut store = Store::new();
            for write in &earlier {
                apply_one(write, &layout, &mut store);
            }
            let writes: Vec<Write> = (0..=dice.below(40))
                .map(|_| random_write(&mut dice, &mut next_seq))
                .collect();
            let mut expected = store.clone();
            for write in &writes {
                apply_one(write, &layout, &mut expected);
            }
            let mut batch = Batch::new(&layout);
            for write in &writes {
                batch.push(write);
            }
            run_script(&batch.finish("token", LOAD_ID), "token", &mut store);
            assert!(
                store == expected,
                "round {round}: the folded batch left another state"
            );
        }
    }

    #[test]
    fn many_sends_to_one_queue_are_three_commands() {
        let layout = Layout::new("t");
        let writes: Vec<Write> = (1..=1200)
            .map(|seq| {
                let sent = Change::Sent(sample_message(seq, SAMPLE_VISIBLE));
                // As the queue reserves sequence numbers, a block at a time.
                let changes = match seq % SEQUENCE_BLOCK {
                    1 => vec![Change::SequencesReserved(seq + SEQUENCE_BLOCK), sent],
                    _ => vec![sent],
                };
                Write::Queue {
                    name: "q".into(),
                    changes,
                }
            })
            .collect();
        let mut batch = Batch::new(&layout);
        for write in &writes {
            batch.push(write);
        }
        let mut store = Store::new();
        let commands = run_script(&batch.finish("token", LOAD_ID), "token", &mut store);
        // Bodies and states in chunks of 500 fields, and one sequence
        // ceiling, the last reserved.
        assert_eq!(commands, 3 + 3 + 1);
        assert_eq!(store[&layout.bodies("q")].len(), 1200);
        assert_eq!(store[&layout.sequences()]["q"], "2001");
    }
}
