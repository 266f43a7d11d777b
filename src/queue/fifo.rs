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
