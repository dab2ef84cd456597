//! arc's durable hook queue: a task's phase change and its hook points written in one
//! transaction ([`record`]), drained under the runner lock ([`lock`], [`drain`], [`hub`]), on
//! SQLite or PostgreSQL behind one [`Driver`].
//!
//! The front door: [`Queue`] for what people read and change on either database; for a host on
//! SQLite, [`Store::open`], the recording functions of [`record`] inside the host's own
//! transaction, [`RunnerLock::acquire`], then [`Drainer`]. The drain and the hub reach the
//! database through [`QueueStore`]; every failure is an [`Error`], naming its [`Place`].
//!
//! # Words
//!
//! The code and its messages use these words, each for one thing:
//!
//! - **task**: the unit of work arc moves through phases, named by a [`TaskId`], of a plan.
//! - **phase**: where a task is, `<state>.<phase>` ([`Phase`]); entering some phases fires a
//!   point.
//! - **point**: one of the five hook points ([`Point`]: `after_merge`, `after_fail`, ...), the
//!   name config gives commands under.
//! - **occurrence**: one recorded firing of a point for a task, pending until a pass clears it;
//!   its id orders the queue and names it to `queue show`, `queue drop`. A listing's row of
//!   pending points is one occurrence each ([`model::PendingRow`]).
//! - **hook**: a command configured for a point; an occurrence runs its point's hooks in
//!   order, and each run is one history row ([`model::HistoryRow`]).
//! - **retry**: queueing a history row's point again as a new occurrence (`queue retry`).
//! - **pass**: one drain of what is pending, under the runner lock, then the lock released
//!   ([`Drainer`]).
//! - **hub**: the long-running loop that takes the runner lock and runs a pass whenever the
//!   queue changes ([`hub`]).
//! - **fleet**: one process running the hubs of many workspaces' queues, sharing its job
//!   slots fairly among them ([`fleet`]).
//! - **runner lock**: the one lock a pass holds, so one runner drains a queue at a time: the
//!   workspace's `runner.lock` on SQLite, the queue's advisory lock on PostgreSQL.
//! - **driver**: one database's implementation of the queue ([`Driver`]), and **place** where
//!   it lives ([`Place`]).
//!
//! The queue's error types all stand here: [`Error`] (the façade's), [`StoreError`] (the SQLite
//! store's), `PgError` (the PostgreSQL queue's, with the `postgres` feature) and [`RowError`]
//! (what either database does not hold or refuses, embedded in both).

pub mod backend;
pub mod config;
pub mod drain;
pub mod driver;
pub mod env;
pub mod error;
pub mod fleet;
pub mod handle;
pub mod hub;
pub mod ids;
pub mod lock;
pub mod logs;
pub mod merged;
pub mod model;
pub mod options;
pub mod pass;
#[cfg(feature = "postgres")]
pub mod pg;
pub mod phase;
pub mod record;
pub mod row_error;
pub mod said;
pub mod shown;
pub(crate) mod starts;
pub mod store;
pub mod times;
pub(crate) mod wake;
pub mod watch;
pub mod workspace;

pub use backend::{ChangeMark, Mark, MarkStarts, QueueStore};
pub use config::Config;
pub use drain::{Drainer, PassReport};
pub use error::Error;
pub use driver::{Driver, LockHolder, LockState, Place};
pub use handle::{DrainIfFree, Dropped, Queue};
pub use ids::{PlanId, TaskId};
pub use lock::{RunnerLock, Wait};
pub use merged::TargetHead;
pub use options::Options;
pub use pass::{Attempt, PassOptions, PassOutcome};
#[cfg(feature = "postgres")]
pub use pg::PgError;
pub use phase::{Phase, Point};
pub use record::{MoveFacts, Transition};
pub use row_error::RowError;
pub use shown::{Listing, TaskShown, TaskView};
pub use store::{Store, StoreError};
pub use workspace::Workspace;
