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

// hookq waits on pidfds, reads /proc and starts commands with glibc's posix_spawn extensions:
// on any other target, this one error instead of a wall of them.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
compile_error!(
    "hookq runs on Linux with glibc only: it uses pidfd, /proc and glibc's posix_spawn extensions"
);

/// The items of the crate, compiled on Linux only (see the `compile_error!` above).
macro_rules! on_linux {
    ($($item:item)*) => { $( #[cfg(all(target_os = "linux", target_env = "gnu"))] $item )* };
}

on_linux! {
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
    #[cfg(feature = "ui")]
    pub mod metrics;
    pub mod queue;
    /// What the crate's own tests and benches reach that a host should not: not a stable API.
    #[doc(hidden)]
    pub mod testing;
    #[cfg(feature = "ui")]
    pub mod ui;

    pub use exec::Stop;
    pub use failure::Failure;
    pub use queue::{
        Config, Drainer, MoveFacts, PassReport, Phase, PlanId, Point, QueueStore, RunnerLock,
        Store, TargetHead, TaskId, Transition, Wait, Workspace,
    };
    /// The SQLite binding hookq's API speaks, re-exported so a host uses the very same version.
    pub use rusqlite;
}

/// The embedding example of docs/embedding.md runs as a doctest of this item.
#[cfg(all(doctest, target_os = "linux", target_env = "gnu"))]
#[doc = include_str!("../docs/embedding.md")]
pub struct EmbeddingDoctests;

/// The router example of docs/ui.md runs as a doctest of this item.
#[cfg(all(doctest, feature = "ui", target_os = "linux", target_env = "gnu"))]
#[doc = include_str!("../docs/ui.md")]
pub struct UiDoctests;
