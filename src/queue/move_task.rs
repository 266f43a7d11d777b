//! A message move task's record, kept with its source queue.
//!
//! The record lives in the source queue's settings (`QueueMeta`), so it is
//! stored with them and every step of the task commits its progress in the
//! same write as the messages it moved: a new leader finds each task where
//! it stopped, continues the running ones, and lists the finished ones.
//! What moves the messages is `move_tasks.rs`, above the core.

use serde::{Deserialize, Serialize};

/// Finished tasks kept per source queue, for ListMessageMoveTasks.
pub const KEPT_FINISHED: usize = 10;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MoveTaskRecord {
    pub handle: String,
    pub source_arn: String,
    /// Where messages go, as (queue key, ARN); `None`: back to each
    /// message's source queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination: Option<(String, String)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<u32>,
    pub started_at: u64,
    pub to_move: u64,
    pub moved: u64,
    pub status: MoveStatus,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum MoveStatus {
    Running,
    /// Cancelled by CancelMessageMoveTask; the task stops at its next step.
    Cancelling,
    Completed,
    Cancelled,
    Failed(String),
}

impl MoveTaskRecord {
    pub fn is_running(&self) -> bool {
        matches!(self.status, MoveStatus::Running | MoveStatus::Cancelling)
    }

    /// `RUNNING`, `CANCELLING`, `COMPLETED`, `CANCELLED` or `FAILED`.
    pub fn status_name(&self) -> &'static str {
        match self.status {
            MoveStatus::Running => "RUNNING",
            MoveStatus::Cancelling => "CANCELLING",
            MoveStatus::Completed => "COMPLETED",
            MoveStatus::Cancelled => "CANCELLED",
            MoveStatus::Failed(_) => "FAILED",
        }
    }
}

/// Adds a task to a queue's records, keeping the running ones and the last
/// [`KEPT_FINISHED`] finished ones.
pub fn add(records: &mut Vec<MoveTaskRecord>, task: MoveTaskRecord) {
    records.push(task);
    let finished = records.iter().filter(|t| !t.is_running()).count();
    let mut to_drop = finished.saturating_sub(KEPT_FINISHED);
    records.retain(|t| {
        let drop = to_drop > 0 && !t.is_running();
        to_drop -= usize::from(drop);
        !drop
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(handle: &str, status: MoveStatus) -> MoveTaskRecord {
        MoveTaskRecord {
            handle: handle.into(),
            source_arn: "arn".into(),
            destination: None,
            rate: None,
            started_at: 0,
            to_move: 1,
            moved: 0,
            status,
        }
    }

    #[test]
    fn keeps_running_tasks_and_the_last_finished_ones() {
        let mut records = vec![record("running", MoveStatus::Running)];
        for i in 0..15 {
            add(&mut records, record(&format!("done-{i}"), MoveStatus::Completed));
        }
        assert_eq!(records.len(), 1 + KEPT_FINISHED);
        assert_eq!(records[0].handle, "running");
        assert_eq!(records[1].handle, "done-5", "the oldest finished ones go");
        assert_eq!(records.last().unwrap().status_name(), "COMPLETED");
    }
}
