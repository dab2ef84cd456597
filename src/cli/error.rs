//! The CLI's error: what the user sees (`error: …`, `hint: …`); each failure's exit code comes
//! from the library's [`hookq::Failure`].

use std::path::PathBuf;
use std::process::ExitCode;

use hookq::Failure;
use hookq::failure::code;
use hookq::queue::config::ConfigError;
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
    /// The durable hook queue failed.
    #[error(transparent)]
    Queue(#[from] hookq::queue::Error),
    /// An agent tool hook command failed before it could give a decision.
    #[error(transparent)]
    Agent(#[from] hookq::agent::Error),
    /// A worktree lifecycle command failed.
    #[error(transparent)]
    Lifecycle(#[from] hookq::lifecycle::Error),
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
            Error::Io { .. } => code::FAILURE,
            Error::Lifecycle(e) => lifecycle_code(e),
            Error::Agent(e) => e.exit_code(),
        }
    }

    /// A line of advice, where one helps.
    pub fn hint(&self) -> Option<String> {
        use hookq::lifecycle::Error as L;
        use hookq::lifecycle::workspace::FindError;
        match self {
            Error::Agent(e) => e.hint(),
            Error::Lifecycle(L::Find(FindError::Missing { .. })) => {
                Some("run `hookq worktree init` in a workspace folder, or run inside a git repository (standalone mode)".into())
            }
            Error::Lifecycle(L::Find(FindError::Config(_))) => {
                Some("nothing was changed and no hook ran; `hookq worktree hooks` checks the config".into())
            }
            Error::Lifecycle(L::Refused(_)) => Some(
                "nothing was changed and no hook ran; `hookq worktree hooks` shows every hook and where it comes from".into(),
            ),
            Error::Lifecycle(L::Busy(_)) => Some("wait for it to finish, then try again".into()),
            Error::Queue(e) => e.hint(),
            _ => None,
        }
    }

    /// Prints `error: …` (and `hint: …`) on stderr and returns the exit code.
    ///
    /// A refused worktree plan lists every problem, one line each, after the first.
    pub fn report(&self) -> ExitCode {
        errln!("error: {self}");
        if let Error::Lifecycle(hookq::lifecycle::Error::Refused(problems)) = self {
            for p in problems.iter().skip(1) {
                errln!("error: {}", p.message);
            }
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

/// The exit code of a worktree lifecycle failure.
fn lifecycle_code(e: &hookq::lifecycle::Error) -> u8 {
    use hookq::lifecycle::workspace::FindError;
    use hookq::lifecycle::{Error as L, FailureKind};
    match e {
        L::Find(FindError::Config(_)) => code::CONFIG,
        L::Find(FindError::Missing { .. }) | L::NotFound(_) => code::NOT_FOUND,
        L::Find(f) if f.start_missing() => code::NOT_FOUND,
        L::Find(_) | L::State(_) => code::FAILURE,
        L::Usage(_) => code::USAGE,
        L::Refused(_) => code::PREFLIGHT,
        L::Git(_) => code::GIT_FAILED,
        L::Busy(_) => code::LOCKED,
        L::Failed { kind, .. } => match kind {
            FailureKind::Hook | FailureKind::Stopped => code::HOOK_FAILED,
            FailureKind::Git | FailureKind::Removal => code::GIT_FAILED,
        },
    }
}
