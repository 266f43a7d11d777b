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

use tokio::sync::oneshot;

use crate::error::SqsError;
use crate::queue::{Change, Queue};

/// One request's writes to one queue, or a queue's removal.
#[derive(Debug)]
pub enum Write {
    Queue { name: String, changes: Vec<Change> },
    DeleteQueue { name: String },
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

    /// Puts loaded queues in place of whatever memory held.
    fn install(&self, queues: Vec<Queue>);

    /// Ends every long poll now and any started later (shutting down).
    fn close_long_polls(&self);

    /// Creates the queues the configuration asks for that do not exist yet
    /// (after a restore: a failover must not reset what clients changed).
    fn create_configured_queues(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;
}
