//! Message move tasks: moving messages out of a dead-letter queue, back to
//! the queues they came from or to another queue, at a bounded rate.
//!
//! A task's record lives with its source queue (`queue::move_task`), stored
//! with the queue's settings. A task runs in the background on the leader:
//! each step takes a few visible messages from the source, gives them to
//! their destination and adds them to the record's count, under both
//! queues' locks and in one commit (see [`Service::with_queues`]), so a
//! message is never lost nor in both, and the count is exact. A change of
//! leadership stops the runner but not the task: after every load of the
//! state, [`MoveTasks`] continues the running tasks the state holds, from
//! where they stopped. Cancelling marks the record; the runner stops at its
//! next step.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::error::{ErrorCode, Result, SqsError};
use crate::journal::Transfer;
use crate::queue::move_task::{self, MoveStatus, MoveTaskRecord};
use crate::queue::{Message, Queue, QueueArn, key};
use crate::service::Service;
use crate::service::shards::Catalog;

/// AWS's ceiling and default for MaxNumberOfMessagesPerSecond.
pub const MAX_RATE: u32 = 500;

/// The move tasks of one service.
pub struct MoveTasks {
    service: Arc<Service>,
    /// In a sharded group: where destinations of other shards are looked up.
    catalog: Option<Arc<dyn Catalog>>,
    /// The handles of the tasks this instance runs.
    running: Running,
}

type Running = Arc<Mutex<HashSet<String>>>;

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
    /// Also starts what continues the running tasks after each load of the
    /// state (a new leader, or a reload).
    pub fn new(service: Arc<Service>, catalog: Option<Arc<dyn Catalog>>) -> MoveTasks {
        let running = Running::default();
        tokio::spawn(resume_after_loads(
            service.clone(),
            catalog.clone(),
            running.clone(),
        ));
        MoveTasks {
            service,
            catalog,
            running,
        }
    }

    /// Starts a task, unless one is already running for the same source;
    /// its record is durable before this returns.
    pub async fn start(&self, request: MoveRequest) -> Result<MoveTaskRecord> {
        let record = MoveTaskRecord {
            handle: handle_for(&request.source_arn),
            source_arn: request.source_arn,
            destination: request.destination,
            rate: request.rate,
            started_at: request.now,
            to_move: request.to_move,
            moved: 0,
            status: MoveStatus::Running,
        };
        let started = record.clone();
        self.service
            .with_queue(&request.source, move |queue, _| {
                if queue.move_tasks.iter().any(MoveTaskRecord::is_running) {
                    return Err(SqsError::invalid_parameter(
                        "There is already a task running. Only one active task is allowed for a source queue arn at a given time.",
                    ));
                }
                move_task::add(&mut queue.move_tasks, started);
                queue.record_meta();
                Ok(())
            })
            .await??;
        spawn(
            &self.service,
            &self.catalog,
            &self.running,
            record.handle.clone(),
            request.source,
        );
        Ok(record)
    }

    /// Marks a running task of queue `source` cancelled; it stops at its
    /// next step.
    pub async fn cancel(&self, source: &str, handle: &str) -> Result<MoveTaskRecord> {
        let not_found = || SqsError::new(ErrorCode::ResourceNotFound, "Task does not exist.");
        self.service
            .with_queue(source, |queue, _| {
                let task = find(queue, handle).ok_or_else(not_found)?;
                if task.status != MoveStatus::Running {
                    return Err(SqsError::invalid_parameter(format!(
                        "The message move task {handle} is {} and cannot be cancelled.",
                        task.status_name()
                    )));
                }
                task.status = MoveStatus::Cancelling;
                let cancelled = task.clone();
                queue.record_meta();
                Ok(cancelled)
            })
            .await?
    }

    /// The tasks of a source queue, the most recent first.
    pub fn for_source(&self, source: &str) -> Result<Vec<MoveTaskRecord>> {
        self.service.inspect(source, |queue, _| {
            queue.move_tasks.iter().rev().cloned().collect()
        })
    }
}

/// A task handle as AWS makes them: base64 of `{"taskId", "sourceArn"}`,
/// so that the handle alone names the queue whose records hold the task.
fn handle_for(source_arn: &str) -> String {
    use base64::Engine;
    let json =
        serde_json::json!({"taskId": crate::queue::random::uuid().to_string(), "sourceArn": source_arn});
    base64::engine::general_purpose::STANDARD.encode(json.to_string())
}

/// The source queue ARN a task handle names, if it is one.
pub fn source_arn_of(handle: &str) -> Option<String> {
    use base64::Engine;
    let json = base64::engine::general_purpose::STANDARD.decode(handle).ok()?;
    let value: serde_json::Value = serde_json::from_slice(&json).ok()?;
    value.get("sourceArn")?.as_str().map(str::to_string)
}

fn lock(running: &Running) -> std::sync::MutexGuard<'_, HashSet<String>> {
    running.lock().unwrap_or_else(|p| p.into_inner())
}

fn find<'q>(queue: &'q mut Queue, handle: &str) -> Option<&'q mut MoveTaskRecord> {
    queue.move_tasks.iter_mut().find(|t| t.handle == handle)
}

/// Runs a task unless this instance already does.
fn spawn(
    service: &Arc<Service>,
    catalog: &Option<Arc<dyn Catalog>>,
    running: &Running,
    handle: String,
    source: String,
) {
    if !lock(running).insert(handle.clone()) {
        return;
    }
    let (service, catalog, running) = (service.clone(), catalog.clone(), running.clone());
    tokio::spawn(async move {
        if let Err(error) = run(&handle, &source, &service, catalog.as_deref()).await {
            tracing::info!(task = %handle, %error, "message move task paused: the next load of the state continues it");
        }
        lock(&running).remove(&handle);
    });
}

/// After each load of the state, runs the running tasks it holds.
async fn resume_after_loads(service: Arc<Service>, catalog: Option<Arc<dyn Catalog>>, running: Running) {
    let mut loads = service.state_loaded.subscribe();
    // A load before this task started counts too.
    loads.mark_changed();
    loop {
        if loads.changed().await.is_err() {
            return;
        }
        for source in service.queues_where(|q| q.move_tasks.iter().any(MoveTaskRecord::is_running)) {
            let handles = service
                .inspect(&source, |queue, _| {
                    queue
                        .move_tasks
                        .iter()
                        .filter(|t| t.is_running())
                        .map(|t| t.handle.clone())
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default();
            for handle in handles {
                tracing::info!(task = %handle, queue = %source, "continuing a message move task");
                spawn(&service, &catalog, &running, handle, source.clone());
            }
        }
    }
}

/// Moves messages, a few per tick at the task's rate (a rate below ten a
/// second moves one message per tick, the ticks further apart), no more
/// than the rate allows for the time the queues' clock says has passed
/// (so a virtual clock paces it too), until the
/// source is empty, `to_move` messages have moved, the task is cancelled,
/// or a move fails. An error
/// returned is one of leadership or of Redis (the task stays running in
/// the state, for the next load to continue); any other ends the task as
/// FAILED.
async fn run(handle: &str, source: &str, service: &Service, catalog: Option<&dyn Catalog>) -> Result<()> {
    let record = || {
        service.inspect(source, |queue, _| {
            queue.move_tasks.iter().find(|t| t.handle == handle).cloned()
        })
    };
    let Some(task) = record()? else {
        return Ok(());
    };
    let rate = task.rate.unwrap_or(MAX_RATE);
    let (per_tick, every) = pace(rate);
    // The queues' clock sets how many may have moved by now: with the
    // system clock that is `per_tick` a tick; with `--clock virtual` the
    // task moves as the clock is moved, catching up at once when it jumps.
    let started_at = service.now();
    let mut moved_here = 0_u64;
    let mut tick = tokio::time::interval(every);
    loop {
        tick.tick().await;
        let Some(task) = record()? else {
            return Ok(());
        };
        let remaining = task.to_move.saturating_sub(task.moved) as usize;
        let finished = match task.status {
            MoveStatus::Cancelling => Some(MoveStatus::Cancelled),
            MoveStatus::Running if remaining == 0 => Some(MoveStatus::Completed),
            MoveStatus::Running => None,
            _ => return Ok(()),
        };
        let elapsed = service.now().saturating_sub(started_at);
        let due = per_tick as u64 + u64::from(rate) * elapsed / 1000;
        let allowed = due
            .saturating_sub(moved_here)
            .min(CATCH_UP_TICKS * per_tick as u64) as usize;
        if finished.is_none() && allowed == 0 {
            continue;
        }
        let finished = match finished {
            Some(status) => status,
            None => match step(&task, source, service, catalog, allowed.min(remaining)).await {
                Ok(0) => MoveStatus::Completed,
                Ok(moved) => {
                    moved_here += moved as u64;
                    continue;
                }
                Err(error) if error.code == ErrorCode::ServiceUnavailable => return Err(error),
                Err(error) => {
                    tracing::warn!(task = %handle, %error, "message move task failed");
                    MoveStatus::Failed(error.message)
                }
            },
        };
        service
            .with_queue(source, |queue, _| {
                if let Some(task) = find(queue, handle) {
                    task.status = finished;
                    queue.record_meta();
                }
            })
            .await?;
        return Ok(());
    }
}

/// At most this many ticks' worth move in one step when a task is behind
/// its clock (after a stall, or the virtual clock moved): one second's.
const CATCH_UP_TICKS: u64 = 10;

/// Messages per tick and the time between ticks that make `rate` messages
/// a second: ten ticks a second when the rate allows, fewer below ten.
fn pace(rate: u32) -> (usize, Duration) {
    let rate = rate.max(1);
    let per_tick = rate.div_ceil(10);
    (
        per_tick as usize,
        Duration::from_millis(u64::from(per_tick) * 1000 / u64::from(rate)),
    )
}

/// Moves up to `max` messages that share one destination, and counts them
/// in the task's record, in one commit. A destination in another shard
/// gets them through the outbox (`transfers.rs`), written in that commit.
async fn step(
    task: &MoveTaskRecord,
    source: &str,
    service: &Service,
    catalog: Option<&dyn Catalog>,
    max: usize,
) -> Result<usize> {
    let destination = match &task.destination {
        Some((name, _)) => name.clone(),
        None => {
            let head_source = service
                .with_queue(source, |queue, now| {
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
                Some(Some(arn)) => key::sibling(source, QueueArn::name_of(&arn)),
            }
        }
    };
    // A dead-letter queue's sources are in its region: their names tell
    // them apart.
    let target_name = key::split(&destination).name.to_string();
    let back_to_source = task.destination.is_none();
    let goes_to_target = |m: &Message| {
        !back_to_source
            || m.dead_letter_source
                .as_deref()
                .is_some_and(|arn| QueueArn::name_of(arn) == target_name)
    };
    let count_moved = |source: &mut Queue, count: usize| {
        if let Some(record) = find(source, &task.handle) {
            record.moved += count as u64;
            source.record_meta();
        }
    };
    if let Some(catalog) = catalog.filter(|_| service.is_elsewhere(&destination)) {
        if catalog.queue(&destination).await?.is_none() {
            return Err(SqsError::queue_does_not_exist());
        }
        return service
            .with_queue_sending(source, |source, now| {
                let messages = source.take_visible(max, now, goes_to_target);
                count_moved(source, messages.len());
                let transfers: Vec<Transfer> = messages
                    .into_iter()
                    .map(|message| Transfer {
                        from: source.name.clone(),
                        to: destination.clone(),
                        message,
                        dead_letter_source: None,
                    })
                    .collect();
                (transfers.len(), transfers)
            })
            .await;
    }
    service
        .with_queues(source, &destination, |source, target, now| {
            let messages = source.take_visible(max, now, goes_to_target);
            count_moved(source, messages.len());
            let count = messages.len();
            for message in messages {
                target.accept(message, None, now);
            }
            count
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pace_makes_the_rate_asked_for() {
        let ms = Duration::from_millis;
        assert_eq!(pace(1), (1, ms(1_000)));
        assert_eq!(pace(5), (1, ms(200)));
        assert_eq!(pace(15), (2, ms(133)));
        assert_eq!(pace(500), (50, ms(100)));
        for rate in [1, 3, 7, 10, 60, 499, 500] {
            let (per_tick, every) = pace(rate);
            let per_second = per_tick as f64 / every.as_secs_f64();
            assert!(
                (per_second - f64::from(rate)).abs() / f64::from(rate) < 0.02,
                "{rate}: {per_second}"
            );
        }
    }
}
