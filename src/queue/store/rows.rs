//! The rows the store reads and writes: tasks, pending points, history, counts.

use serde::Serialize;

use crate::queue::ids::TaskId;
use crate::queue::phase::Point;
use crate::queue::row_error::RowError;
use crate::queue::starts::{self, Start};

use super::StoreError;

/// Now, in unix milliseconds.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// A task as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskRow {
    /// Task id.
    pub id: String,
    /// Plan id.
    pub plan: String,
    /// `<state>.<phase>`.
    pub phase: String,
    /// Current attempt, from 1.
    pub attempt: i64,
    /// The sha the last merge put on the target branch.
    pub merged_sha: Option<String>,
    /// Created, unix ms.
    pub created_ms: i64,
    /// Last changed, unix ms.
    pub updated_ms: i64,
}

impl TaskRow {
    pub(super) const COLUMNS: &'static str =
        "id, plan, phase, attempt, merged_sha, created_ms, updated_ms";

    pub(super) fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: r.get(0)?,
            plan: r.get(1)?,
            phase: r.get(2)?,
            attempt: r.get(3)?,
            merged_sha: r.get(4)?,
            created_ms: r.get(5)?,
            updated_ms: r.get(6)?,
        })
    }
}

/// A pending point, as `queue` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PendingRow {
    /// Occurrence id; points run in this order.
    pub id: i64,
    /// Task id.
    pub task: String,
    /// Plan id of the task (`None` if the task is missing).
    pub plan: Option<String>,
    /// Point name.
    pub point: String,
    /// The `<state>.<phase>` recorded with the point (`None` if its state row is missing).
    pub state: Option<String>,
    /// Recorded, unix ms.
    pub recorded_ms: i64,
    /// Passes that started this point without clearing it.
    pub passes: i64,
    /// When a pass last started it, unix ms.
    pub last_started_ms: Option<i64>,
    /// The task's current attempt (`None` if the task is missing).
    pub attempt: Option<i64>,
    /// The task's merged sha.
    pub merged_sha: Option<String>,
}

impl PendingRow {
    pub(super) const SELECT: &'static str = r#"
        SELECT h.id, h.task, t.plan, h.point, s.state, h.recorded_ms, h.passes, h.last_started_ms,
               t.attempt, t.merged_sha
        FROM pending_hooks h
        LEFT JOIN tasks t ON t.id = h.task
        LEFT JOIN pending_hook_states s ON s.hook_id = h.id"#;

    pub(super) fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: r.get(0)?,
            task: r.get(1)?,
            plan: r.get(2)?,
            point: r.get(3)?,
            state: r.get(4)?,
            recorded_ms: r.get(5)?,
            passes: r.get(6)?,
            last_started_ms: r.get(7)?,
            attempt: r.get(8)?,
            merged_sha: r.get(9)?,
        })
    }

    pub(super) fn count_starts(&mut self, starts: &[Start]) {
        starts::apply(starts, self.id, &mut self.passes, &mut self.last_started_ms);
    }

    /// The point, parsed.
    pub fn point(&self) -> Result<Point, StoreError> {
        self.point
            .parse()
            .map_err(|e: crate::queue::phase::UnknownPoint| RowError::BadRow(e.to_string()).into())
    }

    /// The task id, parsed.
    pub fn task_id(&self) -> Result<TaskId, StoreError> {
        TaskId::new(self.task.as_str()).map_err(|e| RowError::BadRow(e.to_string()).into())
    }
}

/// What became of a command, or of a point cleared without running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Exited 0.
    Ok,
    /// Exited non-zero.
    Failed,
    /// Ended by a signal it did not get from hookq.
    Signalled,
    /// Ran past `gate.command_timeout_secs` and was killed.
    TimedOut,
    /// Could not be started.
    SpawnFailed,
    /// The point had no commands configured.
    Empty,
    /// Parked after `queue.max_interrupted_runs` passes started it without clearing it.
    Abandoned,
    /// Dropped by `hookq queue drop`.
    Dropped,
}

impl Outcome {
    /// The name stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Failed => "failed",
            Outcome::Signalled => "signalled",
            Outcome::TimedOut => "timed_out",
            Outcome::SpawnFailed => "spawn_failed",
            Outcome::Empty => "empty",
            Outcome::Abandoned => "abandoned",
            Outcome::Dropped => "dropped",
        }
    }
}

/// A point whose commands all ran (or that had none to run), with the history rows its clear
/// writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cleared {
    /// The point, as the pass read it (with the pass counted).
    pub entry: PendingRow,
    /// One row per command run, or one bare row.
    pub rows: Vec<NewHistory>,
}

/// One history row to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewHistory {
    /// 1-based command index, `None` for a point cleared without running.
    pub command_index: Option<usize>,
    /// The command line.
    pub command: Option<String>,
    /// What became of it.
    pub outcome: Outcome,
    /// Exit code when it exited.
    pub exit_code: Option<i32>,
    /// Signal number when a signal ended it.
    pub signal: Option<i32>,
    /// Start, unix ms.
    pub started_ms: Option<i64>,
    /// Duration in ms.
    pub duration_ms: Option<i64>,
    /// The log it appended to.
    pub log_path: Option<String>,
}

impl NewHistory {
    /// A row for a point cleared without running a command.
    pub fn bare(outcome: Outcome) -> Self {
        Self {
            command_index: None,
            command: None,
            outcome,
            exit_code: None,
            signal: None,
            started_ms: None,
            duration_ms: None,
            log_path: None,
        }
    }
}

/// A history row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HistoryRow {
    /// History id (`queue retry` takes it).
    pub id: i64,
    /// The occurrence id the point had while pending.
    pub occurrence: i64,
    /// Task id.
    pub task: String,
    /// Point name.
    pub point: String,
    /// The `<state>.<phase>` it fired for.
    pub state: String,
    /// Recorded, unix ms.
    pub recorded_ms: i64,
    /// Passes that had started it.
    pub passes: i64,
    /// 1-based command index.
    pub command_index: Option<i64>,
    /// The command line.
    pub command: Option<String>,
    /// Outcome name.
    pub outcome: String,
    /// Exit code.
    pub exit_code: Option<i64>,
    /// Signal number.
    pub signal: Option<i64>,
    /// Start, unix ms.
    pub started_ms: Option<i64>,
    /// Duration, ms.
    pub duration_ms: Option<i64>,
    /// Log path.
    pub log_path: Option<String>,
    /// When the row was written, unix ms.
    pub finished_ms: i64,
    /// The host whose runner wrote it: on PostgreSQL, where many hosts drain one queue (its
    /// log is on that host); `None` on SQLite, whose runs are all this machine's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

impl HistoryRow {
    pub(super) const SELECT: &'static str = r#"
        SELECT id, occurrence, task, point, state, recorded_ms, passes, command_index, command,
               outcome, exit_code, signal, started_ms, duration_ms, log_path, finished_ms
        FROM hook_history"#;

    pub(super) fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: r.get(0)?,
            occurrence: r.get(1)?,
            task: r.get(2)?,
            point: r.get(3)?,
            state: r.get(4)?,
            recorded_ms: r.get(5)?,
            passes: r.get(6)?,
            command_index: r.get(7)?,
            command: r.get(8)?,
            outcome: r.get(9)?,
            exit_code: r.get(10)?,
            signal: r.get(11)?,
            started_ms: r.get(12)?,
            duration_ms: r.get(13)?,
            log_path: r.get(14)?,
            finished_ms: r.get(15)?,
            host: None,
        })
    }
}

/// Which pending points a listing wants: oldest first, after occurrence `after` (exclusive),
/// at most `limit`, of one task and one point or all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PendingFilter {
    /// Only this task's.
    pub task: Option<String>,
    /// Only this point's (`after_merge`, ...).
    pub point: Option<String>,
    /// Only points after this occurrence id (0: from the first): the next page of a listing
    /// starts after the last id of the one before.
    pub after: i64,
    /// At most this many.
    pub limit: usize,
}

/// Which history rows a listing wants: newest first, before row `before` (exclusive) when
/// given, at most `limit`, narrowed by every filter given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HistoryFilter {
    /// Only this task's.
    pub task: Option<String>,
    /// Only this point's.
    pub point: Option<String>,
    /// Only rows with this outcome (`ok`, `failed`, ...).
    pub outcome: Option<String>,
    /// Only rows this host's runner wrote (PostgreSQL; on SQLite, no row has a host).
    pub host: Option<String>,
    /// Only this occurrence's rows.
    pub occurrence: Option<i64>,
    /// Only rows with a smaller id: the next page starts before the last id of the one before.
    pub before: Option<i64>,
    /// At most this many.
    pub limit: usize,
}

/// How many history rows with one outcome finished in one interval ([`Store::outcomes`]).
///
/// [`Store::outcomes`]: crate::queue::store::Store::outcomes
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OutcomeCount {
    /// The interval's start, unix ms.
    pub start_ms: i64,
    /// The outcome (`ok`, `failed`, `timed_out`, ...).
    pub outcome: String,
    /// Rows.
    pub count: i64,
}

/// Counts for `queue stats`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// Pending points.
    pub pending: i64,
    /// Pending points by point name.
    pub pending_by_point: Vec<(String, i64)>,
    /// Pending points that a pass started without clearing.
    pub interrupted: i64,
    /// When the oldest pending point was recorded, unix ms.
    pub oldest_recorded_ms: Option<i64>,
    /// History rows by outcome.
    pub history_by_outcome: Vec<(String, i64)>,
    /// Tasks.
    pub tasks: i64,
    /// When the queue was paused (unix ms, `hookq queue pause`), or `None` while it runs.
    pub paused_since_ms: Option<i64>,
}
