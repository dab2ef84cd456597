//! The CLI's error: what the user sees (`error: …`, `hint: …`); each failure's exit code comes
//! from the library's [`hookq::Failure`].

use std::path::PathBuf;
use std::process::ExitCode;

use hookq::Failure as _;
use hookq::exec::ExecError;
use hookq::failure::code;
use hookq::queue::config::ConfigError;
use hookq::queue::drain::DrainError;
use hookq::queue::hub::HubError;
use hookq::queue::lock::LockError;
use hookq::queue::store::StoreError;

/// A failure of a `hookq` command.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad usage.
    #[error("{0}")]
    Usage(String),
    /// Something named was not found.
    #[error("{0}")]
    NotFound(String),
    /// The config is invalid.
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
    /// The runner lock failed.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// The lock was still held when `--wait` ran out.
    #[error("runner lock {} is held{holder}", path.display())]
    Locked {
        /// The lock file.
        path: PathBuf,
        /// ` by pid N since T`, when known.
        holder: String,
    },
    /// A stop request ended the command before it could do its work.
    #[error("{0}")]
    Stopped(String),
    /// A command could not be run.
    #[error(transparent)]
    Exec(#[from] ExecError),
    /// A worktree lifecycle command failed.
    #[error(transparent)]
    Lifecycle(#[from] hookq::lifecycle::Error),
    /// A failure already printed, as the JSON document on stdout (`--json`): stderr does not
    /// say it again. The exit code.
    #[error("the failure was printed as JSON on stdout")]
    Reported(u8),
    /// The config `hookq check` validated is invalid.
    #[error(transparent)]
    Checked(ConfigError),
    /// Another I/O failure.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// A store error, located at the database `path`. What was not found is named with the
    /// database it was looked for in: with `-C` in a cron line, which workspace matters.
    pub fn store(path: impl Into<PathBuf>, source: StoreError) -> Self {
        match source {
            StoreError::NoTask(_) | StoreError::NoEntry(_) | StoreError::NoHistory(_) => {
                Error::NotFound(format!("{source} in {}", path.into().display()))
            }
            StoreError::TaskExists(_) | StoreError::Invalid(_) => Error::Usage(source.to_string()),
            source => Error::Store {
                path: path.into(),
                source,
            },
        }
    }

    /// A drain error, located.
    pub fn drain(db: impl Into<PathBuf>, e: DrainError) -> Self {
        match e {
            DrainError::Config(c) => Error::Config(c),
            DrainError::Store(s) => Error::store(db, s),
            DrainError::Exec(x) => Error::Exec(x),
            DrainError::Lock(l) => Error::Lock(l),
        }
    }

    /// A hub error, located.
    pub fn hub(db: impl Into<PathBuf>, e: HubError) -> Self {
        match e {
            HubError::Lock(l) => Error::Lock(l),
            HubError::Store(s) => Error::store(db, s),
        }
    }

    /// The process exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) => code::USAGE,
            Error::NotFound(_) => code::NOT_FOUND,
            Error::Config(_) => code::CONFIG,
            Error::Store { source, .. } => match source {
                StoreError::Sqlite(_) | StoreError::Io { .. } | StoreError::BadRow(_) => {
                    code::FAILURE
                }
                _ => code::DATABASE,
            },
            Error::Locked { .. } | Error::Stopped(_) => code::LOCKED,
            Error::Lock(_) | Error::Exec(_) | Error::Io { .. } => code::FAILURE,
            Error::Lifecycle(e) => e.exit_code(),
            Error::Reported(code) => *code,
            Error::Checked(_) => code::CONFIG,
        }
    }

    /// A line of advice, where one helps.
    pub fn hint(&self) -> Option<String> {
        match self {
            Error::Lifecycle(e) => e.hint(),
            Error::NotFound(m) if m.starts_with("no hookq workspace") => {
                Some("run `hookq init` in the repository root, or pass -C DIR".into())
            }
            Error::Config(ConfigError::Read { .. }) | Error::Checked(ConfigError::Read { .. }) => {
                Some("`hookq init` writes a config.toml".into())
            }
            Error::Checked(_) => Some("no hook runs and nothing pending is cleared until the file is fixed".into()),
            Error::Config(_) => Some("no hook runs and nothing pending is cleared until the file is fixed; `hookq check` validates it".into()),
            Error::Store { source: StoreError::Busy(_), .. } => {
                Some("another process holds a write transaction; nothing was written, try again".into())
            }
            Error::Store { source: StoreError::Corrupt(_), .. } => {
                Some("restore arc.db from a backup; hookq does not repair or replace it".into())
            }
            Error::Store { source: StoreError::NewerSchema { .. }, .. } => {
                Some("a newer hookq migrated this database; use that version".into())
            }
            Error::Store { source: StoreError::Full(_) | StoreError::DiskIo(_), .. } => {
                Some("free some space (or raise the file-size limit); nothing was written".into())
            }
            Error::Store { source: StoreError::StartLog { action: "write", .. }, .. } => {
                Some("a pass logs each point's start in arc.db-starts before its first command; free some space or let hookq write the state dir (.radian/arc). The point did not start and stays pending".into())
            }
            Error::Store { source: StoreError::StartLog { .. }, .. } => {
                Some("hookq keeps the starts of running points in arc.db-starts beside the database and must read and write it; nothing pending was lost".into())
            }
            Error::Store { source: StoreError::ReadOnly(_) | StoreError::CannotOpen(_), .. } => {
                Some("hookq needs to write the state dir (.radian/arc) and the files in it".into())
            }
            Error::Locked { .. } => Some("a hub or another pass is draining; pending points stay queued for it".into()),
            _ => None,
        }
    }

    /// Prints `error: …` (and `hint: …`) on stderr and returns the exit code.
    pub fn report(&self) -> ExitCode {
        if let Error::Reported(code) = self {
            return ExitCode::from(*code);
        }
        errln!("error: {self}");
        if let Error::Lifecycle(e) = self {
            for line in e.more() {
                errln!("{line}");
            }
        }
        if let Some(h) = self.hint() {
            errln!("hint: {h}");
        }
        ExitCode::from(self.exit_code())
    }
}
