//! Wall-clock time for the core.
//!
//! The core never reads a clock itself: the service asks a [`Clock`] and
//! passes the result in. Deadlines are wall-clock milliseconds because they
//! are stored and must mean the same on another machine after a failover.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

pub trait Clock: Send + Sync + 'static {
    /// Milliseconds since the Unix epoch.
    fn now_millis(&self) -> u64;
}

pub struct SystemClock;

impl Clock for SystemClock {
    fn now_millis(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0)
    }
}

/// A clock that stands still until told to move (`--clock virtual`, for
/// test suites: a 15-minute delay passes in one call, not in 15 minutes).
/// It starts at the wall clock's time and only goes forward.
pub struct VirtualClock {
    millis: AtomicU64,
}

impl VirtualClock {
    pub fn starting_now() -> VirtualClock {
        VirtualClock {
            millis: AtomicU64::new(SystemClock.now_millis()),
        }
    }

    /// Moves the clock `millis` forward.
    pub fn advance(&self, millis: u64) {
        self.millis.fetch_add(millis, Ordering::AcqRel);
    }
}

impl Clock for VirtualClock {
    fn now_millis(&self) -> u64 {
        self.millis.load(Ordering::Acquire)
    }
}

/// A clock that follows tokio's time, so that a test on a paused runtime
/// moves the core's time together with its sleeps and timeouts.
#[cfg(test)]
pub struct TokioClock {
    start_millis: u64,
    start: tokio::time::Instant,
}

#[cfg(test)]
impl TokioClock {
    pub fn new(start_millis: u64) -> Self {
        TokioClock {
            start_millis,
            start: tokio::time::Instant::now(),
        }
    }
}

#[cfg(test)]
impl Clock for TokioClock {
    fn now_millis(&self) -> u64 {
        self.start_millis + self.start.elapsed().as_millis() as u64
    }
}
