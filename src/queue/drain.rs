//! The drain: where the store and the executor meet, under the runner lock.
//!
//! Points are taken in recorded order. With `jobs > 1`, points of different tasks run at the same
//! time; a task's next point starts only after its previous one finished, and a point's commands
//! always run one after another. The calling thread reads the queue, prepares each point and
//! clears finished ones; each worker keeps one prepared point waiting behind the one it runs, so
//! it can start the next the moment one ends, and marks it started then, reading the database
//! on a connection of its own ([`StartMarker`]). Workers never write the database.
//!
//! A point is marked started before its first command starts by a line in the start log
//! ([`crate::queue::starts`]), not a commit: a pass first folds the lines a killed runner left there.
//! Finished points are cleared in batches, committed while a command runs (so the commit costs
//! the pass no time of its own, and, not waiting for another writer there, never holds up the
//! command's timeout), with the starts of the points still running folded in: once
//! [`CLEAR_BATCH`] points are waiting, or the first of them finished [`CLEAR_AFTER`] ago; and
//! before a point that an earlier pass started (it may be one that kills the runner, and the
//! points before it must not be run again with it); and when the pass ends. A pass killed in
//! between runs those points again: hooks run at least once, so any point not yet cleared may
//! run again. (Committed one by one, marking and clearing a point would append about 40 KiB to
//! the WAL; batched and with starts in the log, about 8 KiB.)

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::exec::Environ;
use crate::exec::{self, Ending, ExecError, Stop};
use crate::queue::config::{Config, ConfigError, ConfigSource};
use crate::queue::env::{HookVars, base_env, hook_env};
use crate::queue::ids::TaskId;
use crate::queue::lock::{LockError, RunnerLock, Wait};
use crate::queue::phase::Point;
use crate::queue::store::{
    Cleared, NewHistory, Outcome, PendingRow, StartMarker, Store, StoreError, now_ms,
};
use crate::queue::workspace::Workspace;

/// How many pending rows one read fetches.
const BATCH: usize = 256;
/// The most history rows one pass prunes, so a pass never stalls on a huge backlog.
const PRUNE_LIMIT: usize = 10_000;
/// How many finished points make a batch of clears.
pub const CLEAR_BATCH: usize = 64;
/// How long the first finished point of a batch waits for its clear at most, give or take the
/// 50 ms a command's wait may take to wake.
pub const CLEAR_AFTER: Duration = Duration::from_millis(50);

/// Why a pass stopped early. Everything it had not cleared stays pending.
#[derive(Debug, thiserror::Error)]
pub enum DrainError {
    /// `config.toml` is not valid: no hook runs until it is.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A command could not be run for a reason outside the hook (its log cannot be written).
    #[error(transparent)]
    Exec(#[from] ExecError),
    /// The runner lock could not be taken again after a pass (see [`Drainer::drain_and_release`]).
    #[error(transparent)]
    Lock(#[from] LockError),
}

/// What one pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PassReport {
    /// Points cleared after their commands ran (or with none configured).
    pub cleared: usize,
    /// Commands run.
    pub commands: usize,
    /// Commands that failed, timed out or could not start.
    pub failed: usize,
    /// Points parked as `abandoned`.
    pub parked: usize,
    /// Whether a stop request ended the pass before the queue was empty.
    pub stopped: bool,
}

impl PassReport {
    /// Adds what a later pass did.
    fn add(&mut self, later: &PassReport) {
        self.cleared += later.cleared;
        self.commands += later.commands;
        self.failed += later.failed;
        self.parked += later.parked;
        self.stopped |= later.stopped;
    }
}

/// Drains pending points of one workspace. Keep one across passes: it caches the parsed config
/// and the base environment.
pub struct Drainer<'a> {
    ws: Workspace,
    /// Shared with a parallel pass's workers, which check it again as they start a point.
    config: Arc<Mutex<ConfigSource>>,
    base_env: Environ,
    stop: &'a Stop,
    jobs: usize,
    /// Finished points not yet cleared in the store.
    clears: Clears,
    /// The next point's first log, opened while the point before it ran.
    ahead: Option<exec::OpenedLog>,
    warn: Box<dyn FnMut(&str) + 'a>,
}

impl std::fmt::Debug for Drainer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Drainer")
            .field("ws", &self.ws)
            .field("jobs", &self.jobs)
            .finish_non_exhaustive()
    }
}

/// A point ready to run: its commands and environment fixed, and its start logged (see
/// [`crate::queue::starts`]), by the worker that runs it in a parallel pass.
struct Job {
    entry: PendingRow,
    task: TaskId,
    point: Point,
    state: String,
    cfg: Arc<Config>,
    env: Environ,
    /// The first command's log, if it was opened ahead (see [`exec::OpenedLog`]).
    first: Option<exec::OpenedLog>,
}

/// How running a job went.
enum Ran {
    /// Every command ran; these are its history rows.
    Completed(Vec<NewHistory>),
    /// A stop request ended it before its last command finished, or before it started: it
    /// stays pending.
    Stopped,
    /// It was dropped from the queue while it waited for a worker: not run, nothing to clear.
    Dropped,
    /// The config changed (or broke) while it waited for a worker: not started, to be prepared
    /// again with the config as it is now.
    Stale,
    /// A command could not be run at all, or its start could not be logged: it stays pending
    /// and the pass ends.
    Failed(DrainError),
}

struct Done {
    job: Job,
    ran: Ran,
    commands: usize,
    warnings: Vec<String>,
    /// The log `execute` was asked to open for the point after this one.
    ahead: Option<exec::OpenedLog>,
}

impl Done {
    /// A job that ran no command.
    fn unrun(job: Job, ran: Ran) -> Self {
        Self {
            job,
            ran,
            commands: 0,
            warnings: Vec::new(),
            ahead: None,
        }
    }
}

impl<'a> Drainer<'a> {
    /// A drainer for `ws` that prints each warning line on stderr.
    pub fn new(ws: Workspace, stop: &'a Stop) -> Self {
        Self::with_warnings(ws, stop, |line| errln!("{line}"))
    }

    /// A drainer that hands each `warning:` line to `warn` instead.
    pub fn with_warnings(ws: Workspace, stop: &'a Stop, warn: impl FnMut(&str) + 'a) -> Self {
        let config = ConfigSource::new(ws.config_path());
        Self {
            ws,
            config: Arc::new(Mutex::new(config)),
            base_env: base_env(std::env::vars_os()),
            stop,
            jobs: 1,
            clears: Clears::default(),
            ahead: None,
            warn: Box::new(warn),
        }
    }

    /// Runs up to `jobs` points of different tasks at once (default 1).
    pub fn jobs(mut self, jobs: usize) -> Self {
        self.jobs = jobs.max(1);
        self
    }

    /// The config as it is now (cached while the file is unchanged).
    pub fn config(&mut self) -> Result<Arc<Config>, ConfigError> {
        current(&self.config)
    }

    /// Drains with `lock`, releases it, then takes it again without waiting and drains again
    /// for as long as another process committed while a pass ran. A writer that finds the lock
    /// held leaves its points to the holder; without this, one that committed after
    /// the pass's last look at the queue and tried the lock before it was released would leave
    /// them to a holder already on its way out, and they would wait for the next pass. The
    /// hub does the same by its own loop. Reports every pass together.
    ///
    /// Only the first pass's failure is this call's error. A later pass only takes up what
    /// others left, so its failure (the lock file or the database unusable meanwhile) is one
    /// `warning:` line, the points stay pending, and what the passes before it did is still
    /// reported.
    pub fn drain_and_release(
        &mut self,
        store: &mut Store,
        lock: RunnerLock,
    ) -> Result<PassReport, DrainError> {
        let path = lock.path().to_path_buf();
        let (mut total, mut more) = self.drain_then_look(store, lock)?;
        while more {
            let again = match RunnerLock::acquire(&path, Wait::No, &|| false) {
                Ok(Some(lock)) => self.drain_then_look(store, lock),
                // Whoever took it runs them.
                Ok(None) => break,
                Err(e) => Err(e.into()),
            };
            match again {
                Ok((report, still)) => {
                    total.add(&report);
                    more = still;
                }
                Err(e) => {
                    (self.warn)(&format!(
                        "warning: cannot run points recorded while the pass ran (any are left pending): {e}"
                    ));
                    break;
                }
            }
        }
        Ok(total)
    }

    /// One pass of [`Drainer::drain_and_release`] with `lock`, which it releases: what it did,
    /// and whether another process committed while it ran.
    fn drain_then_look(
        &mut self,
        store: &mut Store,
        lock: RunnerLock,
    ) -> Result<(PassReport, bool), DrainError> {
        let seen = store.data_version()?;
        let report = self.drain(store, &lock)?;
        drop(lock);
        let more = !report.stopped && self.committed_since(store, seen);
        Ok((report, more))
    }

    /// Whether another process committed since `store` read data version `seen`; `false`, with
    /// a warning, when that cannot be read.
    fn committed_since(&mut self, store: &Store, seen: i64) -> bool {
        match store.data_version() {
            Ok(now) => now != seen,
            Err(e) => {
                (self.warn)(&format!(
                    "warning: cannot tell whether points were recorded while the pass ran; any are left pending: {e}"
                ));
                false
            }
        }
    }

    /// Runs every pending point, in recorded order, until none is left or a stop is requested.
    /// Points recorded while the pass runs are taken too. Holding the runner lock is the
    /// caller's proof that no one else runs hooks meanwhile.
    pub fn drain(
        &mut self,
        store: &mut Store,
        lock: &RunnerLock,
    ) -> Result<PassReport, DrainError> {
        for left in lock.left_behind() {
            let runner = left.holder.map_or_else(
                || "an earlier runner".to_owned(),
                |pid| format!("runner pid {pid}"),
            );
            let how = if left.killed {
                "SIGTERM, then SIGKILL"
            } else {
                "SIGTERM"
            };
            (self.warn)(&format!(
                "warning: {runner} died while a hook command ran; the command was still running (process group {}) and was ended ({how}) before its point runs again",
                left.group.pgid
            ));
        }
        // Read once up front so an invalid config fails the pass even when nothing is pending.
        self.config()?;
        store.with_relaxed_sync(|store| {
            // Count what a runner killed before it folded its starts had started.
            store.fold_starts(lock)?;
            let mut report = PassReport::default();
            let passed = if self.jobs == 1 {
                self.pass(store, lock, &mut report, None)
            } else {
                self.pass_parallel(store, lock, &mut report)
            };
            // What finished is cleared whatever ended the pass; after an error, a failing clear
            // only leaves those points to run again, and the first error is the one to report.
            let flushed = self.clears.flush(store);
            if let Some(unused) = self.ahead.take() {
                unused.discard();
            }
            passed?;
            flushed?;
            let cfg = self.config()?;
            let keep_ms = i64::from(cfg.queue.keep_history_days) * 86_400_000;
            store.prune_history(now_ms() - keep_ms, PRUNE_LIMIT)?;
            Ok(report)
        })
    }

    fn pass_parallel(
        &mut self,
        store: &mut Store,
        lock: &RunnerLock,
        report: &mut PassReport,
    ) -> Result<(), DrainError> {
        let (job_tx, job_rx) = mpsc::channel::<Job>();
        let (done_tx, done_rx) = mpsc::channel::<Done>();
        let job_rx = Mutex::new(job_rx);
        let ws = self.ws.clone();
        let (ws, stop) = (&ws, self.stop);
        let markers: Vec<StartMarker> = (0..self.jobs).map(|_| store.start_marker(lock)).collect();
        let config = Arc::clone(&self.config);
        std::thread::scope(|scope| {
            for mut marker in markers {
                let (job_rx, done_tx, config) = (&job_rx, done_tx.clone(), &config);
                scope.spawn(move || {
                    loop {
                        let next = job_rx.lock().map(|rx| rx.recv());
                        let Ok(Ok(job)) = next else { break };
                        if done_tx
                            .send(start(ws, lock, job, stop, &mut marker, config))
                            .is_err()
                        {
                            break;
                        }
                    }
                });
            }
            drop(done_tx);
            let out = self.pass(store, lock, report, Some((&job_tx, &done_rx)));
            // Closing the job channel lets the workers finish; the scope waits for them.
            drop(job_tx);
            out
        })
    }

    /// The pass loop. `pool` is `None` to run each job on this thread.
    fn pass(
        &mut self,
        store: &mut Store,
        lock: &RunnerLock,
        report: &mut PassReport,
        pool: Option<(&mpsc::Sender<Job>, &mpsc::Receiver<Done>)>,
    ) -> Result<(), DrainError> {
        // With a pool, a worker's next point waits prepared behind the one it runs.
        let in_flight = if pool.is_some() { 2 * self.jobs } else { 1 };
        let mut window: VecDeque<PendingRow> = VecDeque::new();
        let mut fetched_to = 0;
        let mut busy: HashSet<String> = HashSet::new();
        let mut running = 0usize;
        let mut failure: Option<DrainError> = None;
        loop {
            if !self.stop.graceful() && failure.is_none() {
                // An error here ends the pass once the jobs running meanwhile have finished and
                // been cleared, as a failing job does.
                let started: Result<(), DrainError> = 'start: {
                    if window.len() < BATCH / 2 {
                        let more = match store.pending(fetched_to, BATCH, None) {
                            Ok(more) => more,
                            Err(e) => break 'start Err(e.into()),
                        };
                        if let Some(last) = more.last() {
                            fetched_to = last.id;
                        }
                        window.extend(more);
                    }
                    // Start what may start, in recorded order: a task with a point running (or
                    // waiting behind one) keeps its later points waiting too.
                    let mut blocked: HashSet<String> = HashSet::new();
                    let mut i = 0;
                    while i < window.len() && running < in_flight && !self.stop.graceful() {
                        if busy.contains(&window[i].task) || blocked.contains(&window[i].task) {
                            blocked.insert(window[i].task.clone());
                            i += 1;
                            continue;
                        }
                        let entry = window.remove(i).expect("index checked");
                        let job = match self.prepare(store, lock, entry, report, pool.is_none()) {
                            Ok(Some(job)) => job,
                            Ok(None) => continue,
                            Err(e) => break 'start Err(e),
                        };
                        match pool {
                            Some((tx, _)) => {
                                busy.insert(job.entry.task.clone());
                                running += 1;
                                tx.send(job).expect("workers outlive the pass");
                            }
                            None => {
                                // While its commands run: clear the points finished before it when
                                // a batch is due, and open the first log of the point after it.
                                let next_log =
                                    window.front().and_then(|e| self.first_log(e, &job.cfg));
                                let mut flushed = Ok(());
                                let mut done =
                                    execute(&self.ws, lock, job, self.stop, next_log, &mut || {
                                        if flushed.is_ok() && self.clears.due() {
                                            flushed = self.clears.try_flush(store);
                                        }
                                    });
                                self.ahead = done.ahead.take();
                                let finished = self.finish(done, report);
                                if let Err(e) = flushed.map_err(DrainError::from).and(finished) {
                                    break 'start Err(e);
                                }
                            }
                        }
                    }
                    Ok(())
                };
                if let Err(e) = started {
                    failure.get_or_insert(e);
                }
            }
            if running == 0 {
                if let Some(e) = failure {
                    return Err(e);
                }
                if self.stop.graceful() {
                    report.stopped |=
                        !window.is_empty() || store.pending(fetched_to, 1, None)?.len() == 1;
                    return Ok(());
                }
                if window.is_empty() && store.pending(fetched_to, 1, None)?.is_empty() {
                    return Ok(());
                }
                continue;
            }
            // Clear what finished while the workers run, when a batch is due. (The next log is
            // not opened ahead here: this thread starts every job, and a file created here
            // delays the next start by as long as it takes, where a worker creating its own
            // overlaps the other workers' commands.)
            let (_, rx) = pool.expect("running jobs only exist with a pool");
            let done = loop {
                if self.clears.due()
                    && let Err(e) = self.clears.try_flush(store)
                {
                    failure.get_or_insert(e.into());
                }
                match rx.recv_timeout(CLEAR_AFTER) {
                    Ok(done) => break done,
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    Err(mpsc::RecvTimeoutError::Disconnected) => {
                        unreachable!("a worker holds a sender while a job runs")
                    }
                }
            };
            running -= 1;
            busy.remove(&done.job.entry.task);
            if let Ran::Stale = done.ran {
                // Back in its place in recorded order, to be prepared again.
                let entry = done.job.entry;
                let at = window.partition_point(|e| e.id < entry.id);
                window.insert(at, entry);
                continue;
            }
            if let Err(e) = self.finish(done, report) {
                // Let the running jobs end and be cleared before reporting.
                failure.get_or_insert(e);
            }
        }
    }

    /// The first log of `entry`, if `cfg` gives its point commands.
    fn first_log(&self, entry: &PendingRow, cfg: &Config) -> Option<std::path::PathBuf> {
        let point = entry.point().ok()?;
        let task = entry.task_id().ok()?;
        (!cfg.hooks(point).is_empty()).then(|| self.ws.hook_log_path(&task, point, 1))
    }

    /// Queues a clear, committing the batch if it is due.
    fn clear_later(
        &mut self,
        store: &mut Store,
        entry: PendingRow,
        row: NewHistory,
    ) -> Result<(), StoreError> {
        self.clears.push(Cleared {
            entry,
            rows: vec![row],
        });
        if self.clears.due() {
            self.clears.flush(store)?;
        }
        Ok(())
    }

    /// Parks `entry` as `abandoned`, with one warning line saying `why`, then `hint`.
    fn park(
        &mut self,
        store: &mut Store,
        entry: PendingRow,
        report: &mut PassReport,
        why: &str,
        hint: &str,
    ) -> Result<Option<Job>, DrainError> {
        (self.warn)(&format!(
            "warning: {} for task {} (occurrence {}): {why}; parked as abandoned{hint}",
            entry.point, entry.task, entry.id
        ));
        self.clear_later(store, entry, NewHistory::bare(Outcome::Abandoned))?;
        report.parked += 1;
        Ok(None)
    }

    /// Reads the config for this point and either clears it (no commands, parked) or returns
    /// the job to run, marked started when `mark` (a worker marks its own).
    fn prepare(
        &mut self,
        store: &mut Store,
        lock: &RunnerLock,
        entry: PendingRow,
        report: &mut PassReport,
        mark: bool,
    ) -> Result<Option<Job>, DrainError> {
        let point = entry.point()?;
        let task = entry.task_id()?;
        // The config as it is at the moment this point runs.
        let cfg = self.config()?;
        // No path of hookq's records a point for a missing task, and a task with a pending
        // point cannot be deleted (a trigger refuses it): only SQL written by hand gets here.
        let (Some(plan), Some(attempt)) = (entry.plan.clone(), entry.attempt) else {
            return self.park(store, entry, report, "the task does not exist", "");
        };
        let Some(state) = entry.state.clone() else {
            return self.park(store, entry, report, "its recorded state is missing", "");
        };
        if cfg.hooks(point).is_empty() {
            self.clear_later(store, entry, NewHistory::bare(Outcome::Empty))?;
            report.cleared += 1;
            return Ok(None);
        }
        if entry.passes >= i64::from(cfg.queue.max_interrupted_runs) {
            let why = format!("{} passes started it without finishing", entry.passes);
            let hint = " (hookq queue retry re-queues it)";
            return self.park(store, entry, report, &why, hint);
        }
        if entry.passes > 0 {
            // Interrupted before, perhaps by its own command killing the runner: what finished
            // before it is cleared first, so it cannot take those points down with it again.
            self.clears.flush(store)?;
        }
        let mut entry = entry;
        if mark {
            if !store.mark_started(&entry, lock)? {
                // Dropped since it was read.
                return Ok(None);
            }
            entry.passes += 1;
        }
        let worktree = self.ws.worktree(&task);
        let env = hook_env(
            &self.base_env,
            &HookVars {
                task: task.as_str(),
                plan: &plan,
                attempt,
                worktree: &worktree,
                target_branch: cfg.target_branch(),
                merged_sha: entry.merged_sha.as_deref(),
                state: &state,
                point,
            },
        );
        Ok(Some(Job {
            entry,
            task,
            point,
            state,
            cfg,
            env,
            first: self.ahead.take(),
        }))
    }

    /// Prints a finished job's warnings and queues its clear if all its commands ran.
    fn finish(&mut self, done: Done, report: &mut PassReport) -> Result<(), DrainError> {
        for w in &done.warnings {
            (self.warn)(w);
        }
        report.commands += done.commands;
        report.failed += done.warnings.len();
        match done.ran {
            Ran::Completed(rows) => {
                self.clears.push(Cleared {
                    entry: done.job.entry,
                    rows,
                });
                report.cleared += 1;
                Ok(())
            }
            Ran::Stopped => {
                report.stopped = true;
                Ok(())
            }
            Ran::Dropped => Ok(()),
            Ran::Stale => unreachable!("the pass prepares a stale job again"),
            Ran::Failed(e) => Err(e),
        }
    }
}

/// Finished points waiting to be cleared together.
#[derive(Debug, Default)]
struct Clears {
    points: Vec<Cleared>,
    /// When the first of them was queued.
    since: Option<Instant>,
    /// Another writer held the database at the last [`Clears::try_flush`]: not due again
    /// before this.
    busy_until: Option<Instant>,
}

impl Clears {
    fn push(&mut self, point: Cleared) {
        self.since.get_or_insert_with(Instant::now);
        self.points.push(point);
    }

    /// Whether the batch should be committed now.
    fn due(&self) -> bool {
        if self.busy_until.is_some_and(|t| Instant::now() < t) {
            return false;
        }
        self.points.len() >= CLEAR_BATCH || self.since.is_some_and(|t| t.elapsed() >= CLEAR_AFTER)
    }

    /// Empties the batch once a commit was tried, whatever came of it: a commit that failed
    /// leaves those points pending, and the next pass reads them again and runs them again.
    fn take(&mut self) -> Vec<Cleared> {
        self.since = None;
        self.busy_until = None;
        std::mem::take(&mut self.points)
    }

    /// Commits every queued clear in one transaction, waiting up to the store's busy timeout
    /// for another writer.
    fn flush(&mut self, store: &mut Store) -> Result<(), StoreError> {
        let points = self.take();
        store.clear_all(&points)
    }

    /// [`Clears::flush`] while a command runs: when another writer holds the database, keeps
    /// the batch and tries again [`CLEAR_AFTER`] later, rather than leave the command's timeout,
    /// stop requests and output unserved for as long as that writer holds on.
    fn try_flush(&mut self, store: &mut Store) -> Result<(), StoreError> {
        let tried = store.try_clear_all(&self.points);
        if let Ok(false) = tried {
            self.busy_until = Some(Instant::now() + CLEAR_AFTER);
        } else {
            self.take();
        }
        tried.map(drop)
    }
}

/// A worker's part of a parallel pass: starts `job` unless, while it waited, a stop came, the
/// config changed (a point runs with the config as it is when the point runs) or the
/// point was dropped; marks it started first, then runs it.
fn start(
    ws: &Workspace,
    lock: &RunnerLock,
    mut job: Job,
    stop: &Stop,
    marker: &mut StartMarker,
    config: &Mutex<ConfigSource>,
) -> Done {
    if stop.graceful() {
        return Done::unrun(job, Ran::Stopped);
    }
    // The same `Arc` while the file reads as it did when the job was prepared.
    if !current(config).is_ok_and(|cfg| Arc::ptr_eq(&cfg, &job.cfg)) {
        return Done::unrun(job, Ran::Stale);
    }
    match marker.mark_started(&job.entry) {
        Ok(true) => {
            job.entry.passes += 1;
            execute(ws, lock, job, stop, None, &mut || {})
        }
        Ok(false) => Done::unrun(job, Ran::Dropped),
        Err(e) => Done::unrun(job, Ran::Failed(e.into())),
    }
}

/// Runs a job's commands one after another, calling `meanwhile` while they run (see
/// [`exec::run_while`]). Each command's log is opened while the one before it runs, and `after`
/// (the first log of the point to run next) while the last one runs, where their folder exists
/// (see [`exec::OpenedLog`]); that one is handed back in [`Done::ahead`]. Touches no database.
fn execute(
    ws: &Workspace,
    lock: &RunnerLock,
    mut job: Job,
    stop: &Stop,
    mut after: Option<std::path::PathBuf>,
    meanwhile: &mut dyn FnMut(),
) -> Done {
    let lines = job.cfg.hooks(job.point);
    let mut rows = Vec::with_capacity(lines.len());
    let mut warnings = Vec::new();
    let mut commands = 0;
    let (entry, point, task) = (&job.entry, job.point, &job.task);
    let mut ran = None;
    let mut ahead = job.first.take();
    for (i, line) in lines.iter().enumerate() {
        if i > 0 && stop.graceful() {
            ran = Some(Ran::Stopped);
            break;
        }
        let index = i + 1;
        let log = ws.hook_log_path(task, point, index);
        let opened = ahead.take();
        let mut next_log = if index < lines.len() {
            Some(ws.hook_log_path(task, point, index + 1))
        } else {
            after.take()
        };
        let header = format!(
            "occurrence {} ARC_STATE={} pass {}: {}",
            entry.id,
            job.state,
            entry.passes,
            line.replace('\n', "\\n").replace('\r', "\\r")
        );
        let spec = exec::Spec {
            line,
            cwd: ws.root(),
            env: &job.env,
            timeout: job.cfg.gate.command_timeout,
            kill_grace: job.cfg.gate.kill_grace,
            max_log_bytes: job.cfg.gate.max_log_bytes,
            log: &log,
            opened: opened.as_ref(),
            header: &header,
            owner: Some(lock),
        };
        let started_ms = now_ms();
        let done = exec::run_while(&spec, stop, || {
            meanwhile();
            if let Some(path) = next_log.take() {
                // A failure here is met again, and reported, when that command runs.
                ahead = exec::OpenedLog::open(&path).ok().flatten();
            }
        });
        if let Some(o) = opened.filter(|o| o.path() != log) {
            o.discard();
        }
        let done = match done {
            Ok(d) => d,
            Err(e) => {
                ran = Some(Ran::Failed(e.into()));
                break;
            }
        };
        if done.ending == Ending::Interrupted || killed_by_the_stop(done.ending, stop) {
            ran = Some(Ran::Stopped);
            break;
        }
        commands += 1;
        let outcome = outcome_of(done.ending);
        if outcome != Outcome::Ok {
            warnings.push(format!(
                "warning: {point}-{index:02} for task {task} (occurrence {}): {} ({}); log: {}",
                entry.id,
                outcome.as_str(),
                exec::describe(done.ending),
                log.display()
            ));
        }
        rows.push(NewHistory {
            command_index: Some(index),
            command: Some(line.clone()),
            outcome,
            exit_code: done.ending.exit_code(),
            // An interrupted command left its point pending above: no row says it.
            signal: done.ending.signal(),
            started_ms: Some(started_ms),
            duration_ms: Some(done.duration.as_millis() as i64),
            log_path: Some(log.display().to_string()),
        });
    }
    // Once every command ran, what is open ahead is the next point's log; otherwise it is a
    // log of this point that will not be written now.
    if ran.is_some()
        && let Some(unused) = ahead.take()
    {
        unused.discard();
    }
    Done {
        ran: ran.unwrap_or(Ran::Completed(rows)),
        job,
        commands,
        warnings,
        ahead,
    }
}

/// The config as the file says now, whoever panicked holding the source.
fn current(config: &Mutex<ConfigSource>) -> Result<Arc<Config>, ConfigError> {
    config
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .current()
}

/// Whether a command died of the same stop that is stopping the pass. A service manager stops
/// hookq by signalling its whole control group (systemd's default `KillMode=control-group`), so
/// the hook gets the SIGTERM too: that is an interrupted run, to be run again, not a failure.
fn killed_by_the_stop(ending: Ending, stop: &Stop) -> bool {
    use rustix::process::Signal;
    let by_a_stop_signal = |s: i32| {
        [Signal::TERM, Signal::INT, Signal::HUP]
            .iter()
            .any(|sig| sig.as_raw() == s)
    };
    matches!(ending, Ending::Signalled(s) if by_a_stop_signal(s)) && stop.graceful()
}

fn outcome_of(ending: Ending) -> Outcome {
    match ending {
        Ending::Exited(0) => Outcome::Ok,
        Ending::Exited(_) => Outcome::Failed,
        Ending::Signalled(_) => Outcome::Signalled,
        Ending::TimedOut { .. } => Outcome::TimedOut,
        Ending::SpawnFailed(_) => Outcome::SpawnFailed,
        Ending::Interrupted => unreachable!("an interrupted command leaves its point pending"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::ids::{PlanId, TaskId};
    use crate::queue::lock::Wait;
    use crate::queue::phase::Phase;
    use crate::queue::record::{self, MoveFacts};
    use crate::queue::store::StoreOptions;

    fn workspace(hooks: &str) -> (tempfile::TempDir, Workspace, Store) {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::at(dir.path());
        let mut store = Store::open(&ws.db_path()).unwrap();
        std::fs::write(ws.config_path(), format!("[hooks]\n{hooks}\n")).unwrap();
        walk(&mut store, &["a", "b"], true, &["failed.x"]);
        (dir, ws, store)
    }

    /// The workspace's runner lock, free in these tests.
    fn runner_lock(ws: &Workspace) -> RunnerLock {
        RunnerLock::acquire(&ws.lock_path(), Wait::No, &|| true)
            .unwrap()
            .expect("the runner lock is free")
    }

    /// Moves each of `tasks` through `phases`, creating it in `todo.ready` first with `create`.
    fn walk(store: &mut Store, tasks: &[&str], create: bool, phases: &[&str]) {
        store
            .write(|tx| {
                for t in tasks {
                    let t = TaskId::new(*t).unwrap();
                    if create {
                        let ready = Phase::new("todo.ready").unwrap();
                        record::add_task(tx, &t, &PlanId::new("p").unwrap(), &ready)?;
                    }
                    for p in phases {
                        let p = Phase::new(p).unwrap();
                        record::move_task(tx, &t, &p, &MoveFacts::default())?;
                    }
                }
                Ok(())
            })
            .unwrap();
    }

    /// How many passes started each point in history, oldest first.
    fn history_passes(store: &Store) -> Vec<i64> {
        store
            .history(None, None, 10)
            .unwrap()
            .iter()
            .map(|h| h.passes)
            .collect()
    }

    #[test]
    fn each_point_is_counted_as_started_once() {
        let (_dir, ws, mut store) = workspace("after_fail = ['true']");
        let stop = Stop::new();
        let lock = runner_lock(&ws);
        let report = Drainer::new(ws, &stop).drain(&mut store, &lock).unwrap();
        assert_eq!((report.cleared, report.commands), (2, 2));
        assert_eq!(
            history_passes(&store),
            [1, 1],
            "each point counted as started once"
        );
    }

    #[test]
    fn a_point_missing_its_task_or_its_state_is_parked_with_a_warning() {
        // Only SQL written by hand makes either: a point of a task deleted with the triggers
        // out of the way, and a state row deleted. Both are listed, parked as abandoned with
        // one warning each, and the point between them runs.
        let (_dir, ws, mut store) = workspace("after_fail = ['true']");
        walk(&mut store, &["c"], true, &["failed.x"]);
        store
            .conn()
            .execute_batch(
                "DROP TRIGGER tasks_delete_kept_for_points;
                 DELETE FROM tasks WHERE id = 'a';
                 DELETE FROM pending_hook_states WHERE hook_id = (SELECT id FROM pending_hooks WHERE task = 'c');",
            )
            .unwrap();
        let listed = store.pending(0, 10, None).unwrap();
        let shape: Vec<_> = listed
            .iter()
            .map(|p| (p.task.as_str(), p.plan.as_deref(), p.state.as_deref()))
            .collect();
        assert_eq!(
            shape,
            [
                ("a", None, Some("failed.x")),
                ("b", Some("p"), Some("failed.x")),
                ("c", Some("p"), None)
            ]
        );
        let stop = Stop::new();
        let lock = runner_lock(&ws);
        let mut warnings = Vec::new();
        let report = Drainer::with_warnings(ws, &stop, |w| warnings.push(w.to_owned()))
            .drain(&mut store, &lock)
            .unwrap();
        assert_eq!((report.parked, report.cleared, report.commands), (2, 1, 1));
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].starts_with("warning: after_fail for task a "));
        assert!(warnings[0].contains("the task does not exist; parked as abandoned"));
        assert!(warnings[1].starts_with("warning: after_fail for task c "));
        assert!(warnings[1].contains("its recorded state is missing; parked as abandoned"));
        let outcomes: Vec<_> = store
            .history(None, None, 10)
            .unwrap()
            .into_iter()
            .map(|h| (h.task, h.outcome))
            .collect();
        assert_eq!(
            outcomes,
            [
                ("c".into(), "abandoned".into()),
                ("b".into(), "ok".into()),
                ("a".into(), "abandoned".into())
            ],
            "newest first"
        );
        assert!(store.pending(0, 10, None).unwrap().is_empty());
        assert_eq!(store.stats().unwrap().pending_by_point, []);
    }

    #[test]
    fn a_stop_asked_for_between_points_leaves_the_next_one_unstarted() {
        // Once for tasks with log folders from earlier points, whose next log is opened ahead,
        // and once for new tasks, whose folders are made only as a command starts.
        for folders_exist in [true, false] {
            let (_dir, ws, mut store) = workspace("after_fail = ['exit 1']");
            if folders_exist {
                for task in ["a", "b"] {
                    std::fs::create_dir_all(ws.hook_log_dir(&TaskId::new(task).unwrap())).unwrap();
                }
            }
            let stop = Stop::new();
            let lock = runner_lock(&ws);
            // The warning for the first point's failure arrives after the next point was chosen
            // to be marked started, and asks to stop: the second point must not keep the mark.
            let report = Drainer::with_warnings(ws.clone(), &stop, |_| stop.request())
                .drain(&mut store, &lock)
                .unwrap();
            assert_eq!(report.cleared, 1);
            assert!(report.stopped);
            let left = store.pending(0, 10, None).unwrap();
            assert_eq!(left.len(), 1);
            assert_eq!(left[0].passes, 0, "no pass started it");
            let task = TaskId::new(left[0].task.clone()).unwrap();
            if folders_exist {
                // Its log, opened ahead while the first point ran, is not left behind empty.
                let log = ws.hook_log_path(&task, Point::AfterFail, 1);
                assert!(!log.exists(), "{} exists", log.display());
            } else {
                let dir = ws.hook_log_dir(&task);
                assert!(!dir.exists(), "{} made ahead", dir.display());
            }
        }
    }

    #[test]
    fn an_error_starting_a_job_lets_the_running_ones_finish_and_be_cleared() {
        // With two workers, a breaks the config while b runs and fails (a waits for b to start,
        // at most 10 s: under load, b's worker could otherwise find the config broken as it
        // starts b). c, prepared meanwhile to wait for a worker, finds the config changed when
        // one takes it and goes back to the pass, which cannot prepare it again. The pass
        // still reports b's failure and clears a and b before it ends with the error.
        let (_dir, ws, mut store) = workspace(
            r#"after_fail = ['if [ "$ARC_TASK" = a ]; then i=0; while [ ! -e b-started ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i + 1)); done; printf "not toml [" > .radian/arc/config.toml; sleep 0.5; fi; if [ "$ARC_TASK" = b ]; then touch b-started; sleep 0.5; exit 3; fi']"#,
        );
        walk(&mut store, &["c"], true, &["failed.x"]);
        let stop = Stop::new();
        let lock = runner_lock(&ws);
        let mut warnings = Vec::new();
        let err = Drainer::with_warnings(ws, &stop, |w| warnings.push(w.to_owned()))
            .jobs(2)
            .drain(&mut store, &lock)
            .unwrap_err();
        assert!(matches!(err, DrainError::Config(_)), "{err}");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("task b") && warnings[0].contains("exit 3"));
        let cleared: Vec<(String, String)> = store
            .history(None, None, 10)
            .unwrap()
            .into_iter()
            .map(|h| (h.task, h.outcome))
            .collect();
        assert_eq!(cleared.len(), 2, "{cleared:?}");
        assert!(cleared.contains(&("a".into(), "ok".into())));
        assert!(cleared.contains(&("b".into(), "failed".into())));
        let left = store.pending(0, 10, None).unwrap();
        assert_eq!(
            (left.len(), left[0].task.as_str(), left[0].passes),
            (1, "c", 0)
        );
    }

    /// a and b run for a second each on the two workers of a pass; c waits for a worker.
    const C_WAITS: &str = r#"after_fail = ['if [ "$ARC_TASK" != c ]; then touch "started-$ARC_TASK"; sleep 1; fi; echo v1 > "ran-$ARC_TASK"']"#;

    /// Drains with two workers on another thread, calling `meanwhile` once a and b run, while c
    /// waits prepared for a worker.
    fn drain_while_c_waits(
        ws: &Workspace,
        store: &mut Store,
        stop: &Stop,
        meanwhile: impl FnOnce(),
    ) -> PassReport {
        let lock = runner_lock(ws);
        std::thread::scope(|scope| {
            let pass = scope.spawn(|| {
                Drainer::with_warnings(ws.clone(), stop, |_| {})
                    .jobs(2)
                    .drain(store, &lock)
            });
            let deadline = Instant::now() + Duration::from_secs(20);
            while !["a", "b"]
                .iter()
                .all(|t| ws.root().join(format!("started-{t}")).exists())
            {
                assert!(Instant::now() < deadline, "a and b never started");
                std::thread::sleep(Duration::from_millis(5));
            }
            meanwhile();
            pass.join().unwrap().unwrap()
        })
    }

    fn ran(ws: &Workspace, task: &str) -> Option<String> {
        std::fs::read_to_string(ws.root().join(format!("ran-{task}"))).ok()
    }

    #[test]
    fn a_point_dropped_while_it_waits_for_a_worker_does_not_run() {
        let (_dir, ws, mut store) = workspace(C_WAITS);
        walk(&mut store, &["c"], true, &["failed.x"]);
        let c = store.pending(0, 10, None).unwrap()[2].id;
        let report = drain_while_c_waits(&ws, &mut store, &Stop::new(), || {
            let mut other = Store::open(&ws.db_path()).unwrap();
            assert_eq!(other.drop_entry(c).unwrap().task, "c");
        });
        assert_eq!((report.cleared, report.commands), (2, 2));
        assert_eq!(ran(&ws, "c"), None, "c ran after it was dropped");
        let c_rows: Vec<String> = store
            .history(None, None, 10)
            .unwrap()
            .into_iter()
            .filter(|h| h.task == "c")
            .map(|h| h.outcome)
            .collect();
        assert_eq!(c_rows, ["dropped"]);
        assert!(store.pending(0, 10, None).unwrap().is_empty());
    }

    #[test]
    fn a_point_that_waited_for_a_worker_runs_with_the_config_as_it_is_when_it_starts() {
        let (_dir, ws, mut store) = workspace(C_WAITS);
        walk(&mut store, &["c"], true, &["failed.x"]);
        let report = drain_while_c_waits(&ws, &mut store, &Stop::new(), || {
            std::fs::write(
                ws.config_path(),
                "[hooks]\nafter_fail = ['echo v2 > \"ran-$ARC_TASK\"']\n",
            )
            .unwrap();
        });
        assert_eq!((report.cleared, report.commands), (3, 3));
        assert_eq!(ran(&ws, "a").as_deref(), Some("v1\n"));
        assert_eq!(
            ran(&ws, "c").as_deref(),
            Some("v2\n"),
            "c ran the old config"
        );
        assert_eq!(
            history_passes(&store),
            [1, 1, 1],
            "each point counted as started once"
        );
    }

    #[test]
    fn a_stop_leaves_a_point_waiting_for_a_worker_unstarted() {
        let (_dir, ws, mut store) = workspace(C_WAITS);
        walk(&mut store, &["c"], true, &["failed.x"]);
        let stop = Stop::new();
        let report = drain_while_c_waits(&ws, &mut store, &stop, || stop.request());
        assert_eq!((report.cleared, report.commands), (2, 2));
        assert!(report.stopped);
        assert_eq!(ran(&ws, "c"), None);
        let left = store.pending(0, 10, None).unwrap();
        assert_eq!(
            (left.len(), left[0].task.as_str(), left[0].passes),
            (1, "c", 0),
            "c is left pending, not counted as started"
        );
    }

    /// Polls for `path` every 5 ms until it exists or `limit` passed; whether it exists.
    fn appears(path: &std::path::Path, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while !path.exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        path.exists()
    }

    #[test]
    fn a_busy_database_never_holds_up_a_running_commands_timeout() {
        // a's clear falls due while b runs. Another writer holds the database from a's start
        // until b's TERM trap has run: the batch must wait for the database without making b's
        // one-second timeout wait with it. (The store waits a minute for a busy database, longer
        // than the writer holds it at most: without that, the trap would run only after it let
        // go.)
        let (dir, ws, _) = workspace("");
        std::fs::write(
            ws.config_path(),
            r#"[gate]
command_timeout_secs = 1
[hooks]
after_fail = ['touch "$ARC_TASK.started"; if [ "$ARC_TASK" = a ]; then sleep 0.5; else trap "touch b.termed; exit 1" TERM; sleep 30 & wait; fi']
"#,
        )
        .unwrap();
        let opts = StoreOptions {
            busy_timeout: Duration::from_secs(60),
            ..StoreOptions::default()
        };
        let mut store = Store::open_with(&ws.db_path(), opts).unwrap();
        let (root, db) = (dir.path().to_owned(), ws.db_path());
        let writer = std::thread::spawn(move || {
            assert!(appears(&root.join("a.started"), Duration::from_secs(30)));
            let conn = rusqlite::Connection::open(&db).unwrap();
            conn.busy_timeout(Duration::from_secs(10)).unwrap();
            conn.execute_batch("BEGIN IMMEDIATE").unwrap();
            let termed = appears(&root.join("b.termed"), Duration::from_secs(40));
            conn.execute_batch("ROLLBACK").unwrap();
            termed
        });
        let stop = Stop::new();
        let lock = runner_lock(&ws);
        let report = Drainer::new(ws, &stop).drain(&mut store, &lock).unwrap();
        assert!(
            writer.join().unwrap(),
            "b's timeout was served while another writer held the database"
        );
        assert_eq!((report.cleared, report.commands, report.failed), (2, 2, 1));
        let mut outcomes: Vec<(String, String)> = store
            .history(None, None, 10)
            .unwrap()
            .into_iter()
            .map(|h| (h.task, h.outcome))
            .collect();
        outcomes.sort();
        assert_eq!(
            outcomes,
            [("a".into(), "ok".into()), ("b".into(), "timed_out".into())]
        );
        assert!(store.pending(0, 10, None).unwrap().is_empty());
    }

    #[test]
    fn finished_points_are_cleared_when_a_later_one_cannot_run() {
        // Two points with no command, then two whose log folder cannot be made: the pass ends
        // with the error, the first two are cleared all the same, the others stay pending.
        let (_dir, ws, mut store) = workspace("after_fail = ['true']");
        walk(&mut store, &["c", "d"], true, &["review.awaiting_human"]);
        // The workspace recorded a and b first; record their points again after c and d's.
        for id in [1, 2] {
            store.drop_entry(id).unwrap();
        }
        walk(&mut store, &["a", "b"], false, &["todo.ready", "failed.x"]);
        std::fs::create_dir_all(ws.state_dir().join("runs")).unwrap();
        std::fs::write(ws.state_dir().join("runs/a"), "not a folder").unwrap();
        let stop = Stop::new();
        let lock = runner_lock(&ws);
        let err = Drainer::new(ws, &stop)
            .drain(&mut store, &lock)
            .unwrap_err();
        assert!(matches!(err, DrainError::Exec(_)), "{err}");
        let left: Vec<String> = store
            .pending(0, 10, None)
            .unwrap()
            .into_iter()
            .map(|p| p.task)
            .collect();
        assert_eq!(left, ["a", "b"]);
        let empty = store
            .history(None, None, 10)
            .unwrap()
            .iter()
            .filter(|h| h.outcome == "empty")
            .count();
        assert_eq!(empty, 2, "the points with no command were cleared");
    }
}
