//! SQS's fixed limits, each written once: the core enforces them, the action
//! layer checks request parameters against them, and the queue attributes
//! take their ranges from them.

/// The longest visibility timeout, and the furthest a message's visibility
/// can reach past its receive: 12 hours.
pub const MAX_VISIBILITY_TIMEOUT_SECONDS: u32 = 43_200;

/// The longest delay of a message or a queue: 15 minutes.
pub const MAX_DELAY_SECONDS: u32 = 900;

/// The longest a receive may wait for messages (WaitTimeSeconds, and the
/// ReceiveMessageWaitTimeSeconds attribute): 20 seconds.
pub const MAX_WAIT_SECONDS: u32 = 20;

/// The largest message (body and attributes), and the largest payload of a
/// SendMessageBatch: 1 MiB.
pub const MAX_MESSAGE_BYTES: u32 = 1_048_576;

/// How long FIFO deduplication ids and receive attempt ids are remembered.
pub const DEDUP_WINDOW_MS: u64 = 300_000;

/// AWS allows one purge per queue every 60 seconds.
pub const PURGE_INTERVAL_MS: u64 = 60_000;

/// Messages a queue may have in flight: AWS's quota for standard queues
/// (a receive past it answers OverLimit) and for FIFO queues (where a
/// receive past it finds nothing).
pub const MAX_IN_FLIGHT: usize = 120_000;
