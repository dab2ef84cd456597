//! The shared floor every hook model runs its commands on: start a command, feed its stdin,
//! collect or log its output, time it out and end its whole process group, always reap it.
//! Knows nothing of SQLite, JSON decisions or git.

pub(crate) mod collect;
pub mod env;
pub(crate) mod group;
pub(crate) mod run;
pub mod signal;
pub(crate) mod spawn;
mod supervise;
pub(crate) mod sys;
#[cfg(test)]
mod testing;
mod types;

pub use collect::{Collected, FirstStop, Input, Job, Program, collect, collect_with};
pub use env::Environ;
pub use run::{Finished, OpenedLog, Spec, run, run_gated, run_while};
pub use types::{Ending, ExecError, GroupTracker, Stop, describe};
