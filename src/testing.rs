//! What the crate's own tests, benches and examples reach of its internals. Not part of the
//! API: nothing here is kept stable, and a host has no use for it.

/// The store's pending counters and occurrence id marks, for fixtures that write pending rows
/// with SQL of their own.
pub mod counters {
    pub use crate::queue::store::counters::{
        COUNT_EVERY, IdMarks, count_new_points, pending_by_point,
    };
}

/// The start log beside the database, read as the store reads it.
pub mod starts {
    pub use crate::queue::starts::{Start, apply, path_for, read};
}

/// The listener the PostgreSQL watchers of a server share: how many mark statements it sent.
#[cfg(feature = "postgres")]
pub mod listener {
    pub use crate::queue::pg::listener::{APPLICATION_NAME, statements};
}
