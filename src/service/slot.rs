//! One queue's place in the service: its lock, the notification its long
//! polls wait on, and whether it is gone. Two queues are always locked in
//! the order of their names, so no two operations deadlock.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

use crate::queue::Queue;

/// One queue and what waits on it.
pub(super) struct QueueSlot {
    /// The queue's name, readable without its lock (to order locking).
    pub(super) name: String,
    pub(super) queue: Mutex<Queue>,
    /// Woken when a message may have become receivable, and on deletion.
    pub(super) ready: Notify,
    /// Set under the queue's lock when the queue is deleted or dropped; no
    /// operation applies to it afterwards.
    pub(super) deleted: AtomicBool,
    /// The memory generation the queue belongs to.
    pub(super) generation: u64,
}

impl QueueSlot {
    pub(super) fn new(queue: Queue, generation: u64) -> Arc<QueueSlot> {
        Arc::new(QueueSlot {
            name: queue.name.clone(),
            queue: Mutex::new(queue),
            ready: Notify::new(),
            deleted: AtomicBool::new(false),
            generation,
        })
    }

    /// Marks the queue gone, under its lock, so that an operation either ran
    /// before (and submitted its changes first) or sees it gone.
    pub(super) fn close(&self) {
        let _queue = self.lock();
        self.deleted.store(true, Ordering::Release);
        self.ready.notify_waiters();
    }

    pub(super) fn is_closed(&self) -> bool {
        self.deleted.load(Ordering::Acquire)
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, Queue> {
        // A panic while holding the lock is a bug; the queue state it guards
        // is still consistent per operation, so keep serving rather than
        // poisoning every later request.
        self.queue.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Locks two queues in the order of their names and returns the guards in
/// the order asked: every caller locks in the same order, so none deadlocks.
pub(super) fn lock_pair<'a>(
    a: &'a QueueSlot,
    b: &'a QueueSlot,
) -> (MutexGuard<'a, Queue>, MutexGuard<'a, Queue>) {
    if a.name <= b.name {
        let first = a.lock();
        (first, b.lock())
    } else {
        let second = b.lock();
        (a.lock(), second)
    }
}

/// Locks queues sorted by name (as [`lock_pair`] orders two), so that no
/// two callers deadlock; the guards come back in that order.
pub(super) fn lock_all(sorted: &[std::sync::Arc<QueueSlot>]) -> Vec<MutexGuard<'_, Queue>> {
    debug_assert!(sorted.windows(2).all(|pair| pair[0].name < pair[1].name));
    sorted.iter().map(|slot| slot.lock()).collect()
}
