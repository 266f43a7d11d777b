//! FIFO bookkeeping of a queue: its message groups, lined up as AWS lines
//! them up, and the deduplication ids it remembers.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

/// FIFO message groups, lined up as AWS lines them up.
///
/// A group can deliver its visible messages that come before its oldest
/// message in flight (with nothing in flight, all of them): a message taken
/// back by a visibility change (or whose timeout ran out) is received again
/// before the later messages of its group that are still in flight, and a
/// group whose oldest message is in flight gives nothing. Ready groups take
/// their turn by the time their first message became visible (sent, or
/// back from a receive), so a group that turns ready again after a receive
/// goes behind the groups already waiting, as recorded against AWS; `ready`
/// keeps that order, so the next receivable message is found in O(log n).
#[derive(Default)]
pub(super) struct Groups {
    pub(super) by_name: HashMap<Arc<str>, Group>,
    /// (visible since, sequence number) of each ready group's first message.
    pub(super) ready: BTreeSet<(u64, u64, Arc<str>)>,
}

#[derive(Default)]
pub(super) struct Group {
    /// Sequence number → visible since.
    pub(super) visible: BTreeMap<u64, u64>,
    pub(super) in_flight: BTreeSet<u64>,
    /// The key under which this group sits in `ready`, if it does.
    pub(super) ready_at: Option<(u64, u64)>,
}

impl Group {
    /// The first message, if the group can deliver it.
    pub(super) fn head(&self) -> Option<(u64, u64)> {
        let (&seq, &since) = self.visible.first_key_value()?;
        let blocked = self.in_flight.first().is_some_and(|&oldest| oldest < seq);
        (!blocked).then_some((since, seq))
    }
}

impl Groups {
    pub(super) fn update(&mut self, name: &Arc<str>, change: impl FnOnce(&mut Group)) {
        let group = self.by_name.entry(name.clone()).or_default();
        change(group);
        let head = group.head();
        if group.ready_at != head {
            if let Some((since, seq)) = group.ready_at {
                self.ready.remove(&(since, seq, name.clone()));
            }
            if let Some((since, seq)) = head {
                self.ready.insert((since, seq, name.clone()));
            }
            group.ready_at = head;
        }
        if group.visible.is_empty() && group.in_flight.is_empty() {
            self.by_name.remove(name);
        }
    }

    /// The ready group whose turn it is: its name, its first message, and
    /// the sequence number before which its messages may be taken (its
    /// oldest message in flight).
    pub(super) fn next_ready(&self) -> Option<Run> {
        let (_, seq, name) = self.ready.first()?;
        let before = self.by_name[name].in_flight.first().copied().unwrap_or(u64::MAX);
        Some(Run {
            group: name.clone(),
            first: *seq,
            before,
        })
    }

    /// The next message of the run, if the group has one in it.
    pub(super) fn next_in(&self, run: &Run) -> Option<u64> {
        let (&seq, _) = self.by_name.get(&run.group)?.visible.first_key_value()?;
        (seq < run.before).then_some(seq)
    }
}

/// What one receive takes from one FIFO group: consecutive messages from
/// `first`, all sent before `before` (the group's oldest message that was
/// already in flight when the run began).
pub(super) struct Run {
    pub(super) group: Arc<str>,
    pub(super) first: u64,
    pub(super) before: u64,
}

/// FIFO deduplication: ids seen within the last five minutes.
///
/// The records outlive their messages (a message sent and deleted at once
/// leaves its record for five minutes), so they count toward the bytes a
/// queue holds, and with it toward `--max-bytes`: otherwise sends with fresh
/// ids could grow memory past every configured limit.
#[derive(Default)]
pub(super) struct Dedup {
    pub(super) entries: HashMap<String, DedupEntry>,
    pub(super) expiry: BTreeSet<(u64, String)>,
    /// What the records take in memory, by [`Dedup::footprint`].
    pub(super) bytes: u64,
}

impl Dedup {
    /// Memory one record takes: its key twice (map and expiry index) and
    /// the two entries around it.
    pub(super) fn footprint(key: &str) -> u64 {
        2 * key.len() as u64 + 160
    }

    pub(super) fn insert(&mut self, key: String, entry: DedupEntry) {
        self.expiry.insert((entry.expires_at, key.clone()));
        match self.entries.insert(key.clone(), entry) {
            // A key is only sent again once it expired; if a record is
            // replaced all the same, its old expiry goes with it.
            Some(replaced) => {
                self.expiry.remove(&(replaced.expires_at, key));
            }
            None => self.bytes += Self::footprint(&key),
        }
    }

    /// Forgets the records that expire by `now`, returning their keys.
    pub(super) fn expire(&mut self, now: u64) -> Vec<String> {
        let mut expired = Vec::new();
        while let Some((expires_at, _)) = self.expiry.first()
            && *expires_at <= now
            && let Some((_, key)) = self.expiry.pop_first()
        {
            self.entries.remove(&key);
            self.bytes -= Self::footprint(&key);
            expired.push(key);
        }
        expired
    }
}

/// What a deduplication id stands for while it is remembered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DedupEntry {
    pub message_id: uuid::Uuid,
    pub seq: u64,
    pub expires_at: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::test_support::*;

    #[test]
    fn fifo_groups_deliver_in_order_and_block_while_in_flight() {
        let mut q = fifo_queue();
        for (body, group) in [("a1", "a"), ("b1", "b"), ("a2", "a"), ("a3", "a"), ("b2", "b")] {
            q.send(grouped(body, group), T0).unwrap();
        }
        // One receive takes a whole run of a group, in order, then the next group.
        assert_eq!(
            bodies(&q.receive(4, Some(30), None, None, T0)),
            ["a1", "a2", "a3", "b1"]
        );
        // Both groups now have messages in flight: nothing to give.
        assert!(q.receive(10, None, None, None, T0).is_empty());
        // Visibility runs out: a1..a3 and b1 come back first, in order.
        assert_eq!(
            bodies(&q.receive(10, Some(30), None, None, T0 + 30_000)),
            ["a1", "a2", "a3", "b1", "b2"]
        );
    }

    #[test]
    fn a_fifo_group_unblocks_when_its_message_is_deleted() {
        let mut q = fifo_queue();
        for body in ["1", "2"] {
            q.send(grouped(body, "g"), T0).unwrap();
        }
        let first = q.receive(1, None, None, None, T0);
        assert_eq!(bodies(&first), ["1"]);
        assert!(
            q.receive(1, None, None, None, T0).is_empty(),
            "blocked while 1 is in flight"
        );
        q.delete(first[0].receipt_handle, T0).unwrap();
        assert_eq!(bodies(&q.receive(1, None, None, None, T0)), ["2"]);
    }

    /// As recorded against AWS: a group whose message came back from a
    /// receive (here cut short by a visibility change) goes behind the
    /// groups already waiting, and delivers what comes before its oldest
    /// message still in flight.
    #[test]
    fn a_fifo_group_back_from_a_receive_waits_behind_groups_already_ready() {
        let mut q = fifo_queue();
        for (body, group) in [("g1-m1", "1"), ("g1-m2", "1"), ("g2-m1", "2")] {
            q.send(grouped(body, group), T0).unwrap();
        }
        let taken = q.receive(2, Some(30), None, None, T0 + 1);
        assert_eq!(bodies(&taken), ["g1-m1", "g1-m2"]);
        q.change_visibility(taken[0].receipt_handle, 0, T0 + 2).unwrap();
        assert_eq!(
            bodies(&q.receive(3, Some(30), None, None, T0 + 3)),
            ["g2-m1", "g1-m1"],
            "g1-m2 is still in flight"
        );
    }

    /// As recorded against AWS: three messages of one group, one of them
    /// kept in flight longer; the group gives the messages before it.
    #[test]
    fn a_fifo_group_gives_the_messages_before_its_oldest_in_flight() {
        for (kept, expected) in [(0, vec![]), (1, vec!["foo"]), (2, vec!["foo", "bar"])] {
            let mut q = fifo_queue();
            for body in ["foo", "bar", "baz"] {
                q.send(grouped(body, "1"), T0).unwrap();
            }
            let taken = q.receive(5, Some(1), None, None, T0);
            q.change_visibility(taken[kept].receipt_handle, 4, T0 + 10)
                .unwrap();
            assert_eq!(
                bodies(&q.receive(5, None, None, None, T0 + 2_500)),
                expected,
                "message {kept} kept"
            );
        }
    }

    /// As recorded against AWS: receives with a visibility timeout of zero
    /// put the groups they took behind the one they did not reach.
    #[test]
    fn fifo_groups_received_with_no_visibility_timeout_go_to_the_back() {
        let mut q = fifo_queue();
        for (body, group) in [
            ("g1-m1", "1"),
            ("g2-m1", "2"),
            ("g2-m2", "2"),
            ("g3-m1", "3"),
            ("g1-m2", "1"),
        ] {
            q.send(grouped(body, group), T0).unwrap();
        }
        assert_eq!(
            bodies(&q.receive(3, Some(0), None, None, T0 + 1)),
            ["g1-m1", "g1-m2", "g2-m1"]
        );
        assert_eq!(
            bodies(&q.receive(10, Some(0), None, None, T0 + 2)),
            ["g3-m1", "g1-m1", "g1-m2", "g2-m1", "g2-m2"]
        );
    }

    /// As recorded against AWS: a group freed by deleting what was in
    /// flight keeps its place by the time its next message was sent.
    #[test]
    fn a_fifo_group_freed_by_deletes_keeps_its_place() {
        let mut q = fifo_queue();
        for (body, group) in [
            ("g1-m1", "1"),
            ("g2-m1", "2"),
            ("g1-m2", "1"),
            ("g2-m2", "2"),
            ("g1-m3", "1"),
            ("g3-m1", "3"),
        ] {
            q.send(grouped(body, group), T0).unwrap();
        }
        let taken = q.receive(2, None, None, None, T0 + 1);
        for received in &taken {
            q.delete(received.receipt_handle, T0 + 2).unwrap();
        }
        assert_eq!(
            bodies(&q.receive(10, None, None, None, T0 + 3)),
            ["g2-m1", "g2-m2", "g1-m3", "g3-m1"]
        );
    }

    #[test]
    fn a_delayed_message_does_not_block_its_group() {
        let mut q = fifo_queue();
        q.attributes.delay_seconds = 10;
        q.send(grouped("late", "g"), T0).unwrap();
        q.attributes.delay_seconds = 0;
        q.send(grouped("now", "g"), T0).unwrap();
        assert_eq!(bodies(&q.receive(10, None, None, None, T0)), ["now"]);
    }

    /// Random interleavings of send, receive, delete, visibility changes and
    /// time passing on a FIFO queue: every receive returns, per group, a run
    /// that starts at the group's oldest undeleted message and follows send
    /// order, and never a message that was already in flight.
    #[test]
    fn fifo_order_holds_under_random_interleavings() {
        let mut seed = 0x0123_4567_89ab_cdefu64;
        let mut rand = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for _round in 0..200 {
            let mut q = fifo_queue();
            let mut now = T0;
            let mut sent: HashMap<String, Vec<String>> = HashMap::new(); // group → undeleted bodies in order
            let mut handles: Vec<(String, String, ReceiptHandle)> = Vec::new(); // (group, body, handle)
            let mut counter = 0;
            for _step in 0..60 {
                match rand(4) {
                    0 | 1 => {
                        let group = format!("g{}", rand(3));
                        let body = format!("m{counter}");
                        counter += 1;
                        q.send(grouped(&body, &group), now).unwrap();
                        sent.entry(group).or_default().push(body);
                    }
                    2 => {
                        q.advance(now);
                        let busy: BTreeSet<String> = q
                            .messages
                            .values()
                            .filter(|m| matches!(m.state, MessageState::InFlight { .. }))
                            .map(|m| m.body.to_string())
                            .collect();
                        let got = q.receive(1 + rand(4) as usize, Some(1 + rand(3) as u32), None, None, now);
                        let mut runs: Vec<(String, Vec<String>)> = Vec::new();
                        for r in &got {
                            let group = r.message.group_id.as_deref().unwrap().to_string();
                            match runs.last_mut() {
                                Some((g, bodies)) if *g == group => bodies.push(r.message.body.to_string()),
                                _ => runs.push((group, vec![r.message.body.to_string()])),
                            }
                            handles.push((
                                r.message.group_id.as_deref().unwrap().into(),
                                r.message.body.to_string(),
                                r.receipt_handle,
                            ));
                        }
                        for (group, bodies) in runs {
                            assert!(
                                bodies.iter().all(|body| !busy.contains(body)),
                                "group {group}: {bodies:?} had a message in flight"
                            );
                            let expected = &sent[&group][..bodies.len()];
                            assert_eq!(bodies, expected, "group {group} out of order");
                        }
                    }
                    _ => {
                        if !handles.is_empty() && rand(2) == 0 {
                            let (group, body, handle) = handles.remove(rand(handles.len() as u64) as usize);
                            // An expired receipt deletes nothing (and is an error on FIFO queues).
                            if q.delete(handle, now).unwrap_or(false) {
                                sent.get_mut(&group).unwrap().retain(|b| *b != body);
                            }
                        } else if !handles.is_empty() && rand(2) == 0 {
                            let (_, _, handle) = handles[rand(handles.len() as u64) as usize];
                            // A handle whose message was received again, or is gone, changes nothing.
                            let _ = q.change_visibility(handle, rand(3) as u32, now);
                        } else {
                            now += rand(2_500);
                        }
                    }
                }
            }
        }
    }

    /// Every index agrees with the messages' states: each message in the
    /// index of its state only, each FIFO group's visible and in-flight
    /// messages exactly its messages in those states, and the ready groups
    /// exactly those whose first visible message comes before their oldest
    /// in flight.
    fn assert_consistent(q: &Queue, context: &str) {
        /// A group's visible messages (sequence number → since) and those in flight.
        type GroupIndexes = (BTreeMap<u64, u64>, BTreeSet<u64>);
        let mut visible = BTreeSet::new();
        let (mut delayed, mut in_flight) = (BTreeSet::new(), BTreeSet::new());
        let mut groups: BTreeMap<Arc<str>, GroupIndexes> = BTreeMap::new();
        for (&seq, message) in &q.messages {
            assert_eq!(seq, message.seq, "{context}");
            let group = message.group_id.clone().expect("FIFO messages have a group");
            let entry = groups.entry(group).or_default();
            match message.state {
                MessageState::Visible { since } => {
                    visible.insert(seq);
                    entry.0.insert(seq, since);
                }
                MessageState::Delayed { until } => {
                    delayed.insert((until, seq));
                }
                MessageState::InFlight { until, .. } => {
                    in_flight.insert((until, seq));
                    entry.1.insert(seq);
                }
            }
        }
        assert_eq!(q.visible, visible, "visible index: {context}");
        assert_eq!(q.delayed, delayed, "delayed index: {context}");
        assert_eq!(q.in_flight, in_flight, "in-flight index: {context}");
        groups.retain(|_, (v, f)| !v.is_empty() || !f.is_empty());
        let held: BTreeMap<Arc<str>, GroupIndexes> = q
            .groups
            .by_name
            .iter()
            .map(|(name, group)| (name.clone(), (group.visible.clone(), group.in_flight.clone())))
            .collect();
        assert_eq!(held, groups, "groups: {context}");
        let ready: BTreeSet<(u64, u64, Arc<str>)> = groups
            .iter()
            .filter_map(|(name, (v, f))| {
                let (&seq, &since) = v.first_key_value()?;
                let blocked = f.first().is_some_and(|&oldest| oldest < seq);
                (!blocked).then(|| (since, seq, name.clone()))
            })
            .collect();
        assert_eq!(q.groups.ready, ready, "ready groups: {context}");
    }

    /// Random sends, receives, deletes with the latest or an old handle,
    /// visibility changes, time passing and restores from the stored
    /// messages (as a restart loads them) keep every FIFO index consistent,
    /// and once time has passed every deadline, receiving and deleting
    /// drains the queue: no group is left unable to deliver.
    #[test]
    fn fifo_groups_stay_consistent_and_deliverable_under_random_operations_and_restores() {
        use rand::{Rng, SeedableRng};
        for seed in 0..300 {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let mut q = fifo_queue();
            q.enable_journal();
            let mut now = T0;
            let mut handles: Vec<ReceiptHandle> = Vec::new();
            for step in 0..300 {
                let context = format!("seed {seed}, step {step}");
                match rng.gen_range(0..12) {
                    0..=2 => {
                        let n = rng.r#gen::<u32>();
                        let new = NewMessage {
                            group_id: Some(format!("g{}", rng.gen_range(0..4))),
                            dedup_id: Some(format!("d{n}")),
                            ..msg(&format!("m{n}"))
                        };
                        q.send(new, now).unwrap();
                    }
                    3..=4 => {
                        let timeout = rng.gen_range(0..5);
                        let received = q.receive(rng.gen_range(1..=10), Some(timeout), None, None, now);
                        handles.extend(received.iter().map(|r| r.receipt_handle));
                    }
                    5..=6 if !handles.is_empty() => {
                        let at = rng.gen_range(0..handles.len());
                        let _ = q.delete(handles.swap_remove(at), now);
                    }
                    7 if !handles.is_empty() => {
                        let handle = handles[rng.gen_range(0..handles.len())];
                        let _ = q.change_visibility(handle, rng.gen_range(0..4), now);
                    }
                    8..=9 => now += rng.gen_range(0..3_000),
                    10 => {
                        let dedup: Vec<(String, DedupEntry)> =
                            q.dedup.entries.iter().map(|(k, v)| (k.clone(), *v)).collect();
                        let messages: Vec<Message> = q.messages.values().cloned().collect();
                        q = Queue::restore(q.meta(), q.next_seq, messages, dedup);
                        q.enable_journal();
                    }
                    _ => {
                        let _ = q.counts(now);
                    }
                }
                q.take_changes();
                assert_consistent(&q, &context);
            }
            now += 13 * 3_600_000;
            for round in 0.. {
                let received = q.receive(10, None, None, None, now);
                for r in &received {
                    assert!(q.delete(r.receipt_handle, now).unwrap(), "seed {seed}");
                }
                assert_consistent(&q, &format!("seed {seed}, draining"));
                if received.is_empty() {
                    break;
                }
                assert!(round < 1_000, "seed {seed}: the drain does not end");
            }
            assert_eq!(
                q.counts(now),
                Counts::default(),
                "seed {seed}: every group delivered"
            );
        }
    }
}
