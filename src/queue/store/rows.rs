//! Reading the neutral rows of [`crate::queue::model`] from SQLite: each row type's columns and
//! its conversion, so that typed fields are parsed once, where they are read.

use rusqlite::ToSql;
use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSqlOutput, ValueRef};

use crate::queue::ids::TaskId;
use crate::queue::model::{Attempt, HistoryRow, Outcome, PendingRow, Sha, TaskRow};
use crate::queue::phase::Point;
use crate::queue::starts::{self, Start};

impl TaskRow {
    pub(super) const COLUMNS: &'static str =
        "id, plan, phase, attempt, merged_sha, created_ms, updated_ms";

    pub(super) fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: r.get(0)?,
            plan: r.get(1)?,
            phase: r.get(2)?,
            attempt: r.get(3)?,
            merged_sha: r.get(4)?,
            created_ms: r.get(5)?,
            updated_ms: r.get(6)?,
        })
    }
}

impl PendingRow {
    pub(super) const SELECT: &'static str = r#"
        SELECT h.id, h.task, t.plan, h.point, s.state, h.recorded_ms, h.passes, h.last_started_ms,
               t.attempt, t.merged_sha
        FROM pending_hooks h
        LEFT JOIN tasks t ON t.id = h.task
        LEFT JOIN pending_hook_states s ON s.hook_id = h.id"#;

    pub(super) fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: r.get(0)?,
            task: r.get(1)?,
            plan: r.get(2)?,
            point: r.get(3)?,
            state: r.get(4)?,
            recorded_ms: r.get(5)?,
            passes: r.get(6)?,
            last_started_ms: r.get(7)?,
            attempt: r.get(8)?,
            merged_sha: r.get(9)?,
        })
    }

    pub(super) fn count_starts(&mut self, starts: &[Start]) {
        starts::apply(starts, self.id, &mut self.passes, &mut self.last_started_ms);
    }
}

impl HistoryRow {
    pub(super) const SELECT: &'static str = r#"
        SELECT id, occurrence, task, point, state, recorded_ms, passes, command_index, command,
               outcome, exit_code, signal, started_ms, duration_ms, log_path, finished_ms
        FROM hook_history"#;

    pub(super) fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: r.get(0)?,
            occurrence: r.get(1)?,
            task: r.get(2)?,
            point: r.get(3)?,
            state: r.get(4)?,
            recorded_ms: r.get(5)?,
            passes: r.get(6)?,
            command_index: r.get(7)?,
            command: r.get(8)?,
            outcome: r.get(9)?,
            exit_code: r.get(10)?,
            signal: r.get(11)?,
            started_ms: r.get(12)?,
            duration_ms: r.get(13)?,
            log_path: r.get(14)?,
            finished_ms: r.get(15)?,
            host: None,
        })
    }
}

/// A stored text parsed into its type: a value that is not valid is the row's error.
fn parsed<T: std::str::FromStr>(v: ValueRef<'_>) -> FromSqlResult<T>
where
    T::Err: std::error::Error + Send + Sync + 'static,
{
    v.as_str()?
        .parse()
        .map_err(|e| FromSqlError::Other(Box::new(e)))
}

impl FromSql for Outcome {
    fn column_result(v: ValueRef<'_>) -> FromSqlResult<Self> {
        parsed(v)
    }
}

impl FromSql for Sha {
    fn column_result(v: ValueRef<'_>) -> FromSqlResult<Self> {
        parsed(v)
    }
}

impl FromSql for Attempt {
    fn column_result(v: ValueRef<'_>) -> FromSqlResult<Self> {
        Attempt::new(v.as_i64()?).map_err(|e| FromSqlError::Other(Box::new(e)))
    }
}

impl FromSql for TaskId {
    fn column_result(v: ValueRef<'_>) -> FromSqlResult<Self> {
        parsed(v)
    }
}

impl FromSql for Point {
    fn column_result(v: ValueRef<'_>) -> FromSqlResult<Self> {
        parsed(v)
    }
}

impl ToSql for TaskId {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(ValueRef::Text(self.as_str().as_bytes())))
    }
}

impl ToSql for Point {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(ValueRef::Text(self.as_str().as_bytes())))
    }
}

impl ToSql for Outcome {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(ValueRef::Text(self.as_str().as_bytes())))
    }
}
