//! The drain (SPEC §4): where the store and the executor meet, under the runner lock.
//!
//! Points are taken in recorded order. With `jobs > 1`, points of different tasks run at the same
//! time; a task's next point starts only after its previous one was cleared, and a point's
//! commands always run one after another. All database work stays on the calling thread; worker
//! threads only run commands.

use std::collections::{HashSet, VecDeque};
use std::ffi::OsString;
use std::sync::{Arc, Mutex, mpsc};

use serde::Serialize;

use crate::config::{Config, ConfigError, ConfigSource};
use crate::env::{HookVars, base_env, hook_env};
use crate::exec::{self, Ending, ExecError, Stop};
use crate::ids::TaskId;
use crate::lock::RunnerLock;
use crate::phase::Point;
use crate::store::{NewHistory, Outcome, PendingRow, Store, StoreError, now_ms};
use crate::workspace::Workspace;

/// How many pending rows one read fetches.
const BATCH: usize = 256;
/// The most history rows one pass prunes, so a pass never stalls on a huge backlog.
const PRUNE_LIMIT: usize = 10_000;

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

/// Drains pending points of one workspace. Keep one across passes: it caches the parsed config
/// and the base environment.
pub struct Drainer<'a> {
    ws: Workspace,
    config: ConfigSource,
    base_env: Vec<(OsString, OsString)>,
    stop: &'a Stop,
    jobs: usize,
    /// A point the last clear already marked started (sequential passes only).
    premarked: Option<i64>,
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

/// A point ready to run: started in the store, its commands and environment fixed.
struct Job {
    entry: PendingRow,
    task: TaskId,
    point: Point,
    state: String,
    cfg: Arc<Config>,
    env: Vec<(OsString, OsString)>,
}

/// How running a job went.
enum Ran {
    /// Every command ran; these are its history rows.
    Completed(Vec<NewHistory>),
    /// A stop request ended it before its last command finished: it stays pending.
    Stopped,
    /// A command could not be run at all: it stays pending and the pass ends.
    Failed(ExecError),
}

struct Done {
    job: Job,
    ran: Ran,
    commands: usize,
    warnings: Vec<String>,
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
            config,
            base_env: base_env(std::env::vars_os()),
            stop,
            jobs: 1,
            premarked: None,
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
        self.config.current()
    }

    /// Runs every pending point, in recorded order, until none is left or a stop is requested.
    /// Points recorded while the pass runs are taken too. Holding the runner lock is the
    /// caller's proof that no one else runs hooks meanwhile.
    pub fn drain(
        &mut self,
        store: &mut Store,
        _lock: &RunnerLock,
    ) -> Result<PassReport, DrainError> {
        // Read once up front so an invalid config fails the pass even when nothing is pending.
        self.config.current()?;
        store.with_relaxed_sync(|store| {
            let mut report = PassReport::default();
            let passed = if self.jobs == 1 {
                self.pass(store, &mut report, None)
            } else {
                self.pass_parallel(store, &mut report)
            };
            // A point marked started for a run that did not come (a stop, an error) gets its
            // count back.
            if let Some(id) = self.premarked.take() {
                store.unmark_started(id)?;
            }
            passed?;
            let cfg = self.config.current()?;
            let keep_ms = i64::from(cfg.queue.keep_history_days) * 86_400_000;
            store.prune_history(now_ms() - keep_ms, PRUNE_LIMIT)?;
            Ok(report)
        })
    }

    fn pass_parallel(
        &mut self,
        store: &mut Store,
        report: &mut PassReport,
    ) -> Result<(), DrainError> {
        let (job_tx, job_rx) = mpsc::channel::<Job>();
        let (done_tx, done_rx) = mpsc::channel::<Done>();
        let job_rx = Mutex::new(job_rx);
        let ws = self.ws.clone();
        let (ws, stop, jobs) = (&ws, self.stop, self.jobs);
        std::thread::scope(|scope| {
            for _ in 0..jobs {
                let (job_rx, done_tx) = (&job_rx, done_tx.clone());
                scope.spawn(move || {
                    loop {
                        let next = job_rx.lock().map(|rx| rx.recv());
                        let Ok(Ok(job)) = next else { break };
                        if done_tx.send(execute(ws, job, stop)).is_err() {
                            break;
                        }
                    }
                });
            }
            drop(done_tx);
            let out = self.pass(store, report, Some((&job_tx, &done_rx)));
            // Closing the job channel lets the workers finish; the scope waits for them.
            drop(job_tx);
            out
        })
    }

    /// The pass loop. `pool` is `None` to run each job on this thread.
    fn pass(
        &mut self,
        store: &mut Store,
        report: &mut PassReport,
        pool: Option<(&mpsc::Sender<Job>, &mpsc::Receiver<Done>)>,
    ) -> Result<(), DrainError> {
        let jobs = if pool.is_some() { self.jobs } else { 1 };
        let mut window: VecDeque<PendingRow> = VecDeque::new();
        let mut fetched_to = 0;
        let mut busy: HashSet<String> = HashSet::new();
        let mut running = 0usize;
        let mut failure: Option<DrainError> = None;
        loop {
            if !self.stop.graceful() && failure.is_none() {
                if window.len() < BATCH / 2 {
                    let more = store.pending(fetched_to, BATCH, None)?;
                    if let Some(last) = more.last() {
                        fetched_to = last.id;
                    }
                    window.extend(more);
                }
                // Start what may start, in recorded order: a task with a point running (or
                // waiting behind one) keeps its later points waiting too.
                let mut blocked: HashSet<String> = HashSet::new();
                let mut i = 0;
                while i < window.len() && running < jobs && !self.stop.graceful() {
                    if busy.contains(&window[i].task) || blocked.contains(&window[i].task) {
                        blocked.insert(window[i].task.clone());
                        i += 1;
                        continue;
                    }
                    let entry = window.remove(i).expect("index checked");
                    let Some(job) = self.prepare(store, entry, report)? else {
                        continue;
                    };
                    match pool {
                        Some((tx, _)) => {
                            busy.insert(job.entry.task.clone());
                            running += 1;
                            tx.send(job).expect("workers outlive the pass");
                        }
                        None => {
                            let done = execute(&self.ws, job, self.stop);
                            let next = self.next_to_start(window.front(), &done);
                            self.finish(store, done, report, next)?;
                        }
                    }
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
            let (_, rx) = pool.expect("running jobs only exist with a pool");
            let done = rx.recv().expect("a worker holds a sender while a job runs");
            running -= 1;
            busy.remove(&done.job.entry.task);
            if let Err(e) = self.finish(store, done, report, None) {
                // Let the running jobs end and be cleared before reporting.
                failure.get_or_insert(e);
            }
        }
    }

    /// Reads the config for this point and either clears it at once (no commands, parked) or
    /// marks it started and returns the job to run.
    fn prepare(
        &mut self,
        store: &mut Store,
        entry: PendingRow,
        report: &mut PassReport,
    ) -> Result<Option<Job>, DrainError> {
        let premarked = self.premarked == Some(entry.id);
        if premarked {
            self.premarked = None;
        }
        let point = entry.point()?;
        let task = entry.task_id()?;
        // The config as it is at the moment this point runs.
        let cfg = self.config.current()?;
        let Some(state) = entry.state.clone() else {
            (self.warn)(&format!(
                "warning: {point} for task {task} (occurrence {}): its recorded state is missing; parked as abandoned",
                entry.id
            ));
            store.clear(&entry, &[NewHistory::bare(Outcome::Abandoned)])?;
            report.parked += 1;
            return Ok(None);
        };
        if cfg.hooks(point).is_empty() {
            store.clear(&entry, &[NewHistory::bare(Outcome::Empty)])?;
            report.cleared += 1;
            return Ok(None);
        }
        if entry.passes >= i64::from(cfg.queue.max_interrupted_runs) {
            (self.warn)(&format!(
                "warning: {point} for task {task} (occurrence {}): {} passes started it without finishing; parked as abandoned (hookq queue retry re-queues it)",
                entry.id, entry.passes
            ));
            store.clear(&entry, &[NewHistory::bare(Outcome::Abandoned)])?;
            report.parked += 1;
            return Ok(None);
        }
        if !premarked && store.mark_started(entry.id)?.is_none() {
            // Dropped since it was read.
            return Ok(None);
        }
        let mut entry = entry;
        entry.passes += 1;
        let worktree = self.ws.worktree(&task);
        let env = hook_env(
            &self.base_env,
            &HookVars {
                task: task.as_str(),
                plan: &entry.plan,
                attempt: entry.attempt,
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
        }))
    }

    /// The point a sequential pass will start next, if it can be marked started in the same
    /// commit that clears `done`: it must be about to run (it has commands and is not due to be
    /// parked, by the config `done` ran with) and no stop may be pending.
    fn next_to_start(&self, next: Option<&PendingRow>, done: &Done) -> Option<i64> {
        let next = next?;
        let cfg = &done.job.cfg;
        let runs = next.state.is_some()
            && next.point().is_ok_and(|p| !cfg.hooks(p).is_empty())
            && next.passes < i64::from(cfg.queue.max_interrupted_runs);
        (runs && matches!(done.ran, Ran::Completed(_)) && !self.stop.graceful()).then_some(next.id)
    }

    /// Prints a finished job's warnings and clears it if all its commands ran; `next`, when
    /// given, is marked started in the same commit.
    fn finish(
        &mut self,
        store: &mut Store,
        done: Done,
        report: &mut PassReport,
        next: Option<i64>,
    ) -> Result<(), DrainError> {
        for w in &done.warnings {
            (self.warn)(w);
        }
        report.commands += done.commands;
        report.failed += done.warnings.len();
        match done.ran {
            Ran::Completed(rows) => {
                match next {
                    Some(id) => {
                        if store.clear_and_start(&done.job.entry, &rows, id)? {
                            self.premarked = Some(id);
                        }
                    }
                    None => store.clear(&done.job.entry, &rows)?,
                }
                report.cleared += 1;
                Ok(())
            }
            Ran::Stopped => {
                report.stopped = true;
                Ok(())
            }
            Ran::Failed(e) => Err(e.into()),
        }
    }
}

/// Runs a job's commands one after another. Touches no database.
fn execute(ws: &Workspace, job: Job, stop: &Stop) -> Done {
    let lines = job.cfg.hooks(job.point);
    let mut rows = Vec::with_capacity(lines.len());
    let mut warnings = Vec::new();
    let mut commands = 0;
    let (entry, point, task) = (&job.entry, job.point, &job.task);
    let mut ran = None;
    for (i, line) in lines.iter().enumerate() {
        if i > 0 && stop.graceful() {
            ran = Some(Ran::Stopped);
            break;
        }
        let index = i + 1;
        let log = ws.hook_log_path(task, point, index);
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
            header: &header,
        };
        let started_ms = now_ms();
        let done = match exec::run(&spec, stop) {
            Ok(d) => d,
            Err(e) => {
                ran = Some(Ran::Failed(e));
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
            exit_code: match done.ending {
                Ending::Exited(c) => Some(c),
                _ => None,
            },
            signal: match done.ending {
                Ending::Signalled(s) => Some(s),
                _ => None,
            },
            started_ms: Some(started_ms),
            duration_ms: Some(done.duration.as_millis() as i64),
            log_path: Some(log.display().to_string()),
        });
    }
    Done {
        ran: ran.unwrap_or(Ran::Completed(rows)),
        job,
        commands,
        warnings,
    }
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
    use crate::ids::{PlanId, TaskId};
    use crate::lock::Wait;
    use crate::phase::Phase;
    use crate::record::{self, MoveFacts};

    fn workspace(hooks: &str) -> (tempfile::TempDir, Workspace, Store) {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::at(dir.path());
        let mut store = Store::open(&ws.db_path()).unwrap();
        std::fs::write(ws.config_path(), format!("[hooks]\n{hooks}\n")).unwrap();
        store
            .write(|tx| {
                let plan = PlanId::new("p").unwrap();
                for t in ["a", "b"] {
                    let t = TaskId::new(t).unwrap();
                    record::add_task(tx, &t, &plan, &Phase::new("todo.ready").unwrap())?;
                    record::move_task(
                        tx,
                        &t,
                        &Phase::new("failed.x").unwrap(),
                        &MoveFacts::default(),
                    )?;
                }
                Ok(())
            })
            .unwrap();
        (dir, ws, store)
    }

    #[test]
    fn sequential_passes_mark_the_next_point_in_the_same_commit() {
        let (_dir, ws, mut store) = workspace("after_fail = ['true']");
        let stop = Stop::new();
        let lock = RunnerLock::acquire(&ws.lock_path(), Wait::No, &|| true)
            .unwrap()
            .unwrap();
        let report = Drainer::new(ws, &stop).drain(&mut store, &lock).unwrap();
        assert_eq!((report.cleared, report.commands), (2, 2));
        let passes: Vec<i64> = store
            .history(None, None, 10)
            .unwrap()
            .iter()
            .map(|h| h.passes)
            .collect();
        assert_eq!(passes, [1, 1], "each point counted as started once");
    }

    #[test]
    fn a_stop_after_the_next_point_was_marked_takes_the_mark_back() {
        let (_dir, ws, mut store) = workspace("after_fail = ['exit 1']");
        let stop = Stop::new();
        let lock = RunnerLock::acquire(&ws.lock_path(), Wait::No, &|| true)
            .unwrap()
            .unwrap();
        // The warning for the first point's failure arrives after the next point was chosen to
        // be marked started, and asks to stop: the second point must not keep the mark.
        let report = Drainer::with_warnings(ws, &stop, |_| stop.request())
            .drain(&mut store, &lock)
            .unwrap();
        assert_eq!(report.cleared, 1);
        assert!(report.stopped);
        let left = store.pending(0, 10, None).unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].passes, 0, "no pass started it");
    }
}
