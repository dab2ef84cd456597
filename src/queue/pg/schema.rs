//! The queue's schema on PostgreSQL: refinery migrations of their own (under
//! `migrations/postgres/`), with their own history table, so they never meet the SQLite
//! migrations or a host's own refinery history in the same database.

use postgres::Client;

use crate::queue::pg::error::PgError;
use crate::queue::pg::lock::ADVISORY_CLASS;

/// The table refinery records hookq's applied migrations in.
pub const HISTORY_TABLE: &str = "hookq_schema_history";

/// The migrations, embedded by name so they run under hookq's own history table (the SQLite
/// store's are under `migrations/sqlite/`).
const MIGRATIONS: &[(&str, &str)] = &[
    (
        "V1__initial",
        include_str!("../../../migrations/postgres/V1__initial.sql"),
    ),
    (
        "V2__record_functions",
        include_str!("../../../migrations/postgres/V2__record_functions.sql"),
    ),
    (
        "V3__occurrence_sequence",
        include_str!("../../../migrations/postgres/V3__occurrence_sequence.sql"),
    ),
    (
        "V4__runner_lease",
        include_str!("../../../migrations/postgres/V4__runner_lease.sql"),
    ),
    (
        "V5__pause",
        include_str!("../../../migrations/postgres/V5__pause.sql"),
    ),
    (
        "V6__history_host",
        include_str!("../../../migrations/postgres/V6__history_host.sql"),
    ),
    (
        "V7__lighter_recording",
        include_str!("../../../migrations/postgres/V7__lighter_recording.sql"),
    ),
    (
        "V8__one_statement_move",
        include_str!("../../../migrations/postgres/V8__one_statement_move.sql"),
    ),
    (
        "V9__pruned_logs",
        include_str!("../../../migrations/postgres/V9__pruned_logs.sql"),
    ),
    (
        "V10__writer_tags",
        include_str!("../../../migrations/postgres/V10__writer_tags.sql"),
    ),
];

/// The advisory lock (of [`ADVISORY_CLASS`]) that serialises migrations: queue locks use the
/// queues' numbers, which start at 1.
const MIGRATION_LOCK: i32 = 0;

fn migrations() -> Vec<refinery::Migration> {
    MIGRATIONS
        .iter()
        .map(|(name, sql)| {
            refinery::Migration::unapplied(name, sql).expect("embedded migration names are valid")
        })
        .collect()
}

/// The newest schema version this hookq knows.
pub fn schema_version() -> i64 {
    migrations()
        .iter()
        .map(|m| i64::from(m.version()))
        .max()
        .unwrap_or(0)
}

/// The schema version the database records, `None` for one without hookq's schema.
pub fn applied_version(client: &mut Client) -> Result<Option<i64>, PgError> {
    let exists: bool = client
        .query_one("SELECT to_regclass($1) IS NOT NULL", &[&HISTORY_TABLE])?
        .get(0);
    if !exists {
        return Ok(None);
    }
    let version: Option<i32> = client
        .query_one(&format!("SELECT MAX(version) FROM {HISTORY_TABLE}"), &[])?
        .get(0);
    Ok(version.map(i64::from))
}

/// Refuses a database whose schema is missing, older or newer than this hookq's.
pub fn check(client: &mut Client) -> Result<(), PgError> {
    let supported = schema_version();
    match applied_version(client)? {
        None => Err(PgError::NoSchema {
            table: HISTORY_TABLE.into(),
        }),
        Some(found) if found > supported => Err(PgError::NewerSchema { found, supported }),
        Some(found) if found < supported => Err(PgError::OlderSchema { found, supported }),
        Some(_) => Ok(()),
    }
}

/// Creates or upgrades the schema; refuses one from a newer hookq. Concurrent callers (hubs
/// on several hosts starting together) take turns on an advisory lock, and each finds the
/// schema as the one before left it.
pub fn migrate(client: &mut Client) -> Result<(), PgError> {
    let supported = schema_version();
    let newer = |found: Option<i64>| match found {
        Some(found) if found > supported => Err(PgError::NewerSchema { found, supported }),
        other => Ok(other == Some(supported)),
    };
    if newer(applied_version(client)?)? {
        return Ok(());
    }
    client.execute(
        "SELECT pg_advisory_lock($1, $2)",
        &[&ADVISORY_CLASS, &MIGRATION_LOCK],
    )?;
    let ran = (|| {
        if newer(applied_version(client)?)? {
            return Ok(());
        }
        let mut runner = refinery::Runner::new(&migrations())
            .set_abort_divergent(true)
            .set_grouped(true);
        runner.set_migration_table_name(HISTORY_TABLE);
        runner
            .run(client)
            .map(drop)
            .map_err(|e| PgError::Migrate(crate::queue::pg::error::error_chain(&e)))
    })();
    let unlocked = client.execute(
        "SELECT pg_advisory_unlock($1, $2)",
        &[&ADVISORY_CLASS, &MIGRATION_LOCK],
    );
    ran?;
    unlocked?;
    Ok(())
}
