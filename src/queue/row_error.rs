//! What either database of the queue refuses or does not hold, said the same way on SQLite
//! ([`crate::queue::store::StoreError::Row`]) and on PostgreSQL (`PgError::Row`, with the
//! `postgres` feature): a task, a pending occurrence or a history row that is not there, a task that
//! is, a caller's value that is not valid, a stored value that is not.

use crate::failure::{Failure, code};

/// A row the queue looked for and did not find, or a value it refused, on either database.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RowError {
    /// No such task.
    #[error("no task {0}")]
    NoTask(String),
    /// The task exists already.
    #[error("task {0} exists already")]
    TaskExists(String),
    /// No pending occurrence with this id.
    #[error("no pending occurrence {0}")]
    NoOccurrence(i64),
    /// No history row with this id.
    #[error("no history row {0}")]
    NoHistory(i64),
    /// A stored value that should have been validated on the way in is not valid.
    #[error("stored value is not valid: {0}")]
    BadRow(String),
    /// A value given by the caller is not valid.
    #[error("{0}")]
    Invalid(String),
}

impl Failure for RowError {
    /// What is not there is not found, what the caller gave wrong is bad usage, and a stored
    /// value that is not valid is the database's failure. (A SQLite queue placed in
    /// [`crate::queue::Error::Store`] reports a bad stored value as an internal failure.)
    fn exit_code(&self) -> u8 {
        match self {
            RowError::NoTask(_) | RowError::NoOccurrence(_) | RowError::NoHistory(_) => {
                code::NOT_FOUND
            }
            RowError::TaskExists(_) | RowError::Invalid(_) => code::USAGE,
            RowError::BadRow(_) => code::DATABASE,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::store::StoreError;

    #[test]
    fn each_refusal_has_its_message_and_code_and_no_hint() {
        for (e, text, exit) in [
            (RowError::NoTask("t1".into()), "no task t1", code::NOT_FOUND),
            (RowError::NoOccurrence(7), "no pending occurrence 7", code::NOT_FOUND),
            (RowError::NoHistory(9), "no history row 9", code::NOT_FOUND),
            (
                RowError::TaskExists("t1".into()),
                "task t1 exists already",
                code::USAGE,
            ),
            (RowError::Invalid("bad sha".into()), "bad sha", code::USAGE),
            (
                RowError::BadRow("x".into()),
                "stored value is not valid: x",
                code::DATABASE,
            ),
        ] {
            assert_eq!((e.to_string(), e.exit_code(), e.hint()), (text.into(), exit, None));
            assert_eq!(StoreError::from(e.clone()).to_string(), text);
            #[cfg(feature = "postgres")]
            {
                let pg = crate::queue::pg::PgError::from(e);
                assert_eq!((pg.to_string(), pg.exit_code(), pg.hint()), (text.into(), exit, None));
            }
        }
    }
}
