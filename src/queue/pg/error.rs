//! What can go wrong with the queue on PostgreSQL, as a user reads it: one line, a hint, and
//! never a password (every connection string shown is masked first).

use crate::failure::{Failure, code};
use crate::queue::row_error::RowError;

/// Why a connection attempt failed, as far as a user can act on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectFailure {
    /// The server refused the user or password.
    Auth,
    /// The database named does not exist.
    NoDatabase,
    /// The host name does not resolve, or nothing answers at that address and port.
    Unreachable,
    /// TLS could not be set up or the server's certificate was refused.
    Tls,
    /// Anything else the server or the network said.
    Other,
}

/// A failure of the queue on PostgreSQL.
#[derive(Debug, thiserror::Error)]
pub enum PgError {
    /// The connection string cannot be used.
    #[error("invalid PostgreSQL connection string {target}: {reason}")]
    BadTarget {
        /// The connection string, password masked.
        target: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Connecting failed.
    #[error("cannot connect to {target}: {reason}")]
    Connect {
        /// The connection string, password masked.
        target: String,
        /// What kind of failure.
        kind: ConnectFailure,
        /// What the server or the network said.
        reason: String,
        /// The server's SQLSTATE, when the server refused the connection (`57P03` while it
        /// starts or shuts down, `28P01` for a wrong password).
        code: Option<postgres::error::SqlState>,
    },
    /// The database has no hookq schema.
    #[error("database has no hookq queue schema (table {table} is missing)")]
    NoSchema {
        /// The table found missing.
        table: String,
    },
    /// The schema was migrated by a newer hookq.
    #[error(
        "database schema is version {found}, newer than this hookq supports ({supported}); upgrade hookq"
    )]
    NewerSchema {
        /// The schema version found.
        found: i64,
        /// The newest version this hookq knows.
        supported: i64,
    },
    /// The schema is older than this hookq and was not migrated (a read-only open).
    #[error("database schema is version {found}, older than this hookq ({supported})")]
    OlderSchema {
        /// The schema version found.
        found: i64,
        /// The newest version this hookq knows.
        supported: i64,
    },
    /// A migration failed.
    #[error("migration failed: {0}")]
    Migrate(String),
    /// The queue name is not valid.
    #[error(
        "invalid queue name {0:?}: expected 1 to 200 of A-Z a-z 0-9 . _ - / : @ +, starting with a letter or digit"
    )]
    BadQueueName(String),
    /// The connection holding the runner lock was lost (and with it the lock).
    #[error("lost the connection that held the runner lock of queue {queue}: {reason}")]
    LockLost {
        /// The queue.
        queue: String,
        /// What the client said.
        reason: String,
    },
    /// The runner lock's lease ran out before this runner renewed it: another runner may
    /// have broken it and taken the queue over, so this one starts nothing more.
    #[error(
        "gave up the runner lock of queue {queue}: its lease ran out ({reason}); this runner starts nothing more"
    )]
    LeaseExpired {
        /// The queue.
        queue: String,
        /// Why it was not renewed in time.
        reason: String,
    },
    /// Another runner held the queue's runner lock throughout the wait.
    #[error("runner lock is held{}", holder.as_ref().map(|h| format!(" by {h}")).unwrap_or_default())]
    Locked {
        /// Who holds it, as [`crate::queue::pg::PgHolder`] shows it.
        holder: Option<String>,
    },
    /// Any other error from the server or the connection: the client's own error, so that
    /// the server's SQLSTATE ([`PgError::code`]) and the cause travel with it.
    #[error("postgres: {}", server_text(.0))]
    Postgres(#[source] postgres::Error),
    /// A row that is not there or a value refused, as on SQLite.
    #[error(transparent)]
    Row(#[from] RowError),
}

impl PgError {
    /// The server's SQLSTATE, when the server sent this error.
    pub fn code(&self) -> Option<&postgres::error::SqlState> {
        match self {
            PgError::Postgres(e) => e.code(),
            PgError::Connect { code, .. } => code.as_ref(),
            _ => None,
        }
    }

    /// Whether this failure passes by itself, so that a hub waits it out and connects again:
    /// a connection lost, refused or timed out, a server shutting down, starting or restarting
    /// (SQLSTATE class 08, 57: `57P01` admin shutdown, `57P03` cannot connect now), out of
    /// resources (class 53), a statement cancelled by a timeout, a lock lost with its
    /// connection. A setting to fix does not: a refused password, a missing database or
    /// table, permission denied (`42501`), a schema from another hookq, a bad value.
    pub fn is_transient(&self) -> bool {
        match self {
            PgError::Connect { kind, code, .. } => match code {
                Some(code) => transient_code(code),
                None => matches!(kind, ConnectFailure::Unreachable | ConnectFailure::Other),
            },
            PgError::LockLost { .. } | PgError::LeaseExpired { .. } => true,
            // No SQLSTATE: the connection itself failed (closed, reset, timed out).
            PgError::Postgres(e) => e.code().is_none_or(transient_code),
            _ => false,
        }
    }
}

/// Whether `code` names a condition that passes: classes 08 (connection), 40 (a transaction
/// to retry), 53 (resources), 57 (operator intervention: shutdown, restart, a cancelled
/// statement), and a lock not available in time.
fn transient_code(code: &postgres::error::SqlState) -> bool {
    let class = &code.code()[..2];
    matches!(class, "08" | "40" | "53" | "57") || code == &postgres::error::SqlState::LOCK_NOT_AVAILABLE
}

/// The server's `severity: message`, or the client's chain of causes.
fn server_text(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {}", db.severity(), db.message()),
        None => error_chain(e),
    }
}

/// An error of the client or the server, a missing schema told apart. Its text holds no
/// connection string, so no password.
impl From<postgres::Error> for PgError {
    fn from(e: postgres::Error) -> Self {
        if let Some(db) = e.as_db_error()
            && db.code() == &postgres::error::SqlState::UNDEFINED_TABLE
            && let Some(table) = missing_hookq_table(db.message())
        {
            return PgError::NoSchema { table };
        }
        PgError::Postgres(e)
    }
}

/// The hookq table a "relation does not exist" message names, if it names one.
fn missing_hookq_table(message: &str) -> Option<String> {
    let start = message.find("\"hookq_")? + 1;
    let len = message[start..].find('"')?;
    Some(message[start..start + len].to_owned())
}

/// An error and its sources, joined by `: `, each said once.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}

impl Failure for PgError {
    fn exit_code(&self) -> u8 {
        match self {
            PgError::BadTarget { .. } | PgError::BadQueueName(_) => code::USAGE,
            PgError::Locked { .. } => code::LOCKED,
            PgError::Row(e) => e.exit_code(),
            PgError::Connect { .. }
            | PgError::NoSchema { .. }
            | PgError::NewerSchema { .. }
            | PgError::OlderSchema { .. }
            | PgError::Migrate(_)
            | PgError::LockLost { .. }
            | PgError::LeaseExpired { .. }
            | PgError::Postgres(_) => code::DATABASE,
        }
    }

    fn hint(&self) -> Option<String> {
        let hint = match self {
            PgError::BadTarget { .. } => {
                "use a libpq URL (postgres://user@host:5432/db?sslmode=require) or key=value pairs (host=... dbname=...)"
            }
            PgError::Connect { kind, .. } => match kind {
                ConnectFailure::Auth => {
                    "check the user and password of the connection string (or of HOOKQ_DATABASE_URL, which wins over the config)"
                }
                ConnectFailure::NoDatabase => {
                    "create the database first (createdb), or name an existing one"
                }
                ConnectFailure::Unreachable => {
                    "check the host and port, and that the server runs and accepts connections from this host"
                }
                ConnectFailure::Tls => {
                    "check sslmode and sslrootcert: verify-ca and verify-full need the CA that signed the server's certificate, and verify-full a certificate that names the host connected to"
                }
                ConnectFailure::Other => return None,
            },
            PgError::NoSchema { .. } => {
                "the schema is created when a queue is first opened for writing (PgStore::open); check that the connection names the right database and search_path"
            }
            PgError::NewerSchema { .. } => {
                "a newer hookq migrated this database; use that version here too"
            }
            PgError::OlderSchema { .. } => "open the queue once with migration allowed",
            PgError::Migrate(_) => {
                "hookq makes its tables when a queue is first opened: the connecting role needs the right to create tables in the database (GRANT CREATE ON SCHEMA public TO the role), or its owner opens the queue once"
            }
            PgError::Locked { .. } => {
                "a hub or another pass is draining this queue; pending points stay queued for it"
            }
            PgError::LockLost { .. } | PgError::LeaseExpired { .. } => {
                "another runner may have taken the queue over; points this runner had not cleared run again there"
            }
            PgError::Row(e) => return e.hint(),
            _ => return None,
        };
        Some(hint.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use postgres::error::SqlState;

    #[test]
    fn outages_pass_and_settings_do_not() {
        for code in [
            SqlState::ADMIN_SHUTDOWN,
            SqlState::CANNOT_CONNECT_NOW,
            SqlState::CRASH_SHUTDOWN,
            SqlState::QUERY_CANCELED,
            SqlState::CONNECTION_FAILURE,
            SqlState::TOO_MANY_CONNECTIONS,
            SqlState::T_R_SERIALIZATION_FAILURE,
            SqlState::LOCK_NOT_AVAILABLE,
        ] {
            assert!(transient_code(&code), "{code:?} passes");
        }
        for code in [
            SqlState::INSUFFICIENT_PRIVILEGE,
            SqlState::UNDEFINED_TABLE,
            SqlState::UNDEFINED_FUNCTION,
            SqlState::INVALID_PASSWORD,
            SqlState::INVALID_CATALOG_NAME,
            SqlState::UNIQUE_VIOLATION,
        ] {
            assert!(!transient_code(&code), "{code:?} does not pass");
        }
        let refused = |code| PgError::Connect {
            target: "postgres://h/db".into(),
            kind: ConnectFailure::Other,
            reason: "refused".into(),
            code,
        };
        assert!(refused(Some(SqlState::CANNOT_CONNECT_NOW)).is_transient());
        assert!(!refused(Some(SqlState::INVALID_PASSWORD)).is_transient());
        assert!(refused(None).is_transient());
        assert!(!PgError::NewerSchema { found: 9, supported: 4 }.is_transient());
    }
}
