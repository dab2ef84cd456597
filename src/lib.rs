//! hookq: the hook engine for three hook models on one executor.
//!
//! - [`queue`]: arc's durable hook queue. A task's phase change and the hook points it triggers
//!   are written in one SQLite transaction; a worker holding `runner.lock` drains them.
//! - [`agent`]: agent tool hooks. A host asks before a tool runs, after it ran and when a turn
//!   ends, and gets a decision back at once.
//! - [`exec`]: the shared floor that runs every model's commands: process groups, timeouts,
//!   stdin, capped output.
//! - [`lifecycle`]: hooks around creating and removing git worktrees across a workspace's
//!   repositories, with fail-fast preflight, rollback and an outcome ledger.
//!
//! See `docs/` for each model and for embedding.
#![warn(missing_docs)]

/// `eprintln!` that ignores a closed stderr instead of panicking.
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

pub mod agent;
pub mod exec;
pub mod failure;
pub mod lifecycle;
pub mod queue;
#[doc(hidden)]
pub mod testing;

pub use exec::Stop;
pub use failure::Failure;
pub use queue::{
    Config, Drainer, MoveFacts, PassReport, Phase, PlanId, Point, QueueStore, RunnerLock, Store,
    TaskId, Transition, Wait, Workspace,
};
/// The SQLite binding hookq's API speaks, re-exported so a host uses the very same version.
pub use rusqlite;

/// The embedding example of docs/embedding.md runs as a doctest of this item.
#[cfg(doctest)]
#[doc = include_str!("../docs/embedding.md")]
pub struct EmbeddingDoctests;
