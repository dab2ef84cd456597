//! The shared floor every hook model runs its commands on: start a command, feed its stdin,
//! collect or log its output, time it out and end its whole process group, always reap it.
//! Knows nothing of SQLite, JSON decisions or git.

pub mod collect;
pub mod env;
pub mod group;
pub mod run;
pub(crate) mod spawn;
mod supervise;

pub use collect::{Collected, FirstStop, Input, Job, Program, collect, collect_with};
pub use env::Environ;
pub use run::{
    Ending, ExecError, Finished, GroupTracker, OpenedLog, Spec, Stop, describe, run, run_while,
};
