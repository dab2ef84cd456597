//! The `hookq` command line: one file per subcommand, each with its clap `Args` and a `run`.

mod agent;
mod app;
mod check;
mod completions;
pub(crate) mod error;
mod hub;
mod init;
mod log;
mod man;
pub(crate) mod output;
mod pick;
mod plan;
mod queue;
mod run;
mod task;
mod ui;
mod worktree;

pub use app::{Cli, run};
