//! The queue's neutral model: the rows, filters, outcomes, pages and counts that every driver
//! reads and writes the same way (SQLite in [`crate::queue::store`], PostgreSQL in `queue::pg`).
//! Nothing here knows a database.

use std::fmt;
use std::num::NonZeroU32;
use std::str::FromStr;

use serde::Serialize;

use crate::queue::ids::TaskId;
use crate::queue::phase::Point;
use crate::queue::row_error::RowError;


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
    pub attempt: Attempt,
    /// The sha the last merge put on the target branch.
    pub merged_sha: Option<Sha>,
    /// Created, unix ms.
    pub created_ms: i64,
    /// Last changed, unix ms.
    pub updated_ms: i64,
}


/// A pending point, as `queue` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PendingRow {
    /// Occurrence id; points run in this order.
    pub id: i64,
    /// Task id.
    pub task: TaskId,
    /// Plan id of the task (`None` if the task is missing).
    pub plan: Option<String>,
    /// The point.
    pub point: Point,
    /// The `<state>.<phase>` recorded with the point (`None` if its state row is missing).
    pub state: Option<String>,
    /// Recorded, unix ms.
    pub recorded_ms: i64,
    /// Passes that started this point without clearing it.
    pub passes: i64,
    /// When a pass last started it, unix ms.
    pub last_started_ms: Option<i64>,
    /// The task's current attempt (`None` if the task is missing).
    pub attempt: Option<Attempt>,
    /// The task's merged sha.
    pub merged_sha: Option<Sha>,
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

    /// Every outcome, in the order listings show them.
    pub const ALL: [Outcome; 8] = [
        Outcome::Ok,
        Outcome::Failed,
        Outcome::Signalled,
        Outcome::TimedOut,
        Outcome::SpawnFailed,
        Outcome::Empty,
        Outcome::Abandoned,
        Outcome::Dropped,
    ];
}

/// An outcome name that is none of [`Outcome::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown outcome {0:?} (known: ok, failed, signalled, timed_out, spawn_failed, empty, abandoned, dropped)")]
pub struct UnknownOutcome(pub String);

impl FromStr for Outcome {
    type Err = UnknownOutcome;
    fn from_str(s: &str) -> Result<Self, UnknownOutcome> {
        Outcome::ALL
            .into_iter()
            .find(|o| o.as_str() == s)
            .ok_or_else(|| UnknownOutcome(s.to_owned()))
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for Outcome {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Outcome {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// The sha a merge put on the target branch: 4 to 64 hex digits, checked once, where it is made
/// (given by a caller, or read back from a database).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct Sha(String);

impl Sha {
    /// Checks `sha`: 4 to 64 hex digits.
    pub fn new(sha: impl Into<String>) -> Result<Self, RowError> {
        let sha = sha.into();
        if (4..=64).contains(&sha.len()) && sha.bytes().all(|b| b.is_ascii_hexdigit()) {
            Ok(Self(sha))
        } else {
            let cut: String = sha.chars().take(40).collect();
            Err(RowError::Invalid(format!(
                "invalid merged sha {cut:?}: expected 4 to 64 hex digits"
            )))
        }
    }

    /// The sha as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for Sha {
    type Err = RowError;
    fn from_str(s: &str) -> Result<Self, RowError> {
        Self::new(s)
    }
}

impl fmt::Display for Sha {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::ops::Deref for Sha {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Sha {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// A task's attempt: counted from 1, so never 0 by its type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct Attempt(NonZeroU32);

impl Attempt {
    /// The first attempt.
    pub const FIRST: Attempt = Attempt(NonZeroU32::MIN);

    /// Attempt `n`, refusing 0 (and what does not fit in 32 bits).
    pub fn new(n: i64) -> Result<Self, RowError> {
        u32::try_from(n)
            .ok()
            .and_then(NonZeroU32::new)
            .map(Self)
            .ok_or_else(|| RowError::Invalid(format!("invalid attempt {n}: attempts count from 1")))
    }

    /// The attempt as a number.
    pub fn get(self) -> u32 {
        self.0.get()
    }
}

impl fmt::Display for Attempt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl PartialEq<i64> for Attempt {
    fn eq(&self, other: &i64) -> bool {
        i64::from(self.get()) == *other
    }
}

/// One page of a listing: at most the rows asked for, and whether more follow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Page<T> {
    /// The page's rows.
    pub rows: Vec<T>,
    /// Whether more rows follow the last of this page.
    pub more: bool,
}

impl<T> Page<T> {
    /// The page of `limit` rows out of `rows`, read with a limit of `limit + 1`: the extra row,
    /// when there, only says that more follow.
    pub fn cut(mut rows: Vec<T>, limit: usize) -> Self {
        let more = rows.len() > limit;
        rows.truncate(limit);
        Self { rows, more }
    }
}

/// What pausing or resuming the queue found and did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Paused {
    /// When the queue was paused (unix ms): by this call, or by an earlier one.
    pub since_ms: i64,
    /// Whether this call changed anything: `false` when the queue already was as asked.
    pub changed: bool,
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
    pub task: TaskId,
    /// The point.
    pub point: Point,
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
    /// What became of the command, or of the point.
    pub outcome: Outcome,
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


/// Which pending points a listing wants: oldest first, after occurrence `after` (exclusive),
/// at most `limit`, of one task and one point or all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PendingFilter {
    /// Only this task's.
    pub task: Option<TaskId>,
    /// Only this point's.
    pub point: Option<Point>,
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
    pub task: Option<TaskId>,
    /// Only this point's.
    pub point: Option<Point>,
    /// Only rows with this outcome.
    pub outcome: Option<Outcome>,
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
    /// The outcome.
    pub outcome: Outcome,
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
