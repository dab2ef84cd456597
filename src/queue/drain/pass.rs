//! A pass: the drainer, its loop in recorded order, preparing, parking and finishing points.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::exec::Environ;
use crate::exec::{self, Stop};
use crate::queue::backend::{ChangeMark, Mark, QueueStore};
use crate::queue::config::{Config, ConfigError, ConfigSource};
use crate::queue::env::{HookVars, base_env, hook_env};
use crate::queue::error::Error;
use crate::queue::ids::TaskId;
use crate::queue::lock::{RunnerLock, Wait};
use crate::queue::logs;
use crate::queue::model::{Cleared, NewHistory, Outcome, PendingRow, now_ms};
use crate::queue::workspace::Workspace;

use super::clears::{CLEAR_AFTER, Clears};
use super::next::next;
use super::observe::DrainEvent;
use super::point::{Around, Done, Job, Ran, execute};
use super::slots::Slots;

/// How many pending rows one read fetches.
const BATCH: usize = 256;
/// The most history rows one pass prunes, so a pass never stalls on a huge backlog.
const PRUNE_LIMIT: usize = 10_000;
/// How often a drainer prunes history: at its first pass, then at the first pass this long
/// after the last prune (at once while a backlog is left). History is kept for days, and a hub
/// that passes hundreds of times a second would otherwise spend a query on it each time.
const PRUNE_EVERY: Duration = Duration::from_secs(60);

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
    /// Points left pending, not started, because `config.toml` was written too recently to
    /// clear them without running them (it gives them no commands, or they were interrupted
    /// too often): it may be half-written. Each one's task waits with it, so its later points
    /// also wait for a later pass.
    pub held: usize,
    /// When `held` is not zero: how long until `config.toml`, left as it is, has gone
    /// [`QUIET`](crate::queue::config::source::QUIET) unmodified, when a pass can decide them.
    #[serde(skip)]
    pub retry_in: Option<Duration>,
    /// Whether the queue was paused (`hookq queue pause`), before the pass started a point or
    /// while it ran: it started no point after it saw the pause, and left the rest pending.
    pub paused: bool,
}

impl PassReport {
    /// Adds what a later pass did.
    pub(super) fn add(&mut self, later: &PassReport) {
        self.cleared += later.cleared;
        self.commands += later.commands;
        self.failed += later.failed;
        self.parked += later.parked;
        self.stopped |= later.stopped;
        self.paused |= later.paused;
        // A later pass looks at every point an earlier one held again.
        self.held = later.held;
        self.retry_in = later.retry_in;
    }
}

/// What [`Drainer::observe`] keeps.
type Observer<'a> = Box<dyn FnMut(DrainEvent<'_>) + 'a>;

/// Drains pending points of one workspace. Keep one across passes: it caches the parsed config
/// and the base environment.
pub struct Drainer<'a> {
    pub(super) ws: Workspace,
    /// Shared with a parallel pass's workers, which check it again as they start a point.
    pub(super) config: Arc<Mutex<ConfigSource>>,
    pub(super) base_env: Environ,
    pub(super) stop: &'a Stop,
    pub(super) jobs: usize,
    /// Finished points not yet cleared in the store.
    pub(super) clears: Clears,
    /// The next point's first log, opened while the point before it ran.
    pub(super) ahead: Option<exec::OpenedLog>,
    pub(super) warn: Box<dyn FnMut(&str) + 'a>,
    /// Told of each command run and each pass ended ([`Drainer::observe`]).
    pub(super) observer: Option<Observer<'a>>,
    /// Job slots shared with other drainers ([`Drainer::slots`]).
    pub(super) slots: Option<Arc<Slots>>,
    /// When the next pass prunes history: `None` at once ([`PRUNE_EVERY`]).
    pub(super) prune_at: Option<Instant>,
}

impl std::fmt::Debug for Drainer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Drainer")
            .field("ws", &self.ws)
            .field("jobs", &self.jobs)
            .finish_non_exhaustive()
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
            prune_at: None,
            warn: Box::new(warn),
            observer: None,
            slots: None,
        }
    }

    /// Runs up to `jobs` points of different tasks at once (default 1).
    pub fn jobs(mut self, jobs: usize) -> Self {
        self.jobs = jobs.max(1);
        self
    }

    /// Takes a slot of `slots` for each point as it starts and gives it back as the point
    /// ends, so that the drainers sharing them run at most as many points at once as there
    /// are slots, whatever each one's [`jobs`](Drainer::jobs). Slots are handed out in the
    /// order they were asked for: drainers of many queues share them fairly.
    pub fn slots(mut self, slots: Arc<Slots>) -> Self {
        self.slots = Some(slots);
        self
    }

    /// Tells `observer` of each hook command that runs to its end and of each pass as it ends
    /// (a host's metrics count them). It is called on the thread that drains, between the
    /// drain's own steps: it should return at once.
    pub fn observe(mut self, observer: impl FnMut(DrainEvent<'_>) + 'a) -> Self {
        self.observer = Some(Box::new(observer));
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
    pub fn drain_and_release<S: QueueStore>(
        &mut self,
        store: &mut S,
        lock: RunnerLock,
    ) -> Result<PassReport, Error> {
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
                        "warning: cannot run points recorded while the pass ran (any are left pending): {}",
                        unplaced(&e)
                    ));
                    break;
                }
            }
        }
        Ok(total)
    }

    /// One pass of [`Drainer::drain_and_release`] with `lock`, which it releases: what it did,
    /// and whether another process committed while it ran.
    fn drain_then_look<S: QueueStore>(
        &mut self,
        store: &mut S,
        lock: RunnerLock,
    ) -> Result<(PassReport, bool), Error> {
        let seen = store.change_mark()?;
        let report = self.drain(store, &lock)?;
        drop(lock);
        // A paused queue runs nothing more however much is recorded meanwhile.
        let more = !report.stopped && !report.paused && self.committed_since(store, seen);
        Ok((report, more))
    }

    /// Whether another process committed since `store` read data version `seen`; `false`, with
    /// a warning, when that cannot be read.
    fn committed_since<S: QueueStore>(&mut self, store: &mut S, seen: ChangeMark) -> bool {
        match store.change_mark() {
            Ok(now) => now != seen,
            Err(e) => {
                (self.warn)(&format!(
                    "warning: cannot tell whether points were recorded while the pass ran; any are left pending: {}",
                    unplaced(&e)
                ));
                false
            }
        }
    }

    /// Runs every pending point, in recorded order, until none is left or a stop is requested.
    /// Points recorded while the pass runs are taken too. Holding the runner lock is the
    /// caller's proof that no one else runs hooks meanwhile.
    pub fn drain<S: QueueStore>(
        &mut self,
        store: &mut S,
        lock: &RunnerLock,
    ) -> Result<PassReport, Error> {
        let passed = self.drain_once(store, lock);
        if let Some(observer) = &mut self.observer {
            observer(DrainEvent::Pass(passed.as_ref()));
        }
        passed
    }

    /// [`Drainer::drain`] but for telling the observer.
    fn drain_once<S: QueueStore>(
        &mut self,
        store: &mut S,
        lock: &RunnerLock,
    ) -> Result<PassReport, Error> {
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
        store.pass(lock, |store| {
            // Count what a runner killed before it folded its starts had started.
            store.fold_starts(lock)?;
            // Read once per pass; a pause that lands later is seen by the start marks.
            let mut report = PassReport {
                paused: store.paused()?,
                ..PassReport::default()
            };
            let passed = if report.paused {
                Ok(())
            } else if self.jobs == 1 && self.slots.is_none() {
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
            // A half-written config can lack `keep_history_days`: prune by a settled one.
            let due = self.prune_at.is_none_or(|at| Instant::now() >= at);
            if due && self.unsettled().is_none() {
                let keep_ms = i64::from(cfg.queue.keep_history_days) * 86_400_000;
                let (ws, warn) = (&self.ws, &mut self.warn);
                // A task's logs go with the last rows that name them; a failure leaves them,
                // with a warning, and prunes the rows all the same.
                let mut remove_logs = |task: &str| {
                    let Ok(task) = TaskId::new(task) else {
                        return;
                    };
                    if let Err(e) = logs::remove_task_logs(ws, &task) {
                        warn(&format!(
                            "warning: cannot remove the pruned hook logs of task {task} in {}: {e}",
                            ws.hook_log_dir(&task).display()
                        ));
                    }
                };
                let pruned =
                    store.prune_history(now_ms() - keep_ms, PRUNE_LIMIT, &mut remove_logs)?;
                self.prune_at = (pruned < PRUNE_LIMIT).then(|| Instant::now() + PRUNE_EVERY);
            }
            Ok(report)
        })
    }

    /// The pass loop. `pool` is `None` to run each job on this thread.
    pub(super) fn pass<S: QueueStore>(
        &mut self,
        store: &mut S,
        lock: &RunnerLock,
        report: &mut PassReport,
        pool: Option<(&mpsc::Sender<Job>, &mpsc::Receiver<Done>)>,
    ) -> Result<(), Error> {
        // With a pool, a worker's next point waits prepared behind the one it runs.
        let in_flight = if pool.is_some() { 2 * self.jobs } else { 1 };
        let mut window: VecDeque<PendingRow> = VecDeque::new();
        let mut fetched_to = 0;
        let mut busy: HashSet<TaskId> = HashSet::new();
        // Tasks with a point held for a settled config: none of their points runs this pass.
        let mut held: HashSet<TaskId> = HashSet::new();
        let mut running = 0usize;
        let mut failure: Option<Error> = None;
        loop {
            if !self.stop.graceful() && failure.is_none() && !report.paused {
                // An error here ends the pass once the jobs running meanwhile have finished and
                // been cleared, as a failing job does.
                let started: Result<(), Error> = 'start: {
                    if window.len() < BATCH / 2 {
                        let more = match store.next_batch(fetched_to, BATCH) {
                            Ok(more) => more,
                            Err(e) => break 'start Err(e),
                        };
                        if let Some(last) = more.last() {
                            fetched_to = last.id;
                        }
                        window.extend(more.into_iter().filter(|e| !held.contains(&e.task)));
                    }
                    // Start what may start, in recorded order: a task with a point running (or
                    // waiting behind one) keeps its later points waiting too.
                    let mut blocked: HashSet<TaskId> = HashSet::new();
                    let mut i = 0;
                    while running < in_flight && !self.stop.graceful() && !report.paused {
                        let Some(at) = next(&window, i, &busy, &mut blocked) else {
                            break;
                        };
                        i = at;
                        let entry = window.remove(i).expect("index checked");
                        let job = match self.prepare(store, entry, report) {
                            Ok(Prepared::Run(job)) => *job,
                            Ok(Prepared::Settled) => continue,
                            Ok(Prepared::Held(task)) => {
                                // Its later points wait with it, in recorded order.
                                window.retain(|e| e.task != task);
                                held.insert(task);
                                continue;
                            }
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
                                let mut serial = Serial {
                                    store: &mut *store,
                                    lock,
                                    clears: &mut self.clears,
                                    flushed: Ok(()),
                                };
                                let mut done =
                                    execute(&self.ws, lock, job, self.stop, next_log, &mut serial);
                                let flushed = serial.flushed;
                                self.ahead = done.ahead.take();
                                let finished = self.finish(done, report);
                                if let Err(e) = flushed.and(finished) {
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
                if report.paused {
                    return Ok(());
                }
                if self.stop.graceful() {
                    report.stopped |=
                        !window.is_empty() || store.next_batch(fetched_to, 1)?.len() == 1;
                    return Ok(());
                }
                if window.is_empty() && store.next_batch(fetched_to, 1)?.is_empty() {
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
                    failure.get_or_insert(e);
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
            busy.remove(&done.entry.task);
            if let Ran::Stale = done.ran {
                // Back in its place in recorded order, to be prepared again.
                let entry = done.entry;
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
        (!cfg.hooks(entry.point).is_empty())
            .then(|| self.ws.hook_log_path(&entry.task, entry.point, 1))
    }

    /// Queues a clear, committing the batch if it is due.
    fn clear_later<S: QueueStore>(
        &mut self,
        store: &mut S,
        entry: PendingRow,
        row: NewHistory,
    ) -> Result<(), Error> {
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
    fn park<S: QueueStore>(
        &mut self,
        store: &mut S,
        entry: PendingRow,
        report: &mut PassReport,
        why: &str,
        hint: &str,
    ) -> Result<Prepared, Error> {
        (self.warn)(&format!(
            "warning: {} for task {} (occurrence {}): {why}; parked as abandoned{hint}",
            entry.point, entry.task, entry.id
        ));
        self.clear_later(store, entry, NewHistory::bare(Outcome::Abandoned))?;
        report.parked += 1;
        Ok(Prepared::Settled)
    }

    /// How much longer `config.toml`, as read last, must go unmodified before a point may be
    /// cleared without running by it (see [`ConfigSource::unsettled`]); `None` once it has.
    fn unsettled(&self) -> Option<Duration> {
        self.config
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .unsettled()
    }

    /// Leaves `entry` pending, unstarted, for a pass that reads a config no longer being
    /// written, when `config.toml` was written too recently to clear it without running it.
    fn hold_unless_settled(&self, entry: &PendingRow, report: &mut PassReport) -> Option<Prepared> {
        let wait = self.unsettled()?;
        report.held += 1;
        report.retry_in = report.retry_in.max(Some(wait));
        Some(Prepared::Held(entry.task.clone()))
    }

    /// Reads the config for this point and either clears it (no commands, parked), holds it
    /// (the config may be half-written) or returns the job to run.
    pub(super) fn prepare<S: QueueStore>(
        &mut self,
        store: &mut S,
        entry: PendingRow,
        report: &mut PassReport,
    ) -> Result<Prepared, Error> {
        let point = entry.point;
        let task = entry.task.clone();
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
        // A config read while it is being rewritten can lack the point's commands, or
        // `max_interrupted_runs`: clearing the point unrun by it would lose the hook.
        let too_often = entry.passes >= i64::from(cfg.queue.max_interrupted_runs);
        if (cfg.hooks(point).is_empty() || too_often)
            && let Some(held) = self.hold_unless_settled(&entry, report)
        {
            return Ok(held);
        }
        if cfg.hooks(point).is_empty() {
            self.clear_later(store, entry, NewHistory::bare(Outcome::Empty))?;
            report.cleared += 1;
            return Ok(Prepared::Settled);
        }
        if too_often {
            let why = format!("{} passes started it without finishing", entry.passes);
            let hint = " (hookq queue retry queues it again)";
            return self.park(store, entry, report, &why, hint);
        }
        if entry.passes > 0 {
            // Interrupted before, perhaps by its own command killing the runner: what finished
            // before it is cleared first, so it cannot take those points down with it again.
            self.clears.flush(store)?;
        }
        let worktree = self.ws.worktree(&task);
        let env = hook_env(
            &self.base_env,
            &HookVars {
                task: task.as_str(),
                plan: &plan,
                attempt: attempt.get(),
                worktree: &worktree,
                target_branch: cfg.target_branch(),
                merged_sha: entry.merged_sha.as_ref().map(|s| s.as_str()),
                state: &state,
                point,
            },
        );
        Ok(Prepared::Run(Box::new(Job {
            entry,
            task,
            point,
            state,
            cfg,
            env,
            first: self.ahead.take(),
        })))
    }

    /// Prints a finished job's warnings and queues its clear if all its commands ran.
    fn finish(&mut self, done: Done, report: &mut PassReport) -> Result<(), Error> {
        for w in &done.warnings {
            (self.warn)(w);
        }
        report.commands += done.commands;
        report.failed += done.warnings.len();
        if let Some(observer) = &mut self.observer {
            for run in &done.runs {
                observer(DrainEvent::Command {
                    point: run.point,
                    outcome: run.outcome,
                    duration: run.duration,
                });
            }
        }
        match done.ran {
            Ran::Completed(rows) => {
                self.clears.push(Cleared {
                    entry: done.entry,
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
            Ran::Paused => {
                report.paused = true;
                Ok(())
            }
            Ran::Stale => unreachable!("the pass prepares a stale job again"),
            Ran::Failed(e) => Err(e),
        }
    }
}

/// What [`Drainer::prepare`] made of a point.
pub(super) enum Prepared {
    /// Its commands, ready to run.
    Run(Box<Job>),
    /// Cleared or parked without running (queued with the pass's clears).
    Settled,
    /// Left pending for a later pass, with every later point of this task: the config may be
    /// half-written.
    Held(TaskId),
}

/// Around each job of a serial pass: its start is marked on the store, and while its commands
/// run the points finished before it are cleared when a batch is due (the first failure kept).
struct Serial<'s, S> {
    store: &'s mut S,
    lock: &'s RunnerLock,
    clears: &'s mut Clears,
    flushed: Result<(), Error>,
}

impl<S: QueueStore> Around for Serial<'_, S> {
    fn mark(&mut self, entry: &PendingRow) -> Result<Mark, Error> {
        self.store.mark_started(entry, self.lock)
    }

    fn meanwhile(&mut self) {
        if self.flushed.is_ok() && self.clears.due() {
            self.flushed = self.clears.try_flush(self.store);
        }
    }
}

/// The config as the file says now, whoever panicked holding the source.
pub(super) fn current(config: &Mutex<ConfigSource>) -> Result<Arc<Config>, ConfigError> {
    config
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .current()
}

/// `e` as a warning line of the drain gives it: a database failure without the database's path,
/// which the pass's own lines never name.
fn unplaced(e: &Error) -> String {
    match e {
        Error::Store { source, .. } => source.to_string(),
        other => other.to_string(),
    }
}
