//! What a drain tells an observer as it goes: each hook command that ran, each pass that
//! ended. Counted by a host's metrics (`hookq hub --metrics`); the drain's own behaviour does
//! not depend on it.

use std::time::Duration;

use crate::queue::error::Error;
use crate::queue::phase::Point;
use crate::queue::model::Outcome;

use super::PassReport;

/// One event of a drain, handed to the observer set with
/// [`Drainer::observe`](super::Drainer::observe).
#[derive(Debug)]
pub enum DrainEvent<'e> {
    /// A hook command ran to its end (one not cut short by a stop request): its point, how it
    /// ended and how long it ran.
    Command {
        /// The point whose command it is.
        point: Point,
        /// How it ended.
        outcome: Outcome,
        /// How long it ran.
        duration: Duration,
    },
    /// A pass ended: what it did, or the error that ended it.
    Pass(Result<&'e PassReport, &'e Error>),
}

/// A command that ran to its end, as a job saw it.
#[derive(Debug, Clone, Copy)]
pub(super) struct CommandRun {
    pub(super) point: Point,
    pub(super) outcome: Outcome,
    pub(super) duration: Duration,
}
