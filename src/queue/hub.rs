//! `hookq hub`: take the lock, drain, release, wait for the next commit.

use std::time::{Duration, Instant};

use crate::exec::Stop;
use crate::queue::config::FileVersion;
use crate::queue::drain::{DrainError, Drainer};
use crate::queue::lock::{LockError, RunnerLock, Wait};
use crate::queue::store::{Store, StoreError};
use crate::queue::workspace::Workspace;

/// Hub settings.
#[derive(Debug, Clone, Copy)]
pub struct HubOptions {
    /// How often to look for a commit by another process (`PRAGMA data_version`).
    pub poll: Duration,
    /// Drain at least this often even when nothing seems to have changed.
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

/// What ends a hub.
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    /// The lock file cannot be opened or locked.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// The database cannot be read at all.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Runs the hub until `stop` is requested. A pass that fails (an invalid config, a busy
/// database) is reported through `on_error` as one line and retried when something changes;
/// only a failure to take the lock or to read the database ends the hub.
pub fn run(
    ws: &Workspace,
    store: &mut Store,
    drainer: &mut Drainer<'_>,
    stop: &Stop,
    opts: HubOptions,
    on_error: &mut dyn FnMut(DrainError),
) -> Result<(), HubError> {
    let config_path = ws.config_path();
    loop {
        if stop.graceful() {
            return Ok(());
        }
        let seen_version = store.data_version()?;
        let seen_config = FileVersion::of(&config_path);
        let Some(lock) = RunnerLock::acquire(&ws.lock_path(), Wait::Forever, &|| !stop.graceful())?
        else {
            return Ok(());
        };
        let stopped = match drainer.drain(store, &lock) {
            Ok(report) => report.stopped,
            Err(e) => {
                on_error(e);
                false
            }
        };
        drop(lock);
        if stopped {
            return Ok(());
        }
        let since = Instant::now();
        loop {
            if stop.graceful() {
                return Ok(());
            }
            std::thread::sleep(opts.poll);
            if store.data_version()? != seen_version
                || FileVersion::of(&config_path) != seen_config
                || since.elapsed() >= opts.rescan
            {
                break;
            }
        }
    }
}
