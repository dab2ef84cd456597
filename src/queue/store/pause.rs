//! Pausing the queue (`hookq queue pause`): a flag in the database, so that it outlives the
//! process that set it and binds every runner of the file. Recording never reads it.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use super::{Store, StoreError};
use crate::queue::model::{Paused, now_ms};


impl Store {
    /// When the queue was paused (unix ms), or `None` while it runs.
    pub fn paused(&self) -> Result<Option<i64>, StoreError> {
        Ok(self
            .conn
            .prepare_cached("SELECT paused_ms FROM queue_state WHERE id = 1")?
            .query_row([], |r| r.get::<_, Option<i64>>(0))
            .optional()?
            .flatten())
    }

    /// When the queue in the file at `path` was paused, read without opening the store for
    /// writing: no migration runs and nothing is written (`hookq check`). `None` while it runs,
    /// and for a file whose schema predates pausing.
    pub fn paused_in(path: &Path) -> Result<Option<i64>, StoreError> {
        let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
        conn.busy_timeout(Duration::from_secs(5))?;
        let has_table: bool = conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'queue_state')",
            [],
            |r| r.get(0),
        )?;
        if !has_table {
            return Ok(None);
        }
        Ok(conn
            .query_row("SELECT paused_ms FROM queue_state WHERE id = 1", [], |r| {
                r.get::<_, Option<i64>>(0)
            })
            .optional()?
            .flatten())
    }

    /// Pauses the queue: from the commit on, no runner starts a point of it (a point already
    /// running finishes) until [`Store::resume`]; transitions are recorded as usual. Pausing a
    /// paused queue changes nothing and says since when it is.
    pub fn pause(&mut self) -> Result<Paused, StoreError> {
        self.write(|tx| {
            let now = now_ms();
            let changed = tx
                .prepare_cached(
                    "UPDATE queue_state SET paused_ms = ?1 WHERE id = 1 AND paused_ms IS NULL",
                )?
                .execute([now])?
                == 1;
            let since: i64 = tx
                .prepare_cached("SELECT paused_ms FROM queue_state WHERE id = 1")?
                .query_row([], |r| r.get(0))?;
            Ok(Paused {
                since_ms: since,
                changed,
            })
        })
    }

    /// Resumes a paused queue: the next pass starts its points. `None` when it was not paused.
    /// A hub notices the commit as it notices a recording, and drains.
    pub fn resume(&mut self) -> Result<Option<Paused>, StoreError> {
        self.write(|tx| {
            let since: Option<i64> = tx
                .prepare_cached("SELECT paused_ms FROM queue_state WHERE id = 1")?
                .query_row([], |r| r.get(0))?;
            let Some(since) = since else {
                return Ok(None);
            };
            tx.prepare_cached("UPDATE queue_state SET paused_ms = NULL WHERE id = 1")?
                .execute([])?;
            Ok(Some(Paused {
                since_ms: since,
                changed: true,
            }))
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::queue::store::Store;

    #[test]
    fn pause_and_resume_are_idempotent_and_outlive_the_connection() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("arc.db");
        let mut store = Store::open(&path).unwrap();
        assert_eq!(store.paused().unwrap(), None);
        assert_eq!(store.resume().unwrap(), None);
        let first = store.pause().unwrap();
        assert!(first.changed);
        let again = store.pause().unwrap();
        assert_eq!((again.changed, again.since_ms), (false, first.since_ms));
        drop(store);
        let mut store = Store::open(&path).unwrap();
        assert_eq!(store.paused().unwrap(), Some(first.since_ms));
        assert_eq!(Store::paused_in(&path).unwrap(), Some(first.since_ms));
        let resumed = store.resume().unwrap().unwrap();
        assert_eq!(resumed.since_ms, first.since_ms);
        assert_eq!(store.paused().unwrap(), None);
    }
}
