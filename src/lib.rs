//! hookq: a SQLite-backed, transactional hook queue.
//!
//! A task's phase change and the hook point it triggers are written in one SQLite transaction
//! ([`record`]); a worker holding `runner.lock` ([`lock`]) drains the points ([`drain`]), running
//! each command with a timeout and appending its output to a log ([`exec`]). See the README for
//! the guarantees and for embedding.
#![warn(missing_docs)]

/// `println!` that ignores a closed stdout (`hookq queue | head -1`) instead of panicking, and
/// keeps any other failure (`> /dev/full`) for the command's exit status.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        $crate::cli::output::stdout_wrote(writeln!(std::io::stdout().lock(), $($arg)*));
    }};
}

/// `eprintln!` that ignores a closed stderr instead of panicking.
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

pub mod cli;
pub mod config;
pub mod drain;
pub mod env;
pub mod error;
pub mod exec;
pub mod hub;
pub mod ids;
pub mod lock;
pub mod phase;
pub mod record;
mod spawn;
pub mod starts;
pub mod store;
pub mod workspace;

pub use config::Config;
pub use drain::{Drainer, PassReport};
pub use exec::Stop;
pub use ids::{PlanId, TaskId};
pub use lock::{RunnerLock, Wait};
pub use phase::{Phase, Point};
pub use record::{MoveFacts, Transition};
/// The SQLite binding hookq's API speaks, re-exported so a host uses the very same version.
pub use rusqlite;
pub use store::Store;
pub use workspace::Workspace;

/// The README's Rust example (embedding the library) runs as a doctest of this item.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
