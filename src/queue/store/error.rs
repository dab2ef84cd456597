//! What a store failure is: the errors a user can act on, told apart by SQLite's code.

use std::path::PathBuf;
use std::time::Duration;

use rusqlite::ErrorCode;

use super::open::DEFAULT_BUSY_TIMEOUT;
use crate::queue::row_error::RowError;

/// A store failure. Messages are short fragments; the CLI adds the database path.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Another writer held the database beyond `busy_timeout`.
    #[error("database is locked by another writer (waited {} ms)", .0.as_millis())]
    Busy(Duration),
    /// The file is not a SQLite database or is damaged.
    #[error("database is corrupt or not a hookq database: {0}")]
    Corrupt(String),
    /// The disk (or a size limit) is full.
    #[error("disk is full: {0}")]
    Full(String),
    /// Reading or writing the file failed (a failing disk, or a file-size limit).
    #[error("disk I/O error {0}; is the disk full?")]
    DiskIo(String),
    /// The database or its folder cannot be written.
    #[error("database is read-only: {0}")]
    ReadOnly(String),
    /// The file could not be opened or created.
    #[error("cannot open database: {0}")]
    CannotOpen(String),
    /// A pragma did not take.
    #[error("pragma {pragma} reads back {found:?}, expected {expected:?}")]
    Pragma {
        /// The pragma.
        pragma: &'static str,
        /// What was set.
        expected: String,
        /// What was read back.
        found: String,
    },
    /// The database was migrated by a newer hookq.
    #[error(
        "database schema is version {found}, newer than this hookq supports ({supported}); upgrade hookq"
    )]
    NewerSchema {
        /// The schema version found.
        found: i64,
        /// The newest version this binary knows.
        supported: i64,
    },
    /// A migration failed.
    #[error("migration failed: {0}")]
    Migrate(String),
    /// Creating the database's folder or file failed.
    #[error("cannot create {}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Any other SQLite error.
    #[error("sqlite: {0}")]
    Sqlite(#[source] rusqlite::Error),
    /// A row that is not there or a value refused, as on PostgreSQL.
    #[error(transparent)]
    Row(#[from] RowError),
    /// The start log beside the database (`arc.db-starts`) cannot be read or written.
    #[error("cannot {action} {}: {source}", path.display())]
    StartLog {
        /// What failed: "read", "write" or "empty".
        action: &'static str,
        /// The start log's path.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        // A stored value the model's types refuse (a task id, a point, an outcome written by
        // hand): said as the row's fault, with what was refused.
        if let rusqlite::Error::FromSqlConversionFailure(_, _, why) = &e {
            return StoreError::Row(RowError::BadRow(why.to_string()));
        }
        classify(&e).unwrap_or(StoreError::Sqlite(e))
    }
}

/// The errors a user can act on, told apart by SQLite's code.
pub(super) fn classify(e: &rusqlite::Error) -> Option<StoreError> {
    let text = e.to_string();
    Some(match e.sqlite_error_code()? {
        ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => {
            StoreError::Busy(DEFAULT_BUSY_TIMEOUT)
        }
        ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt => StoreError::Corrupt(text),
        ErrorCode::DiskFull => StoreError::Full(text),
        ErrorCode::ReadOnly => StoreError::ReadOnly(text),
        ErrorCode::CannotOpen | ErrorCode::PermissionDenied => StoreError::CannotOpen(text),
        ErrorCode::SystemIoFailure => StoreError::DiskIo(io_detail(e)),
        _ => return None,
    })
}

/// Which operation a SQLite I/O error came from, from its extended code.
fn io_detail(e: &rusqlite::Error) -> String {
    let rusqlite::Error::SqliteFailure(f, _) = e else {
        return String::new();
    };
    let op = match f.extended_code {
        rusqlite::ffi::SQLITE_IOERR_READ | rusqlite::ffi::SQLITE_IOERR_SHORT_READ => "reading",
        rusqlite::ffi::SQLITE_IOERR_WRITE => "writing",
        rusqlite::ffi::SQLITE_IOERR_FSYNC | rusqlite::ffi::SQLITE_IOERR_DIR_FSYNC => "syncing",
        rusqlite::ffi::SQLITE_IOERR_TRUNCATE => "truncating",
        rusqlite::ffi::SQLITE_IOERR_SHMSIZE
        | rusqlite::ffi::SQLITE_IOERR_SHMMAP
        | rusqlite::ffi::SQLITE_IOERR_SHMOPEN => "growing the WAL index (arc.db-shm)",
        _ => return format!("(SQLite extended code {})", f.extended_code),
    };
    format!("while {op}")
}
