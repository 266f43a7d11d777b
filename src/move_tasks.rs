//! Message move tasks: moving messages out of a dead-letter queue, back to
//! the queues they came from or to another queue, at a bounded rate.
//!
//! A task runs in the background on the leader. Each step takes a few
//! visible messages from the source and gives them to their destination under
//! both queues' locks, in one commit (see [`Service::with_queues`]), so a
//! message is never lost nor in both. Tasks live in memory: a change of
//! leadership ends them (they report FAILED), and the status of finished
//! tasks is kept for the listing.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::error::{ErrorCode, Result, SqsError};
use crate::queue::{QueueArn, key};
use crate::service::Service;

/// AWS's ceiling and default for MaxNumberOfMessagesPerSecond.
pub const MAX_RATE: u32 = 500;
/// Finished tasks kept per source queue for ListMessageMoveTasks.
const KEPT_PER_SOURCE: usize = 10;

pub struct MoveTask {
    pub handle: String,
    pub source: String,
    pub source_arn: String,
    /// Where messages go; `None`: back to each message's source queue.
    pub destination: Option<(String, String)>,
    pub rate: Option<u32>,
    pub started_at: u64,
    pub to_move: u64,
    pub moved: AtomicU64,
    cancel: AtomicBool,
    outcome: Mutex<Status>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    Running,
    Completed,
    Cancelled,
    Failed(String),
}

impl MoveTask {
    pub fn status(&self) -> Status {
        self.outcome.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Whether the task runs and no one asked to cancel it.
    pub fn is_running(&self) -> bool {
        self.status() == Status::Running && !self.cancel.load(Ordering::Acquire)
    }

    /// `RUNNING`, `CANCELLING`, `COMPLETED`, `CANCELLED` or `FAILED`.
    pub fn status_name(&self) -> &'static str {
        match self.status() {
            Status::Running if self.cancel.load(Ordering::Acquire) => "CANCELLING",
            Status::Running => "RUNNING",
            Status::Completed => "COMPLETED",
            Status::Cancelled => "CANCELLED",
            Status::Failed(_) => "FAILED",
        }
    }

    fn finish(&self, status: Status) {
        *self.outcome.lock().unwrap_or_else(|p| p.into_inner()) = status;
    }
}

/// The move tasks of one service: those running and the last finished ones.
pub struct MoveTasks {
    service: Arc<Service>,
    tasks: Mutex<Vec<Arc<MoveTask>>>,
}

/// What StartMessageMoveTask asks for, checked by the caller.
pub struct MoveRequest {
    pub source: String,
    pub source_arn: String,
    pub destination: Option<(String, String)>,
    pub rate: Option<u32>,
    pub to_move: u64,
    pub now: u64,
}

impl MoveTasks {
    pub fn new(service: Arc<Service>) -> MoveTasks {
        MoveTasks {
            service,
            tasks: Mutex::new(Vec::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Arc<MoveTask>>> {
        self.tasks.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts a task, unless one is already running for the same source.
    pub fn start(&self, request: MoveRequest) -> Result<Arc<MoveTask>> {
        let task = {
            let mut tasks = self.lock();
            if tasks
                .iter()
                .any(|t| t.source == request.source && t.status() == Status::Running)
            {
                return Err(SqsError::new(
                    ErrorCode::InvalidParameterValue,
                    format!(
                        "A message move task is already running for {}; cancel it or wait.",
                        request.source_arn
                    ),
                ));
            }
            let task = Arc::new(MoveTask {
                handle: crate::random::uuid().to_string(),
                source: request.source,
                source_arn: request.source_arn,
                destination: request.destination,
                rate: request.rate,
                started_at: request.now,
                to_move: request.to_move,
                moved: AtomicU64::new(0),
                cancel: AtomicBool::new(false),
                outcome: Mutex::new(Status::Running),
            });
            tasks.push(task.clone());
            // Keep the listing bounded: drop the oldest finished tasks.
            let source = task.source.clone();
            let mut kept = 0;
            tasks.retain(|t| {
                if t.source != source || t.status() == Status::Running {
                    return true;
                }
                kept += 1;
                kept <= KEPT_PER_SOURCE
            });
            task
        };
        tokio::spawn(run(task.clone(), self.service.clone()));
        Ok(task)
    }

    pub fn find(&self, handle: &str) -> Option<Arc<MoveTask>> {
        self.lock().iter().find(|t| t.handle == handle).cloned()
    }

    /// Tasks of a source queue, the most recent first.
    pub fn for_source(&self, source_arn: &str) -> Vec<Arc<MoveTask>> {
        let mut tasks: Vec<_> = self
            .lock()
            .iter()
            .filter(|t| t.source_arn == source_arn)
            .cloned()
            .collect();
        tasks.reverse();
        tasks
    }

    pub fn cancel(&self, handle: &str) -> Result<Arc<MoveTask>> {
        let task = self.find(handle).ok_or_else(|| {
            SqsError::new(
                ErrorCode::ResourceNotFound,
                format!("No message move task has the handle {handle}."),
            )
        })?;
        if task.status() != Status::Running {
            return Err(SqsError::invalid_parameter(format!(
                "The message move task {handle} is {} and cannot be cancelled.",
                task.status_name()
            )));
        }
        task.cancel.store(true, Ordering::Release);
        Ok(task)
    }
}

/// Moves messages, a few per tick, until the source is empty, `to_move`
/// messages have moved, the task is cancelled, or a move fails.
async fn run(task: Arc<MoveTask>, service: Arc<Service>) {
    let rate = task.rate.unwrap_or(MAX_RATE).max(1);
    let per_tick = rate.div_ceil(10) as usize;
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    loop {
        tick.tick().await;
        if task.cancel.load(Ordering::Acquire) {
            task.finish(Status::Cancelled);
            return;
        }
        let remaining = task.to_move.saturating_sub(task.moved.load(Ordering::Acquire)) as usize;
        if remaining == 0 {
            task.finish(Status::Completed);
            return;
        }
        match step(&task, &service, per_tick.min(remaining)).await {
            Ok(0) => {
                task.finish(Status::Completed);
                return;
            }
            Ok(moved) => {
                task.moved.fetch_add(moved as u64, Ordering::AcqRel);
            }
            Err(error) => {
                tracing::warn!(task = %task.handle, %error, "message move task failed");
                task.finish(Status::Failed(error.message));
                return;
            }
        }
    }
}

/// Moves up to `max` messages that share one destination.
async fn step(task: &MoveTask, service: &Service, max: usize) -> Result<usize> {
    let destination = match &task.destination {
        Some((name, _)) => name.clone(),
        None => {
            let head_source = service
                .with_queue(&task.source, |queue, now| {
                    queue.peek_visible(now).map(|m| m.dead_letter_source.clone())
                })
                .await?;
            match head_source {
                None => return Ok(0),
                Some(None) => {
                    return Err(SqsError::invalid_parameter(
                        "A message has no DeadLetterQueueSourceArn to go back to; give a DestinationArn.",
                    ));
                }
                Some(Some(arn)) => key::sibling(&task.source, QueueArn::name_of(&arn)),
            }
        }
    };
    let back_to_source = task.destination.is_none();
    service
        .with_queues(&task.source, &destination, |source, target, now| {
            // A dead-letter queue's sources are in its region: their names
            // tell them apart.
            let target_name = key::split(&target.name).1.to_string();
            let goes_to_target = |m: &crate::queue::Message| {
                !back_to_source
                    || m.dead_letter_source
                        .as_deref()
                        .is_some_and(|arn| QueueArn::name_of(arn) == target_name)
            };
            let messages = source.take_visible(max, now, goes_to_target);
            let count = messages.len();
            for message in messages {
                target.accept(message, None, now);
            }
            count
        })
        .await
}
