//! `hookq plan cancel`.

use crate::cli::error::Error;
use hookq::queue::ids::PlanId;

use super::app::Ctx;
use super::queue;

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
    let (_, mut q) = queue::open(ctx)?;
    let moved = q.cancel_plan(&plan)?;
    let none = moved.is_empty() && q.tasks(Some(plan.as_str()))?.is_empty();
    say_cancelled(&plan, moved.len(), none);
    // Like every owner transition, even one that ended no task: what is pending runs.
    if !no_run {
        super::task::drain_if_free(q);
    }
    Ok(())
}

/// What a cancel did. A plan exists only through its tasks (`no_tasks`): a misspelt id cancels
/// nothing, silently otherwise.
fn say_cancelled(plan: &PlanId, moved: usize, no_tasks: bool) {
    if no_tasks {
        errln!("warning: plan {plan} has no tasks; nothing cancelled");
    } else {
        outln!("plan {plan}: cancelled {moved} task(s)");
    }
}
