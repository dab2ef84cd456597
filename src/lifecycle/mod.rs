//! Worktree lifecycle hooks: hooks around creating and removing git worktrees across the
//! repositories of a workspace. hookq makes and removes the worktrees itself with real git, so
//! its promises hold: a failing pre-create changes nothing, a later failure rolls back exactly
//! what this invocation made, a create killed outright is rolled back by the next command, and
//! every evaluated hook lands in an outcome ledger that names its source, never its text.
//!
//! Plan, then act: [`plan`] works a command out and refuses it before any change; [`create()`]
//! and [`remove()`] carry it out on the shared executor.

pub mod config;
pub mod create;
pub mod discovery;
pub mod env;
pub mod error;
pub mod git;
pub mod hook;
pub mod init;
pub mod input;
pub mod inspect;
pub mod interpreter;
pub mod journal;
pub(crate) mod jsontree;
pub mod ledger;
pub mod names;
pub mod plan;
pub mod point;
pub mod policy;
pub mod remove;
pub mod rollback;
pub mod session;
pub mod snippet;
pub mod workspace;

pub use config::{Config, ConfigError};
pub use create::{CreateReport, RunOptions, create};
pub use discovery::{Problem, Source, SourcedCommand};
pub use error::{Error, FailureKind};
pub use input::InputPolicy;
pub use ledger::{Ledger, Outcome, Status};
pub use plan::{CreatePlan, CreateRequest, RemovePlan};
pub use point::{Lifecycle, ModeKind, Scope};
pub use remove::{RemoveReport, remove};
pub use workspace::Workspace;
