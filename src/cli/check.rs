//! `hookq check`: validate config.toml and show what each point would run.

use serde::Serialize;

use crate::cli::error::Error;
use hookq::queue::config::Config;
use hookq::queue::phase::Point;
use hookq::queue::store::Store;
use hookq::queue::workspace::Workspace;

#[cfg(feature = "postgres")]
use hookq::queue::pg::{self, PgChoice, PgError};

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
    database: Option<DatabaseChecked>,
}

pub(super) fn run(ctx: &Ctx, args: Args) -> Result<(), Error> {
    let ws = ctx.workspace()?;
    let path = ws.config_path();
    // The checker's own failure: its hint does not tell the user to run it.
    let cfg = Config::load(&path).map_err(Error::Checked)?;
    warn_config(&cfg);
    #[cfg(feature = "postgres")]
    if let Some(w) = exposed_password(&ws) {
        errln!("warning: {w}");
    }
    // The database is checked last and its failure reported after the rest: a server that
    // is down does not hide what the config says.
    #[cfg(feature = "postgres")]
    let (database, failed) = match ctx.choice(&ws)? {
        Some(c) => {
            let (checked, failed) = check_database(&c);
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

#[cfg(feature = "postgres")]
/// `source`, a failure of the database of `choice`'s queue.
pub(super) fn placed(choice: &pg::PgChoice, source: PgError) -> Error {
    Error::Queue(hookq::queue::Error::Postgres {
        place: Box::new(choice.place()),
        source,
    })
}

#[cfg(feature = "postgres")]
/// The `warning:` line (without its prefix) for a workspace whose `config.toml` sets a
/// database URL holding a password and may be read by its owner's group or by others; `None`
/// when it holds no password or only its owner may read it.
pub(super) fn exposed_password(ws: &Workspace) -> Option<String> {
    let path = ws.config_path();
    let url = pg::choose::configured_database(&path)?;
    if !pg::has_password(&url) {
        return None;
    }
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&path).ok()?.permissions())
            & 0o777;
    (mode & 0o044 != 0).then(|| {
        format!(
            "{} holds the database password and is readable by others (mode {mode:04o}): chmod 600 it, or give the URL in {} instead",
            path.display(),
            pg::DATABASE_ENV
        )
    })
}

#[cfg(feature = "postgres")]
/// What `hookq check` says of the queue's database.
#[derive(Debug, serde::Serialize)]
pub(super) struct DatabaseChecked {
    /// The connection string, password masked.
    pub(super) url: String,
    /// Which setting chose it: `HOOKQ_DATABASE_URL` or `config.toml`.
    pub(super) from: &'static str,
    /// The queue's name.
    pub(super) queue: String,
    /// What `SHOW server_version` says; absent when the server could not be asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) server_version: Option<String>,
    /// The hookq schema version applied, `None` before the first command that writes (or
    /// when the server could not be asked).
    pub(super) schema_version: Option<i64>,
    /// The schema version this hookq writes.
    pub(super) supported_schema_version: i64,
    /// Why the server could not be asked (the `error:` line the command ends with).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) error: Option<String>,
    /// When the queue was paused (unix ms); `check` shows it beside the SQLite queue's.
    #[serde(skip)]
    pub(super) paused_since_ms: Option<i64>,
}

#[cfg(feature = "postgres")]
/// Connects to the queue's database and reads its versions, changing nothing. A failure is
/// returned beside what could be said without the server, so that `check` still shows the
/// config before it reports it.
fn check_database(choice: &PgChoice) -> (DatabaseChecked, Option<Error>) {
    let mut checked = DatabaseChecked {
        url: choice.target.to_string(),
        from: match choice.by {
            pg::ChosenBy::Environment => pg::DATABASE_ENV,
            pg::ChosenBy::Config => "config.toml",
        },
        queue: choice.queue.to_string(),
        server_version: None,
        schema_version: None,
        supported_schema_version: pg::schema::schema_version(),
        error: None,
        paused_since_ms: None,
    };
    let asked = (|| {
        let mut client = pg::connect(
            &choice.target,
            &format!("hookq check pid {}", std::process::id()),
        )?;
        let version: String = client.query_one("SHOW server_version", &[])?.get(0);
        let schema = pg::schema::applied_version(&mut client)?;
        // A schema older than this hookq's has no pause; a newer one is not read.
        let paused = if schema == Some(pg::schema::schema_version()) {
            pg::store::paused(&mut client, &choice.queue)?
        } else {
            None
        };
        Ok::<_, PgError>((version, schema, paused))
    })();
    match asked {
        Ok((version, schema, paused)) => {
            checked.server_version = Some(version);
            checked.schema_version = schema;
            checked.paused_since_ms = paused;
            (checked, None)
        }
        Err(e) => {
            let e = placed(choice, e);
            checked.error = Some(e.to_string());
            (checked, Some(e))
        }
    }
}
