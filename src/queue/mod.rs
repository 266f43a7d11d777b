//! The queue core: pure Rust, no I/O, no clock of its own.
//!
//! Every operation takes the current wall-clock time in milliseconds as an
//! argument, so the timing rules (delays, visibility timeouts, retention) are
//! tested by passing numbers, and so that deadlines mean the same thing on any
//! instance that later loads them. Locking, long polling and persistence live
//! in the service (`src/service/`), on top of this.

pub(crate) mod arn;
pub(crate) mod attributes;
pub mod clock;
mod fair;
mod fifo;
mod indexes;
pub(crate) mod key;
pub(crate) mod limits;
pub(crate) mod message;
pub(crate) mod move_task;
pub(crate) mod peek;
pub(crate) mod random;
pub(crate) mod receipt;
mod receive;
mod send;
mod snapshot;
#[cfg(test)]
mod test_support;

pub use arn::QueueArn;
pub use attributes::QueueAttributes;
pub use message::{AttributeValue, Message, MessageAttribute, MessageAttributes};
pub(crate) mod tags;

pub use fair::{FairCounts, NoisyTenant};
pub use fifo::DedupEntry;
pub use indexes::{Activity, Change, Counts, Queue, QueueMeta, SEQUENCE_BLOCK};
pub use key::{Home, validate_name};
pub use peek::{PeekRequest, Peeked, Seen};
pub use receipt::ReceiptHandle;
pub use receive::{Attempt, DeadLetter, DeadLetterQueue, Received};
pub use send::{NewMessage, Sent};
