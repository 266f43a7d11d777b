//! Work whose cost grows with a queue's length, kept off the threads that
//! serve SQS calls.
//!
//! Almost every request costs O(log n) and microseconds. Looking at a queue
//! (the developer endpoint `/_aws/sqs/messages`, the admin page's message
//! browser) examines and renders up to 10,000 messages, megabytes of text:
//! run on the async runtime's worker threads, eight clients looking at a
//! queue of 100,000 messages took both of a machine's cores and made an
//! unrelated SendMessage wait over a second. Such work runs here instead:
//! on tokio's blocking threads, at most [`BlockingPool::concurrency`] at a
//! time (half the cores, at least one), the others waiting their turn for a
//! bounded time and then answered with a retryable 503.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

use crate::error::{ErrorCode, SqsError};

/// How long a look waits for its turn before it is refused.
const WAIT_FOR_TURN: Duration = Duration::from_secs(10);

pub struct BlockingPool {
    turns: Arc<Semaphore>,
    concurrency: usize,
}

impl Default for BlockingPool {
    fn default() -> BlockingPool {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        BlockingPool::new((cores / 2).max(1))
    }
}

impl BlockingPool {
    pub fn new(concurrency: usize) -> BlockingPool {
        BlockingPool {
            turns: Arc::new(Semaphore::new(concurrency)),
            concurrency,
        }
    }

    /// Runs `work` on a blocking thread once it has a turn.
    pub async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, SqsError> {
        let busy = || {
            SqsError::new(
                ErrorCode::ServiceUnavailable,
                format!(
                    "ssq is busy with other looks at queues ({} at a time, each waiting at most {WAIT_FOR_TURN:?}); retry.",
                    self.concurrency
                ),
            )
        };
        let turn = tokio::time::timeout(WAIT_FOR_TURN, self.turns.clone().acquire_owned())
            .await
            .map_err(|_| busy())?
            .map_err(|_| busy())?;
        tokio::task::spawn_blocking(move || {
            let _turn = turn;
            work()
        })
        .await
        .map_err(|error| {
            SqsError::new(
                ErrorCode::InternalError,
                format!("a look at a queue failed: {error}"),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn no_more_than_the_concurrency_run_at_once() {
        let pool = Arc::new(BlockingPool::new(2));
        let (running, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let (pool, running, most) = (pool.clone(), running.clone(), most.clone());
                tokio::spawn(async move {
                    pool.run(move || {
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(20));
                        running.fetch_sub(1, Ordering::SeqCst);
                    })
                    .await
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap().unwrap();
        }
        assert_eq!(most.load(Ordering::SeqCst), 2);
    }
}
