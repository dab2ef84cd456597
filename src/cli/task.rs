//! `hookq task`: add, move, list, show.

use crate::cli::error::Error;
use hookq::queue::ids::{PlanId, TaskId};
use hookq::queue::model::{TaskRow, now_ms};
use hookq::queue::phase::Phase;
use hookq::queue::record::{MoveFacts, Transition};
use hookq::queue::shown;
use hookq::queue::{DrainIfFree, Queue, TaskShown, TaskView};

use super::app::{Ctx, stop_on_signals};
use super::output;
use super::queue;

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
        /// The task's current attempt, `<task>-<N>` or `N` alone (`ARC_ATTEMPT=<task>-<N>`).
        #[arg(long, value_name = "N")]
        attempt: Option<String>,
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
            let (_, mut q) = queue::open(ctx)?;
            print_transition(&q.add_task(&task, &plan, &phase)?);
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
                hookq::queue::model::Sha::new(sha.as_str()).map_err(usage)?;
            }
            let attempt = attempt.map(|a| parse_attempt(&task, &a)).transpose()?;
            let facts = MoveFacts {
                merged_sha,
                attempt,
                ..MoveFacts::default()
            };
            let (_, mut q) = queue::open(ctx)?;
            print_transition(&q.move_task(&task, &phase, &facts)?);
            if !no_run {
                drain_if_free(q);
            }
            Ok(())
        }
        Command::List { plan, json } => {
            let plan = plan.map(PlanId::new).transpose().map_err(usage)?;
            let (_, mut q) = queue::open(ctx)?;
            let tasks = q.tasks(plan.as_ref().map(PlanId::as_str))?;
            list(&tasks, json)
        }
        Command::Show { task, json } => {
            let task = TaskId::new(task).map_err(usage)?;
            let (_, mut q) = queue::open(ctx)?;
            show(&mut q, &task, json)
        }
    }
}

fn list(tasks: &[TaskRow], json: bool) -> Result<(), Error> {
    if json {
        return output::json(
            &tasks
                .iter()
                .cloned()
                .map(TaskView::from)
                .collect::<Vec<_>>(),
        );
    }
    let now = now_ms();
    let rows: Vec<Vec<String>> = tasks
        .iter()
        .map(|t| {
            vec![
                t.id.clone(),
                t.plan.clone(),
                t.phase.clone(),
                shown::attempt(t),
                output::age(t.updated_ms, now),
            ]
        })
        .collect();
    output::table(&["TASK", "PLAN", "PHASE", "ATTEMPT", "CHANGED"], &rows);
    Ok(())
}

pub(super) fn print_transition(t: &Transition) {
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
    if let Some(why) = &t.warning {
        errln!("warning: {}: {why}", t.task);
    }
}

/// After an owner transition: drains what is pending if the runner lock is free right now,
/// and says what it did. Hooks never make the transition fail, so problems here are warnings
/// and the points stay pending.
pub(super) fn drain_if_free(q: Queue) {
    let warn = super::app::warn_config_lines;
    match q.drain_if_free(stop_on_signals()) {
        DrainIfFree::Held => {
            outln!("runner lock is held elsewhere; its holder runs the pending hooks");
        }
        DrainIfFree::Ran {
            report,
            left,
            warnings,
        } => {
            warn(&warnings);
            if let Some(line) = output::ran(&report) {
                outln!("{line}");
            }
            output::held(&report);
            output::paused(&report, || left);
        }
        DrainIfFree::Failed { error, warnings } => {
            warn(&warnings);
            errln!("warning: hooks left pending: {error}");
        }
    }
}

/// The most pending points `task show` lists; `queue` lists the rest.
const SHOWN_PENDING: usize = 1000;

/// `--attempt`: `<task>-<n>`, as every listing shows it, or the number alone.
fn parse_attempt(task: &TaskId, arg: &str) -> Result<u32, Error> {
    let n = arg
        .strip_prefix(task.as_str())
        .and_then(|rest| rest.strip_prefix('-'))
        .unwrap_or(arg);
    if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) {
        return n.parse().map_err(|_| {
            Error::Usage(format!(
                "invalid attempt {arg:?}: more than {} attempts",
                u32::MAX
            ))
        });
    }
    Err(Error::Usage(format!(
        "invalid attempt {arg:?}: expected {task}-N or N"
    )))
}

/// `task show` of task `task` in `q`.
fn show(q: &mut Queue, task: &TaskId, json: bool) -> Result<(), Error> {
    let shown = q
        .task_shown(task, SHOWN_PENDING, 20)?
        .ok_or_else(|| Error::NotFound(format!("no task {task} in {}", q.place())))?;
    if json {
        return output::json(&shown);
    }
    let TaskShown {
        task,
        pending,
        more_pending,
        history,
    } = shown;
    outln!("task     {}", task.id);
    outln!("plan     {}", task.plan);
    outln!("phase    {}", task.phase);
    outln!("attempt  {}", task.attempt);
    outln!("merged   {}", output::or_dash(task.merged_sha));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_attempt_is_task_dash_n_or_n() {
        let t = TaskId::new("t42").unwrap();
        assert_eq!(parse_attempt(&t, "t42-3").unwrap(), 3);
        assert_eq!(parse_attempt(&t, "3").unwrap(), 3);
        assert_eq!(parse_attempt(&t, "0").unwrap(), 0);
        for bad in ["t41-3", "t42-", "t42", "-1", "", "3x", "99999999999"] {
            assert!(parse_attempt(&t, bad).is_err(), "{bad}");
        }
    }
}
