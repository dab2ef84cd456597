//! `hookq check`: validate config.toml and show what each point would run.

use serde::Serialize;

use crate::cli::error::Error;
use hookq::queue::config::Config;
use hookq::queue::phase::Point;
use hookq::queue::store::Store;
use hookq::queue::workspace::Workspace;

use super::app::{Ctx, warn_config};
use super::output;

/// Validate config.toml and print the hooks each point would run.
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Checked<'a> {
    config: String,
    /// Keys hookq does not read, a typo away from one it does.
    warnings: Vec<String>,
    hooks: Vec<(Point, &'a [String])>,
    target_branch: &'a str,
    command_timeout_secs: u64,
    kill_grace_secs: u64,
    max_log_bytes: u64,
    max_interrupted_runs: u32,
    keep_history_days: u32,
    max_log_file_bytes: u64,
    /// When the queue was paused (unix ms, `hookq queue pause`); null while it runs.
    paused_since_ms: Option<i64>,
    /// The queue's PostgreSQL database, connected to; absent for the workspace's SQLite file.
    #[cfg(feature = "postgres")]
    #[serde(skip_serializing_if = "Option::is_none")]
    database: Option<super::pg::Checked>,
}

pub(super) fn run(ctx: &Ctx, args: Args) -> Result<(), Error> {
    let ws = ctx.workspace()?;
    let path = ws.config_path();
    // The checker's own failure: its hint does not tell the user to run it.
    let cfg = Config::load(&path).map_err(Error::Checked)?;
    warn_config(&cfg);
    #[cfg(feature = "postgres")]
    if let Some(w) = super::pg::exposed_password(&ws) {
        errln!("warning: {w}");
    }
    // The database is checked last and its failure reported after the rest: a server that
    // is down does not hide what the config says.
    #[cfg(feature = "postgres")]
    let (database, failed) = match super::pg::choice(&ws)? {
        Some(c) => {
            let (checked, failed) = super::pg::check(&c);
            (Some(checked), failed)
        }
        None => (None, None),
    };
    #[cfg(feature = "postgres")]
    let paused_since_ms = match &database {
        Some(db) => db.paused_since_ms,
        None => sqlite_paused(&ws),
    };
    #[cfg(not(feature = "postgres"))]
    let paused_since_ms = sqlite_paused(&ws);
    let checked = Checked {
        config: path.display().to_string(),
        warnings: cfg.warnings().iter().map(ToString::to_string).collect(),
        hooks: Point::ALL.iter().map(|&p| (p, cfg.hooks(p))).collect(),
        target_branch: cfg.target_branch(),
        command_timeout_secs: cfg.gate.command_timeout.as_secs(),
        kill_grace_secs: cfg.gate.kill_grace.as_secs(),
        max_log_bytes: cfg.gate.max_log_bytes,
        max_interrupted_runs: cfg.queue.max_interrupted_runs,
        keep_history_days: cfg.queue.keep_history_days,
        max_log_file_bytes: cfg.queue.max_log_file_bytes,
        paused_since_ms,
        #[cfg(feature = "postgres")]
        database,
    };
    #[cfg(not(feature = "postgres"))]
    let failed: Option<Error> = None;
    if args.json {
        output::json(&checked)?;
        return failed.map_or(Ok(()), Err);
    }
    outln!("{}: ok", checked.config);
    outln!(
        "timeout {}s, grace {}s, log cap {} bytes a run and {} a file, park after {} passes, history {} days, target branch {}",
        checked.command_timeout_secs,
        checked.kill_grace_secs,
        checked.max_log_bytes,
        checked.max_log_file_bytes,
        checked.max_interrupted_runs,
        checked.keep_history_days,
        checked.target_branch
    );
    #[cfg(feature = "postgres")]
    if let Some(db) = checked.database.as_ref().filter(|d| d.error.is_none()) {
        let schema = db.schema_version.map_or_else(
            || {
                "no hookq schema yet (the first command that records or drains creates it)"
                    .to_owned()
            },
            |v| format!("schema version {v}"),
        );
        outln!(
            "queue {} on {} (from {}): PostgreSQL {}, {schema}; this hookq writes version {}",
            db.queue,
            db.url,
            db.from,
            db.server_version.as_deref().unwrap_or_default(),
            db.supported_schema_version
        );
    }
    if let Some(since) = checked.paused_since_ms {
        outln!("{}", super::queue::paused_line(since));
    }
    for (point, lines) in &checked.hooks {
        outln!("{point}: {} command(s)", lines.len());
        for (i, l) in lines.iter().enumerate() {
            outln!("  {:02}  {l}", i + 1);
        }
    }
    failed.map_or(Ok(()), Err)
}

/// When the workspace's SQLite queue was paused, if its file exists (`check` creates none and
/// writes nothing); a file that cannot be read is a warning, and reads as running.
fn sqlite_paused(ws: &Workspace) -> Option<i64> {
    let path = ws.db_path();
    if !path.exists() {
        return None;
    }
    match Store::paused_in(&path) {
        Ok(p) => p,
        Err(e) => {
            errln!(
                "warning: cannot read whether the queue in {} is paused: {e}",
                path.display()
            );
            None
        }
    }
}
