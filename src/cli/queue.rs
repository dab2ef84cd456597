//! `hookq queue`: what is pending, who holds the lock, history, drop, retry, stats. Never takes
//! the runner lock, so it works while a hub drains.

use serde::Serialize;

use crate::cli::error::Error;
use hookq::queue::config::Config;
use hookq::queue::ids::TaskId;
use hookq::queue::lock::{self, Holder};
use hookq::queue::phase::Point;
use hookq::queue::record;
use hookq::queue::store::{HistoryRow, PendingRow, Stats, now_ms};

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
    /// Counts: pending by point, interrupted, oldest, history by outcome.
    Stats {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Serialize)]
struct Listing {
    lock: Option<Holder>,
    pending: Vec<PendingRow>,
    more: bool,
}

pub(super) fn run(ctx: &Ctx, args: Args) -> Result<(), Error> {
    #[cfg(feature = "postgres")]
    {
        let ws = ctx.workspace()?;
        if let Some(choice) = super::pg::choice(&ws)? {
            return on_postgres(&ws, &choice, args);
        }
    }
    let (ws, mut store) = ctx.open()?;
    let db = ws.db_path();
    let dberr = |e| Error::store(&db, e);
    let now = now_ms();
    match args.cmd {
        None => {
            let limit = args.limit as usize;
            let mut pending = store.pending(0, limit + 1, None).map_err(dberr)?;
            let more = pending.len() > limit;
            pending.truncate(limit);
            let holder = lock::holder(&ws.lock_path());
            if args.json {
                return output::json(&Listing {
                    lock: holder,
                    pending,
                    more,
                });
            }
            match &holder {
                Some(h) if h.alive => {
                    outln!("runner lock: held by {h}")
                }
                Some(h) => outln!("runner lock: free (last holder pid {} is gone)", h.pid),
                None => outln!("runner lock: free"),
            }
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
        Some(Sub::Show { id, json }) => show(&ws, &store, id, json || args.json),
        Some(Sub::History { task, limit, json }) => {
            let task = task_filter(task)?;
            let rows = store
                .history(task.as_ref().map(TaskId::as_str), None, limit as usize)
                .map_err(dberr)?;
            history_out(&rows, json || args.json)
        }
        Some(Sub::Log {
            task,
            point,
            tail,
            follow,
            json,
        }) => {
            let json = json || (args.json && !follow);
            let (task, opts) = super::log::Options::parse(task, point, tail, follow, json)?;
            let place = ws.db_path().display().to_string();
            let known = || {
                let row = store
                    .task(task.as_str())
                    .map_err(|e| Error::store(ws.db_path(), e))?;
                Ok(row.is_some())
            };
            super::log::run(&ws, &place, known, &task, opts)
        }
        Some(Sub::Drop { id }) => {
            let e = store.drop_entry(id).map_err(dberr)?;
            outln!(
                "dropped occurrence {id} ({} for task {}); kept in history as dropped",
                e.point,
                e.task
            );
            // Started by the runner holding the lock now, and not cleared: it may be running.
            // The drop cannot take back a command that started, so say what happens to it.
            let holder = lock::holder(&ws.lock_path()).filter(|h| h.alive);
            if let (Some(h), Some(started)) = (holder, e.last_started_ms)
                && chrono::DateTime::parse_from_rfc3339(&h.started)
                    .is_ok_and(|t| started >= t.timestamp_millis())
            {
                outln!(
                    "note: runner pid {} started it at {} and has not cleared it; if its commands are running, they finish and their runs are kept in history too",
                    h.pid,
                    output::time(started)
                );
            }
            Ok(())
        }
        Some(Sub::Retry { history_id }) => {
            let o = store
                .write(|tx| record::requeue(tx, history_id))
                .map_err(dberr)?;
            outln!("queued {} again as occurrence {}", o.point, o.id);
            Ok(())
        }
        Some(Sub::Stats { json }) => {
            let s = store.stats().map_err(dberr)?;
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

/// Where the logs of a shared queue's commands are, as `queue show` says it.
const SHARED_LOGS: &str = "each command's log is on the host that ran it (the paths are that \
                           host's); `hookq queue log TASK` there prints them";

fn show(
    ws: &hookq::queue::workspace::Workspace,
    store: &hookq::queue::store::Store,
    id: i64,
    json: bool,
) -> Result<(), Error> {
    let dberr = |e| Error::store(ws.db_path(), e);
    let pending = store.pending_entry(id).map_err(dberr)?;
    let history = store.history(None, Some(id), 1000).map_err(dberr)?;
    let place = ws.db_path().display().to_string();
    show_found(ws, id, pending, history, json, &place, None)
}

/// `queue show` of what was read of occurrence `id` in the database at `place`.
fn show_found(
    ws: &hookq::queue::workspace::Workspace,
    id: i64,
    pending: Option<PendingRow>,
    history: Vec<HistoryRow>,
    json: bool,
    place: &str,
    logs: Option<&'static str>,
) -> Result<(), Error> {
    if pending.is_none() && history.is_empty() {
        return Err(Error::NotFound(format!(
            "no occurrence {id}, pending or in history, in {place}"
        )));
    }
    let (commands, config_error) = match pending.as_ref().map(|p| p.point.parse::<Point>()) {
        Some(Ok(point)) => match Config::load(&ws.config_path()) {
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
        logs,
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

/// The pending points with the queue's runner lock holder, on PostgreSQL.
#[cfg(feature = "postgres")]
#[derive(Serialize)]
struct PgListing {
    lock: Option<hookq::queue::pg::PgHolder>,
    pending: Vec<PendingRow>,
    more: bool,
}

/// `hookq queue` on a workspace whose queue is on PostgreSQL: the same views and changes, read
/// and written in the queue's database; the lock shown is the queue's runner lock.
#[cfg(feature = "postgres")]
fn on_postgres(
    ws: &hookq::queue::workspace::Workspace,
    choice: &hookq::queue::pg::PgChoice,
    args: Args,
) -> Result<(), Error> {
    use hookq::queue::pg::{self, record as pg_record, store as pg_store};
    let mut store = super::pg::open(choice)?;
    let queue = store.queue().clone();
    let dberr = |e| super::pg::placed(&queue, e);
    let place = format!("queue {} on {}", choice.queue, choice.target);
    let now = now_ms();
    match args.cmd {
        None => {
            let limit = args.limit as usize;
            let mut pending =
                pg_store::pending(store.client(), &queue, 0, limit + 1, None).map_err(dberr)?;
            let more = pending.len() > limit;
            pending.truncate(limit);
            let holder = pg::holder(store.client(), &queue).map_err(dberr)?;
            if args.json {
                return output::json(&PgListing {
                    lock: holder,
                    pending,
                    more,
                });
            }
            match &holder {
                Some(h) => outln!("runner lock of queue {queue}: held by {h}"),
                None => outln!("runner lock of queue {queue}: free"),
            }
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
            let pending = pg_store::pending_entry(store.client(), &queue, id).map_err(dberr)?;
            let history =
                pg_store::history(store.client(), &queue, None, Some(id), 1000).map_err(dberr)?;
            let (json, logs) = (json || args.json, Some(SHARED_LOGS));
            show_found(ws, id, pending, history, json, &place, logs)
        }
        Some(Sub::History { task, limit, json }) => {
            let task = task_filter(task)?;
            let rows = pg_store::history(
                store.client(),
                &queue,
                task.as_ref().map(TaskId::as_str),
                None,
                limit as usize,
            )
            .map_err(dberr)?;
            history_out(&rows, json || args.json)
        }
        Some(Sub::Log {
            task,
            point,
            tail,
            follow,
            json,
        }) => {
            // The logs are this host's: those of the hooks it ran for the queue.
            let json = json || (args.json && !follow);
            let (task, opts) = super::log::Options::parse(task, point, tail, follow, json)?;
            let known = || {
                let row = pg_store::task(store.client(), &queue, task.as_str()).map_err(dberr)?;
                Ok(row.is_some())
            };
            super::log::run(ws, &place, known, &task, opts)
        }
        Some(Sub::Drop { id }) => {
            let e = pg_store::drop_entry(store.client(), &queue, id).map_err(|e| match e {
                pg::PgError::NoEntry(id) => {
                    Error::NotFound(format!("no pending entry {id} in {place}"))
                }
                e => dberr(e),
            })?;
            outln!(
                "dropped occurrence {id} ({} for task {}); kept in history as dropped",
                e.point,
                e.task
            );
            Ok(())
        }
        Some(Sub::Retry { history_id }) => {
            let o = super::pg::write(&mut store, |tx, q| pg_record::requeue(tx, q, history_id))?;
            outln!("queued {} again as occurrence {}", o.point, o.id);
            Ok(())
        }
        Some(Sub::Stats { json }) => {
            let s = pg_store::stats(store.client(), &queue).map_err(dberr)?;
            if json || args.json {
                return output::json(&s);
            }
            print_stats(&s, now);
            Ok(())
        }
    }
}

fn print_pending(pending: &[PendingRow], now: i64) {
    let rows: Vec<Vec<String>> = pending
        .iter()
        .map(|p| {
            vec![
                p.id.to_string(),
                p.task.clone(),
                p.point.clone(),
                or_dash(p.state.as_deref()),
                output::age(p.recorded_ms, now),
                p.passes.to_string(),
            ]
        })
        .collect();
    output::table(&["ID", "TASK", "POINT", "STATE", "AGE", "PASSES"], &rows);
}

/// `queue history`'s task filter, checked.
fn task_filter(task: Option<String>) -> Result<Option<TaskId>, Error> {
    task.map(TaskId::new)
        .transpose()
        .map_err(|e| Error::Usage(e.to_string()))
}

/// `queue history`'s rows, as JSON or a table.
fn history_out(rows: &[HistoryRow], json: bool) -> Result<(), Error> {
    if json {
        return output::json(rows);
    }
    print_history(rows);
    Ok(())
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
                h.task.clone(),
                match h.command_index {
                    Some(i) => format!("{}-{i:02}", h.point),
                    None => h.point.clone(),
                },
                h.outcome.clone(),
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

fn print_stats(s: &Stats, now: i64) {
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
