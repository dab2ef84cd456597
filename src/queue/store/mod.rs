//! The SQLite store: one `Store::open`, pragmas read back, embedded migrations.
//!
//! The store knows tasks, pending points and history rows. It knows nothing of processes. What
//! the drain and the hub need of it is [`QueueStore`](crate::queue::QueueStore), which it
//! implements.

mod clears;
mod driver;
pub(crate) mod counters;
mod error;
mod open;
mod pause;
mod reads;
mod rows;
#[cfg(test)]
mod tests;

pub use clears::StartMarker;
pub use driver::SqliteDriver;
pub(crate) use counters::{
    COUNT_EVERY, IdMarks, count_pending, count_up_to, id_mark_columns, set_counted_mark,
};
pub use error::StoreError;
pub use open::{DEFAULT_BUSY_TIMEOUT, PAGE_SIZE, Store, StoreOptions, Synchronous, schema_version};
