//! arc's durable hook queue: a task's phase change and its hook points written in one SQLite
//! transaction ([`record`]), drained under `runner.lock` ([`lock`], [`drain`], [`hub`]).

pub mod config;
pub mod drain;
pub mod env;
pub mod hub;
pub mod ids;
pub mod lock;
#[cfg(feature = "postgres")]
pub mod pg;
pub mod phase;
pub mod record;
pub mod starts;
pub mod store;
pub mod workspace;

pub use config::Config;
pub use drain::{Drainer, PassReport};
pub use ids::{PlanId, TaskId};
pub use lock::{RunnerLock, Wait};
pub use phase::{Phase, Point};
pub use record::{MoveFacts, Transition};
pub use store::Store;
pub use workspace::Workspace;
