//! A task as people read it: [`TaskView`], the stored row with its attempt spelt as everywhere
//! else, and [`TaskShown`], the task with its pending points and recent history. These are the
//! shapes `hookq task list --json` and `task show --json` print, and the web view's task page
//! and JSON show; and [`Listing`], a page of pending points with the runner lock and the pause,
//! as `hookq queue --json` prints it and the view's `/api/pending` serves it.

use serde::{Serialize, Serializer};

use crate::queue::driver::LockState;
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

/// A page of pending points, oldest first, with who holds the runner lock and whether the queue
/// is paused: what `hookq queue` lists, `hookq queue --json` prints and the web view's pending
/// page and `/api/pending` show, read by [`Queue::listing`](crate::queue::Queue::listing).
#[derive(Debug, Clone, Serialize)]
pub struct Listing {
    /// Who holds the runner lock; in JSON, its holder alone (`null` when none is known).
    #[serde(serialize_with = "holder_only")]
    pub lock: LockState,
    /// Whether the queue is paused.
    pub paused: bool,
    /// Since when (unix ms), when it is.
    pub paused_since_ms: Option<i64>,
    /// The page's pending points.
    pub pending: Vec<PendingRow>,
    /// More pending points follow this page.
    pub more: bool,
}

fn holder_only<S: Serializer>(lock: &LockState, s: S) -> Result<S::Ok, S::Error> {
    lock.holder.serialize(s)
}
