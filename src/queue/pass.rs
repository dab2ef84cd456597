//! One pass over a workspace's queue, as `hookq run`, `hookq task move`'s drain and a host run
//! it: take the runner lock (on PostgreSQL the queue's advisory lock, then the workspace's
//! `runner.lock`), drain what is pending, release.
//!
//! The same call drains either database: [`run`] opens the queue its [`Options`] and the
//! workspace's config name, and [`Queue::pass`] drains a queue already open. The sequence is
//! written once: a driver takes the queue's own lock (none on SQLite), and the rest (the
//! workspace's `runner.lock` within what is left of the wait, the drain, the release) is the
//! same on every database.

use std::time::Instant;

use crate::exec::Stop;
use crate::queue::config::ConfigWarning;
use crate::queue::drain::{Drainer, PassReport};
use crate::queue::error::Error;
use crate::queue::handle::Queue;
use crate::queue::lock::{self, RunnerLock, Wait};
use crate::queue::options::Options;
use crate::queue::backend::QueueStore;
use crate::queue::workspace::Workspace;

/// How one pass runs.
#[derive(Debug, Clone, Copy)]
pub struct PassOptions {
    /// How many points of different tasks run at the same time (each task's points still run
    /// in recorded order).
    pub jobs: usize,
    /// How long to wait for the runner lock: one bound for both locks together on
    /// PostgreSQL, so that `Wait::For(d)` never waits longer than `d` in all.
    pub wait: Wait,
    /// Told the config's near-miss keys before the pass starts any point, so that they are
    /// shown before what the hooks say.
    pub on_warnings: Option<fn(&[ConfigWarning])>,
}

impl Default for PassOptions {
    /// One point at a time, waiting as long as it takes.
    fn default() -> Self {
        Self {
            jobs: 1,
            wait: Wait::Forever,
            on_warnings: None,
        }
    }
}

/// What a pass did.
#[derive(Debug)]
pub struct PassOutcome {
    /// What ran, cleared, parked, was held or stopped.
    pub report: PassReport,
    /// How many points are pending after it, read only when it found the queue paused
    /// (`None` otherwise, or when they could not be counted).
    pub left: Option<i64>,
    /// The config's near-miss keys, as the pass read it.
    pub warnings: Vec<ConfigWarning>,
}

/// Opens `ws`'s queue as `opts` say and runs one pass over it ([`Queue::pass`]).
pub fn run(
    ws: &Workspace,
    opts: &Options,
    pass: PassOptions,
    stop: &Stop,
) -> Result<PassOutcome, Error> {
    Queue::open_with(ws, opts.clone())?.pass(pass, stop)
}

/// What trying a pass came to, as a driver reports it to [`Queue::pass`].
pub enum Attempt {
    /// The runner lock was not taken within the wait (held elsewhere, or a stop request): why.
    NotTaken(Error),
    /// The pass ran.
    Ran(PassOutcome),
    /// Taking the lock, or the pass, failed: the points stay pending.
    Failed {
        /// Why.
        error: Error,
        /// The config's near-miss keys, when the pass read it.
        warnings: Vec<ConfigWarning>,
    },
}

impl Attempt {
    /// The pass's outcome, or why there is none.
    pub fn into_result(self) -> Result<PassOutcome, Error> {
        match self {
            Attempt::Ran(outcome) => Ok(outcome),
            Attempt::NotTaken(error) | Attempt::Failed { error, .. } => Err(error),
        }
    }
}

impl From<Error> for Attempt {
    fn from(error: Error) -> Self {
        Attempt::Failed {
            error,
            warnings: Vec::new(),
        }
    }
}

/// What is left of a wait that started now, each time it is asked: `--wait N` bounds the
/// wait for every lock together.
pub(crate) struct Deadline {
    wait: Wait,
    until: Option<Instant>,
}

impl Deadline {
    pub(crate) fn start(wait: Wait) -> Self {
        let until = match wait {
            Wait::For(d) => Instant::now().checked_add(d),
            _ => None,
        };
        Self { wait, until }
    }

    pub(crate) fn left(&self) -> Wait {
        match (self.wait, self.until) {
            (Wait::For(_), Some(d)) => Wait::For(d.saturating_duration_since(Instant::now())),
            (wait, _) => wait,
        }
    }
}

/// Takes the workspace's `runner.lock` within `wait`; [`Attempt::NotTaken`] with the error
/// that names its holder, or the stop request, when it is not.
fn file_lock(ws: &Workspace, wait: Wait, stop: &Stop) -> Result<RunnerLock, Box<Attempt>> {
    let path = ws.lock_path();
    match RunnerLock::acquire(&path, wait, &|| !stop.graceful()) {
        Ok(Some(lock)) => Ok(lock),
        Ok(None) if stop.graceful() => Err(Box::new(Attempt::NotTaken(Error::Stopped { path }))),
        Ok(None) => {
            let holder = lock::holder(&path);
            Err(Box::new(Attempt::NotTaken(Error::Locked { path, holder })))
        }
        Err(e) => Err(Box::new(Error::from(e).into())),
    }
}

/// One pass of `drainer` over `store` under `lock`, released at its end.
fn drain<S: QueueStore>(
    ws: &Workspace,
    store: &mut S,
    lock: RunnerLock,
    pass: PassOptions,
    stop: &Stop,
    left: impl FnOnce(&mut S) -> Option<i64>,
) -> Attempt {
    let mut drainer = Drainer::new(ws.clone(), stop).jobs(pass.jobs);
    let warnings = drainer
        .config()
        .map(|c| c.warnings().to_vec())
        .unwrap_or_default();
    if let Some(warn) = pass.on_warnings {
        warn(&warnings);
    }
    match drainer.drain_and_release(store, lock) {
        Ok(report) => Attempt::Ran(PassOutcome {
            left: if report.paused { left(store) } else { None },
            report,
            warnings,
        }),
        Err(error) => Attempt::Failed { error, warnings },
    }
}

/// The first half of a pass, written once per driver: the queue's own runner lock, which a
/// pass takes before the workspace's `runner.lock` (PostgreSQL's advisory lock, held with a
/// lease; none on SQLite, whose runner lock is `runner.lock` alone), and the store the pass
/// drains while it is held. [`over`] does the rest, the same on every database.
pub(crate) trait QueueLock {
    /// The store a pass drains, holding the queue's own lock until [`QueueLock::release`]
    /// (or until it is dropped).
    type Held: QueueStore;

    /// Takes the queue's own lock within what `deadline` has left (held with the lease
    /// `options` set, where the database leases it), and hands the store that holds it. When
    /// it is not taken: [`Attempt::NotTaken`] with the error that names its holder, or the
    /// stop request; a failure to take it otherwise.
    fn take(
        self,
        ws: &Workspace,
        options: &Options,
        deadline: &Deadline,
        stop: &Stop,
    ) -> Result<Self::Held, Box<Attempt>>;

    /// How many points are pending, when it can be read: what a pass that found the queue
    /// paused says is left.
    fn left(held: &mut Self::Held) -> Option<i64>;

    /// Releases the queue's own lock.
    fn release(held: Self::Held) -> Result<(), Error>;
}

/// One pass over `queue`: its own lock, then the workspace's `runner.lock`, both within
/// `pass.wait` (one bound for the two together), the drain, and both released.
pub(crate) fn over<Q: QueueLock>(
    ws: &Workspace,
    queue: Q,
    options: &Options,
    pass: PassOptions,
    stop: &Stop,
) -> Attempt {
    let deadline = Deadline::start(pass.wait);
    let mut held = match queue.take(ws, options, &deadline, stop) {
        Ok(held) => held,
        Err(not) => return *not,
    };
    // Not taken, the queue's own lock goes with `held` as it drops.
    let lock = match file_lock(ws, deadline.left(), stop) {
        Ok(lock) => lock,
        Err(not) => return *not,
    };
    let attempt = drain(ws, &mut held, lock, pass, stop, Q::left);
    // Failing, the queue's own lock still goes with `held`; but a pass that ran and could not
    // say so is told.
    match (attempt, Q::release(held)) {
        (Attempt::Ran(_), Err(e)) => e.into(),
        (attempt, _) => attempt,
    }
}
