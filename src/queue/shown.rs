//! A task as people read it: [`TaskView`], the stored row with its attempt spelt as everywhere
//! else, and [`TaskShown`], the task with its pending points and recent history. These are the
//! shapes `hookq task list --json` and `task show --json` print, and the web view's task page
//! and JSON show.

use serde::Serialize;

use crate::queue::model::{HistoryRow, PendingRow, Sha, TaskRow};

/// A task as `--json` shows it: the stored row, with the attempt spelt `<task>-<n>`, as
/// `ARC_ATTEMPT` spells it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskView {
    /// Task id.
    pub id: String,
    /// Its plan.
    pub plan: String,
    /// Its phase, `<state>.<phase>`.
    pub phase: String,
    /// `<task>-<n>`.
    pub attempt: String,
    /// The sha its merge put on the target branch.
    pub merged_sha: Option<Sha>,
    /// Created, unix ms.
    pub created_ms: i64,
    /// Last changed, unix ms.
    pub updated_ms: i64,
}

impl From<TaskRow> for TaskView {
    fn from(t: TaskRow) -> Self {
        Self {
            attempt: attempt(&t),
            id: t.id,
            plan: t.plan,
            phase: t.phase,
            merged_sha: t.merged_sha,
            created_ms: t.created_ms,
            updated_ms: t.updated_ms,
        }
    }
}

/// A task's attempt as `ARC_ATTEMPT` spells it: `<task>-<n>`.
pub fn attempt(t: &TaskRow) -> String {
    format!("{}-{}", t.id, t.attempt)
}

/// A task with its pending points (oldest first) and its recent history (newest first), as
/// [`Queue::task_shown`](crate::queue::Queue::task_shown) reads it in one call.
#[derive(Debug, Clone, Serialize)]
pub struct TaskShown {
    /// The task.
    pub task: TaskView,
    /// Its pending points, at most as many as asked for.
    pub pending: Vec<PendingRow>,
    /// More of its points are pending than `pending` lists.
    pub more_pending: bool,
    /// Its newest history rows.
    pub history: Vec<HistoryRow>,
}
