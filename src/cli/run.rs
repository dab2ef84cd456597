//! `hookq run`: one pass, for cron.

use std::time::Duration;

use crate::cli::error::Error;
use hookq::queue::lock::Wait;
use hookq::queue::{PassOptions, Queue};

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
    let pass = PassOptions {
        jobs: usize::from(args.jobs),
        wait: match args.wait {
            Some(s) => Wait::For(Duration::from_secs(s)),
            None => Wait::Forever,
        },
        on_warnings: Some(super::app::warn_config_lines),
    };
    let stop = stop_on_signals();
    let ws = ctx.workspace()?;
    let outcome = Queue::open_with(&ws, ctx.options()?)?.pass(pass, stop)?;
    if let Some(line) = super::output::ran(&outcome.report) {
        outln!("{line}");
    }
    super::output::held(&outcome.report);
    super::output::paused(&outcome.report, || outcome.left);
    Ok(())
}
