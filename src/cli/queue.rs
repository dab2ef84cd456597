//! `hookq queue`: what is pending, who holds the lock, history, drop, retry, stats. Never takes
//! the runner lock, so it works while a hub drains.

use serde::Serialize;

use crate::cli::error::Error;
use hookq::queue::config::Config;
use hookq::queue::ids::TaskId;
use hookq::queue::lock::{self, Holder};
use hookq::queue::phase::Point;
use hookq::queue::record::{self, Occurrence};
use hookq::queue::store::{
    HistoryRow, Paused, PendingRow, Stats, Store, StoreError, TaskRow, now_ms,
};
use hookq::queue::workspace::Workspace;

use super::app::Ctx;
use super::output::{self, or_dash};
use super::task::Owner;

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

/// The runner lock's holder as the listing's JSON shows it: the workspace's `runner.lock` for
/// a queue on SQLite, the queue's advisory lock on PostgreSQL.
#[derive(Serialize)]
#[serde(untagged)]
pub(super) enum LockHolder {
    /// What the workspace's `runner.lock` says of its holder, or last holder.
    File(Holder),
    /// The live holder of the queue's runner lock, from the server's lock table.
    #[cfg(feature = "postgres")]
    Queue(hookq::queue::pg::PgHolder),
}

/// What `hookq queue`, `hookq task` and `hookq plan cancel` read, and `hookq queue` changes, in
/// a queue, in the workspace's SQLite file or in its PostgreSQL database: each subcommand is
/// written once over it. None of it takes the runner lock.
pub(super) trait QueueView {
    /// Where the queue is, as messages name it.
    fn place(&self) -> &str;
    /// For a queue other hosts drain too: where its commands' logs are. A queue drained on
    /// this host alone has its logs where `queue show` prints their paths.
    fn shared_logs(&self) -> Option<&'static str> {
        None
    }
    /// The runner lock's holder, and the listing's line that names it.
    fn lock(&mut self) -> Result<(Option<LockHolder>, String), Error>;
    /// At most `limit` pending points, oldest first, of one task or all.
    fn pending(&mut self, task: Option<&str>, limit: usize) -> Result<Vec<PendingRow>, Error>;
    /// Occurrence `id`, when it is pending.
    fn pending_entry(&mut self, id: i64) -> Result<Option<PendingRow>, Error>;
    /// At most `limit` history rows, newest first, of one task or one occurrence, or all.
    fn history(
        &mut self,
        task: Option<&str>,
        occurrence: Option<i64>,
        limit: usize,
    ) -> Result<Vec<HistoryRow>, Error>;
    /// Task `task`, when the queue has it.
    fn task(&mut self, task: &TaskId) -> Result<Option<TaskRow>, Error>;
    /// The queue's tasks, of one plan or all.
    fn tasks(&mut self, plan: Option<&str>) -> Result<Vec<TaskRow>, Error>;
    /// Removes pending occurrence `id`, keeping it in history as `dropped`.
    fn drop_entry(&mut self, id: i64) -> Result<PendingRow, Error>;
    /// What to say after dropping `entry` of a runner that may be running its commands:
    /// nothing where that cannot be told.
    fn dropped_note(&mut self, _entry: &PendingRow) -> Option<String> {
        None
    }
    /// Queues history row `history_id`'s point again, as a new occurrence.
    fn requeue(&mut self, history_id: i64) -> Result<Occurrence, Error>;
    /// The queue's counts.
    fn stats(&mut self) -> Result<Stats, Error>;
    /// When the queue was paused (unix ms), or `None` while it runs.
    fn paused(&mut self) -> Result<Option<i64>, Error>;
    /// Pauses the queue; what it found and did.
    fn pause(&mut self) -> Result<Paused, Error>;
    /// Resumes the queue, waking its hubs; `None` when it was not paused.
    fn resume(&mut self) -> Result<Option<Paused>, Error>;
}

/// The queue in the workspace's SQLite file.
pub(super) struct SqliteView {
    ws: Workspace,
    pub(super) store: Store,
    place: String,
}

impl SqliteView {
    /// A failure of the store, naming its file.
    pub(super) fn err(&self) -> impl Fn(StoreError) -> Error + use<> {
        let db = self.ws.db_path();
        move |e| Error::store(&db, e)
    }
}

impl QueueView for SqliteView {
    fn place(&self) -> &str {
        &self.place
    }

    fn lock(&mut self) -> Result<(Option<LockHolder>, String), Error> {
        let holder = lock::holder(&self.ws.lock_path());
        let line = match &holder {
            Some(h) if h.alive => format!("runner lock: held by {h}"),
            Some(h) => format!("runner lock: free (last holder pid {} is gone)", h.pid),
            None => "runner lock: free".to_owned(),
        };
        Ok((holder.map(LockHolder::File), line))
    }

    fn pending(&mut self, task: Option<&str>, limit: usize) -> Result<Vec<PendingRow>, Error> {
        self.store.pending(0, limit, task).map_err(self.err())
    }

    fn pending_entry(&mut self, id: i64) -> Result<Option<PendingRow>, Error> {
        self.store.pending_entry(id).map_err(self.err())
    }

    fn history(
        &mut self,
        task: Option<&str>,
        occurrence: Option<i64>,
        limit: usize,
    ) -> Result<Vec<HistoryRow>, Error> {
        self.store
            .history(task, occurrence, limit)
            .map_err(self.err())
    }

    fn task(&mut self, task: &TaskId) -> Result<Option<TaskRow>, Error> {
        self.store.task(task.as_str()).map_err(self.err())
    }

    fn tasks(&mut self, plan: Option<&str>) -> Result<Vec<TaskRow>, Error> {
        self.store.tasks(plan).map_err(self.err())
    }

    fn drop_entry(&mut self, id: i64) -> Result<PendingRow, Error> {
        self.store.drop_entry(id).map_err(self.err())
    }

    fn dropped_note(&mut self, entry: &PendingRow) -> Option<String> {
        // Started by the runner holding the lock now, and not cleared: it may be running.
        // The drop cannot take back a command that started, so say what happens to it.
        let holder = lock::holder(&self.ws.lock_path()).filter(|h| h.alive)?;
        let started = entry.last_started_ms?;
        chrono::DateTime::parse_from_rfc3339(&holder.started)
            .is_ok_and(|t| started >= t.timestamp_millis())
            .then(|| {
                format!(
                    "note: runner pid {} started it at {} and has not cleared it; if its commands are running, they finish and their runs are kept in history too",
                    holder.pid,
                    output::time(started)
                )
            })
    }

    fn requeue(&mut self, history_id: i64) -> Result<Occurrence, Error> {
        self.store
            .write(|tx| record::requeue(tx, history_id))
            .map_err(self.err())
    }

    fn stats(&mut self) -> Result<Stats, Error> {
        self.store.stats().map_err(self.err())
    }

    fn paused(&mut self) -> Result<Option<i64>, Error> {
        self.store.paused().map_err(self.err())
    }

    fn pause(&mut self) -> Result<Paused, Error> {
        self.store.pause().map_err(self.err())
    }

    fn resume(&mut self) -> Result<Option<Paused>, Error> {
        // A hub sees the commit as it sees a recording (the file's data version changes).
        self.store.resume().map_err(self.err())
    }
}

#[derive(Serialize)]
struct Listing {
    lock: Option<LockHolder>,
    /// Whether the queue is paused, and since when (unix ms).
    paused: bool,
    paused_since_ms: Option<i64>,
    pending: Vec<PendingRow>,
    more: bool,
}

/// The workspace's queue: in the PostgreSQL database it asks for, else in its SQLite file. It
/// reads, and records and drains as an owner transition does.
pub(super) fn open(ctx: &Ctx) -> Result<(Workspace, Box<dyn Owner>), Error> {
    #[cfg(feature = "postgres")]
    {
        let ws = ctx.workspace()?;
        if let Some(choice) = super::pg::choice(&ws)? {
            let view = super::pg::PgView::open(&choice)?;
            return Ok((ws, Box::new(view)));
        }
    }
    let (ws, store) = ctx.open()?;
    let place = ws.db_path().display().to_string();
    let view = SqliteView {
        ws: ws.clone(),
        store,
        place,
    };
    Ok((ws, Box::new(view)))
}

pub(super) fn run(ctx: &Ctx, args: Args) -> Result<(), Error> {
    let (ws, mut q) = open(ctx)?;
    on(&ws, q.as_mut(), args)
}

/// `hookq queue ARGS` on the queue `q` of workspace `ws`.
fn on(ws: &Workspace, q: &mut dyn QueueView, args: Args) -> Result<(), Error> {
    let now = now_ms();
    match args.cmd {
        None => {
            let limit = args.limit as usize;
            let mut pending = q.pending(None, limit + 1)?;
            let more = pending.len() > limit;
            pending.truncate(limit);
            let (holder, line) = q.lock()?;
            let paused = q.paused()?;
            if args.json {
                return output::json(&Listing {
                    lock: holder,
                    paused: paused.is_some(),
                    paused_since_ms: paused,
                    pending,
                    more,
                });
            }
            if let Some(since) = paused {
                outln!("{}", paused_line(since));
            }
            outln!("{line}");
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
            let pending = q.pending_entry(id)?;
            let history = q.history(None, Some(id), 1000)?;
            show(ws, id, pending, history, json || args.json, q)
        }
        Some(Sub::History { task, limit, json }) => {
            let task = task
                .map(TaskId::new)
                .transpose()
                .map_err(|e| Error::Usage(e.to_string()))?;
            let rows = q.history(task.as_ref().map(TaskId::as_str), None, limit as usize)?;
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
            let known = || Ok(q.task(&task)?.is_some());
            super::log::run(ws, &place, shared, known, &task, opts)
        }
        Some(Sub::Drop { id }) => {
            let e = q.drop_entry(id)?;
            outln!(
                "dropped occurrence {id} ({} for task {}); kept in history as dropped",
                e.point,
                e.task
            );
            if let Some(note) = q.dropped_note(&e) {
                outln!("{note}");
            }
            Ok(())
        }
        Some(Sub::Retry { history_id }) => {
            let o = q.requeue(history_id)?;
            outln!("queued {} again as occurrence {}", o.point, o.id);
            Ok(())
        }
        Some(Sub::Pause) => {
            let p = q.pause()?;
            if p.changed {
                outln!(
                    "queue paused: {}; transitions are still recorded, and no runner starts a point until `hookq queue resume` (a point running now finishes)",
                    q.place()
                );
            } else {
                outln!(
                    "queue already paused since {}: {}; nothing changed",
                    output::time(p.since_ms),
                    q.place()
                );
            }
            Ok(())
        }
        Some(Sub::Resume) => {
            match q.resume()? {
                Some(p) => outln!(
                    "queue resumed: {} (paused since {}); the next pass runs what is pending",
                    q.place(),
                    output::time(p.since_ms)
                ),
                None => outln!("queue not paused: {}; nothing changed", q.place()),
            }
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
    q: &dyn QueueView,
) -> Result<(), Error> {
    if pending.is_none() && history.is_empty() {
        return Err(Error::NotFound(format!(
            "no occurrence {id}, pending or in history, in {}",
            q.place()
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
