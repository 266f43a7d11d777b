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

/// The highest sequence number a queue hands out. The stores keep sequence
/// numbers as SQLite's signed 64-bit integers, and a queue must be able to
/// go on from any number it holds: half that range leaves room for every
/// block a store reserves and for the messages dead-letter queues and move
/// tasks take in (at a million sends a second, reaching it takes 146,000
/// years). A snapshot with a number past it is refused; a send past it is
/// refused rather than wrap.
pub const MAX_SEQUENCE: u64 = (i64::MAX / 2) as u64;
