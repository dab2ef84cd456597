//! arc's durable hook queue: a task's phase change and its hook points written in one SQLite
//! transaction ([`record`]), drained under `runner.lock` ([`lock`], [`drain`], one [`pass`] or
//! the [`hub`]), on the database its [`Options`] name.
//!
//! The front door: [`Store::open`], the recording functions of [`record`] inside the host's own
//! transaction, [`RunnerLock::acquire`], then [`Drainer`]. The drain and the hub reach the
//! database through one trait, [`QueueStore`]; every failure is an [`Error`].
//!
//! The queue's error types all stand here: [`Error`] (the façade's), [`StoreError`] (the SQLite
//! store's), `PgError` (the PostgreSQL queue's, with the `postgres` feature) and [`RowError`]
//! (what either database does not hold or refuses, embedded in both).

pub mod backend;
pub mod config;
pub mod drain;
pub mod env;
pub mod error;
pub mod handle;
pub mod hub;
pub mod ids;
pub mod lock;
pub mod logs;
pub mod merged;
pub mod options;
pub mod pass;
#[cfg(feature = "postgres")]
pub mod pg;
pub mod phase;
pub mod record;
pub mod row_error;
pub mod shown;
pub(crate) mod starts;
pub mod store;
pub mod times;
pub mod workspace;

pub use backend::{ChangeMark, Mark, MarkStarts, QueueStore};
pub use config::Config;
pub use drain::{Drainer, PassReport};
pub use error::Error;
pub use handle::{DrainIfFree, Dropped, LockHolder, LockState, Queue};
pub use ids::{PlanId, TaskId};
pub use lock::{RunnerLock, Wait};
pub use merged::TargetHead;
pub use options::Options;
pub use pass::{PassOptions, PassOutcome};
#[cfg(feature = "postgres")]
pub use pg::PgError;
pub use phase::{Phase, Point};
pub use record::{MoveFacts, Transition};
pub use row_error::RowError;
pub use shown::{TaskShown, TaskView};
pub use store::{Store, StoreError};
pub use workspace::Workspace;
