//! `hookq plan cancel`.

use crate::cli::error::Error;
use hookq::queue::ids::PlanId;
use hookq::queue::record;

use super::app::Ctx;
use super::task::drain_if_free;

#[derive(Debug, clap::Subcommand)]
pub(super) enum Command {
    /// End every unfinished task of the plan in `failed.cancelled`, in one transaction (one
    /// `after_fail` point per task), then run pending hooks if the runner lock is free.
    Cancel {
        /// Plan id.
        plan: String,
        /// Only record; leave the points for a hub or the next `hookq run`.
        #[arg(long)]
        no_run: bool,
    },
}

pub(super) fn run(ctx: &Ctx, cmd: Command) -> Result<(), Error> {
    let Command::Cancel { plan, no_run } = cmd;
    let plan = PlanId::new(plan).map_err(|e| Error::Usage(e.to_string()))?;
    let (ws, mut store) = ctx.open()?;
    let moved = store
        .write(|tx| record::cancel_plan(tx, &plan))
        .map_err(|e| Error::store(ws.db_path(), e))?;
    // A plan exists only through its tasks: a misspelt id cancels nothing, silently otherwise.
    if moved.is_empty()
        && store
            .tasks(Some(plan.as_str()))
            .map_err(|e| Error::store(ws.db_path(), e))?
            .is_empty()
    {
        errln!("warning: plan {plan} has no tasks; nothing cancelled");
    } else {
        outln!("plan {plan}: cancelled {} task(s)", moved.len());
    }
    // Like every owner transition, even one that ended no task: what is pending runs.
    if !no_run {
        drain_if_free(&ws, &mut store);
    }
    Ok(())
}
