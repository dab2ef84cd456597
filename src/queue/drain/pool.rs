//! The worker pool of a parallel pass: each worker marks the point it takes started, then runs it.

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, mpsc};

use crate::exec::Stop;
use crate::queue::backend::{Mark, MarkStarts, QueueStore};
use crate::queue::config::ConfigSource;
use crate::queue::error::Error;
use crate::queue::lock::RunnerLock;
use crate::queue::model::PendingRow;
use crate::queue::workspace::Workspace;

use super::pass::current;
use super::point::{Around, Done, Job, Ran, execute};
use super::slots::Slots;
use super::{Drainer, PassReport};

impl<'a> Drainer<'a> {
    pub(super) fn pass_parallel<S: QueueStore>(
        &mut self,
        store: &mut S,
        lock: &RunnerLock,
        report: &mut PassReport,
    ) -> Result<(), Error> {
        let (job_tx, job_rx) = mpsc::channel::<Job>();
        let (done_tx, done_rx) = mpsc::channel::<Done>();
        let job_rx = Mutex::new(job_rx);
        let ws = self.ws.clone();
        let (ws, stop) = (&ws, self.stop);
        let markers: Vec<S::Marker> = (0..self.jobs).map(|_| store.start_marker(lock)).collect();
        let config = Arc::clone(&self.config);
        let slots = self.slots.clone();
        let slots = slots.as_deref();
        std::thread::scope(|scope| {
            for mut marker in markers {
                let (job_rx, done_tx, config) = (&job_rx, done_tx.clone(), &config);
                scope.spawn(move || {
                    loop {
                        let next = job_rx.lock().map(|rx| rx.recv());
                        let Ok(Ok(job)) = next else { break };
                        let entry = job.entry.clone();
                        // Every job taken is answered, even one whose run panicked: the pass
                        // waits for as many answers as it sent jobs.
                        let done = std::panic::catch_unwind(AssertUnwindSafe(|| {
                            start(ws, lock, job, stop, &mut marker, config, slots)
                        }))
                        .unwrap_or_else(|payload| panicked(entry, payload.as_ref()));
                        if done_tx.send(done).is_err() {
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
}

/// A worker's part of a parallel pass: takes a shared slot when there are `slots`, then runs
/// `job` unless, while it waited, a stop came or the config changed (a point runs with the
/// config as it is when the point runs); its start is marked with the worker's marker while
/// its first command waits at its gate, unless it was dropped. The slot is given back as the
/// point ends.
fn start(
    ws: &Workspace,
    lock: &RunnerLock,
    job: Job,
    stop: &Stop,
    marker: &mut impl MarkStarts,
    config: &Mutex<ConfigSource>,
    slots: Option<&Slots>,
) -> Done {
    let slot = match slots.map(|s| s.take(stop)) {
        Some(None) => return Done::unrun(job, Ran::Stopped),
        Some(Some(slot)) => Some(slot),
        None => None,
    };
    let done = start_holding(ws, lock, job, stop, marker, config);
    drop(slot);
    done
}

/// [`start`] once the point may run.
fn start_holding(
    ws: &Workspace,
    lock: &RunnerLock,
    job: Job,
    stop: &Stop,
    marker: &mut impl MarkStarts,
    config: &Mutex<ConfigSource>,
) -> Done {
    if stop.graceful() {
        return Done::unrun(job, Ran::Stopped);
    }
    // The same `Arc` while the file reads as it did when the job was prepared.
    if !current(config).is_ok_and(|cfg| Arc::ptr_eq(&cfg, &job.cfg)) {
        return Done::unrun(job, Ran::Stale);
    }
    execute(ws, lock, job, stop, None, &mut Worker(marker))
}

/// The answer for a job whose run panicked: failed, so the pass ends with the panic as its
/// error once the other workers' points finished, and the point stays pending (its commands'
/// runs are not recorded, so the next pass runs it whole).
fn panicked(entry: PendingRow, payload: &(dyn std::any::Any + Send)) -> Done {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_owned());
    let error = Error::WorkerPanicked {
        point: entry.point.to_string(),
        task: entry.task.to_string(),
        id: entry.id,
        message,
    };
    Done {
        entry,
        ran: Ran::Failed(error),
        commands: 0,
        runs: Vec::new(),
        warnings: Vec::new(),
        ahead: None,
    }
}

/// Around a worker's job: its start marked with the worker's marker, nothing else meanwhile.
struct Worker<'m, M>(&'m mut M);

impl<M: MarkStarts> Around for Worker<'_, M> {
    fn mark(&mut self, entry: &PendingRow) -> Result<Mark, Error> {
        self.0.mark_started(entry)
    }
}
