//! A workspace's queue on whichever backend it names: [`Queue`], what `hookq queue`, `hookq
//! task`, `hookq plan cancel` and the web view read and change, written once for SQLite and
//! PostgreSQL. None of it takes the runner lock but [`Queue::pass`] and
//! [`Queue::drain_if_free`].

use std::path::PathBuf;

use serde::Serialize;

use crate::exec::Stop;
use crate::queue::backend::{ChangeMark, QueueStore};
use crate::queue::config::ConfigWarning;
use crate::queue::drain::PassReport;
use crate::queue::error::Error;
use crate::queue::ids::{PlanId, TaskId};
use crate::queue::lock::{self, Holder, Wait};
use crate::queue::logs::{self, LogFile};
use crate::queue::merged::TargetHead;
use crate::queue::options::Options;
use crate::queue::pass::{Attempt, PassOptions, PassOutcome};
use crate::queue::phase::{Phase, Point};
use crate::queue::record::{self, MoveFacts, Occurrence, Transition};
use crate::queue::shown::TaskShown;
use crate::queue::store::{
    HistoryFilter, HistoryRow, OutcomeCount, Paused, PendingFilter, PendingRow, Stats, Store,
    StoreError, TaskRow,
};
use crate::queue::workspace::Workspace;

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

/// What [`Queue::drop_entry`] removed, and what to say of a run it cannot take back.
#[derive(Debug, Clone, Serialize)]
pub struct Dropped {
    /// The point as it was pending.
    pub entry: PendingRow,
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

/// `$sqlite` on the SQLite store `$s`, or `$pg` on the PostgreSQL store `$p` of queue `$q`, each failure
/// named with the queue's place. The PostgreSQL arm compiles only with the `postgres` feature.
macro_rules! on {
    ($self:ident, |$s:ident| $sqlite:expr, |$p:ident, $q:ident| $pg:expr) => {{
        let err = $self.sqlite_err();
        match &mut $self.backend {
            Backend::Sqlite($s) => $sqlite.map_err(err),
            #[cfg(feature = "postgres")]
            Backend::Postgres($p) => {
                let $q = $p.queue().clone();
                $pg.map_err(|source| Error::Postgres {
                    queue: $q.to_string(),
                    source,
                })
            }
        }
    }};
}

enum Backend {
    Sqlite(Store),
    #[cfg(feature = "postgres")]
    Postgres(Box<crate::queue::pg::PgStore>),
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
    backend: Backend,
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
    pub fn open_with(ws: &Workspace, opts: Options) -> Result<Self, Error> {
        #[cfg(feature = "postgres")]
        if let Some(choice) = crate::queue::pg::choose(ws, opts.database_url.as_deref())? {
            let queue = Self::open_postgres(ws, &choice)?;
            return Ok(Self {
                options: opts,
                ..queue
            });
        }
        #[cfg(not(feature = "postgres"))]
        let _ = &opts.database_url;
        let db = ws.db_path();
        let store = Store::open_with(&db, opts.store).map_err(|e| Error::store(&db, e))?;
        Ok(Self {
            options: opts,
            ..Self::sqlite(ws, store)
        })
    }

    /// The queue in `store`, `ws`'s SQLite file, already open.
    pub fn sqlite(ws: &Workspace, store: Store) -> Self {
        Self {
            ws: ws.clone(),
            place: store.path().display().to_string(),
            backend: Backend::Sqlite(store),
            options: Options::default(),
        }
    }

    /// Connects to the PostgreSQL queue `choice` names, creating or upgrading the schema. The
    /// session gets a runner's statement and lock timeouts, so a call stuck behind a server
    /// that stopped answering, or a host's open transaction, fails instead of hanging.
    #[cfg(feature = "postgres")]
    pub fn open_postgres(
        ws: &Workspace,
        choice: &crate::queue::pg::PgChoice,
    ) -> Result<Self, Error> {
        use crate::queue::pg::{PgStore, connect};
        let at = |source| Error::Postgres {
            queue: choice.queue.to_string(),
            source,
        };
        let mut store = PgStore::open(&choice.target, choice.queue.clone()).map_err(at)?;
        connect::guard_session(store.client(), &choice.target).map_err(at)?;
        Ok(Self {
            ws: ws.clone(),
            place: format!("queue {} on {}", choice.queue, choice.target),
            backend: Backend::Postgres(Box::new(store)),
            options: Options::default(),
        })
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

    /// Whether the queue is on PostgreSQL.
    pub fn is_postgres(&self) -> bool {
        !matches!(self.backend, Backend::Sqlite(_))
    }

    /// For a queue other hosts drain too: where its commands' logs are. A queue drained on
    /// this host alone has its logs at the paths its history rows give.
    pub fn shared_logs(&self) -> Option<&'static str> {
        self.is_postgres().then_some(SHARED_LOGS)
    }

    /// The SQLite store, for a queue in the workspace's file.
    pub fn sqlite_store(&mut self) -> Option<&mut Store> {
        match &mut self.backend {
            Backend::Sqlite(store) => Some(store),
            #[cfg(feature = "postgres")]
            Backend::Postgres(_) => None,
        }
    }

    fn sqlite_err(&self) -> impl Fn(StoreError) -> Error + use<> {
        let db = PathBuf::from(&self.place);
        move |e| Error::store(&db, e)
    }

    /// The runner lock's holder, and the listing's line that names it.
    pub fn lock(&mut self) -> Result<LockState, Error> {
        match &mut self.backend {
            Backend::Sqlite(_) => {
                let holder = lock::holder(&self.ws.lock_path());
                let line = match &holder {
                    Some(h) if h.alive => format!("runner lock: held by {h}"),
                    Some(h) => format!("runner lock: free (last holder pid {} is gone)", h.pid),
                    None => "runner lock: free".to_owned(),
                };
                Ok(LockState {
                    held: holder.as_ref().is_some_and(|h| h.alive),
                    holder: holder.map(LockHolder::File),
                    line,
                })
            }
            #[cfg(feature = "postgres")]
            Backend::Postgres(store) => {
                let queue = store.queue().clone();
                let holder = crate::queue::pg::holder(store.client(), &queue).map_err(|source| {
                    Error::Postgres {
                        queue: queue.to_string(),
                        source,
                    }
                })?;
                let line = match &holder {
                    Some(h) => format!("runner lock of queue {queue}: held by {h}"),
                    None => format!("runner lock of queue {queue}: free"),
                };
                Ok(LockState {
                    held: holder.is_some(),
                    holder: holder.map(LockHolder::Queue),
                    line,
                })
            }
        }
    }

    /// Pending points as `filter` narrows them, oldest first.
    pub fn pending(&mut self, filter: &PendingFilter) -> Result<Vec<PendingRow>, Error> {
        on!(self, |s| s.pending_where(filter), |p, q| crate::queue::pg::store::pending_where(p.client(), &q, filter))
    }

    /// Occurrence `id`, when it is pending.
    pub fn pending_entry(&mut self, id: i64) -> Result<Option<PendingRow>, Error> {
        on!(self, |s| s.pending_entry(id), |p, q| crate::queue::pg::store::pending_entry(p.client(), &q, id))
    }

    /// History rows as `filter` narrows them, newest first.
    pub fn history(&mut self, filter: &HistoryFilter) -> Result<Vec<HistoryRow>, Error> {
        on!(self, |s| s.history_where(filter), |p, q| crate::queue::pg::store::history_where(p.client(), &q, filter))
    }

    /// History row `id`.
    pub fn history_entry(&mut self, id: i64) -> Result<Option<HistoryRow>, Error> {
        on!(self, |s| s.history_entry(id), |p, q| crate::queue::pg::store::history_entry(p.client(), &q, id))
    }

    /// History rows that finished since `since_ms` (unix ms), counted by outcome per interval
    /// of `bucket_ms` from `since_ms` on, oldest first: the intervals and outcomes with rows.
    pub fn outcomes(&mut self, since_ms: i64, bucket_ms: i64) -> Result<Vec<OutcomeCount>, Error> {
        on!(self, |s| s.outcomes(since_ms, bucket_ms), |p, q| {
            crate::queue::pg::store::outcomes(p.client(), &q, since_ms, bucket_ms)
        })
    }

    /// The `limit` longest command runs that finished since `since_ms`, longest first.
    pub fn slowest(&mut self, since_ms: i64, limit: usize) -> Result<Vec<HistoryRow>, Error> {
        on!(self, |s| s.slowest(since_ms, limit), |p, q| {
            crate::queue::pg::store::slowest(p.client(), &q, since_ms, limit)
        })
    }

    /// Task `task`, when the queue has it.
    pub fn task(&mut self, task: &TaskId) -> Result<Option<TaskRow>, Error> {
        on!(self, |s| s.task(task.as_str()), |p, q| crate::queue::pg::store::task(p.client(), &q, task.as_str()))
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
        let mut points = self.pending(&PendingFilter {
            task: Some(task.as_str().to_owned()),
            limit: pending + 1,
            ..PendingFilter::default()
        })?;
        let more_pending = points.len() > pending;
        points.truncate(pending);
        let history = self.history(&HistoryFilter {
            task: Some(task.as_str().to_owned()),
            limit: history,
            ..HistoryFilter::default()
        })?;
        Ok(Some(TaskShown {
            task: row.into(),
            pending: points,
            more_pending,
            history,
        }))
    }

    /// The queue's tasks, of one plan or all, by id.
    pub fn tasks(&mut self, plan: Option<&str>) -> Result<Vec<TaskRow>, Error> {
        on!(self, |s| s.tasks(plan), |p, q| crate::queue::pg::store::tasks(p.client(), &q, plan))
    }

    /// The queue's counts.
    pub fn stats(&mut self) -> Result<Stats, Error> {
        on!(self, |s| s.stats(), |p, q| crate::queue::pg::store::stats(p.client(), &q))
    }

    /// When the queue was paused (unix ms), or `None` while it runs.
    pub fn paused(&mut self) -> Result<Option<i64>, Error> {
        on!(self, |s| Store::paused(s), |p, q| crate::queue::pg::store::paused(p.client(), &q))
    }

    /// Pauses the queue: recording goes on, and no runner starts a point until
    /// [`resume`](Queue::resume); a point already running finishes.
    pub fn pause(&mut self) -> Result<Paused, Error> {
        on!(self, |s| Store::pause(s), |p, _q| p.write(crate::queue::pg::store::pause))
    }

    /// Resumes the queue, waking its hubs; `None` when it was not paused.
    pub fn resume(&mut self) -> Result<Option<Paused>, Error> {
        // On SQLite a hub sees the commit as it sees a recording (the file's data version
        // changes); on PostgreSQL the write notifies the queue's hubs after it commits.
        on!(self, |s| Store::resume(s), |p, _q| p.write(crate::queue::pg::store::resume))
    }

    /// Removes pending occurrence `id` without running it, keeping it in history as
    /// `dropped`.
    pub fn drop_entry(&mut self, id: i64) -> Result<Dropped, Error> {
        #[cfg(feature = "postgres")]
        let place = PathBuf::from(&self.place);
        let entry = on!(self, |s| s.drop_entry(id), |p, q| crate::queue::pg::store::drop_entry(p.client(), &q, id))
            .map_err(|e| match e {
                #[cfg(feature = "postgres")]
                Error::Postgres {
                    source:
                        crate::queue::pg::PgError::Row(crate::queue::row_error::RowError::NoEntry(
                            id,
                        )),
                    ..
                } => Error::NoEntry { id, db: place },
                e => e,
            })?;
        let note = self.dropped_note(&entry);
        Ok(Dropped { entry, note })
    }

    /// What to say after dropping `entry`, when the runner holding the lock now started it and
    /// has not cleared it: its commands may be running, and the drop cannot take them back.
    fn dropped_note(&mut self, entry: &PendingRow) -> Option<String> {
        let started = entry.last_started_ms?;
        let time = crate::queue::times::rfc3339;
        let since = |s: &str| {
            chrono::DateTime::parse_from_rfc3339(s).is_ok_and(|t| started >= t.timestamp_millis())
        };
        match self.lock().ok()?.holder? {
            LockHolder::File(h) if h.alive && since(&h.started) => Some(format!(
                "note: runner pid {} started it at {} and has not cleared it; if its commands are running, they finish and their runs are kept in history too",
                h.pid,
                time(started)
            )),
            LockHolder::File(_) => None,
            #[cfg(feature = "postgres")]
            LockHolder::Queue(h) if h.since.as_deref().is_some_and(since) => Some(format!(
                "note: the runner holding the lock ({h}) started it at {} and has not cleared it; if its commands are running, they finish, and only the drop is kept in history",
                time(started)
            )),
            #[cfg(feature = "postgres")]
            LockHolder::Queue(_) => None,
        }
    }

    /// Queues history row `history_id`'s point again, as a new occurrence.
    pub fn requeue(&mut self, history_id: i64) -> Result<Occurrence, Error> {
        on!(self, |s| s.write(|tx| record::requeue(tx, history_id)), |p, _q| p.write(|tx, q| crate::queue::pg::record::requeue(tx, q, history_id)))
    }

    /// Creates task `task` of plan `plan` in phase `phase`, recording its point.
    pub fn add_task(
        &mut self,
        task: &TaskId,
        plan: &PlanId,
        phase: &Phase,
    ) -> Result<Transition, Error> {
        on!(self, |s| s.write(|tx| record::add_task(tx, task, plan, phase)), |p, _q| p.write(|tx, q| crate::queue::pg::record::add_task(tx, q, task, plan, phase)))
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
        let mut moved: Transition = on!(self, |s| s.write(|tx| record::move_task(tx, task, phase, facts)), |p, _q| p.write(|tx, q| crate::queue::pg::record::move_task(tx, q, task, phase, facts)))?;
        if moved.occurrence.is_some() && moved.warning.is_none() {
            moved.warning = unread;
        }
        Ok(moved)
    }

    /// Ends every unfinished task of plan `plan` in `failed.cancelled`.
    pub fn cancel_plan(&mut self, plan: &PlanId) -> Result<Vec<Transition>, Error> {
        on!(self, |s| s.write(|tx| record::cancel_plan(tx, plan)), |p, _q| p.write(|tx, q| crate::queue::pg::record::cancel_plan(tx, q, plan)))
    }

    /// A mark that changes whenever another connection commits a change to the queue
    /// (a recording, a clear, a drop, a pause): a watcher compares two.
    pub fn change_mark(&mut self) -> Result<ChangeMark, Error> {
        match &mut self.backend {
            Backend::Sqlite(store) => store.change_mark(),
            #[cfg(feature = "postgres")]
            Backend::Postgres(store) => {
                let queue = store.queue().clone();
                crate::queue::pg::store::change_mark(store.client(), &queue)
                    .map(ChangeMark)
                    .map_err(|source| Error::Postgres {
                        queue: queue.to_string(),
                        source,
                    })
            }
        }
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
            task: Some(task.as_str().to_owned()),
            limit: 1000,
            ..HistoryFilter::default()
        })?;
        #[cfg(feature = "postgres")]
        let here = crate::queue::pg::lock::host_name();
        let mut gone: Vec<PathBuf> = Vec::new();
        for row in rows {
            #[cfg(feature = "postgres")]
            if row.host.as_ref().is_some_and(|h| *h != here) {
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

    /// One pass on whichever database holds the queue.
    fn attempt(self, pass: PassOptions, stop: &Stop) -> Attempt {
        let ws = self.ws;
        match self.backend {
            Backend::Sqlite(mut store) => crate::queue::pass::on_sqlite(&ws, &mut store, pass, stop),
            #[cfg(feature = "postgres")]
            Backend::Postgres(store) => {
                let lease = crate::queue::pg::Lease {
                    duration: self.options.lease,
                };
                crate::queue::pass::on_postgres(&ws, *store, lease, pass, stop)
            }
        }
    }
}
