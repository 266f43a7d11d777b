//! SQS's fixed limits on time, each written once: the core enforces them,
//! the action layer checks request parameters against them, and the queue
//! attributes take their ranges from them.

/// The longest visibility timeout, and the furthest a message's visibility
/// can reach past its receive: 12 hours.
pub const MAX_VISIBILITY_TIMEOUT_SECONDS: u32 = 43_200;

/// The longest delay of a message or a queue: 15 minutes.
pub const MAX_DELAY_SECONDS: u32 = 900;

/// How long FIFO deduplication ids and receive attempt ids are remembered.
pub const DEDUP_WINDOW_MS: u64 = 300_000;

/// AWS allows one purge per queue every 60 seconds.
pub const PURGE_INTERVAL_MS: u64 = 60_000;
