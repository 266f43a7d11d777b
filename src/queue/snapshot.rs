//! A queue's side of snapshots (`store/snapshot.rs`): its messages read
//! out a piece at a time, and an imported queue recorded whole.
//!
//! An export reads a queue of a million messages without holding its lock
//! for long: a piece of messages after a sequence number costs O(log n +
//! piece), and the service's callers go on between pieces. An import
//! builds its queue with [`Queue::restore`] and then records every part
//! of it as the store must write it, so that it is durable in one commit
//! like any queue a client fills.

use std::ops::Bound;

use super::{Change, Message, Queue};

impl Queue {
    /// The messages after sequence number `after`, in order: at most
    /// `max_messages`, and no more once their payloads reach `max_bytes`
    /// (one message, however large, is always taken).
    pub fn messages_after(&self, after: u64, max_messages: usize, max_bytes: u64) -> Vec<Message> {
        let mut piece = Vec::new();
        let mut bytes = 0;
        for message in self
            .messages
            .range((Bound::Excluded(after), Bound::Unbounded))
            .map(|(_, message)| message)
        {
            if piece.len() == max_messages || (bytes >= max_bytes && !piece.is_empty()) {
                break;
            }
            bytes += message.payload_size();
            piece.push(message.clone());
        }
        piece
    }

    /// The sequence number the next message will take.
    pub fn next_sequence_number(&self) -> u64 {
        self.next_seq
    }

    /// Records the queue whole (its settings, its reserved sequence
    /// numbers, every message with its state), as a queue new to the store
    /// must be written. Call after [`Queue::enable_journal`].
    pub fn record_whole(&mut self) {
        self.record_meta();
        let ceiling = self.next_seq;
        self.record(|_| Change::SequencesReserved(ceiling));
        if let Some(journal) = &mut self.journal {
            journal.extend(self.messages.values().cloned().map(Change::Sent));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::queue::{NewMessage, QueueAttributes};

    fn queue_of(count: usize, body_len: usize) -> Queue {
        let mut queue = Queue::new("q".into(), QueueAttributes::default(), BTreeMap::new(), 1_000);
        for _ in 0..count {
            queue
                .send(NewMessage::plain(&"x".repeat(body_len)), 1_000)
                .unwrap();
        }
        queue
    }

    #[test]
    fn pieces_follow_each_other_without_gaps_or_repeats() {
        let queue = queue_of(25, 10);
        let mut seen = Vec::new();
        let mut after = 0;
        loop {
            let piece = queue.messages_after(after, 10, u64::MAX);
            let Some(last) = piece.last() else { break };
            after = last.seq;
            assert!(piece.len() <= 10);
            seen.extend(piece.iter().map(|message| message.seq));
        }
        let all: Vec<u64> = queue.messages.keys().copied().collect();
        assert_eq!(seen, all);
    }

    #[test]
    fn a_piece_stops_at_its_byte_budget_but_always_holds_one_message() {
        let queue = queue_of(5, 100);
        assert_eq!(queue.messages_after(0, 100, 250).len(), 3);
        assert_eq!(queue.messages_after(0, 100, 1).len(), 1);
    }

    #[test]
    fn a_queue_recorded_whole_holds_every_message_and_the_sequence_ceiling() {
        let mut queue = queue_of(3, 10);
        queue.enable_journal();
        queue.record_whole();
        let changes = queue.take_changes();
        assert!(matches!(changes[0], Change::Meta(_)));
        assert!(matches!(changes[1], Change::SequencesReserved(4)));
        let sent: Vec<u64> = changes[2..]
            .iter()
            .map(|change| match change {
                Change::Sent(message) => message.seq,
                other => panic!("expected a sent message, got {other:?}"),
            })
            .collect();
        assert_eq!(sent, vec![1, 2, 3]);
    }
}
