//! Why a lifecycle command stopped before or while it worked. Each has an exit code and a
//! stable code that the JSON error object carries; a failure that ran part of its plan carries
//! what it did (the ledger, the rollback, the removals) for the JSON error's details.

use std::path::PathBuf;

use serde::Serialize;

use super::discovery::{Listed, Problem};
use super::git::GitError;
use super::journal::StateError;
use super::ledger::Ledger;
use super::remove::Removal;
use super::rollback::RollbackReport;
use super::workspace::FindError;
use super::forget::{ForgetItem, ForgetStatus};
use super::worktrees::{Forgotten, HookListing};
use crate::failure::{Failure, code};

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

impl FailureKind {
    fn code(self) -> &'static str {
        match self {
            FailureKind::Hook => "hook_failed",
            FailureKind::Git => "git_failed",
            FailureKind::Removal => "removal_failed",
            FailureKind::Stopped => "stopped",
        }
    }

    fn exit_code(self) -> u8 {
        match self {
            FailureKind::Hook | FailureKind::Stopped => code::HOOK_FAILED,
            FailureKind::Git | FailureKind::Removal => code::GIT_FAILED,
        }
    }
}

/// A create that failed after it started: what it did, and what its rollback undid.
#[derive(Debug, Clone)]
pub struct CreateFailure {
    /// How it failed.
    pub kind: FailureKind,
    /// Why, for people: `hook post-create.web (repository, web) exited with 3`.
    pub why: String,
    /// The branch.
    pub branch: String,
    /// Every evaluated hook (those not reached are skipped).
    pub ledger: Ledger,
    /// What the rollback undid, and the steps of it that failed.
    pub rollback: RollbackReport,
}

/// A remove that ran and failed: a pre-remove hook aborted it, a worktree was not removed, or
/// a post-remove hook failed.
#[derive(Debug, Clone)]
pub struct RemoveFailure {
    /// How it failed.
    pub kind: FailureKind,
    /// Why, for people.
    pub why: String,
    /// The branch asked for.
    pub branch: String,
    /// Every evaluated hook.
    pub ledger: Ledger,
    /// Each target's removal.
    pub removals: Vec<Removal>,
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
    /// The plan was refused before any change. With several problems, the message counts
    /// them and [`Failure::more`] lists each.
    #[error("{}", refused(.0, "refuse this command before any change"))]
    Refused(Vec<Problem>),
    /// The inspector found what would refuse a command.
    #[error("{}", refused(&.0.problems, "would refuse a create or remove"))]
    Inspected(Box<HookListing>),
    /// A failure the inspector (`hookq worktree hooks`, the config checker itself) met: the
    /// same code and message, and a hint that does not send the user to it again.
    #[error(transparent)]
    Inspecting(Box<Error>),
    /// A git query during planning failed.
    #[error(transparent)]
    Git(#[from] GitError),
    /// Another lifecycle command holds the workspace's lock.
    #[error("another `hookq worktree` command is working in this workspace (lock {} is held)", .0.display())]
    Busy(PathBuf),
    /// The state folder (lock, journal) failed.
    #[error(transparent)]
    State(#[from] StateError),
    /// `init` inside a repository that works without a config, with no repositories below it.
    #[error(
        "{} is inside the git repository {}, which works without a config (standalone mode: \
         its hooks are ~/.arashi/hooks/{name}/<lifecycle>.sh and ~/.arashi/hooks/<lifecycle>.sh); \
         `hookq worktree init` writes a workspace config listing repositories, so run it in the \
         folder that holds them; nothing was written",
        start.display(),
        repository.display()
    )]
    InitInRepository {
        /// Where `init` was run.
        start: PathBuf,
        /// The repository's main root.
        repository: PathBuf,
        /// Its name (the main root's directory name).
        name: String,
    },
    /// `init` found no repository to list in a new config.
    #[error(
        "no git repository found in {} or {}: `hookq worktree init` lists the git checkouts \
         directly in the folder it runs in and in its repos/ folder; clone or move them there, \
         or run it in the folder that holds them; nothing was written",
        root.display(),
        root.join("repos").display()
    )]
    NoRepositories {
        /// The folder `init` ran in.
        root: PathBuf,
    },
    /// A file or folder could not be used.
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
    /// A create failed after it started, and was rolled back.
    #[error("create of branch {} failed: {}; {}", .0.branch, .0.why, rolled(&.0.rollback))]
    Create(Box<CreateFailure>),
    /// A remove ran and failed.
    #[error("remove of branch {} failed: {}", .0.branch, .0.why)]
    Remove(Box<RemoveFailure>),
    /// Forgetting a repository could not remove some of its hook files (the rest were).
    #[error("{}", unforgotten(.0))]
    Forget(Box<Forgotten>),
}

fn unforgotten(f: &Forgotten) -> String {
    let failed: Vec<&str> = f
        .items
        .iter()
        .filter(|i| i.status == ForgetStatus::Failed)
        .filter_map(|i| i.reason.as_deref())
        .collect();
    format!(
        "forgetting repository {} left {} hook file(s) in place: {}",
        f.repository,
        failed.len(),
        failed.join("; ")
    )
}

fn refused(problems: &[Problem], what: &str) -> String {
    match problems {
        [] => "refused".into(),
        [one] => one.message.clone(),
        many => format!("{} problems {what}", many.len()),
    }
}

fn rolled(r: &RollbackReport) -> String {
    if r.done.is_empty() && r.warnings.is_empty() {
        // It failed before its first change (a workspace pre-create): nothing to undo.
        "nothing was changed".to_string()
    } else if r.warnings.is_empty() {
        "everything it made was rolled back".to_string()
    } else {
        format!("rolled back with {} warning(s)", r.warnings.len())
    }
}

/// What a failure's JSON error object carries besides its code and message.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Details {
    /// Every evaluated hook (empty when none ran).
    pub hook_outcomes: Ledger,
    /// The rollback steps that failed.
    pub rollback_warnings: Vec<String>,
    /// The warnings printed before the failure (the command fills these in: it saw them as
    /// [`Notice`](super::Notice)s).
    pub warnings: Vec<String>,
    /// A refused plan's problems.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problems: Option<Vec<Problem>>,
    /// What a failed create's rollback undid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rolled_back: Option<Vec<String>>,
    /// A failed remove's removals.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub removals: Option<Vec<Removal>>,
    /// The inspector's hooks, when it found problems.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hooks: Option<Vec<Listed>>,
    /// What a forget that failed removed, kept and could not remove.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub items: Option<Vec<ForgetItem>>,
}

impl Error {
    /// The stable code in the JSON error object.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Find(FindError::Config(_)) => "config_invalid",
            Error::Find(FindError::Missing { .. }) | Error::NotFound(_) => "not_found",
            Error::Find(f) if f.start_missing() => "not_found",
            Error::Find(_) | Error::State(_) | Error::Io { .. } | Error::Forget(_) => "io_failed",
            Error::Usage(_) | Error::InitInRepository { .. } | Error::NoRepositories { .. } => {
                "usage"
            }
            Error::Refused(problems) => problems_code(problems),
            Error::Inspected(l) => problems_code(&l.problems),
            Error::Git(_) => "git_failed",
            Error::Busy(_) => "busy",
            Error::Create(f) => f.kind.code(),
            Error::Remove(f) => f.kind.code(),
            Error::Inspecting(e) => e.code(),
        }
    }

    /// The same failure, met by the inspector: its hint does not send the user to it again.
    pub fn inspecting(self) -> Error {
        match self {
            e @ (Error::Inspected(_) | Error::Inspecting(_)) => e,
            e => Error::Inspecting(Box::new(e)),
        }
    }

    /// The message of the JSON error object: the error's text, except for a plan refused for
    /// several problems, whose message is every problem once, joined by `; ` (the human report
    /// counts them and lists each on a line of its own instead).
    pub fn message(&self) -> String {
        match self.problems() {
            many @ [_, _, ..] => many
                .iter()
                .map(|p| p.message.as_str())
                .collect::<Vec<_>>()
                .join("; "),
            _ => self.to_string(),
        }
    }

    /// The problems of a refused plan (empty for any other failure).
    pub fn problems(&self) -> &[Problem] {
        match self {
            Error::Refused(p) => p,
            Error::Inspected(l) => &l.problems,
            Error::Inspecting(e) => e.problems(),
            _ => &[],
        }
    }

    /// What the JSON error object carries besides the code and message.
    pub fn details(&self) -> Details {
        let mut d = Details::default();
        match self {
            Error::Refused(p) => d.problems = Some(p.clone()),
            Error::Inspected(l) => {
                d.problems = Some(l.problems.clone());
                d.hooks = Some(l.hooks.clone());
            }
            Error::Create(f) => {
                d.hook_outcomes = f.ledger.clone();
                d.rollback_warnings = f.rollback.warnings.clone();
                d.rolled_back = Some(f.rollback.done.clone());
            }
            Error::Remove(f) => {
                d.hook_outcomes = f.ledger.clone();
                d.removals = Some(f.removals.clone());
            }
            Error::Inspecting(e) => d = e.details(),
            Error::Forget(f) => d.items = Some(f.items.clone()),
            _ => {}
        }
        d
    }
}

fn problems_code(problems: &[Problem]) -> &'static str {
    match problems.first() {
        Some(first) if problems.iter().all(|p| p.code == first.code) => first.code,
        _ => "preflight_failed",
    }
}

impl Failure for Error {
    fn exit_code(&self) -> u8 {
        match self {
            Error::Find(FindError::Config(_)) => code::CONFIG,
            Error::Find(FindError::Missing { .. }) | Error::NotFound(_) => code::NOT_FOUND,
            Error::Find(f) if f.start_missing() => code::NOT_FOUND,
            Error::Find(_) | Error::State(_) | Error::Io { .. } | Error::Forget(_) => {
                code::FAILURE
            }
            Error::Usage(_) | Error::InitInRepository { .. } | Error::NoRepositories { .. } => {
                code::USAGE
            }
            Error::Refused(_) | Error::Inspected(_) => code::PREFLIGHT,
            Error::Git(_) => code::GIT_FAILED,
            Error::Busy(_) => code::LOCKED,
            Error::Create(f) => f.kind.exit_code(),
            Error::Remove(f) => f.kind.exit_code(),
            Error::Inspecting(e) => e.exit_code(),
        }
    }

    fn hint(&self) -> Option<String> {
        match self {
            Error::Find(FindError::Missing { .. }) => Some(
                "run `hookq worktree init` in a workspace folder, or run inside a git repository (standalone mode)".into(),
            ),
            Error::Find(FindError::Config(_)) => Some(
                "nothing was changed and no hook ran; `hookq worktree hooks` checks the config".into(),
            ),
            Error::Refused(problems) if problems.iter().any(Problem::is_about_hooks) => Some(
                "nothing was changed and no hook ran; `hookq worktree hooks` shows every hook and where it comes from".into(),
            ),
            Error::Refused(_) => Some("nothing was changed and no hook ran".into()),
            Error::Inspected(_) => Some(
                "create and remove refuse until each problem is fixed; nothing was run or changed".into(),
            ),
            Error::Inspecting(e) => match e.as_ref() {
                Error::Find(FindError::Config(_)) => Some(
                    "create and remove refuse until the file is fixed; nothing was run or changed".into(),
                ),
                e => e.hint(),
            },
            Error::Busy(_) => Some("wait for it to finish, then try again".into()),
            _ => None,
        }
    }

    fn more(&self) -> Vec<String> {
        match self.problems() {
            [] | [_] => Vec::new(),
            many => many.iter().map(|p| format!("  - {}", p.message)).collect(),
        }
    }
}
