//! Worktree lifecycle hooks: hooks around creating and removing git worktrees across the
//! repositories of a workspace. hookq makes and removes the worktrees itself with real git, so
//! its promises hold: a failing pre-create changes nothing, a later failure rolls back exactly
//! what this invocation made, a create killed outright is rolled back by the next command, and
//! every evaluated hook lands in an outcome ledger that names its source, never its text.
//!
//! A host calls [`Worktrees`]: discover a workspace, then create, remove, list the hooks,
//! forget a repository or init, each returning a typed result that serializes to the JSON `hookq worktree … --json`
//! prints. Inside, plan then act: a command is worked out and refused before any
//! change; the create and remove runs carry it out on the shared executor.
//!
//! See `docs/lifecycle.md` for the configuration, discovery, order and rollback rules.

pub mod config;
pub(crate) mod create;
pub mod discovery;
pub(crate) mod env;
pub mod error;
pub mod forget;
pub(crate) mod git;
pub(crate) mod hook;
pub mod init;
pub mod input;
pub(crate) mod inspect;
pub(crate) mod interpreter;
pub(crate) mod journal;
pub(crate) mod jsontree;
pub mod ledger;
pub(crate) mod names;
pub(crate) mod plan;
pub mod point;
pub(crate) mod policy;
pub(crate) mod remove;
pub(crate) mod rollback;
pub(crate) mod session;
pub mod snippet;
pub mod workspace;
pub mod worktrees;

pub use config::{Config, ConfigError};
pub use discovery::{Listed, Problem, Source, SourcedCommand};
pub use error::{CreateFailure, Details, Error, FailureKind, RemoveFailure};
pub use forget::{ForgetItem, ForgetKind, ForgetStatus};
pub use git::GitError;
pub use hook::RunOptions;
pub use input::InputPolicy;
pub use journal::StateError;
pub use ledger::{Ledger, Outcome, Status};
pub use plan::CreateRequest;
pub use point::{Lifecycle, ModeKind, Scope};
pub use remove::{Removal, RemovalStatus};
pub use rollback::RollbackReport;
pub use workspace::Workspace;
pub use worktrees::{
    Created, ForgetRequest, Forgotten, HookListing, Initialized, NewWorktree, Notice, Place,
    RemoveRequest, Removed, Target, Worktrees,
};

/// The library example of `docs/lifecycle.md` runs as a doctest of this item.
#[cfg(doctest)]
#[doc = include_str!("../../docs/lifecycle.md")]
pub struct LifecycleDocDoctests;
