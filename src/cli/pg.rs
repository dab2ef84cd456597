//! The commands that record and drain, on a workspace whose queue is on PostgreSQL
//! (`HOOKQ_DATABASE_URL`, or `[queue] database` in its config): the same steps as on SQLite,
//! with the queue's advisory runner lock taken before the workspace's `runner.lock`.

use std::os::unix::fs::PermissionsExt;
use std::time::Instant;

use crate::cli::error::Error;
use hookq::exec::Stop;
use hookq::metrics::HubMetrics;
use hookq::queue::Error as QueueError;
use hookq::queue::drain::Drainer;
use hookq::queue::hub::{self, HubEvent, HubOptions};
use hookq::queue::lock::{self, RunnerLock, Wait};
use hookq::queue::pg::{self, Lease, PgChoice, PgError, PgQueue, PgRunnerLock, PgStore, QueueName};
use hookq::queue::workspace::Workspace;

use super::app::stop_on_signals;
use super::output;

/// The PostgreSQL queue `ws` asks for, `None` for its SQLite file.
pub(super) fn choice(ws: &Workspace) -> Result<Option<PgChoice>, Error> {
    let env = std::env::var(pg::DATABASE_ENV).ok();
    Ok(pg::choose(ws, env.as_deref())?)
}

/// The runner lock's lease the environment sets.
fn lease() -> Result<Lease, Error> {
    let opts = hookq::queue::Options::from_env().map_err(|e| match e {
        QueueError::Invalid(m) => Error::Usage(m),
        e => Error::Queue(e),
    })?;
    Ok(Lease {
        duration: opts.lease,
    })
}

/// `source`, a failure of `queue`'s database.
fn placed(queue: &QueueName, source: PgError) -> Error {
    Error::Queue(QueueError::Postgres {
        queue: queue.to_string(),
        source,
    })
}

/// The `warning:` line (without its prefix) for a workspace whose `config.toml` sets a
/// database URL holding a password and may be read by its owner's group or by others; `None`
/// when it holds no password or only its owner may read it.
pub(super) fn exposed_password(ws: &Workspace) -> Option<String> {
    let path = ws.config_path();
    let url = pg::choose::configured_database(&path)?;
    if !pg::has_password(&url) {
        return None;
    }
    let mode = std::fs::metadata(&path).ok()?.permissions().mode() & 0o777;
    (mode & 0o044 != 0).then(|| {
        format!(
            "{} holds the database password and is readable by others (mode {mode:04o}): chmod 600 it, or give the URL in {} instead",
            path.display(),
            pg::DATABASE_ENV
        )
    })
}

/// Connects and opens the queue, creating or upgrading the schema.
fn open(choice: &PgChoice) -> Result<PgStore, Error> {
    let at = |e| placed(&choice.queue, e);
    let mut store = PgStore::open(&choice.target, choice.queue.clone()).map_err(at)?;
    // A command someone waits for gets the timeouts a runner's connection has: a statement
    // stuck on a server that stopped answering, or a row lock a host's transaction keeps, ends
    // it with an error rather than hang it.
    pg::connect::guard_session(store.client(), &choice.target).map_err(at)?;
    Ok(store)
}

/// `hookq init`'s part: connects, creates or upgrades the schema and the queue's row; the
/// schema version the database is at now.
pub(super) fn set_up(choice: &PgChoice) -> Result<i64, Error> {
    let mut store = open(choice)?;
    pg::schema::applied_version(store.client())
        .map_err(|e| placed(&choice.queue, e))
        .map(|v| v.unwrap_or_else(pg::schema::schema_version))
}

/// Takes the queue's runner lock, waiting as `wait` says and ending the wait on a stop request,
/// with the lease `HOOKQ_LEASE_MS` sets.
fn take_lock(store: &PgStore, wait: Wait, stop: &Stop) -> Result<Option<PgRunnerLock>, Error> {
    PgRunnerLock::acquire_with(
        store.target(),
        store.queue(),
        wait,
        &|| !stop.graceful(),
        lease()?,
    )
    .map_err(|e| placed(store.queue(), e))
}

/// Why the queue's runner lock was not taken: a stop request, or its holder.
fn not_taken(ws: &Workspace, store: &mut PgStore, stop: &Stop) -> Error {
    if stop.graceful() {
        return QueueError::Stopped {
            path: ws.lock_path(),
        }
        .into();
    }
    let queue = store.queue().clone();
    let holder = pg::holder(store.client(), &queue)
        .ok()
        .flatten()
        .map(|h| h.to_string());
    placed(&queue, PgError::Locked { holder })
}

/// The workspace's `runner.lock`, after the queue's: the drain's proof that it runs hooks here
/// alone, and the owner of the process groups it starts.
fn file_lock(ws: &Workspace, wait: Wait, stop: &Stop) -> Result<Option<RunnerLock>, Error> {
    Ok(RunnerLock::acquire(&ws.lock_path(), wait, &|| {
        !stop.graceful()
    })?)
}

/// `hookq run`: one pass over the queue.
pub(super) fn run(ws: &Workspace, choice: &PgChoice, jobs: usize, wait: Wait) -> Result<(), Error> {
    let stop = stop_on_signals();
    // `--wait N` bounds the whole wait, for both locks together.
    let deadline = match wait {
        Wait::For(d) => Instant::now().checked_add(d),
        _ => None,
    };
    let left = || match (wait, deadline) {
        (Wait::For(_), Some(d)) => Wait::For(d.saturating_duration_since(Instant::now())),
        (wait, _) => wait,
    };
    let mut store = open(choice)?;
    let Some(queue_lock) = take_lock(&store, left(), stop)? else {
        return Err(not_taken(ws, &mut store, stop));
    };
    let path = ws.lock_path();
    let Some(lock) = file_lock(ws, left(), stop)? else {
        if stop.graceful() {
            return Err(QueueError::Stopped { path }.into());
        }
        let holder = lock::holder(&path);
        return Err(QueueError::Locked { path, holder }.into());
    };
    let mut queue = PgQueue::new(store, queue_lock).map_err(|e| placed(&choice.queue, e))?;
    let mut drainer = Drainer::new(ws.clone(), stop).jobs(jobs);
    if let Ok(cfg) = drainer.config() {
        super::app::warn_config(&cfg);
    }
    let report = drainer.drain_and_release(&mut queue, lock)?;
    let mut store = queue.release().map_err(|e| placed(&choice.queue, e))?;
    if let Some(line) = output::ran(&report) {
        outln!("{line}");
    }
    output::held(&report);
    output::paused(&report, || pending_count(&mut store));
    Ok(())
}

/// How many points the queue of `store` holds pending; `None` when that cannot be read.
fn pending_count(store: &mut PgStore) -> Option<i64> {
    let queue = store.queue().clone();
    pg::store::stats(store.client(), &queue)
        .ok()
        .map(|s| s.pending)
}

/// `hookq hub`: the library's hub on PostgreSQL ([`hub::run_postgres`]), which holds the
/// queue's runner lock for as long as it runs, drains on every commit, and outlives outages of
/// the database, saying so in one `warning:` line per outage.
pub(super) fn hub(
    ws: &Workspace,
    choice: &PgChoice,
    drainer: &mut Drainer<'_>,
    stop: &Stop,
    opts: HubOptions,
    poll_interval: std::time::Duration,
    counts: Option<&HubMetrics>,
) -> Result<(), Error> {
    let opts = hub::PgHubOptions {
        hub: opts,
        lease: lease()?,
        poll_interval,
        ..hub::PgHubOptions::default()
    };
    let target = &choice.target;
    // A connection after a loss is a reconnection; one after a first refusal is not.
    let mut lost = false;
    let mut on_event = |event| match event {
        HubEvent::PassFailed(e) => errln!("error: {e}"),
        HubEvent::CannotReachYet(e) => errln!(
            "warning: hub cannot reach the queue's database {target} yet; trying again with backoff: {e}"
        ),
        HubEvent::Lost(e) => {
            lost = true;
            errln!(
                "warning: hub lost the queue's database {target}; connecting again with backoff: {e}"
            )
        }
        HubEvent::Connected => {
            if std::mem::take(&mut lost)
                && let Some(c) = counts
            {
                c.reconnected();
            }
            tracing::info!("the hub is connected again to {target}")
        }
        HubEvent::TookOver(t) => {
            if let Some(c) = counts {
                c.took_over(t.ended_expired);
            }
            tracing::info!("the hub took the queue's runner lock over from another holder")
        }
    };
    Ok(hub::run_postgres(
        ws,
        target,
        &choice.queue,
        drainer,
        stop,
        opts,
        &mut on_event,
    )?)
}

/// What `hookq check` says of the queue's database.
#[derive(Debug, serde::Serialize)]
pub(super) struct Checked {
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

/// Connects to the queue's database and reads its versions, changing nothing. A failure is
/// returned beside what could be said without the server, so that `check` still shows the
/// config before it reports it.
pub(super) fn check(choice: &PgChoice) -> (Checked, Option<Error>) {
    let mut checked = Checked {
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
            let e = placed(&choice.queue, e);
            checked.error = Some(e.to_string());
            (checked, Some(e))
        }
    }
}
