//! `hookq hub`: take the lock, drain, release, wait for the next commit.

use std::time::{Duration, Instant};

use crate::exec::Stop;
use crate::queue::backend::QueueStore;
use crate::queue::config::{FileVersion, QUIET};
use crate::queue::drain::Drainer;
use crate::queue::error::Error;
use crate::queue::lock::{RunnerLock, Wait};
use crate::queue::workspace::Workspace;

/// The hub of a queue on PostgreSQL, which rides out outages of its database.
#[cfg(feature = "postgres")]
pub use crate::queue::pg::hub::{HubEvent, PgHubOptions, run_postgres};

/// Hub settings.
#[derive(Debug, Clone, Copy)]
pub struct HubOptions {
    /// How often to look for a commit by another process ([`QueueStore::wait_for_change`]).
    pub poll: Duration,
    /// Drain at least this often even when nothing seems to have changed (sooner when a pass
    /// left points for a settled config: see [`PassReport::held`](crate::queue::PassReport)).
    pub rescan: Duration,
}

impl Default for HubOptions {
    fn default() -> Self {
        Self {
            poll: Duration::from_millis(50),
            rescan: Duration::from_secs(60),
        }
    }
}

/// Runs the hub until `stop` is requested. A pass that fails (an invalid config, a busy
/// database) is reported through `on_error` as one line and retried when something changes;
/// only a failure to take the lock ([`Error::Lock`]) or to read the database ends the hub.
pub fn run<S: QueueStore>(
    ws: &Workspace,
    store: &mut S,
    drainer: &mut Drainer<'_>,
    stop: &Stop,
    opts: HubOptions,
    on_error: &mut dyn FnMut(Error),
) -> Result<(), Error> {
    let config_path = ws.config_path();
    loop {
        if stop.graceful() {
            return Ok(());
        }
        let seen_version = store.change_mark()?;
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
        // Points held for a settled config are decided by the pass after it settled, even when
        // nothing else changes meanwhile.
        let rescan = retry_in.map_or(opts.rescan, |r| r.min(opts.rescan));
        let since = Instant::now();
        loop {
            if stop.graceful() {
                return Ok(());
            }
            if store.wait_for_change(seen_version, opts.poll)?
                || FileVersion::of(&config_path) != seen_config
                || since.elapsed() >= rescan
            {
                break;
            }
        }
    }
}
