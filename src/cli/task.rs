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
use super::queue::{self, QueueView, SqliteView};

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

/// What an owner transition does to the workspace's queue, in its SQLite file or in its
/// PostgreSQL database: records the transition in one transaction, then runs what is pending if
/// the runner lock is free. `hookq task` and `hookq plan cancel` are written once over it.
pub(super) trait Owner: QueueView {
    /// Creates task `task` of plan `plan` in phase `phase`.
    fn add_task(
        &mut self,
        task: &TaskId,
        plan: &PlanId,
        phase: &Phase,
    ) -> Result<Transition, Error>;
    /// Moves task `task` to phase `phase`.
    fn move_task(
        &mut self,
        task: &TaskId,
        phase: &Phase,
        facts: &MoveFacts,
    ) -> Result<Transition, Error>;
    /// Ends every unfinished task of plan `plan` in `failed.cancelled`.
    fn cancel_plan(&mut self, plan: &PlanId) -> Result<Vec<Transition>, Error>;
    /// After an owner transition: drains only if the runner lock is free right now. Hooks never
    /// make the transition fail, so problems here are warnings and the points stay pending.
    fn drain_if_free(self: Box<Self>, ws: &Workspace);
}

impl Owner for SqliteView {
    fn add_task(
        &mut self,
        task: &TaskId,
        plan: &PlanId,
        phase: &Phase,
    ) -> Result<Transition, Error> {
        self.store
            .write(|tx| record::add_task(tx, task, plan, phase))
            .map_err(self.err())
    }

    fn move_task(
        &mut self,
        task: &TaskId,
        phase: &Phase,
        facts: &MoveFacts,
    ) -> Result<Transition, Error> {
        self.store
            .write(|tx| record::move_task(tx, task, phase, facts))
            .map_err(self.err())
    }

    fn cancel_plan(&mut self, plan: &PlanId) -> Result<Vec<Transition>, Error> {
        self.store
            .write(|tx| record::cancel_plan(tx, plan))
            .map_err(self.err())
    }

    fn drain_if_free(mut self: Box<Self>, ws: &Workspace) {
        drain_if_free(ws, &mut self.store);
    }
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
                record::validate_sha(sha).map_err(usage)?;
            }
            let attempt = attempt.map(|a| parse_attempt(&task, &a)).transpose()?;
            let facts = MoveFacts {
                merged_sha,
                attempt,
            };
            let (ws, mut q) = queue::open(ctx)?;
            print_transition(&q.move_task(&task, &phase, &facts)?);
            if !no_run {
                q.drain_if_free(&ws);
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
            show(q.as_mut(), &task, json)
        }
    }
}

fn list(tasks: &[TaskRow], json: bool) -> Result<(), Error> {
    if json {
        return output::json(&tasks.iter().map(TaskView::from).collect::<Vec<_>>());
    }
    let now = now_ms();
    let rows: Vec<Vec<String>> = tasks
        .iter()
        .map(|t| {
            vec![
                t.id.clone(),
                t.plan.clone(),
                t.phase.clone(),
                attempt(t),
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
}

/// [`Owner::drain_if_free`] on the workspace's SQLite file.
fn drain_if_free(ws: &Workspace, store: &mut Store) {
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
    if let Ok(cfg) = drainer.config() {
        super::app::warn_config(&cfg);
    }
    match drainer.drain_and_release(store, lock) {
        Ok(r) => {
            if let Some(line) = output::ran(&r) {
                outln!("{line}");
            }
            output::held(&r);
            output::paused(&r, || store.stats().ok().map(|s| s.pending));
        }
        Err(e) => errln!("warning: hooks left pending: {e}"),
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

/// A task's attempt as `ARC_ATTEMPT` spells it: `<task>-<n>`.
fn attempt(t: &TaskRow) -> String {
    format!("{}-{}", t.id, t.attempt)
}

/// A task as `--json` shows it: the stored row, with the attempt spelt as everywhere else.
#[derive(Serialize)]
struct TaskView<'a> {
    id: &'a str,
    plan: &'a str,
    phase: &'a str,
    /// `<task>-<n>`.
    attempt: String,
    merged_sha: Option<&'a str>,
    created_ms: i64,
    updated_ms: i64,
}

impl<'a> From<&'a TaskRow> for TaskView<'a> {
    fn from(t: &'a TaskRow) -> Self {
        Self {
            id: &t.id,
            plan: &t.plan,
            phase: &t.phase,
            attempt: attempt(t),
            merged_sha: t.merged_sha.as_deref(),
            created_ms: t.created_ms,
            updated_ms: t.updated_ms,
        }
    }
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

#[derive(Serialize)]
struct Shown<'a> {
    task: TaskView<'a>,
    pending: Vec<PendingRow>,
    /// More of the task's points are pending than `pending` lists.
    more_pending: bool,
    history: Vec<HistoryRow>,
}

/// `task show` of task `task` in `q`.
fn show(q: &mut dyn QueueView, task: &TaskId, json: bool) -> Result<(), Error> {
    let row = q
        .task(task)?
        .ok_or_else(|| Error::NotFound(format!("no task {task} in {}", q.place())))?;
    let mut pending = q.pending(Some(task.as_str()), SHOWN_PENDING + 1)?;
    let more_pending = pending.len() > SHOWN_PENDING;
    pending.truncate(SHOWN_PENDING);
    let history = q.history(Some(task.as_str()), None, 20)?;
    let shown = Shown {
        task: TaskView::from(&row),
        pending,
        more_pending,
        history,
    };
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
