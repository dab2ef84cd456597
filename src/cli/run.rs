//! `hookq run`: one pass, for cron.

use std::time::Duration;

use crate::cli::error::Error;
use hookq::queue::Error as QueueError;
use hookq::queue::drain::Drainer;
use hookq::queue::lock::{self, RunnerLock, Wait};

use super::app::{Ctx, stop_on_signals};

/// Take the runner lock (waiting), drain everything pending, release. Exits 0 even when hooks
/// failed; each failed command is one `warning:` line on stderr.
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Run up to N points of different tasks at the same time (each task's points still run in
    /// recorded order, each point's commands one after another).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    jobs: u16,
    /// Wait at most SECS for the runner lock (default: as long as it takes).
    #[arg(long, value_name = "SECS")]
    wait: Option<u64>,
}

pub(super) fn run(ctx: &Ctx, args: Args) -> Result<(), Error> {
    let wait = match args.wait {
        Some(s) => Wait::For(Duration::from_secs(s)),
        None => Wait::Forever,
    };
    #[cfg(feature = "postgres")]
    {
        let ws = ctx.workspace()?;
        if let Some(choice) = super::pg::choice(&ws)? {
            return super::pg::run(&ws, &choice, usize::from(args.jobs), wait);
        }
    }
    let stop = stop_on_signals();
    let (ws, mut store) = ctx.open()?;
    let path = ws.lock_path();
    let Some(lock) = RunnerLock::acquire(&path, wait, &|| !stop.graceful())? else {
        if stop.graceful() {
            return Err(QueueError::Stopped { path }.into());
        }
        let holder = lock::holder(&path);
        return Err(QueueError::Locked { path, holder }.into());
    };
    let mut drainer = Drainer::new(ws.clone(), stop).jobs(usize::from(args.jobs));
    if let Ok(cfg) = drainer.config() {
        super::app::warn_config(&cfg);
    }
    let report = drainer.drain_and_release(&mut store, lock)?;
    if let Some(line) = super::output::ran(&report) {
        outln!("{line}");
    }
    super::output::held(&report);
    super::output::paused(&report, || store.stats().ok().map(|s| s.pending));
    Ok(())
}
