//! The seam between the service and what keeps its state: the writes the
//! service hands over, and what the store and the leadership may do to the
//! service's memory.
//!
//! It sits below the service, the store and the election, so that each of
//! them depends on it and none on another: the service submits [`Pending`]
//! writes without knowing who commits them, and the committer, the loader
//! and the leadership (which drops memory when it is lost) reach the queues
//! only through [`Memory`].

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tokio::sync::oneshot;

use crate::error::SqsError;
use crate::queue::{Change, Message, Queue};
use crate::topic::{SnsChange, Topics};

/// One request's writes to one queue, a queue's removal, or a step of a
/// message's way to a queue of another shard (see `transfers.rs`).
#[derive(Debug)]
pub enum Write {
    Queue {
        name: String,
        changes: Vec<Change>,
    },
    DeleteQueue {
        name: String,
    },
    /// Messages that left a queue for a queue of another shard, into this
    /// shard's outbox, in the same commit as their removal.
    Outbox(Vec<Transfer>),
    /// Outbox entries, by stream id, that reached their shard's inbox (or
    /// went back to their queue).
    Delivered(Vec<String>),
    /// Inbox entries, by stream id, taken into their queues.
    TakenIn(Vec<String>),
    /// Changes to the SNS records (topics, subscriptions, a FIFO topic's
    /// deduplication ids), in the same commit as the queue copies of the
    /// Publish that made them.
    Sns(Vec<SnsChange>),
}

/// A message on its way to a queue of another shard: a dead letter, or a
/// message a move task moves.
#[derive(Debug, Clone)]
pub struct Transfer {
    /// The queue it left, and the queue it goes to (queue keys).
    pub from: String,
    pub to: String,
    /// The message as it left (its sequence number is the one it had).
    pub message: Message,
    /// A dead letter's DeadLetterQueueSourceArn; `None` for a moved message.
    pub dead_letter_source: Option<Arc<str>>,
}

impl Transfer {
    /// Names this message's one journey: the queue it left, its place
    /// there and its id. The target shard remembers it, so that a transfer
    /// delivered again (a new leader of the source shard repeating the
    /// delivery its predecessor made) is taken only once.
    pub fn marker(&self) -> String {
        format!("{}#{}#{}", self.from, self.message.seq, self.message.id)
    }
}

/// The writes of one request, committed together (a receive that moves a
/// message to a dead-letter queue writes both queues at once); `generation`
/// is the memory generation they were made in (see [`Memory::clear`]).
pub struct Pending {
    pub generation: u64,
    pub writes: Vec<Write>,
    pub done: oneshot::Sender<Result<(), SqsError>>,
}

/// The in-memory state a leader serves from, as those who keep it see it.
pub trait Memory: Send + Sync + 'static {
    /// The current memory generation; writes made in an older one are
    /// refused, since the state they changed was dropped.
    fn generation(&self) -> u64;

    /// Drops every queue and starts a new generation: on a change of
    /// leadership, or before a reload, memory can no longer be trusted.
    fn clear(&self);

    /// Puts loaded queues and topics in place of whatever memory held.
    fn install(&self, queues: Vec<Queue>, topics: Topics);

    /// Ends every long poll now and any started later (shutting down).
    fn close_long_polls(&self);

    /// Creates the queues the configuration asks for that do not exist yet
    /// (after a restore: a failover must not reset what clients changed).
    fn create_configured_queues(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;
}
