//! The pending counters and the occurrence id marks that `queue stats` and recording keep.

use rusqlite::{Connection, params};

use crate::queue::row_error::RowError;

use super::StoreError;

/// How many points recording lets gather above the counted mark before it counts them in
/// ([`count_new_points`]): what `queue stats` may have to count itself.
pub const COUNT_EVERY: i64 = 256;

/// Where point ids and the pending counters stand (see table `queue_counts` in
/// `migrations/sqlite/V1__initial.sql`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdMarks {
    /// The highest pending id (0: none).
    pub newest: i64,
    /// The highest id ever cleared (kept by a trigger on every delete).
    pub cleared: i64,
    /// The pending counters count the points up to this id.
    pub counted: i64,
}

/// The three columns [`IdMarks::from_row`] reads, as a literal for `concat!`: for a `SELECT` of
/// their own or after other columns of one, with no SQL built at run time.
macro_rules! id_mark_columns {
    () => {
        "(SELECT COALESCE(MAX(id), 0) FROM pending_hooks),
         COALESCE((SELECT n FROM queue_counts WHERE kind = 'ids' AND name = 'cleared'), 0),
         COALESCE((SELECT n FROM queue_counts WHERE kind = 'ids' AND name = 'counted'), 0)"
    };
}
pub(crate) use id_mark_columns;

impl IdMarks {
    /// Reads the marks inside `conn`'s current transaction.
    pub fn read(conn: &Connection) -> Result<Self, StoreError> {
        Ok(conn
            .prepare_cached(concat!("SELECT ", id_mark_columns!()))?
            .query_row([], |r| Self::from_row(r, 0))?)
    }

    /// The marks from [`id_mark_columns`] at column `first` of `row`.
    pub(crate) fn from_row(row: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<Self> {
        Ok(Self {
            newest: row.get(first)?,
            cleared: row.get(first + 1)?,
            counted: row.get(first + 2)?,
        })
    }

    /// The id the next point takes: above every id pending or ever cleared, so that an
    /// occurrence id is never given twice (as `AUTOINCREMENT` would, without writing
    /// `sqlite_sequence` on every insert).
    pub fn next_id(&self) -> Result<i64, StoreError> {
        self.ids_after(1)
    }

    /// The last of `n` ids taken from [`IdMarks::next_id`] on; an error when the ids run out,
    /// as `AUTOINCREMENT` failed with `SQLITE_FULL`.
    pub fn ids_after(&self, n: i64) -> Result<i64, StoreError> {
        self.newest.max(self.cleared).checked_add(n).ok_or_else(|| {
            RowError::Invalid("occurrence ids are used up (the highest one was given)".into()).into()
        })
    }
}

/// Pending points by point name, as `queue stats` gives them: the counters, and the points
/// recorded since they last counted (at most [`COUNT_EVERY`]). Names with none are left out.
pub fn pending_by_point(conn: &Connection) -> Result<Vec<(String, i64)>, StoreError> {
    Ok(conn
        .prepare_cached(
            "SELECT name, SUM(n) FROM (
                 SELECT name, n FROM queue_counts WHERE kind = 'points'
                 UNION ALL
                 SELECT point, COUNT(*) FROM pending_hooks WHERE id >
                     COALESCE((SELECT n FROM queue_counts WHERE kind = 'ids' AND name = 'counted'), 0)
                 GROUP BY point)
             GROUP BY name HAVING SUM(n) != 0 ORDER BY name",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?)
}

/// Records that the pending counters have counted every point up to `id`.
pub(crate) fn set_counted_mark(conn: &Connection, id: i64) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO queue_counts (kind, name, n) VALUES ('ids', 'counted', ?1) ON CONFLICT (kind, name) DO UPDATE SET n = excluded.n",
    )?
    .execute([id])?;
    Ok(())
}

/// Counts the points recorded since the pending counters last counted, and moves their mark to
/// the newest point. Recording does this once [`COUNT_EVERY`] points have gathered, so that a
/// transition need not write a counter's page; code that writes pending rows by
/// SQL of its own, as the bench's fixtures do, calls it after.
pub fn count_new_points(conn: &Connection) -> Result<(), StoreError> {
    count_up_to(conn, IdMarks::read(conn)?)
}

/// [`count_new_points`] for a caller that has the marks as they stand in its transaction
/// already: counts the points above `marks.counted` and moves the mark to `marks.newest`.
pub(crate) fn count_up_to(conn: &Connection, marks: IdMarks) -> Result<(), StoreError> {
    if marks.newest <= marks.counted {
        return Ok(());
    }
    conn.prepare_cached(
        "INSERT INTO queue_counts (kind, name, n)
         SELECT 'points', point, COUNT(*) FROM pending_hooks WHERE id > ?1 GROUP BY point
         ON CONFLICT (kind, name) DO UPDATE SET n = n + excluded.n",
    )?
    .execute([marks.counted])?;
    set_counted_mark(conn, marks.newest)
}

/// Adds `delta` to the count of pending `point`s that `queue stats` reads, for points at or
/// below the counted mark (see [`count_new_points`]). Deleted points are taken off by the
/// delete trigger.
pub(crate) fn count_pending(conn: &Connection, point: &str, delta: i64) -> Result<(), StoreError> {
    if delta != 0 {
        conn.prepare_cached(
            "INSERT INTO queue_counts (kind, name, n) VALUES ('points', ?1, ?2) ON CONFLICT (kind, name) DO UPDATE SET n = n + ?2",
        )?
        .execute(params![point, delta])?;
    }
    Ok(())
}
