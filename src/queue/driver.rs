//! One queue, two drivers: [`Driver`], everything [`Queue`](crate::queue::Queue) asks of a
//! database, implemented once for SQLite ([`crate::queue::store::SqliteDriver`]) and once for
//! PostgreSQL (`queue::pg::PostgresDriver`, with the `postgres` feature).
//!
//! A driver reads the neutral rows of [`crate::queue::model`], makes the changes a person makes
//! by hand, records an owner's transitions in a transaction of its own, watches for changes, and
//! runs one pass when its runner lock is free. What the drain itself needs, batch by batch, is
//! the other half, [`QueueStore`](crate::queue::QueueStore): generic, so that a pass costs no
//! dynamic call. Adding a read to the queue means one method here and one in each driver.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::exec::Stop;
use crate::queue::error::Error;
use crate::queue::ids::{PlanId, TaskId};
use crate::queue::lock::Holder;
use crate::queue::model::{
    HistoryFilter, HistoryRow, OutcomeCount, Paused, PendingFilter, PendingRow, Stats, TaskRow,
};
use crate::queue::options::Options;
use crate::queue::pass::{Attempt, PassOptions};
use crate::queue::phase::Phase;
use crate::queue::record::{MoveFacts, Occurrence, Transition};
use crate::queue::workspace::Workspace;

/// Where a queue lives, as every message and error names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Place {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A queue in a PostgreSQL database.
    Postgres {
        /// The queue's name.
        queue: String,
        /// The database's connection string, any password masked.
        target_masked: String,
    },
}

impl Place {
    /// Queue `queue` in the database at `target`, its password masked.
    #[cfg(feature = "postgres")]
    pub fn postgres(queue: &crate::queue::pg::QueueName, target: &crate::queue::pg::Target) -> Self {
        Place::Postgres {
            queue: queue.to_string(),
            target_masked: target.masked().to_owned(),
        }
    }

    /// The place as an error's prefix names it: the SQLite file, or `queue NAME` alone (a
    /// failure to connect names the masked target itself).
    pub fn short(&self) -> String {
        match self {
            Place::Sqlite(path) => path.display().to_string(),
            Place::Postgres { queue, .. } => format!("queue {queue}"),
        }
    }

    /// The SQLite file, for a queue in one.
    pub fn sqlite_path(&self) -> Option<&Path> {
        match self {
            Place::Sqlite(path) => Some(path),
            Place::Postgres { .. } => None,
        }
    }
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Sqlite(path) => write!(f, "{}", path.display()),
            Place::Postgres {
                queue,
                target_masked,
            } => write!(f, "queue {queue} on {target_masked}"),
        }
    }
}

/// The runner lock's holder: the workspace's `runner.lock` for a queue on SQLite, the queue's
/// advisory lock on PostgreSQL.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum LockHolder {
    /// What the workspace's `runner.lock` says of its holder, or last holder.
    File(Holder),
    /// The live holder of the queue's runner lock, from the server's lock table.
    #[cfg(feature = "postgres")]
    Queue(crate::queue::pg::PgHolder),
}

/// Who holds the runner lock now.
#[derive(Debug, Clone, Serialize)]
pub struct LockState {
    /// Whether a live runner holds it.
    pub held: bool,
    /// Its holder, or on SQLite its last holder (whose pid is gone) when it is free.
    pub holder: Option<LockHolder>,
    /// The line a listing shows: `runner lock: held by …`, `runner lock: free`.
    pub line: String,
}

/// A queue's database, as [`Queue`](crate::queue::Queue) uses it. Every error names
/// [`Driver::place`].
pub trait Driver: Send {
    /// Where the queue lives.
    fn place(&self) -> &Place;

    /// Whether hosts other than this one drain the queue, so that a command's log may be on
    /// another host.
    fn shared(&self) -> bool;

    /// Whether history row `row`'s log, if it has one, was written on this host.
    fn log_is_here(&self, row: &HistoryRow) -> bool;

    /// The runner lock's holder, and the listing's line that names it.
    fn lock(&mut self) -> Result<LockState, Error>;

    /// What to say after dropping `entry`, when the runner holding the lock now started it and
    /// has not cleared it: its commands may be running, and the drop cannot take them back.
    fn dropped_note(&mut self, entry: &PendingRow) -> Option<String>;

    /// Pending points as `filter` narrows them, oldest first.
    fn pending(&mut self, filter: &PendingFilter) -> Result<Vec<PendingRow>, Error>;

    /// Pending occurrence `id`, when it is pending.
    fn pending_occurrence(&mut self, id: i64) -> Result<Option<PendingRow>, Error>;

    /// History rows as `filter` narrows them, newest first.
    fn history(&mut self, filter: &HistoryFilter) -> Result<Vec<HistoryRow>, Error>;

    /// History row `id`.
    fn history_row(&mut self, id: i64) -> Result<Option<HistoryRow>, Error>;

    /// History rows finished since `since_ms`, counted by outcome per `bucket_ms`.
    fn outcomes(&mut self, since_ms: i64, bucket_ms: i64) -> Result<Vec<OutcomeCount>, Error>;

    /// The `limit` longest command runs finished since `since_ms`, longest first.
    fn slowest(&mut self, since_ms: i64, limit: usize) -> Result<Vec<HistoryRow>, Error>;

    /// Task `task`, when the queue has it.
    fn task(&mut self, task: &TaskId) -> Result<Option<TaskRow>, Error>;

    /// The queue's tasks, of one plan or all, by id.
    fn tasks(&mut self, plan: Option<&str>) -> Result<Vec<TaskRow>, Error>;

    /// The queue's counts.
    fn stats(&mut self) -> Result<Stats, Error>;

    /// When the queue was paused (unix ms), or `None` while it runs.
    fn paused(&mut self) -> Result<Option<i64>, Error>;

    /// Pauses the queue.
    fn pause(&mut self) -> Result<Paused, Error>;

    /// Resumes the queue, waking its hubs; `None` when it was not paused.
    fn resume(&mut self) -> Result<Option<Paused>, Error>;

    /// Removes pending occurrence `id` without running it, keeping it in history as dropped.
    fn drop_occurrence(&mut self, id: i64) -> Result<PendingRow, Error>;

    /// Queues history row `history_id`'s point again, as a new occurrence.
    fn retry(&mut self, history_id: i64) -> Result<Occurrence, Error>;

    /// Creates task `task` of plan `plan` in phase `phase`, recording its point, in a
    /// transaction of the driver's own.
    fn add_task(&mut self, task: &TaskId, plan: &PlanId, phase: &Phase)
    -> Result<Transition, Error>;

    /// Moves task `task` to phase `phase`, recording its points in the same transaction.
    fn move_task(
        &mut self,
        task: &TaskId,
        phase: &Phase,
        facts: &MoveFacts,
    ) -> Result<Transition, Error>;

    /// Ends every unfinished task of plan `plan` in `failed.cancelled`.
    fn cancel_plan(&mut self, plan: &PlanId) -> Result<Vec<Transition>, Error>;

    /// A watcher of this queue's changes (on SQLite on a connection of its own, on PostgreSQL
    /// through the process's one listener of the server): what a view's live updates come
    /// from.
    fn watcher(&self) -> Result<crate::queue::watch::Watcher, Error>;

    /// One pass over what is pending ([`crate::queue::pass`]): the runner lock taken within
    /// `pass.wait` (held with the lease `options` set, where the database leases it), the
    /// drain, the lock released.
    fn pass(
        self: Box<Self>,
        ws: &Workspace,
        options: &Options,
        pass: PassOptions,
        stop: &Stop,
    ) -> Attempt;

    /// The SQLite store, for a driver over one.
    fn sqlite_store(&mut self) -> Option<&mut crate::queue::store::Store> {
        None
    }
}
