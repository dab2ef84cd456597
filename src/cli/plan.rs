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
    #[cfg(feature = "postgres")]
    {
        let ws = ctx.workspace()?;
        if let Some(choice) = super::pg::choice(&ws)? {
            use hookq::queue::pg::{record as pg_record, store as pg_store};
            let mut store = super::pg::open(&choice)?;
            let moved = super::pg::write(&mut store, |tx, q| pg_record::cancel_plan(tx, q, &plan))?;
            let queue = store.queue().clone();
            let none = moved.is_empty()
                && pg_store::tasks(store.client(), &queue, Some(plan.as_str()))
                    .map_err(|e| super::pg::placed(&queue, e))?
                    .is_empty();
            say_cancelled(&plan, moved.len(), none);
            if !no_run {
                super::pg::drain_if_free(&ws, store);
            }
            return Ok(());
        }
    }
    let (ws, mut store) = ctx.open()?;
    let moved = store
        .write(|tx| record::cancel_plan(tx, &plan))
        .map_err(|e| Error::store(ws.db_path(), e))?;
    let none = moved.is_empty()
        && store
            .tasks(Some(plan.as_str()))
            .map_err(|e| Error::store(ws.db_path(), e))?
            .is_empty();
    say_cancelled(&plan, moved.len(), none);
    // Like every owner transition, even one that ended no task: what is pending runs.
    if !no_run {
        drain_if_free(&ws, &mut store);
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
