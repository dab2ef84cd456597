//! `hookq queue`: what is pending, who holds the lock, history, drop, retry, stats. Never takes
//! the runner lock, so it works while a hub drains.

use serde::Serialize;

use crate::cli::error::Error;
use hookq::queue::config::Config;
use hookq::queue::ids::TaskId;
use hookq::queue::model::{HistoryFilter, HistoryRow, PendingFilter, PendingRow, Stats, now_ms};
use hookq::queue::workspace::Workspace;
use hookq::queue::{Listing, Queue, said};

use super::app::Ctx;
use super::output::{self, or_dash};

/// List pending points (oldest first) and the runner lock's holder.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(super) struct Args {
    #[command(subcommand)]
    cmd: Option<Sub>,
    /// Show at most N entries (at least 1).
    #[arg(long, value_name = "N", default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..))]
    limit: u32,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Subcommand)]
enum Sub {
    /// Show one occurrence: pending, or what its run left in history.
    Show {
        /// Occurrence id.
        id: i64,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Runs of hooks, newest first: outcome, exit status, duration, log path.
    History {
        /// Only this task's.
        #[arg(long, value_name = "TASK")]
        task: Option<String>,
        /// At most N rows (at least 1).
        #[arg(long, value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
        limit: u32,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the log files of a task's hook runs, newest last, each under its file name.
    Log {
        /// Task id.
        task: String,
        /// Only this point's logs (`after_merge`, `after_fail`, ...).
        #[arg(long, value_name = "P")]
        point: Option<String>,
        /// Only the last N lines of each file.
        #[arg(long, value_name = "N")]
        tail: Option<usize>,
        /// Keep printing what is appended (and new log files) until Ctrl-C, SIGTERM or SIGHUP.
        #[arg(long, short = 'f', conflicts_with = "json")]
        follow: bool,
        /// Print the files' paths and sizes as JSON instead.
        #[arg(long)]
        json: bool,
    },
    /// Remove a pending point without running it (kept in history as `dropped`).
    Drop {
        /// Occurrence id.
        id: i64,
    },
    /// Queue a history row's point again, as a new occurrence.
    Retry {
        /// History row id (from `queue history`).
        history_id: i64,
    },
    /// Pause the queue: transitions are still recorded, but no runner (`run`, `hub`, the drain
    /// after `task move`) starts a point until `queue resume`; a point already running
    /// finishes. Kept in the database, so it outlives restarts (on PostgreSQL, for every host).
    Pause,
    /// Resume a paused queue: the next pass runs what is pending (a hub drains at once).
    Resume,
    /// Counts: pending by point, interrupted, oldest, history by outcome, paused or not.
    Stats {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// The workspace's queue: in the PostgreSQL database it asks for, else in its SQLite file
/// with the options the environment sets.
pub(super) fn open(ctx: &Ctx) -> Result<(Workspace, Queue), Error> {
    let ws = ctx.workspace()?;
    let q = Queue::open_with(&ws, ctx.options()?)?;
    Ok((ws, q))
}

pub(super) fn run(ctx: &Ctx, args: Args) -> Result<(), Error> {
    let (ws, mut q) = open(ctx)?;
    on(&ws, &mut q, args)
}

/// `hookq queue ARGS` on the queue `q` of workspace `ws`.
fn on(ws: &Workspace, q: &mut Queue, args: Args) -> Result<(), Error> {
    let now = now_ms();
    match args.cmd {
        None => {
            let limit = args.limit as usize;
            let listing = q.listing(&PendingFilter {
                limit,
                ..PendingFilter::default()
            })?;
            if args.json {
                return output::json(&listing);
            }
            let Listing {
                lock,
                paused_since_ms,
                pending,
                more,
                ..
            } = listing;
            if let Some(since) = paused_since_ms {
                outln!("{}", paused_line(since));
            }
            outln!("{}", lock.line);
            if pending.is_empty() {
                outln!("nothing pending");
                return Ok(());
            }
            print_pending(&pending, now);
            if more {
                outln!("(more pending; --limit N shows more)");
            }
            Ok(())
        }
        Some(Sub::Show { id, json }) => {
            let pending = q.pending_occurrence(id)?;
            let history = q.history(&HistoryFilter {
                occurrence: Some(id),
                limit: 1000,
                ..HistoryFilter::default()
            })?;
            show(ws, id, pending, history, json || args.json, q)
        }
        Some(Sub::History { task, limit, json }) => {
            let task = task
                .map(TaskId::new)
                .transpose()
                .map_err(|e| Error::Usage(e.to_string()))?;
            let rows = q.history(&HistoryFilter {
                task,
                limit: limit as usize,
                ..HistoryFilter::default()
            })?;
            if json || args.json {
                return output::json(&rows);
            }
            print_history(&rows);
            Ok(())
        }
        Some(Sub::Log {
            task,
            point,
            tail,
            follow,
            json,
        }) => {
            // The logs are this host's: on a shared queue, those of the hooks it ran.
            let json = json || (args.json && !follow);
            let (task, opts) = super::log::Options::parse(task, point, tail, follow, json)?;
            let place = q.place().to_owned();
            let shared = q.shared_logs();
            let pruned = q.pruned_logs(&task)?;
            let known = || Ok(q.task(&task)?.is_some());
            super::log::run(ws, &place, shared, known, pruned, &task, opts)
        }
        Some(Sub::Drop { id }) => {
            let d = q.drop_occurrence(id)?;
            outln!("{}", said::dropped(id, &d));
            if let Some(note) = &d.note {
                outln!("{note}");
            }
            Ok(())
        }
        Some(Sub::Retry { history_id }) => {
            let o = q.retry(history_id)?;
            outln!("{}", said::retried(history_id, &o));
            Ok(())
        }
        Some(Sub::Pause) => {
            let p = q.pause()?;
            outln!("{}", said::paused(&p, q.place()));
            Ok(())
        }
        Some(Sub::Resume) => {
            let p = q.resume()?;
            outln!("{}", said::resumed(p.as_ref(), q.place()));
            Ok(())
        }
        Some(Sub::Stats { json }) => {
            let s = q.stats()?;
            if json || args.json {
                return output::json(&s);
            }
            print_stats(&s, now);
            Ok(())
        }
    }
}

#[derive(Serialize)]
struct Shown {
    id: i64,
    status: &'static str,
    pending: Option<PendingRow>,
    commands: Option<Vec<String>>,
    config_error: Option<String>,
    history: Vec<HistoryRow>,
    /// For a queue other hosts drain too: where its commands' logs are.
    #[serde(skip_serializing_if = "Option::is_none")]
    logs: Option<&'static str>,
}

/// `queue show` of what was read of occurrence `id` in `q`.
fn show(
    ws: &Workspace,
    id: i64,
    pending: Option<PendingRow>,
    history: Vec<HistoryRow>,
    json: bool,
    q: &Queue,
) -> Result<(), Error> {
    if pending.is_none() && history.is_empty() {
        return Err(Error::NotFound(format!(
            "no occurrence {id}, pending or in history, in {}",
            q.place()
        )));
    }
    let (commands, config_error) = match pending.as_ref().map(|p| p.point) {
        Some(point) => match Config::load(&ws.config_path()) {
            Ok(cfg) => {
                super::app::warn_config(&cfg);
                (Some(cfg.hooks(point).to_vec()), None)
            }
            Err(e) => (None, Some(e.to_string())),
        },
        _ => (None, None),
    };
    let shown = Shown {
        id,
        status: if pending.is_some() {
            "pending"
        } else {
            "cleared"
        },
        pending,
        commands,
        config_error,
        history,
        logs: q.shared_logs(),
    };
    if json {
        return output::json(&shown);
    }
    outln!("occurrence {id}: {}", shown.status);
    if let Some(p) = &shown.pending {
        outln!(
            "task      {} (plan {})",
            p.task,
            p.plan.as_deref().unwrap_or("-, the task does not exist")
        );
        outln!("point     {}", p.point);
        outln!("state     {}", or_dash(p.state.as_deref()));
        outln!("recorded  {}", output::time(p.recorded_ms));
        outln!(
            "passes    {} started it{}",
            p.passes,
            p.last_started_ms
                .map(|t| format!(", last at {}", output::time(t)))
                .unwrap_or_default()
        );
        if let Some(cmds) = &shown.commands {
            outln!("commands  {} (as config.toml says now)", cmds.len());
            for (i, c) in cmds.iter().enumerate() {
                outln!("  {:02}  {c}", i + 1);
            }
        }
        if let Some(e) = &shown.config_error {
            outln!("commands  unknown: {e}");
        }
    }
    if !shown.history.is_empty() {
        print_history(&shown.history);
    }
    if let Some(logs) = shown.logs {
        outln!("logs      {logs}");
    }
    Ok(())
}

fn print_pending(pending: &[PendingRow], now: i64) {
    let rows: Vec<Vec<String>> = pending
        .iter()
        .map(|p| {
            vec![
                p.id.to_string(),
                p.task.to_string(),
                p.point.to_string(),
                or_dash(p.state.as_deref()),
                output::age(p.recorded_ms, now),
                p.passes.to_string(),
            ]
        })
        .collect();
    output::table(&["ID", "TASK", "POINT", "STATE", "AGE", "PASSES"], &rows);
}

fn print_history(rows: &[HistoryRow]) {
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|h| {
            let status = match (h.exit_code, h.signal) {
                (Some(c), _) => format!("exit {c}"),
                (None, Some(s)) => format!("signal {s}"),
                _ => "-".into(),
            };
            vec![
                h.id.to_string(),
                h.occurrence.to_string(),
                h.task.to_string(),
                match h.command_index {
                    Some(i) => format!("{}-{i:02}", h.point),
                    None => h.point.to_string(),
                },
                h.outcome.as_str().to_owned(),
                status,
                or_dash(h.duration_ms.map(|d| format!("{d}ms"))),
                output::time(h.finished_ms),
                or_dash(h.log_path.as_deref()),
            ]
        })
        .collect();
    output::table(
        &[
            "ID", "OCC", "TASK", "HOOK", "OUTCOME", "STATUS", "TOOK", "FINISHED", "LOG",
        ],
        &table,
    );
}

/// The listing's line for a queue paused since `since` (unix ms).
pub(super) fn paused_line(since: i64) -> String {
    format!(
        "queue: paused since {}; no runner starts a point until `hookq queue resume`",
        output::time(since)
    )
}

fn print_stats(s: &Stats, now: i64) {
    outln!(
        "paused       {}",
        s.paused_since_ms
            .map_or_else(|| "no".to_owned(), |t| format!("since {}", output::time(t)))
    );
    outln!("tasks        {}", s.tasks);
    outln!("pending      {}", s.pending);
    for (p, n) in &s.pending_by_point {
        outln!("  {p:<22} {n}");
    }
    outln!(
        "interrupted  {} (started by a pass, not cleared)",
        s.interrupted
    );
    outln!(
        "oldest       {}",
        s.oldest_recorded_ms
            .map(|t| format!("{} ago", output::age(t, now)))
            .unwrap_or_else(|| "-".into())
    );
    outln!("history");
    for (o, n) in &s.history_by_outcome {
        outln!("  {o:<22} {n}");
    }
}
