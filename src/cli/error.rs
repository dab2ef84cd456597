//! The CLI's error: what the user sees (`error: …`, `hint: …`); each failure's exit code comes
//! from the library's [`hookq::Failure`].

use std::path::PathBuf;
use std::process::ExitCode;

use hookq::Failure;
use hookq::failure::code;
use hookq::queue::StoreError;
use hookq::queue::config::ConfigError;
use hookq::queue::lock::LockError;

/// A failure of a `hookq` command.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad usage.
    #[error("{0}")]
    Usage(String),
    /// Something named was not found.
    #[error("{0}")]
    NotFound(String),
    /// The durable hook queue failed.
    #[error(transparent)]
    Queue(#[from] hookq::queue::Error),
    /// An agent tool hook command failed before it could give a decision.
    #[error(transparent)]
    Agent(#[from] hookq::agent::Error),
    /// A worktree lifecycle command failed.
    #[error(transparent)]
    Lifecycle(#[from] hookq::lifecycle::Error),
    /// The person at the terminal cancelled a question before anything was changed (Ctrl-C, or
    /// end of input).
    #[error("{0}")]
    Cancelled(String),
    /// A failure already printed as JSON on stdout (`--json`): nothing more is printed, and the
    /// command ends with this exit code.
    #[error("the failure was printed as JSON on stdout")]
    Reported(u8),
    /// `hookq check` found config.toml unreadable or invalid: its hint does not send the user to
    /// the command they just ran.
    #[error(transparent)]
    Checked(ConfigError),
    /// `hookq hub --metrics` could not serve its metrics.
    #[error(transparent)]
    Metrics(#[from] hookq::metrics::ServeError),
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
    /// A store error, located at the database `path`.
    pub fn store(path: impl Into<PathBuf>, source: StoreError) -> Self {
        Error::Queue(hookq::queue::Error::store(path, source))
    }

    /// The process exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) => code::USAGE,
            Error::NotFound(_) => code::NOT_FOUND,
            Error::Queue(e) => e.exit_code(),
            Error::Io { .. } | Error::Metrics(_) => code::FAILURE,
            Error::Lifecycle(e) => e.exit_code(),
            Error::Reported(code) => *code,
            // A stop before the command began: the code of a command a stop ended.
            Error::Cancelled(_) => code::HOOK_FAILED,
            Error::Checked(_) => code::CONFIG,
            Error::Agent(e) => e.exit_code(),
        }
    }

    /// Lines printed after the `error:` line (each problem of a refused plan).
    fn more(&self) -> Vec<String> {
        match self {
            Error::Queue(e) => e.more(),
            Error::Agent(e) => e.more(),
            Error::Lifecycle(e) => e.more(),
            _ => Vec::new(),
        }
    }

    /// A line of advice, where one helps.
    pub fn hint(&self) -> Option<String> {
        match self {
            Error::Agent(e) => e.hint(),
            Error::Lifecycle(e) => e.hint(),
            Error::Checked(ConfigError::Read { .. }) => {
                Some("`hookq init` writes a config.toml".into())
            }
            Error::Checked(_) => {
                Some("no hook runs and nothing pending is cleared until the file is fixed".into())
            }
            Error::Queue(e) => e.hint(),
            _ => None,
        }
    }

    /// Prints `error: …` (and `hint: …`) on stderr and returns the exit code.
    ///
    /// A refused worktree plan lists every problem, one line each, after the first.
    pub fn report(&self) -> ExitCode {
        if let Error::Reported(code) = self {
            return ExitCode::from(*code);
        }
        errln!("error: {self}");
        for line in self.more() {
            errln!("{line}");
        }
        if let Some(h) = self.hint() {
            errln!("hint: {h}");
        }
        ExitCode::from(self.exit_code())
    }
}

/// A config that cannot be read or is invalid, as the queue reports it.
impl From<ConfigError> for Error {
    fn from(e: ConfigError) -> Self {
        Error::Queue(e.into())
    }
}

/// A runner lock file that cannot be used, as the queue reports it.
impl From<LockError> for Error {
    fn from(e: LockError) -> Self {
        Error::Queue(e.into())
    }
}
