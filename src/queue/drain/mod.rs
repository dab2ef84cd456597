//! The drain: where the store and the executor meet, under the runner lock.
//!
//! Points are taken in recorded order. With `jobs > 1`, points of different tasks run at the same
//! time; a task's next point starts only after its previous one finished, and a point's commands
//! always run one after another. The calling thread reads the queue, prepares each point and
//! clears finished ones; each worker keeps one prepared point waiting behind the one it runs, so
//! it can start the next the moment one ends, and marks it started as it starts, reading the
//! database on a connection of its own ([`MarkStarts`](crate::queue::MarkStarts)). The database
//! is reached only through [`QueueStore`](crate::queue::QueueStore). On SQLite, workers never
//! write the database.
//!
//! A point is marked started before any of its first command runs, while the command's shell
//! waits at its gate ([`exec::run_gated`](crate::exec::run_gated)): on SQLite by a line in the
//! start log (`arc.db-starts` beside the database), not a commit, and a pass first folds the
//! lines a killed runner left there; on PostgreSQL by a commit on the runner lock's connection.
//! Finished points are cleared in batches, committed while a command runs (so the commit costs
//! the pass no time of its own, and, not waiting for another writer there, never holds up the
//! command's timeout), with the starts of the points still running folded in: once
//! [`CLEAR_BATCH`] points are waiting, or the first of them finished [`CLEAR_AFTER`] ago; and
//! before a point that an earlier pass started (it may be one that kills the runner, and the
//! points before it must not be run again with it); and when the pass ends. A pass killed in
//! between runs those points again: hooks run at least once, so any point not yet cleared may
//! run again. Batched, and with the starts in the log, a point appends a fifth of what it
//! would to the WAL committed one by one (docs/design.md has the figures).
//!
//! Drainers of many queues in one process may share job [`Slots`]: each point takes one as it
//! starts and gives it back as it ends, so at most so many points run at once among them all,
//! handed out in the order they were asked for.

mod clears;
mod next;
mod observe;
mod pass;
mod point;
mod pool;
mod slots;
#[cfg(test)]
mod tests;

pub use clears::{CLEAR_AFTER, CLEAR_BATCH};
pub use observe::DrainEvent;
pub use pass::{Drainer, PassReport};
pub use slots::{Slot, Slots};
