//! `hookq task`: add, move, list, show.

use serde::Serialize;

use crate::cli::error::Error;
use hookq::queue::drain::Drainer;
use hookq::queue::ids::{PlanId, TaskId};
use hookq::queue::lock::{RunnerLock, Wait};
use hookq::queue::phase::Phase;
use hookq::queue::record::{self, MoveFacts, Transition};
use hookq::queue::store::{HistoryRow, PendingRow, Store, TaskRow, now_ms};
use hookq::queue::workspace::Workspace;

use super::app::{Ctx, stop_on_signals};
use super::output;

#[derive(Debug, clap::Subcommand)]
pub(super) enum Command {
    /// Create a task (records its point, never runs a hook: the MCP path).
    Add {
        /// Task id.
        task: String,
        /// The task's plan.
        #[arg(long, value_name = "PLAN")]
        plan: String,
        /// The phase it starts in.
        #[arg(long, value_name = "STATE.PHASE", default_value = "todo.ready")]
        phase: String,
    },
    /// Move a task to a phase (an owner transition: runs pending hooks afterwards if the
    /// runner lock is free right now).
    Move {
        /// Task id.
        task: String,
        /// The phase to move it to.
        #[arg(value_name = "STATE.PHASE")]
        phase: String,
        /// The sha the merge put on the target branch (`ARC_MERGED_SHA`).
        #[arg(long, value_name = "SHA")]
        merged_sha: Option<String>,
        /// The task's current attempt (`ARC_ATTEMPT=<task>-<N>`).
        #[arg(long, value_name = "N")]
        attempt: Option<u32>,
        /// Only record; leave the points for a hub or the next `hookq run`.
        #[arg(long)]
        no_run: bool,
    },
    /// List tasks.
    List {
        /// Only this plan's tasks.
        #[arg(long, value_name = "PLAN")]
        plan: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show one task with its pending points and recent history.
    Show {
        /// Task id.
        task: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

fn usage<E: std::fmt::Display>(e: E) -> Error {
    Error::Usage(e.to_string())
}

pub(super) fn run(ctx: &Ctx, cmd: Command) -> Result<(), Error> {
    match cmd {
        Command::Add { task, plan, phase } => {
            let (task, plan, phase) = (
                TaskId::new(task).map_err(usage)?,
                PlanId::new(plan).map_err(usage)?,
                Phase::new(&phase).map_err(usage)?,
            );
            let (ws, mut store) = ctx.open()?;
            let t = store
                .write(|tx| record::add_task(tx, &task, &plan, &phase))
                .map_err(|e| Error::store(ws.db_path(), e))?;
            print_transition(&t);
            Ok(())
        }
        Command::Move {
            task,
            phase,
            merged_sha,
            attempt,
            no_run,
        } => {
            let task = TaskId::new(task).map_err(usage)?;
            let phase = Phase::new(&phase).map_err(usage)?;
            if let Some(sha) = &merged_sha {
                record::validate_sha(sha).map_err(usage)?;
            }
            let facts = MoveFacts {
                merged_sha,
                attempt,
            };
            let (ws, mut store) = ctx.open()?;
            let t = store
                .write(|tx| record::move_task(tx, &task, &phase, &facts))
                .map_err(|e| Error::store(ws.db_path(), e))?;
            print_transition(&t);
            if !no_run {
                drain_if_free(&ws, &mut store);
            }
            Ok(())
        }
        Command::List { plan, json } => {
            let plan = plan.map(PlanId::new).transpose().map_err(usage)?;
            let (ws, store) = ctx.open()?;
            let tasks = store
                .tasks(plan.as_ref().map(PlanId::as_str))
                .map_err(|e| Error::store(ws.db_path(), e))?;
            if json {
                return output::json(&tasks);
            }
            let now = now_ms();
            let rows: Vec<Vec<String>> = tasks
                .iter()
                .map(|t| {
                    vec![
                        t.id.clone(),
                        t.plan.clone(),
                        t.phase.clone(),
                        t.attempt.to_string(),
                        output::age(t.updated_ms, now),
                    ]
                })
                .collect();
            output::table(&["TASK", "PLAN", "PHASE", "ATTEMPT", "CHANGED"], &rows);
            Ok(())
        }
        Command::Show { task, json } => {
            let task = TaskId::new(task).map_err(usage)?;
            let (ws, store) = ctx.open()?;
            let db = |e| Error::store(ws.db_path(), e);
            let row = store.task(task.as_str()).map_err(db)?.ok_or_else(|| {
                Error::NotFound(format!("no task {task} in {}", ws.db_path().display()))
            })?;
            let mut pending = store
                .pending(0, SHOWN_PENDING + 1, Some(task.as_str()))
                .map_err(db)?;
            let more_pending = pending.len() > SHOWN_PENDING;
            pending.truncate(SHOWN_PENDING);
            let history = store.history(Some(task.as_str()), None, 20).map_err(db)?;
            show(
                Shown {
                    task: row,
                    pending,
                    more_pending,
                    history,
                },
                json,
            )
        }
    }
}

fn print_transition(t: &Transition) {
    let from = t.from.as_deref().unwrap_or("(new)");
    match &t.occurrence {
        Some(o) => outln!(
            "{}: {from} -> {}; recorded {} (occurrence {})",
            t.task,
            t.to,
            o.point,
            o.id
        ),
        None if t.changed() => outln!("{}: {from} -> {}", t.task, t.to),
        None => outln!("{}: already {}; nothing recorded", t.task, t.to),
    }
}

/// After an owner transition: drain only if the runner lock is free right now. Hooks never make
/// the transition fail, so problems here are warnings and the points stay pending.
pub(super) fn drain_if_free(ws: &Workspace, store: &mut Store) {
    let stop = stop_on_signals();
    let lock = match RunnerLock::acquire(&ws.lock_path(), Wait::No, &|| false) {
        Ok(Some(lock)) => lock,
        Ok(None) => {
            outln!("runner lock is held elsewhere; its holder runs the pending hooks");
            return;
        }
        Err(e) => {
            errln!("warning: hooks left pending: {e}");
            return;
        }
    };
    let mut drainer = Drainer::new(ws.clone(), stop);
    match drainer.drain_and_release(store, lock) {
        Ok(r) => {
            if let Some(line) = output::ran(&r) {
                outln!("{line}");
            }
        }
        Err(e) => errln!("warning: hooks left pending: {e}"),
    }
}

/// The most pending points `task show` lists; `queue` lists the rest.
const SHOWN_PENDING: usize = 1000;

#[derive(Serialize)]
struct Shown {
    task: TaskRow,
    pending: Vec<PendingRow>,
    /// More of the task's points are pending than `pending` lists.
    more_pending: bool,
    history: Vec<HistoryRow>,
}

fn show(shown: Shown, json: bool) -> Result<(), Error> {
    if json {
        return output::json(&shown);
    }
    let Shown {
        task,
        pending,
        more_pending,
        history,
    } = shown;
    outln!("task     {}", task.id);
    outln!("plan     {}", task.plan);
    outln!("phase    {}", task.phase);
    outln!("attempt  {}-{}", task.id, task.attempt);
    outln!("merged   {}", output::or_dash(task.merged_sha.as_deref()));
    outln!("created  {}", output::time(task.created_ms));
    outln!("changed  {}", output::time(task.updated_ms));
    outln!();
    if more_pending {
        outln!(
            "pending: more than {SHOWN_PENDING}, the first {SHOWN_PENDING} below (hookq queue lists them all)"
        );
    } else {
        outln!("pending: {}", pending.len());
    }
    for p in &pending {
        outln!(
            "  {} {} {} recorded {} passes {}",
            p.id,
            p.point,
            output::or_dash(p.state.as_deref()),
            output::time(p.recorded_ms),
            p.passes
        );
    }
    outln!("history (newest first): {}", history.len());
    for h in &history {
        // A row with no command (a point with none configured, or dropped) names the point
        // alone, as `queue history` does.
        let hook = match h.command_index {
            Some(i) => format!("{}-{i:02}", h.point),
            None => h.point.to_string(),
        };
        outln!(
            "  {} occurrence {} {} {} {}",
            h.id,
            h.occurrence,
            hook,
            h.outcome,
            output::or_dash(h.log_path.as_deref())
        );
    }
    Ok(())
}
