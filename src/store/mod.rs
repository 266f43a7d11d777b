//! Durability in Redis: every change a client is told about is written
//! there first, fenced by the leader's token.
//!
//! The service hands each operation's [`Change`]s to the [`committer`] as a
//! [`Pending`] write and waits for it. The committer gathers whatever writes
//! are waiting into one Lua script call (group commit), which first checks
//! that the lock still holds this leader's token. The [`loader`] reads
//! everything back when an instance becomes leader, or after a failed write
//! left memory and Redis possibly apart.

mod batch;
pub mod codec;
pub mod committer;
pub mod layout;
pub mod loader;

use tokio::sync::oneshot;

use crate::error::SqsError;
use crate::queue::Change;

pub use layout::Layout;

/// One request's writes.
#[derive(Debug)]
pub enum Write {
    Queue { name: String, changes: Vec<Change> },
    DeleteQueue { name: String },
}

/// The writes of one request, committed together (a receive that moves a
/// message to a dead-letter queue writes both queues at once); `generation`
/// is the service's memory generation they were made in (see
/// [`crate::service::Service::clear`]).
pub struct Pending {
    pub generation: u64,
    pub writes: Vec<Write>,
    pub done: oneshot::Sender<Result<(), SqsError>>,
}
