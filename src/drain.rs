//! The drain (SPEC §4): where the store and the executor meet, under the runner lock.

use std::ffi::OsString;
use std::sync::Arc;

use serde::Serialize;

use crate::config::{Config, ConfigError, ConfigSource};
use crate::env::{HookVars, base_env, hook_env};
use crate::exec::{self, Ending, ExecError, Stop};
use crate::lock::RunnerLock;
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
    warn: Box<dyn FnMut(&str) + 'a>,
}

impl std::fmt::Debug for Drainer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Drainer").field("ws", &self.ws).finish_non_exhaustive()
    }
}

impl<'a> Drainer<'a> {
    /// A drainer for `ws` that prints each warning line on stderr.
    pub fn new(ws: Workspace, stop: &'a Stop) -> Self {
        Self::with_warnings(ws, stop, |line| eprintln!("{line}"))
    }

    /// A drainer that hands each `warning:` line to `warn` instead.
    pub fn with_warnings(ws: Workspace, stop: &'a Stop, warn: impl FnMut(&str) + 'a) -> Self {
        let config = ConfigSource::new(ws.config_path());
        Self {
            ws,
            config,
            base_env: base_env(std::env::vars_os()),
            stop,
            warn: Box::new(warn),
        }
    }

    /// The config as it is now (cached while the file is unchanged).
    pub fn config(&mut self) -> Result<Arc<Config>, ConfigError> {
        self.config.current()
    }

    /// Runs every pending point, in recorded order, until none is left or a stop is requested.
    /// Points recorded while the pass runs are taken too.
    pub fn drain(&mut self, store: &mut Store, _lock: &RunnerLock) -> Result<PassReport, DrainError> {
        let mut report = PassReport::default();
        // Read once up front so an invalid config fails the pass even when nothing is pending.
        let mut cfg = self.config.current()?;
        let mut after = 0;
        'outer: loop {
            let batch = store.pending(after, BATCH, None)?;
            if batch.is_empty() {
                break;
            }
            for entry in batch {
                if self.stop.graceful() {
                    report.stopped = true;
                    break 'outer;
                }
                after = entry.id;
                // The config as it is at the moment this point runs.
                cfg = self.config.current()?;
                if !self.run_point(store, &cfg, entry, &mut report)? {
                    report.stopped = true;
                    break 'outer;
                }
            }
        }
        let keep_ms = i64::from(cfg.queue.keep_history_days) * 86_400_000;
        store.prune_history(now_ms() - keep_ms, PRUNE_LIMIT)?;
        Ok(report)
    }

    /// Runs one point. `Ok(false)` when a stop request interrupted it (it stays pending).
    fn run_point(&mut self, store: &mut Store, cfg: &Config, mut entry: PendingRow, report: &mut PassReport) -> Result<bool, DrainError> {
        let point = entry.point()?;
        let task = entry.task_id()?;
        let Some(state) = entry.state.clone() else {
            (self.warn)(&format!(
                "warning: {point} for task {task} (occurrence {}): its recorded state is missing; parked as abandoned",
                entry.id
            ));
            store.clear(&entry, &[NewHistory::bare(Outcome::Abandoned)])?;
            report.parked += 1;
            return Ok(true);
        };
        let lines = cfg.hooks(point);
        if lines.is_empty() {
            store.clear(&entry, &[NewHistory::bare(Outcome::Empty)])?;
            report.cleared += 1;
            return Ok(true);
        }
        if entry.passes >= i64::from(cfg.queue.max_interrupted_runs) {
            (self.warn)(&format!(
                "warning: {point} for task {task} (occurrence {}): {} passes started it without finishing; parked as abandoned (hookq queue retry re-queues it)",
                entry.id, entry.passes
            ));
            store.clear(&entry, &[NewHistory::bare(Outcome::Abandoned)])?;
            report.parked += 1;
            return Ok(true);
        }
        if store.mark_started(entry.id)?.is_none() {
            // Dropped since it was read.
            return Ok(true);
        }
        entry.passes += 1;

        let worktree = self.ws.worktree(&task);
        let vars = HookVars {
            task: task.as_str(),
            plan: &entry.plan,
            attempt: entry.attempt,
            worktree: &worktree,
            target_branch: cfg.target_branch(),
            merged_sha: entry.merged_sha.as_deref(),
            state: &state,
            point,
        };
        let env = hook_env(&self.base_env, &vars);
        let mut rows = Vec::with_capacity(lines.len());
        for (i, line) in lines.iter().enumerate() {
            if i > 0 && self.stop.graceful() {
                return Ok(false);
            }
            let index = i + 1;
            let log = self.ws.hook_log_path(&task, point, index);
            let header = format!(
                "occurrence {} ARC_STATE={state} pass {}: {}",
                entry.id,
                entry.passes,
                line.replace('\n', "\\n").replace('\r', "\\r")
            );
            let spec = exec::Spec {
                line,
                cwd: self.ws.root(),
                env: &env,
                timeout: cfg.gate.command_timeout,
                kill_grace: cfg.gate.kill_grace,
                max_log_bytes: cfg.gate.max_log_bytes,
                log: &log,
                header: &header,
            };
            let started_ms = now_ms();
            let done = exec::run(&spec, self.stop)?;
            if done.ending == Ending::Interrupted {
                return Ok(false);
            }
            report.commands += 1;
            let outcome = outcome_of(done.ending);
            if outcome != Outcome::Ok {
                report.failed += 1;
                (self.warn)(&format!(
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
        store.clear(&entry, &rows)?;
        report.cleared += 1;
        Ok(true)
    }
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
