//! What the core's tests share: queues to test on, messages to send, and
//! the types most of them use.

pub(super) use std::collections::BTreeMap;

pub(super) use super::message::{AttributeValue, Message, MessageAttribute, MessageState};
pub(super) use super::{Counts, NewMessage, Queue, QueueAttributes, ReceiptHandle, Received};

pub(super) const T0: u64 = 1_700_000_000_000;

pub(super) fn queue() -> Queue {
    Queue::new("q".into(), QueueAttributes::default(), BTreeMap::new(), T0)
}

pub(super) fn fifo_queue() -> Queue {
    let mut attributes = QueueAttributes::default();
    attributes.set("FifoQueue", "true").unwrap();
    Queue::new("q.fifo".into(), attributes, BTreeMap::new(), T0)
}

pub(super) fn msg(body: &str) -> NewMessage {
    NewMessage::plain(body)
}

pub(super) fn delayed(body: &str, seconds: u32) -> NewMessage {
    NewMessage {
        delay_seconds: Some(seconds),
        ..msg(body)
    }
}

pub(super) fn grouped(body: &str, group: &str) -> NewMessage {
    NewMessage {
        group_id: Some(group.into()),
        dedup_id: Some(body.into()),
        ..msg(body)
    }
}

pub(super) fn bodies(received: &[Received]) -> Vec<&str> {
    received.iter().map(|r| &*r.message.body).collect()
}
