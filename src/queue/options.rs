//! How a queue is reached and held: [`Options`], read from the environment in one place
//! ([`Options::from_env`]) or built by a host by hand. Nothing deeper in the library reads a
//! variable: a pass, the hub and the web view take these.

use std::ffi::OsString;
use std::time::Duration;

use crate::queue::error::Error;
use crate::queue::store::StoreOptions;

/// The variable that names a PostgreSQL database for the queue, overriding the config's.
pub const DATABASE_ENV: &str = "HOOKQ_DATABASE_URL";
/// The variable that sets how long an SQLite write waits for another writer, in ms.
pub const BUSY_TIMEOUT_ENV: &str = "HOOKQ_BUSY_TIMEOUT_MS";
/// The variable that sets the PostgreSQL runner lock's lease, in ms.
pub const LEASE_ENV: &str = "HOOKQ_LEASE_MS";

/// The runner lock's lease on PostgreSQL unless told otherwise: with renewals every quarter of
/// it, a holder may miss three before another breaks it.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(20);

/// How a queue is opened, locked and watched, whichever database holds it.
#[derive(Debug, Clone)]
pub struct Options {
    /// A PostgreSQL database URL that overrides the workspace's config, as
    /// `HOOKQ_DATABASE_URL` does; `None` to go by the config alone. Without the `postgres`
    /// feature it is not read.
    pub database_url: Option<String>,
    /// The SQLite store's options: its busy timeout (`HOOKQ_BUSY_TIMEOUT_MS`), how long a
    /// write waits for another writer.
    pub store: StoreOptions,
    /// The PostgreSQL runner lock's lease (`HOOKQ_LEASE_MS`): how long a frozen or cut-off
    /// holder keeps the queue.
    pub lease: Duration,
    /// How often the hub looks for commits nobody announced; `None` for the database's
    /// default (on SQLite, where a write to the queue's files wakes the hub, once a second or
    /// this if longer, and 50 ms where the kernel cannot tell of writes; 1 s on PostgreSQL,
    /// whose commits by hookq wake the hub at once).
    pub poll: Option<Duration>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            database_url: None,
            store: StoreOptions::default(),
            lease: DEFAULT_LEASE,
            poll: None,
        }
    }
}

impl Options {
    /// The options the environment sets: `HOOKQ_DATABASE_URL`, `HOOKQ_BUSY_TIMEOUT_MS` and
    /// `HOOKQ_LEASE_MS`, the defaults for what is unset. A value out of its range is an
    /// [`Error::Invalid`] naming the variable.
    pub fn from_env() -> Result<Self, Error> {
        Self::from_vars(|name| std::env::var_os(name))
    }

    /// [`Options::from_env`] over `var`, which looks a variable up.
    pub fn from_vars(var: impl Fn(&str) -> Option<OsString>) -> Result<Self, Error> {
        let mut opts = Self {
            database_url: var(DATABASE_ENV).and_then(|v| v.into_string().ok()),
            ..Self::default()
        };
        if let Some(ms) = millis(&var, BUSY_TIMEOUT_ENV, 1)? {
            opts.store.busy_timeout = ms;
        }
        if let Some(ms) = millis(&var, LEASE_ENV, 1000)? {
            opts.lease = ms;
        }
        Ok(opts)
    }

    /// The hub's poll on a queue in SQLite (`postgres` false) or PostgreSQL.
    pub fn poll_for(&self, postgres: bool) -> Duration {
        self.poll.unwrap_or(if postgres {
            crate::queue::hub::PG_HUB_POLL
        } else {
            crate::queue::hub::SQLITE_HUB_POLL
        })
    }
}

/// The milliseconds from `least` to 3600000 that variable `name` sets; `None` when it is unset.
fn millis(
    var: &impl Fn(&str) -> Option<OsString>,
    name: &str,
    least: u64,
) -> Result<Option<Duration>, Error> {
    let Some(v) = var(name) else {
        return Ok(None);
    };
    v.to_str()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .filter(|ms| (least..=3_600_000).contains(ms))
        .map(|ms| Some(Duration::from_millis(ms)))
        .ok_or_else(|| {
            Error::Invalid(format!(
                "{name}={v:?}: expected milliseconds from {least} to 3600000"
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(vars: &[(&str, &str)]) -> Result<Options, Error> {
        Options::from_vars(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        })
    }

    #[test]
    fn the_environment_sets_each_option() {
        let o = from(&[
            (DATABASE_ENV, "postgres://h/db"),
            (BUSY_TIMEOUT_ENV, "300"),
            (LEASE_ENV, "3000"),
        ])
        .unwrap();
        assert_eq!(o.database_url.as_deref(), Some("postgres://h/db"));
        assert_eq!(o.store.busy_timeout, Duration::from_millis(300));
        assert_eq!(o.lease, Duration::from_secs(3));
        let d = from(&[]).unwrap();
        assert_eq!(d.database_url, None);
        assert_eq!(d.lease, DEFAULT_LEASE);
    }

    #[test]
    fn a_value_out_of_range_names_its_variable() {
        for (name, bad) in [(BUSY_TIMEOUT_ENV, "0"), (LEASE_ENV, "5"), (LEASE_ENV, "soon")] {
            let e = from(&[(name, bad)]).unwrap_err().to_string();
            assert!(e.contains(name) && e.contains("to 3600000"), "{e}");
        }
    }
}
