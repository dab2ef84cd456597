//! A workspace's queue on whichever backend it names: [`Queue`], what `hookq queue`, `hookq
//! task`, `hookq plan cancel` and the web view read and change, written once for SQLite and
//! PostgreSQL. None of it takes the runner lock but [`Queue::pass`] and
//! [`Queue::drain_if_free`].

use std::path::PathBuf;

use serde::Serialize;

use crate::exec::Stop;
use crate::queue::config::ConfigWarning;
use crate::queue::drain::PassReport;
use crate::queue::driver::{Driver, LockState, Place};
use crate::queue::error::Error;
use crate::queue::ids::{PlanId, TaskId};
use crate::queue::lock::Wait;
use crate::queue::logs::{self, LogFile};
use crate::queue::merged::TargetHead;
use crate::queue::options::Options;
use crate::queue::pass::{Attempt, PassOptions, PassOutcome};
use crate::queue::model::{
    HistoryFilter, HistoryRow, OutcomeCount, Page, Paused, PendingFilter, PendingRow, Stats,
    TaskRow,
};
use crate::queue::phase::{Phase, Point};
use crate::queue::record::{MoveFacts, Occurrence, Transition};
use crate::queue::shown::{Listing, TaskShown};
use crate::queue::store::{SqliteDriver, Store};
use crate::queue::workspace::Workspace;

/// What [`Queue::drop_occurrence`] removed, and what to say of a run it cannot take back.
#[derive(Debug, Clone, Serialize)]
pub struct Dropped {
    /// The point as it was pending.
    pub occurrence: PendingRow,
    /// A note when the runner holding the lock started the point and may be running its
    /// commands: they finish, and their runs are kept as the backend says.
    pub note: Option<String>,
}

/// What [`Queue::drain_if_free`] did.
#[derive(Debug)]
pub enum DrainIfFree {
    /// Another runner holds the runner lock: it runs what is pending.
    Held,
    /// A pass ran.
    Ran {
        /// What it did.
        report: PassReport,
        /// How many points are pending after it, read only when it found the queue paused
        /// (`None` otherwise, or when they could not be counted).
        left: Option<i64>,
        /// The config's near-miss keys, as the pass read it.
        warnings: Vec<ConfigWarning>,
    },
    /// The lock could not be taken, or the pass failed: the points stay pending.
    Failed {
        /// Why.
        error: Error,
        /// The config's near-miss keys, when the pass read it.
        warnings: Vec<ConfigWarning>,
    },
}

/// A workspace's queue, in its SQLite file or in the PostgreSQL database its config or the
/// environment names: its tasks, pending points, history, counts, lock holder and logs, and
/// the changes a person makes by hand (drop, retry, pause, resume) or an owner makes (add,
/// move, cancel, then drain if the runner lock is free).
///
/// Every row type it returns is `Serialize`, in the shapes `hookq … --json` prints. Errors are
/// the queue's [`Error`], naming the database.
pub struct Queue {
    ws: Workspace,
    driver: Box<dyn Driver>,
    place: String,
    /// What it was opened with: a pass takes the runner lock with its lease.
    options: Options,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue").field("place", &self.place).finish()
    }
}

/// Where the logs of a shared queue's commands are.
const SHARED_LOGS: &str = "each command's log is on the host that ran it (the paths are that \
                           host's); `hookq queue log TASK` there prints them";

impl Queue {
    /// Opens `ws`'s queue with the options the environment sets ([`Options::from_env`]).
    pub fn open(ws: &Workspace) -> Result<Self, Error> {
        Self::open_with(ws, Options::from_env()?)
    }

    /// Opens `ws`'s queue: on PostgreSQL when `opts.database_url` or its config names a
    /// database (connecting, and creating or upgrading the schema), else in its SQLite file.
    /// The one place the driver is chosen.
    pub fn open_with(ws: &Workspace, opts: Options) -> Result<Self, Error> {
        #[cfg(feature = "postgres")]
        if let Some(choice) = crate::queue::pg::choose(ws, opts.database_url.as_deref())? {
            let driver = crate::queue::pg::PostgresDriver::open(&choice)?;
            return Ok(Self {
                options: opts,
                ..Self::with_driver(ws, Box::new(driver))
            });
        }
        let db = ws.db_path();
        let store = Store::open_with(&db, opts.store).map_err(|e| Error::store(&db, e))?;
        Ok(Self {
            options: opts,
            ..Self::sqlite(ws, store)
        })
    }

    /// The queue in `store`, `ws`'s SQLite file, already open.
    pub fn sqlite(ws: &Workspace, store: Store) -> Self {
        Self::with_driver(ws, Box::new(SqliteDriver::new(ws, store)))
    }

    /// `ws`'s queue on `driver`.
    pub fn with_driver(ws: &Workspace, driver: Box<dyn Driver>) -> Self {
        Self {
            ws: ws.clone(),
            place: driver.place().to_string(),
            driver,
            options: Options::default(),
        }
    }

    /// The options it was opened with (the defaults for a queue made of a store already open).
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The workspace.
    pub fn workspace(&self) -> &Workspace {
        &self.ws
    }

    /// Where the queue is, as messages name it: the SQLite file's path, or `queue NAME on URL`
    /// with any password masked.
    pub fn place(&self) -> &str {
        &self.place
    }

    /// Where the queue is, as a value.
    pub fn at(&self) -> &Place {
        self.driver.place()
    }

    /// Whether the queue is on PostgreSQL.
    pub fn is_postgres(&self) -> bool {
        matches!(self.driver.place(), Place::Postgres { .. })
    }

    /// For a queue other hosts drain too: where its commands' logs are. A queue drained on
    /// this host alone has its logs at the paths its history rows give.
    pub fn shared_logs(&self) -> Option<&'static str> {
        self.driver.shared().then_some(SHARED_LOGS)
    }

    /// The SQLite store, for a queue in the workspace's file.
    pub fn sqlite_store(&mut self) -> Option<&mut Store> {
        self.driver.sqlite_store()
    }

    /// The runner lock's holder, and the listing's line that names it.
    pub fn lock(&mut self) -> Result<LockState, Error> {
        self.driver.lock()
    }

    /// Pending points as `filter` narrows them, oldest first.
    pub fn pending(&mut self, filter: &PendingFilter) -> Result<Vec<PendingRow>, Error> {
        self.driver.pending(filter)
    }

    /// Occurrence `id`, when it is pending.
    pub fn pending_occurrence(&mut self, id: i64) -> Result<Option<PendingRow>, Error> {
        self.driver.pending_occurrence(id)
    }

    /// History rows as `filter` narrows them, newest first.
    pub fn history(&mut self, filter: &HistoryFilter) -> Result<Vec<HistoryRow>, Error> {
        self.driver.history(filter)
    }

    /// A page of pending points as `filter` narrows them: at most `filter.limit`, and whether
    /// more follow.
    pub fn pending_page(&mut self, filter: &PendingFilter) -> Result<Page<PendingRow>, Error> {
        let rows = self.pending(&PendingFilter {
            limit: filter.limit.saturating_add(1),
            ..filter.clone()
        })?;
        Ok(Page::cut(rows, filter.limit))
    }

    /// A page of pending points as `filter` narrows them, with who holds the runner lock and
    /// whether the queue is paused: what `hookq queue` lists.
    pub fn listing(&mut self, filter: &PendingFilter) -> Result<Listing, Error> {
        let Page { rows, more } = self.pending_page(filter)?;
        let lock = self.lock()?;
        let paused_since_ms = self.paused()?;
        Ok(Listing {
            lock,
            paused: paused_since_ms.is_some(),
            paused_since_ms,
            pending: rows,
            more,
        })
    }

    /// A page of history rows as `filter` narrows them: at most `filter.limit`, newest first,
    /// and whether older ones follow.
    pub fn history_page(&mut self, filter: &HistoryFilter) -> Result<Page<HistoryRow>, Error> {
        let rows = self.history(&HistoryFilter {
            limit: filter.limit.saturating_add(1),
            ..filter.clone()
        })?;
        Ok(Page::cut(rows, filter.limit))
    }

    /// History row `id`.
    pub fn history_row(&mut self, id: i64) -> Result<Option<HistoryRow>, Error> {
        self.driver.history_row(id)
    }

    /// History rows that finished since `since_ms` (unix ms), counted by outcome per interval
    /// of `bucket_ms` from `since_ms` on, oldest first: the intervals and outcomes with rows.
    pub fn outcomes(&mut self, since_ms: i64, bucket_ms: i64) -> Result<Vec<OutcomeCount>, Error> {
        self.driver.outcomes(since_ms, bucket_ms)
    }

    /// The `limit` longest command runs that finished since `since_ms`, longest first.
    pub fn slowest(&mut self, since_ms: i64, limit: usize) -> Result<Vec<HistoryRow>, Error> {
        self.driver.slowest(since_ms, limit)
    }

    /// Task `task`, when the queue has it.
    pub fn task(&mut self, task: &TaskId) -> Result<Option<TaskRow>, Error> {
        self.driver.task(task)
    }

    /// Task `task` with at most `pending` of its pending points and its `history` newest
    /// history rows, as `hookq task show` and the web view's task page read it; `None` when
    /// the queue has no such task.
    pub fn task_shown(
        &mut self,
        task: &TaskId,
        pending: usize,
        history: usize,
    ) -> Result<Option<TaskShown>, Error> {
        let Some(row) = self.task(task)? else {
            return Ok(None);
        };
        let points = self.pending_page(&PendingFilter {
            task: Some(task.clone()),
            limit: pending,
            ..PendingFilter::default()
        })?;
        let history = self.history(&HistoryFilter {
            task: Some(task.clone()),
            limit: history,
            ..HistoryFilter::default()
        })?;
        Ok(Some(TaskShown {
            task: row.into(),
            pending: points.rows,
            more_pending: points.more,
            history,
        }))
    }

    /// The queue's tasks, of one plan or all, by id.
    pub fn tasks(&mut self, plan: Option<&str>) -> Result<Vec<TaskRow>, Error> {
        self.driver.tasks(plan)
    }

    /// The queue's counts.
    pub fn stats(&mut self) -> Result<Stats, Error> {
        self.driver.stats()
    }

    /// When the queue was paused (unix ms), or `None` while it runs.
    pub fn paused(&mut self) -> Result<Option<i64>, Error> {
        self.driver.paused()
    }

    /// Pauses the queue: recording goes on, and no runner starts a point until
    /// [`resume`](Queue::resume); a point already running finishes.
    pub fn pause(&mut self) -> Result<Paused, Error> {
        self.driver.pause()
    }

    /// Resumes the queue, waking its hubs; `None` when it was not paused.
    pub fn resume(&mut self) -> Result<Option<Paused>, Error> {
        self.driver.resume()
    }

    /// Removes pending occurrence `id` without running it, keeping it in history as
    /// `dropped`.
    pub fn drop_occurrence(&mut self, id: i64) -> Result<Dropped, Error> {
        let entry = self.driver.drop_occurrence(id)?;
        let note = self.driver.dropped_note(&entry);
        Ok(Dropped {
            occurrence: entry,
            note,
        })
    }

    /// Queues history row `history_id`'s point again, as a new occurrence (`hookq queue retry`).
    pub fn retry(&mut self, history_id: i64) -> Result<Occurrence, Error> {
        self.driver.retry(history_id)
    }

    /// Creates task `task` of plan `plan` in phase `phase`, recording its point.
    pub fn add_task(
        &mut self,
        task: &TaskId,
        plan: &PlanId,
        phase: &Phase,
    ) -> Result<Transition, Error> {
        self.driver.add_task(task, plan, phase)
    }

    /// Moves task `task` to phase `phase`, recording its points in the same transaction.
    ///
    /// A move into `done.merged` with neither a sha nor a [`MoveFacts::target_head`] reads the
    /// head of the workspace's target branch (from its `config.toml`) as it records; when that
    /// cannot be read, the move records all the same and [`Transition::warning`] says why.
    pub fn move_task(
        &mut self,
        task: &TaskId,
        phase: &Phase,
        facts: &MoveFacts,
    ) -> Result<Transition, Error> {
        let mut unread = None;
        let filled;
        let facts = if phase.point() == Some(Point::AfterMerge)
            && facts.merged_sha.is_none()
            && facts.target_head.is_none()
        {
            match crate::queue::config::Config::load(&self.ws.config_path()) {
                Ok(cfg) => {
                    filled = MoveFacts {
                        target_head: Some(TargetHead::of(&self.ws, &cfg)),
                        ..facts.clone()
                    };
                    &filled
                }
                Err(e) => {
                    unread = Some(format!(
                        "after_merge runs without ARC_MERGED_SHA: cannot tell the target branch: {e}"
                    ));
                    facts
                }
            }
        } else {
            facts
        };
        let mut moved = self.driver.move_task(task, phase, facts)?;
        if moved.occurrence.is_some() && moved.warning.is_none() {
            moved.warning = unread;
        }
        Ok(moved)
    }

    /// Ends every unfinished task of plan `plan` in `failed.cancelled`.
    pub fn cancel_plan(&mut self, plan: &PlanId) -> Result<Vec<Transition>, Error> {
        self.driver.cancel_plan(plan)
    }

    /// A watcher of this queue's changes (new points, clears, drops, starts, a pause), on a
    /// connection of its own (SQLite) or through the process's one listener of the server
    /// (PostgreSQL): a host's live view of the queue it already has.
    pub fn watcher(&self) -> Result<crate::queue::watch::Watcher, Error> {
        self.driver.watcher()
    }

    /// The hook logs of `task` on this host (only `point`'s when given), least recently
    /// written first.
    pub fn log_files(&self, task: &TaskId, point: Option<Point>) -> Result<Vec<LogFile>, Error> {
        logs::task_logs(&self.ws, task, point).map_err(|source| {
            Error::Logs {
                path: self.ws.hook_log_dir(task),
                source,
            }
        })
    }

    /// The log files that `task`'s history rows written on this host name and that are gone
    /// (pruned, or removed by hand, since their runs), newest first, each once: a listing says
    /// `pruned` for them rather than failing to read them. Reads the task's newest 1,000 rows.
    pub fn pruned_logs(&mut self, task: &TaskId) -> Result<Vec<PathBuf>, Error> {
        let rows = self.history(&HistoryFilter {
            task: Some(task.clone()),
            limit: 1000,
            ..HistoryFilter::default()
        })?;
        let mut gone: Vec<PathBuf> = Vec::new();
        for row in rows {
            if !self.driver.log_is_here(&row) {
                continue;
            }
            let Some(path) = row.log_path.map(PathBuf::from) else {
                continue;
            };
            let missing = std::fs::symlink_metadata(&path)
                .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound);
            if missing && !gone.contains(&path) {
                gone.push(path);
            }
        }
        Ok(gone)
    }

    /// One pass over the queue ([`crate::queue::pass`]): takes the runner lock within
    /// `pass.wait` (on PostgreSQL the queue's, then the workspace's, one bound for both),
    /// drains what is pending, releases. Not taking the lock within the wait is an error
    /// naming its holder ([`Error::Locked`], or on PostgreSQL the queue's), or
    /// [`Error::Stopped`] on a stop request.
    pub fn pass(self, pass: PassOptions, stop: &Stop) -> Result<PassOutcome, Error> {
        self.attempt(pass, stop).into_result()
    }

    /// After an owner transition: drains what is pending if the runner lock (on PostgreSQL,
    /// the queue's, then the workspace's) is free right now, else leaves it to its holder.
    /// Hooks never make the transition fail: a failure here leaves the points pending.
    pub fn drain_if_free(self, stop: &Stop) -> DrainIfFree {
        let pass = PassOptions {
            wait: Wait::No,
            ..PassOptions::default()
        };
        match self.attempt(pass, stop) {
            Attempt::NotTaken(_) => DrainIfFree::Held,
            Attempt::Ran(PassOutcome {
                report,
                left,
                warnings,
            }) => DrainIfFree::Ran {
                report,
                left,
                warnings,
            },
            Attempt::Failed { error, warnings } => DrainIfFree::Failed { error, warnings },
        }
    }

    /// One pass on whichever database holds the queue, through its driver.
    fn attempt(self, pass: PassOptions, stop: &Stop) -> Attempt {
        self.driver.pass(&self.ws, &self.options, pass, stop)
    }
}
