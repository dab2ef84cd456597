//! Running one point: its commands one after another, each logged, and how it went.

use std::cell::RefCell;
use std::sync::Arc;

use crate::exec::{self, Ending, Environ, Stop};
use crate::queue::backend::Mark;
use crate::queue::config::Config;
use crate::queue::ids::TaskId;
use crate::queue::lock::RunnerLock;
use crate::queue::logs;
use crate::queue::phase::Point;
use crate::queue::model::{NewHistory, Outcome, PendingRow, now_ms};
use crate::queue::workspace::Workspace;

use crate::queue::error::Error;

use super::observe::CommandRun;

/// A point ready to run: its commands and environment fixed. Its start is counted while its
/// first command waits at its gate (see [`Around::mark`]).
pub(super) struct Job {
    pub(super) entry: PendingRow,
    pub(super) task: TaskId,
    pub(super) point: Point,
    pub(super) state: String,
    pub(super) cfg: Arc<Config>,
    pub(super) env: Environ,
    /// The first command's log, if it was opened ahead (see [`exec::OpenedLog`]).
    pub(super) first: Option<exec::OpenedLog>,
}

/// How running a job went.
pub(super) enum Ran {
    /// Every command ran; these are its history rows.
    Completed(Vec<NewHistory>),
    /// A stop request ended it before its last command finished, or before it started: it
    /// stays pending.
    Stopped,
    /// It was dropped from the queue since it was read: not run, nothing to clear.
    Dropped,
    /// The queue was paused since the pass began: not started, it stays pending, and the pass
    /// starts no other point.
    Paused,
    /// The config changed (or broke) while it waited for a worker: not started, to be prepared
    /// again with the config as it is now.
    Stale,
    /// A command could not be run at all, or its start could not be logged: it stays pending
    /// and the pass ends.
    Failed(Error),
}

pub(super) struct Done {
    /// The point it ran.
    pub(super) entry: PendingRow,
    pub(super) ran: Ran,
    pub(super) commands: usize,
    /// Each command that ran to its end, in order.
    pub(super) runs: Vec<CommandRun>,
    pub(super) warnings: Vec<String>,
    /// The log `execute` was asked to open for the point after this one.
    pub(super) ahead: Option<exec::OpenedLog>,
}

impl Done {
    /// A job that ran no command.
    pub(super) fn unrun(job: Job, ran: Ran) -> Self {
        Self {
            entry: job.entry,
            ran,
            commands: 0,
            runs: Vec::new(),
            warnings: Vec::new(),
            ahead: None,
        }
    }
}

/// What the drain does around a job's commands, on the store it drains.
pub(super) trait Around {
    /// Counts the start of `entry` by this pass: called once the shell of its first command
    /// has started and its process group is named in the lock file, before any of the command
    /// runs (see [`exec::run_gated`]), so the shell's own start overlaps it. Anything but
    /// [`Mark::Started`]: the point was dropped since it was read, or the queue paused, and the
    /// command does not run.
    fn mark(&mut self, entry: &PendingRow) -> Result<Mark, Error>;

    /// Work done while a command runs (see [`exec::run_while`]).
    fn meanwhile(&mut self) {}
}

/// Runs a job's commands one after another, each held at its gate until its process group is
/// named in the lock file, and the first until `around` counted the point's start; `around`'s
/// `meanwhile` runs while they run. Each command's log is opened while the one before it runs,
/// and `after` (the first log of the point to run next) while the last one runs, where their
/// folder exists (see [`exec::OpenedLog`]); that one is handed back in [`Done::ahead`].
pub(super) fn execute(
    ws: &Workspace,
    lock: &RunnerLock,
    mut job: Job,
    stop: &Stop,
    mut after: Option<std::path::PathBuf>,
    around: &mut dyn Around,
) -> Done {
    let lines = job.cfg.hooks(job.point);
    let mut rows = Vec::with_capacity(lines.len());
    let mut warnings = Vec::new();
    let mut commands = 0;
    let mut runs = Vec::with_capacity(lines.len());
    let (point, task) = (job.point, &job.task);
    let entry = &mut job.entry;
    let mut ran = None;
    let mut ahead = job.first.take();
    for (i, line) in lines.iter().enumerate() {
        if i > 0 && stop.graceful() {
            ran = Some(Ran::Stopped);
            break;
        }
        let index = i + 1;
        let log = ws.hook_log_path(task, point, index);
        // Before this run appends and while nothing writes to the file (this runner is its only
        // writer): past its cap, the file loses its oldest runs. A log opened ahead is opened
        // again when this replaced it.
        if let Err(e) = logs::trim(&log, job.cfg.queue.max_log_file_bytes) {
            warnings.push(format!(
                "warning: cannot trim log {} to queue.max_log_file_bytes: {e}",
                log.display()
            ));
        }
        let opened = ahead.take();
        let mut next_log = if index < lines.len() {
            Some(ws.hook_log_path(task, point, index + 1))
        } else {
            after.take()
        };
        // The first command's start is counted before any of it runs: it runs in one pass more.
        let pass = entry.passes + i64::from(i == 0);
        let header = format!(
            "occurrence {} ARC_STATE={} pass {pass}: {}",
            entry.id,
            job.state,
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
        // Both callbacks use `around`, one after the other, never at once.
        let around = RefCell::new(&mut *around);
        // What the first command's mark gave, once its shell started.
        let mut marked: Option<Result<Mark, Error>> = None;
        let done = exec::run_gated(
            &spec,
            stop,
            || {
                if i > 0 {
                    return true;
                }
                let m = around.borrow_mut().mark(entry);
                let go = matches!(m, Ok(Mark::Started));
                marked = Some(m);
                go
            },
            || {
                around.borrow_mut().meanwhile();
                if let Some(path) = next_log.take() {
                    // A failure here is met again, and reported, when that command runs.
                    ahead = exec::OpenedLog::open(&path).ok().flatten();
                }
            },
        );
        if let Some(o) = opened.filter(|o| o.path() != log) {
            o.discard();
        }
        let done = match (done, marked) {
            (Err(e), _) => {
                ran = Some(Ran::Failed(e.into()));
                break;
            }
            (Ok(None), Some(Err(e))) => {
                ran = Some(Ran::Failed(e));
                break;
            }
            (Ok(None), Some(Ok(Mark::Paused))) => {
                ran = Some(Ran::Paused);
                break;
            }
            (Ok(None), _) => {
                ran = Some(Ran::Dropped);
                break;
            }
            (Ok(Some(d)), marked) => {
                // A shell that could not start was not counted: its pass did not start it.
                if let Some(Ok(Mark::Started)) = marked {
                    entry.passes += 1;
                }
                d
            }
        };
        if done.ending == Ending::Interrupted || killed_by_the_stop(done.ending, stop) {
            ran = Some(Ran::Stopped);
            break;
        }
        commands += 1;
        let outcome = outcome_of(done.ending);
        runs.push(CommandRun {
            point,
            outcome,
            duration: done.duration,
        });
        if outcome != Outcome::Ok {
            // "timed out (SIGTERM to the process group)" says its outcome already.
            let how = match outcome {
                Outcome::TimedOut => exec::describe(done.ending),
                _ => format!("{} ({})", outcome.as_str(), exec::describe(done.ending)),
            };
            warnings.push(format!(
                "warning: {point}-{index:02} for task {task} (occurrence {}): {how}; log: {}",
                entry.id,
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
        entry: job.entry,
        commands,
        runs,
        warnings,
        ahead,
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
