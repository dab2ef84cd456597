//! The drain's writes: start marks, clears with their history rows, drops and pruning.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, Transaction, params};

use crate::queue::backend::Mark;
use crate::queue::lock::RunnerLock;
use crate::queue::row_error::RowError;
use crate::queue::starts::{Start, StartLog};

use super::open::{connect, set_pragma};
use super::{Store, StoreError, StoreOptions};
use crate::queue::model::{Cleared, NewHistory, Outcome, PendingRow, now_ms};

impl Store {
    /// Records that this pass starts `entry` now, in the start log (see [`crate::queue::starts`]):
    /// one `write`, no commit. Records nothing when the point is no longer pending (dropped since
    /// it was read: [`Mark::Gone`]) or the queue is paused ([`Mark::Paused`]), which the same
    /// read tells.
    pub(crate) fn mark_started(
        &mut self,
        entry: &PendingRow,
        _lock: &RunnerLock,
    ) -> Result<Mark, StoreError> {
        mark_started_on(&self.conn, &self.starts, entry)
    }

    /// A [`StartMarker`] for a thread of its own, sharing this store's start log. Its
    /// connection to the database, which it only reads, is opened when it first marks a point.
    pub(crate) fn start_marker(&self, _lock: &RunnerLock) -> StartMarker {
        StartMarker {
            path: self.path.clone(),
            opts: StoreOptions {
                busy_timeout: self.busy_timeout,
                synchronous: self.synchronous,
            },
            conn: None,
            starts: Arc::clone(&self.starts),
        }
    }

    /// Folds what the start log holds (the starts of a runner that died before it folded them)
    /// into the points' counts, then empties it. A pass does this before it reads the queue. It
    /// takes the write lock even when there is nothing to fold, so that a pass that cannot write
    /// (another writer holds the database) stops before it runs anything it could not clear.
    pub(crate) fn fold_starts(&mut self, _lock: &RunnerLock) -> Result<usize, StoreError> {
        let starts = self.unfolded_starts()?;
        self.write(|tx| fold_in(tx, &starts))?;
        self.empty_start_log()?;
        Ok(starts.len())
    }

    /// Clears points, each with its history rows, in one transaction: the drain commits the
    /// points it finished together. The starts this store recorded for points still pending
    /// (running, or stopped) are folded in the same transaction.
    pub(crate) fn clear_all(&mut self, points: &[Cleared]) -> Result<(), StoreError> {
        self.clear_all_within(points, self.busy_timeout)
    }

    /// [`Store::clear_all`], unless another writer holds the database: then it returns
    /// `Ok(false)` at once (after a millisecond or two) and clears nothing. The drain clears this
    /// way while a command runs, whose timeout and output must not wait on another writer.
    pub(crate) fn try_clear_all(&mut self, points: &[Cleared]) -> Result<bool, StoreError> {
        match self.clear_all_within(points, Duration::ZERO) {
            Ok(()) => Ok(true),
            Err(StoreError::Busy(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn clear_all_within(
        &mut self,
        points: &[Cleared],
        patience: Duration,
    ) -> Result<(), StoreError> {
        let cleared: HashSet<i64> = points.iter().map(|p| p.entry.id).collect();
        // Held until the file is emptied: a parallel pass's worker marking a start meanwhile
        // waits for this commit rather than append a line the emptying would lose.
        let starts = Arc::clone(&self.starts);
        let mut log = lock_log(&starts);
        let still: Vec<Start> = log
            .unfolded()
            .iter()
            .filter(|s| !cleared.contains(&s.id))
            .copied()
            .collect();
        if points.is_empty() && still.is_empty() {
            return Ok(());
        }
        self.write_within(patience, |tx| {
            fold_in(tx, &still)?;
            points
                .iter()
                .try_for_each(|p| clear_in(tx, &p.entry, &p.rows))
        })?;
        if log.unfolded().is_empty() {
            return Ok(());
        }
        log.truncate()
            .map_err(|e| start_log_error(log.path(), "empty", e))
    }

    fn empty_start_log(&mut self) -> Result<(), StoreError> {
        let mut log = lock_log(&self.starts);
        log.truncate()
            .map_err(|e| start_log_error(log.path(), "empty", e))
    }

    /// Drops a pending point to history as `dropped`.
    pub fn drop_occurrence(&mut self, id: i64) -> Result<PendingRow, StoreError> {
        let entry = self.pending_occurrence(id)?.ok_or(RowError::NoOccurrence(id))?;
        self.write(|tx| {
            // Re-check inside the write lock: a pass may have cleared it since the read.
            let still: bool = tx.query_row(
                "SELECT EXISTS (SELECT 1 FROM pending_hooks WHERE id = ?1)",
                [id],
                |r| r.get(0),
            )?;
            if !still {
                return Err(RowError::NoOccurrence(id).into());
            }
            clear_in(tx, &entry, &[NewHistory::bare(Outcome::Dropped)])
        })?;
        Ok(entry)
    }

    /// Deletes history rows that finished before `cutoff_ms`, at most `limit` of them, oldest
    /// first; returns how many went. First, `remove_logs` is called with each task whose hook
    /// logs nothing will refer to once they are gone: no pending point, no other history row.
    ///
    /// The logs go before the rows, outside the write lock, so recording never waits on the
    /// files, and a runner killed between the two leaves rows whose logs are gone (shown as
    /// pruned, and pruned by the next pass), never logs that no row names. Only the runner lock's
    /// holder prunes, after its pass ran every command, so no hook writes to a log that goes.
    pub(crate) fn prune_history(
        &mut self,
        cutoff_ms: i64,
        limit: usize,
        remove_logs: &mut dyn FnMut(&str),
    ) -> Result<usize, StoreError> {
        let limit = limit as i64;
        // Grouped by task, a task's rows all among the pruned ones; its pending points are
        // looked for in one scan (the table has no index by task: see the first migration).
        let unreferenced: Vec<String> = self
            .conn()
            .prepare_cached(
                "WITH doomed AS MATERIALIZED (
                     SELECT id, task FROM hook_history WHERE finished_ms < ?1
                     ORDER BY finished_ms, id LIMIT ?2)
                 SELECT d.task FROM doomed d GROUP BY d.task
                 HAVING COUNT(*) = (SELECT COUNT(*) FROM hook_history h WHERE h.task = d.task)
                     AND d.task NOT IN (SELECT task FROM pending_hooks)",
            )?
            .query_map(params![cutoff_ms, limit], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        for task in &unreferenced {
            remove_logs(task);
        }
        self.write(|tx| {
            Ok(tx
                .prepare_cached(
                    "DELETE FROM hook_history WHERE id IN (SELECT id FROM hook_history WHERE finished_ms < ?1 ORDER BY finished_ms, id LIMIT ?2)",
                )?
                .execute(params![cutoff_ms, limit])?)
        })
    }
}

/// Marks points started from a thread other than its store's: a parallel drain's worker marks
/// the point it takes from the queue the moment it starts it, as the store itself does with one
/// job. Made by [`QueueStore::start_marker`](crate::queue::QueueStore::start_marker), it shares
/// the store's start log; it marks through [`MarkStarts`](crate::queue::MarkStarts).
#[derive(Debug)]
pub struct StartMarker {
    path: PathBuf,
    opts: StoreOptions,
    conn: Option<Connection>,
    starts: Arc<Mutex<StartLog>>,
}

impl StartMarker {
    /// The database it marks starts of.
    pub(crate) fn db_path(&self) -> &Path {
        &self.path
    }

    /// As [`Store::mark_started`].
    pub(crate) fn mark_started(&mut self, entry: &PendingRow) -> Result<Mark, StoreError> {
        let conn = match &mut self.conn {
            Some(c) => c,
            None => {
                let c = connect(&self.path, self.opts)?;
                set_pragma(&c, "query_only", "ON", 1)?;
                self.conn.insert(c)
            }
        };
        mark_started_on(conn, &self.starts, entry)
    }
}

/// [`Store::mark_started`] on `conn`, appending to `starts`.
fn mark_started_on(
    conn: &Connection,
    starts: &Mutex<StartLog>,
    entry: &PendingRow,
) -> Result<Mark, StoreError> {
    // The pause is read with the point, in one statement: no read of its own per start.
    let read: Option<(Option<i64>, Option<i64>)> = conn
        .prepare_cached(
            "SELECT p.last_started_ms, (SELECT paused_ms FROM queue_state WHERE id = 1)
             FROM pending_hooks p WHERE p.id = ?1",
        )?
        .query_row([entry.id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let Some((last, paused)) = read else {
        return Ok(Mark::Gone);
    };
    if paused.is_some() {
        return Ok(Mark::Paused);
    }
    // Later than any start counted before, so that folding it counts it exactly once.
    let ms = now_ms().max(last.unwrap_or(0) + 1);
    let mut log = lock_log(starts);
    log.append(Start { id: entry.id, ms })
        .map_err(|e| start_log_error(log.path(), "write", e))?;
    Ok(Mark::Started)
}

/// The start log, whoever panicked holding it: each of its operations leaves it whole.
fn lock_log(starts: &Mutex<StartLog>) -> MutexGuard<'_, StartLog> {
    starts.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The error for a failed `action` ("read", "write", "empty") on the start log at `path`.
pub(super) fn start_log_error(
    path: &Path,
    action: &'static str,
    source: std::io::Error,
) -> StoreError {
    StoreError::StartLog {
        action,
        path: path.to_path_buf(),
        source,
    }
}

/// Counts starts a pass recorded in the start log, each once (see [`crate::queue::starts`]).
fn fold_in(tx: &Transaction<'_>, starts: &[Start]) -> Result<(), StoreError> {
    let mut fold = tx.prepare_cached(
        "UPDATE pending_hooks SET passes = passes + 1, last_started_ms = ?2
         WHERE id = ?1 AND (last_started_ms IS NULL OR last_started_ms < ?2)",
    )?;
    for s in starts {
        fold.execute(params![s.id, s.ms])?;
    }
    Ok(())
}

fn clear_in(
    tx: &Transaction<'_>,
    entry: &PendingRow,
    rows: &[NewHistory],
) -> Result<(), StoreError> {
    // The delete trigger keeps the counters and the cleared mark.
    tx.prepare_cached("DELETE FROM pending_hooks WHERE id = ?1")?
        .execute([entry.id])?;
    let now = now_ms();
    let state = entry.state.as_deref().unwrap_or("");
    let mut insert = tx.prepare_cached(
        r#"INSERT INTO hook_history (occurrence, task, point, state, recorded_ms, passes,
               command_index, command, outcome, exit_code, signal, started_ms, duration_ms,
               log_path, finished_ms)
           VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)"#,
    )?;
    for h in rows {
        insert.execute(params![
            entry.id,
            entry.task,
            entry.point,
            state,
            entry.recorded_ms,
            entry.passes,
            h.command_index.map(|i| i as i64),
            h.command,
            h.outcome.as_str(),
            h.exit_code,
            h.signal,
            h.started_ms,
            h.duration_ms,
            h.log_path,
            now,
        ])?;
    }
    Ok(())
}
