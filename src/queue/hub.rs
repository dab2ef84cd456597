//! `hookq hub`: take the lock, drain, release, wait for the next commit.
//!
//! [`run_queue`] is the hub of a workspace's queue on whichever database holds it, one call
//! for a host and for `hookq hub`, reporting what happens as [`HubEvent`]s. [`run`] is its
//! loop over one store already open, whose runner lock the caller holds on PostgreSQL, waiting
//! between passes on the queue's [`Watcher`], the one the web view's live updates use.

use std::time::{Duration, Instant};

use crate::exec::Stop;
use crate::queue::backend::QueueStore;
use crate::queue::config::{FileVersion, QUIET};
use crate::queue::drain::Drainer;
use crate::queue::error::Error;
use crate::queue::lock::{RunnerLock, Wait};
use crate::queue::options::Options;
use crate::queue::store::Store;
use crate::queue::watch::Watcher;
use crate::queue::workspace::Workspace;

/// How often a hub's watcher reads a SQLite queue's mark where the kernel cannot tell of writes
/// to the queue's files, unless `--poll-ms` or [`Options::poll`] says otherwise. With the
/// kernel's word a write wakes the hub at once, and the watcher reads every
/// [`SQLITE_COVER`](crate::queue::watch::SQLITE_COVER) (or this, if longer) without one.
pub const SQLITE_HUB_POLL: Duration = Duration::from_millis(50);
/// How often a hub's watcher reads a PostgreSQL queue's mark when no notification came, unless
/// `--poll-ms` or [`Options::poll`] says otherwise: the longest a commit waits for a hub when
/// nobody notified the hubs of it (a host that does not call `notify_hubs` after its commits,
/// or a notification lost with a connection).
pub const PG_HUB_POLL: Duration = Duration::from_secs(1);

/// Hub settings.
#[derive(Debug, Clone, Copy)]
pub struct HubOptions {
    /// How often the hub's [`Watcher`] reads the queue's mark, looking for a commit by another
    /// process (on PostgreSQL, when no notification came; on SQLite, when no write to the
    /// queue's files woke it, at most this often), and how often a hub on PostgreSQL checks
    /// that it still holds the runner lock. [`run_queue`] takes it from
    /// [`Options::poll`] when that is set, and on PostgreSQL from [`Options::poll_for`].
    pub poll: Duration,
    /// Drain at least this often even when nothing seems to have changed (sooner when a pass
    /// left points for a settled config: see [`PassReport::held`](crate::queue::PassReport)).
    pub rescan: Duration,
    /// On PostgreSQL, the first wait before connecting again after an outage; each next one
    /// is twice as long.
    pub backoff_first: Duration,
    /// On PostgreSQL, the longest wait before connecting again.
    pub backoff_max: Duration,
}

impl Default for HubOptions {
    fn default() -> Self {
        Self {
            poll: SQLITE_HUB_POLL,
            rescan: Duration::from_secs(60),
            backoff_first: Duration::from_millis(500),
            backoff_max: Duration::from_secs(30),
        }
    }
}

/// What a hub reports while it runs, for its host to show and its metrics to count
/// (`hookq::metrics::HubMetrics::observe`, with the `ui` feature). On SQLite a hub attaches and
/// its passes may fail; the others are a PostgreSQL hub's, which outlives outages of its
/// database.
#[derive(Debug)]
pub enum HubEvent {
    /// A pass failed (an invalid config, a busy database or row); the hub goes on and drains
    /// again when something changes.
    PassFailed(Error),
    /// The hub has not reached the database yet (its first connection failed) with an outage
    /// that may pass: it waits for the database, connecting again with backoff. Said once,
    /// until it is connected.
    CannotReachYet {
        /// The database, its password masked.
        database: String,
        /// Why.
        error: Error,
    },
    /// The hub lost the database it had reached (a connection, or the runner lock with it):
    /// it connects again with backoff, and points it had not cleared run again once it is
    /// back. Said once per outage.
    Lost {
        /// The database, its password masked.
        database: String,
        /// Why.
        error: Error,
    },
    /// Connected, holding the runner lock, after [`HubEvent::CannotReachYet`] or
    /// [`HubEvent::Lost`].
    Connected {
        /// The database, its password masked.
        database: String,
        /// Whether it had been connected before the outage ([`HubEvent::Lost`]): a
        /// reconnection.
        again: bool,
    },
    /// The hub took the runner lock after waiting for another holder: it takes the queue over
    /// from a hub that stopped, died or froze (or from its own session of before an outage,
    /// which the server had not ended yet).
    TookOver {
        /// Whether the hub ended that holder's session itself, its lease having run out,
        /// rather than the holder letting go.
        ended_expired: bool,
    },
    /// The hub holds what it needs to drain, said once, the first time: its store is open
    /// (and on PostgreSQL, connected, it holds the queue's runner lock). A readiness probe
    /// waits for it.
    Attached,
}

/// Runs the hub of `ws`'s queue until `stop` is requested, on the database `options` and the
/// workspace's config name (the SQLite file, or a PostgreSQL queue, whose runner lock it holds
/// with `options.lease` for as long as it runs and whose outages it waits out). Each pass runs
/// `drainer`; what happens meanwhile is told to `on_event`. It ends with an error only on a
/// failure that waiting does not mend: the lock cannot be taken, the database cannot be read,
/// or on PostgreSQL a refused password, a missing database, a schema from a newer hookq.
pub fn run_queue(
    ws: &Workspace,
    options: &Options,
    drainer: &mut Drainer<'_>,
    stop: &Stop,
    opts: HubOptions,
    on_event: &mut dyn FnMut(HubEvent),
) -> Result<(), Error> {
    #[cfg(feature = "postgres")]
    if let Some(choice) = crate::queue::pg::choose(ws, options.database_url.as_deref())? {
        tracing::info!(
            "hub draining queue {} on {} (pid {})",
            choice.queue,
            choice.target,
            std::process::id()
        );
        let lease = crate::queue::pg::Lease {
            duration: options.lease,
        };
        let opts = HubOptions {
            poll: options.poll_for(true),
            ..opts
        };
        return crate::queue::pg::hub::run(
            ws,
            &choice.target,
            &choice.queue,
            drainer,
            stop,
            opts,
            lease,
            on_event,
        );
    }
    let db = ws.db_path();
    let mut store = Store::open_with(&db, options.store).map_err(|e| Error::store(&db, e))?;
    let mut watcher = Watcher::sqlite(db.clone(), options.store)?;
    on_event(HubEvent::Attached);
    tracing::info!(
        "hub draining {} (pid {})",
        ws.root().display(),
        std::process::id()
    );
    let opts = HubOptions {
        poll: options.poll.unwrap_or(opts.poll),
        ..opts
    };
    run(ws, &mut store, &mut watcher, drainer, stop, opts, &mut |e| {
        on_event(HubEvent::PassFailed(e))
    })
}

/// Runs the hub over `store` until `stop` is requested, waiting between passes on `watcher`,
/// a watcher of the same queue ([`Queue::watcher`](crate::queue::Queue::watcher)), which it
/// reads every `opts.poll`. It drains again when the watcher sees a change (a commit by
/// another process; on PostgreSQL also a notification on the queue's channel), when
/// config.toml changes, every `opts.rescan`, and at once when another process committed a
/// point while the pass ran ([`QueueStore::change_mark`]). A pass that fails (an invalid
/// config, a busy database) is reported through `on_error` as one line and retried when
/// something changes; a watcher that cannot read the queue retries on its own. Only a failure
/// to take the lock ([`Error::Lock`]), to read the database, or on PostgreSQL to keep the
/// runner lock ([`QueueStore::check_held`]) ends the hub.
pub fn run<S: QueueStore>(
    ws: &Workspace,
    store: &mut S,
    watcher: &mut Watcher,
    drainer: &mut Drainer<'_>,
    stop: &Stop,
    opts: HubOptions,
    on_error: &mut dyn FnMut(Error),
) -> Result<(), Error> {
    let config_path = ws.config_path();
    watcher.set_poll(opts.poll);
    watcher.prompt();
    // Whether this pass followed the last at once, for a commit seen while that one ran.
    let mut again = false;
    loop {
        if stop.graceful() {
            return Ok(());
        }
        let seen = store.change_mark()?;
        let seen_config = FileVersion::of(&config_path);
        let Some(lock) = RunnerLock::acquire(&ws.lock_path(), Wait::Forever, &|| !stop.graceful())?
        else {
            return Ok(());
        };
        let (stopped, retry_in) = match drainer.drain(store, &lock) {
            Ok(report) => {
                if report.held > 0 {
                    tracing::info!(
                        "{} point(s) left pending until config.toml has gone unmodified for {:?}",
                        report.held,
                        QUIET
                    );
                }
                if report.paused {
                    // Resuming is a commit, which ends the wait below.
                    tracing::info!("the queue is paused; waiting for `hookq queue resume`");
                }
                (report.stopped, report.retry_in)
            }
            Err(e) => {
                on_error(e);
                (false, None)
            }
        };
        drop(lock);
        if stopped {
            return Ok(());
        }
        // The pass's own clears and starts are changes to the watcher too: settled first, it
        // tells only of what comes after. What another process committed while the pass ran
        // moved the store's mark, read after the watcher's so that no commit falls between.
        // A notification that came meanwhile stays for the watcher's next step. A commit
        // nobody notified drains again at once, but once in a row: on PostgreSQL the mark also
        // moves with writers of other queues, and a hub that drained again at once for each of
        // those would spin while they write; after that, it is looked for at the next poll.
        watcher.settle();
        // A notification heard meanwhile has the watcher's next step start a pass at once,
        // which takes the commit it announces: the mark is not read for it, and no pass added.
        let moved = !watcher.news_waiting() && store.change_mark()? != seen;
        if moved && !again {
            again = true;
            continue;
        }
        again = false;
        // Points held for a settled config are decided by the pass after it settled, even when
        // nothing else changes meanwhile.
        let mut rescan = retry_in.map_or(opts.rescan, |r| r.min(opts.rescan));
        if moved {
            rescan = rescan.min(opts.poll);
        }
        let since = Instant::now();
        let mut checked: Option<Instant> = None;
        loop {
            if stop.graceful() {
                return Ok(());
            }
            // At once after a pass (which may have failed on a lost connection), then every poll.
            if checked.is_none_or(|c| c.elapsed() >= opts.poll) {
                store.check_held()?;
                checked = Some(Instant::now());
            }
            if watcher.step(stop)
                || FileVersion::of(&config_path) != seen_config
                || since.elapsed() >= rescan
            {
                break;
            }
        }
    }
}
