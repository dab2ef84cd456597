//! The queue's error: every failure a façade call of the queue reports, each a variant of its
//! own, with the exit code and the advice a command gives for it ([`crate::Failure`]).

use std::path::PathBuf;

use crate::exec::ExecError;
use crate::failure::{Failure, code};
use crate::queue::config::ConfigError;
use crate::queue::driver::Place;
use crate::queue::lock::{Holder, LockError};
use crate::queue::row_error::RowError;
use crate::queue::store::StoreError;
use crate::queue::workspace::NotFound;

/// A failure of the durable hook queue.
///
/// A store failure is named with its database ([`Error::store`] places it): with `-C` in a cron
/// line, which workspace failed matters.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No workspace was found, or its state dir cannot be looked at.
    #[error(transparent)]
    Workspace(#[from] NotFound),
    /// `config.toml` is missing or invalid: no hook runs until it is fixed.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The database failed.
    #[error("{}: {source}", path.display())]
    Store {
        /// The database file.
        path: PathBuf,
        /// What failed.
        #[source]
        source: StoreError,
    },
    /// No such task in the queue.
    #[error("no task {task} in {place}")]
    NoTask {
        /// The task id as given.
        task: String,
        /// The queue looked in.
        place: Place,
    },
    /// No pending occurrence with this id.
    #[error("no pending occurrence {id} in {place}")]
    NoOccurrence {
        /// The occurrence id.
        id: i64,
        /// The queue looked in.
        place: Place,
    },
    /// No history row with this id.
    #[error("no history row {id} in {place}")]
    NoHistory {
        /// The history id.
        id: i64,
        /// The queue looked in.
        place: Place,
    },
    /// The task exists already.
    #[error("task {0} exists already")]
    TaskExists(String),
    /// A value given by the caller is not valid (a merged sha, a busy timeout).
    #[error("{0}")]
    Invalid(String),
    /// The runner lock file cannot be opened, locked or written.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// The runner lock was still held when the wait for it ran out.
    #[error("runner lock {} is held{}", path.display(), holder.as_ref().map(|h| format!(" by {h}")).unwrap_or_default())]
    Locked {
        /// The lock file.
        path: PathBuf,
        /// Who holds it, when its file says.
        holder: Option<Holder>,
    },
    /// A stop request ended the wait for the runner lock: no hook ran.
    #[error("stopped by a signal while waiting for runner lock {}; no hook ran", path.display())]
    Stopped {
        /// The lock file.
        path: PathBuf,
    },
    /// A command could not be run for a reason outside the hook (its log cannot be written).
    #[error(transparent)]
    Exec(#[from] ExecError),
    /// A task's hook log folder cannot be read.
    #[error("cannot read hook logs in {}: {source}", path.display())]
    Logs {
        /// The folder.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A worker of a parallel pass panicked while it ran a point (a bug in hookq): the pass
    /// ends once the other workers' points finished, and that point stays pending.
    #[error(
        "a worker of the pass panicked running {point} for task {task} (occurrence {id}): {message}; the point stays pending"
    )]
    WorkerPanicked {
        /// The point's name.
        point: String,
        /// The point's task.
        task: String,
        /// The occurrence id.
        id: i64,
        /// What the panic said.
        message: String,
    },
    /// The queue's PostgreSQL database failed.
    #[cfg(feature = "postgres")]
    #[error("{}: {source}", place.short())]
    Postgres {
        /// The queue: its name and its database's masked connection string (boxed, so that
        /// every `Result` of the queue stays small).
        place: Box<Place>,
        /// What failed.
        #[source]
        source: crate::queue::pg::PgError,
    },
}

impl Error {
    /// `source`, a failure of the database at `path`: what was not found or was refused gets a
    /// variant of its own, anything else is [`Error::Store`].
    pub fn store(path: impl Into<PathBuf>, source: StoreError) -> Self {
        let db = path.into();
        let place = || Place::Sqlite(db.clone());
        match source {
            StoreError::Row(RowError::NoTask(task)) => Error::NoTask {
                task,
                place: place(),
            },
            StoreError::Row(RowError::NoOccurrence(id)) => Error::NoOccurrence { id, place: place() },
            StoreError::Row(RowError::NoHistory(id)) => Error::NoHistory { id, place: place() },
            StoreError::Row(RowError::TaskExists(task)) => Error::TaskExists(task),
            StoreError::Row(RowError::Invalid(message)) => Error::Invalid(message),
            source => Error::Store { path: db, source },
        }
    }
}

impl Failure for Error {
    fn exit_code(&self) -> u8 {
        match self {
            Error::Workspace(NotFound::Missing { .. } | NotFound::Start { .. })
            | Error::NoTask { .. }
            | Error::NoOccurrence { .. }
            | Error::NoHistory { .. } => code::NOT_FOUND,
            Error::TaskExists(_) | Error::Invalid(_) => code::USAGE,
            Error::Config(_) => code::CONFIG,
            Error::Store { source, .. } => match source {
                // A stored value that is not valid is the database's failure on PostgreSQL,
                // an internal one on SQLite.
                StoreError::Sqlite(_)
                | StoreError::Io { .. }
                | StoreError::Row(RowError::BadRow(_)) => code::FAILURE,
                StoreError::Row(e) => e.exit_code(),
                _ => code::DATABASE,
            },
            Error::Locked { .. } | Error::Stopped { .. } => code::LOCKED,
            Error::Workspace(NotFound::Access { .. })
            | Error::Lock(_)
            | Error::Exec(_)
            | Error::Logs { .. }
            | Error::WorkerPanicked { .. } => code::FAILURE,
            #[cfg(feature = "postgres")]
            Error::Postgres { source, .. } => source.exit_code(),
        }
    }

    fn hint(&self) -> Option<String> {
        let hint = match self {
            Error::Workspace(NotFound::Missing { .. }) => {
                "run `hookq init` in the repository root, or pass -C DIR"
            }
            Error::Config(ConfigError::Read { .. }) => "`hookq init` writes a config.toml",
            Error::Config(_) => {
                "no hook runs and nothing pending is cleared until the file is fixed; `hookq check` validates it"
            }
            Error::Store {
                source: StoreError::Row(e),
                ..
            } => return e.hint(),
            Error::Store { source, .. } => store_hint(source)?,
            Error::Locked { .. } => {
                "a hub or another pass is draining; pending points stay queued for it"
            }
            #[cfg(feature = "postgres")]
            Error::Postgres { source, .. } => return source.hint(),
            _ => return None,
        };
        Some(hint.to_owned())
    }
}

/// The advice for a database failure, where one helps.
fn store_hint(source: &StoreError) -> Option<&'static str> {
    Some(match source {
        StoreError::Busy(_) => {
            "another process holds a write transaction; nothing was written, try again"
        }
        StoreError::Corrupt(_) => {
            "restore arc.db from a backup; hookq does not repair or replace it"
        }
        StoreError::NewerSchema { .. } => "a newer hookq migrated this database; use that version",
        StoreError::Full(_) | StoreError::DiskIo(_) => {
            "free some space (or raise the file-size limit); nothing was written"
        }
        StoreError::StartLog {
            action: "write", ..
        } => {
            "a pass logs each point's start in arc.db-starts before its first command; free some space or let hookq write the state dir (.radian/arc). The point did not start and stays pending"
        }
        StoreError::StartLog { .. } => {
            "hookq keeps the starts of running points in arc.db-starts beside the database and must read and write it; nothing pending was lost"
        }
        StoreError::ReadOnly(_) | StoreError::CannotOpen(_) => {
            "hookq needs to write the state dir (.radian/arc) and the files in it"
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_not_found_names_the_database_and_exits_4() {
        let db = PathBuf::from("/w/.radian/arc/arc.db");
        for (source, text) in [
            (
                StoreError::from(RowError::NoTask("t1".into())),
                "no task t1 in /w/.radian/arc/arc.db",
            ),
            (
                StoreError::from(RowError::NoOccurrence(7)),
                "no pending occurrence 7 in /w/.radian/arc/arc.db",
            ),
            (
                StoreError::from(RowError::NoHistory(9)),
                "no history row 9 in /w/.radian/arc/arc.db",
            ),
        ] {
            let e = Error::store(&db, source);
            assert_eq!(
                (e.to_string(), e.exit_code()),
                (text.to_owned(), code::NOT_FOUND)
            );
            assert_eq!(e.hint(), None);
        }
    }

    #[test]
    fn refused_input_is_usage_without_the_database() {
        let e = Error::store("/db", StoreError::from(RowError::TaskExists("t1".into())));
        assert_eq!(
            (e.to_string(), e.exit_code()),
            ("task t1 exists already".into(), code::USAGE)
        );
        let e = Error::store("/db", StoreError::from(RowError::Invalid("bad sha".into())));
        assert_eq!(
            (e.to_string(), e.exit_code()),
            ("bad sha".into(), code::USAGE)
        );
    }

    #[test]
    fn a_database_failure_is_placed_and_advised() {
        let e = Error::store("/db", StoreError::Corrupt("file is not a database".into()));
        assert_eq!(
            e.to_string(),
            "/db: database is corrupt or not a hookq database: file is not a database"
        );
        assert_eq!(e.exit_code(), code::DATABASE);
        assert!(e.hint().unwrap().starts_with("restore arc.db"));
        let e = Error::store("/db", StoreError::from(RowError::BadRow("x".into())));
        assert_eq!((e.exit_code(), e.hint()), (code::FAILURE, None));
    }

    #[test]
    fn the_missing_workspace_hint_comes_from_its_variant() {
        let e = Error::from(NotFound::Missing { start: "/w".into() });
        assert_eq!(e.exit_code(), code::NOT_FOUND);
        assert_eq!(
            e.hint().as_deref(),
            Some("run `hookq init` in the repository root, or pass -C DIR")
        );
        let e = Error::from(NotFound::Access {
            path: "/w/.radian/arc".into(),
            source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        });
        assert_eq!((e.exit_code(), e.hint()), (code::FAILURE, None));
        assert!(e.to_string().starts_with("cannot access /w/.radian/arc: "));
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn a_postgres_failure_carries_its_queue_and_masked_target() {
        use crate::queue::pg::{PgError, QueueName, Target};
        let target = Target::parse("postgres://hookq:s3cret@db.example/hq").unwrap();
        let queue = QueueName::new("q".to_owned()).unwrap();
        let e = Error::Postgres {
            place: Box::new(Place::postgres(&queue, &target)),
            source: PgError::Locked { holder: None },
        };
        assert_eq!(e.to_string(), "queue q: runner lock is held");
        let Error::Postgres { place, .. } = &e else {
            panic!("{e:?}");
        };
        let Place::Postgres {
            queue,
            target_masked,
        } = &**place
        else {
            panic!("{e:?}");
        };
        assert_eq!(queue, "q");
        assert!(target_masked.starts_with("postgres://hookq:***@db.example"), "{target_masked}");
        assert!(!format!("{e:?}").contains("s3cret"), "{e:?}");
    }

    #[test]
    fn a_held_lock_names_its_holder_when_known() {
        let path = PathBuf::from("/w/runner.lock");
        let e = Error::Locked {
            path: path.clone(),
            holder: None,
        };
        assert_eq!(e.to_string(), "runner lock /w/runner.lock is held");
        assert_eq!(e.exit_code(), code::LOCKED);
        let holder = Holder {
            pid: 42,
            started: "2026-01-01T00:00:00Z".into(),
            alive: true,
        };
        let e = Error::Locked {
            path,
            holder: Some(holder),
        };
        assert_eq!(
            e.to_string(),
            "runner lock /w/runner.lock is held by pid 42 since 2026-01-01T00:00:00Z"
        );
        let e = Error::Stopped {
            path: "/w/runner.lock".into(),
        };
        assert_eq!(e.exit_code(), code::LOCKED);
    }
}
