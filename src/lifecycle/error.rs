//! Why a lifecycle command stopped before or while it worked. Each has a stable code that the
//! JSON error object carries.

use std::path::PathBuf;

use super::discovery::Problem;
use super::git::GitError;
use super::journal::StateError;
use super::workspace::FindError;

/// How a command that ran its plan failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// A hook failed or timed out (create rolled back; remove aborted or finalized).
    Hook,
    /// A git step of the plan failed (create rolled back).
    Git,
    /// One or more worktrees could not be removed.
    Removal,
    /// A stop (SIGINT, SIGTERM) ended the command (create rolled back).
    Stopped,
}

/// A lifecycle command's failure.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The workspace could not be found or its config is invalid.
    #[error(transparent)]
    Find(#[from] FindError),
    /// Bad usage (unknown repository, a bad branch name, a flag that does not apply).
    #[error("{0}")]
    Usage(String),
    /// Nothing to act on (no worktree of that branch).
    #[error("{0}")]
    NotFound(String),
    /// The plan was refused before any change.
    #[error("{}{}", .0.first().map(|p| p.message.as_str()).unwrap_or("refused"), if .0.len() > 1 { format!(" (and {} more problem(s))", .0.len() - 1) } else { String::new() })]
    Refused(Vec<Problem>),
    /// A git query during planning failed.
    #[error(transparent)]
    Git(#[from] GitError),
    /// Another lifecycle command holds the workspace's lock.
    #[error("another `hookq worktree` command is working in this workspace (lock {} is held)", .0.display())]
    Busy(PathBuf),
    /// The state folder (lock, journal) failed.
    #[error(transparent)]
    State(#[from] StateError),
    /// The plan ran and failed.
    #[error("{message}")]
    Failed {
        /// How.
        kind: FailureKind,
        /// What the user sees after `error: `.
        message: String,
    },
}

impl Error {
    /// The stable code in the JSON error object.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Find(FindError::Config(_)) => "config_invalid",
            Error::Find(FindError::Missing { .. }) | Error::NotFound(_) => "not_found",
            Error::Find(f) if f.start_missing() => "not_found",
            Error::Find(_) | Error::State(_) => "io_failed",
            Error::Usage(_) => "usage",
            Error::Refused(problems) => match problems.first() {
                Some(first) if problems.iter().all(|p| p.code == first.code) => first.code,
                _ => "preflight_failed",
            },
            Error::Git(_) => "git_failed",
            Error::Busy(_) => "busy",
            Error::Failed { kind, .. } => match kind {
                FailureKind::Hook => "hook_failed",
                FailureKind::Git => "git_failed",
                FailureKind::Removal => "removal_failed",
                FailureKind::Stopped => "stopped",
            },
        }
    }
}
