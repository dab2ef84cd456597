//! Reads: tasks, pending points, history and counts, as `queue` and `task show` list them.

use rusqlite::{OptionalExtension, params};

use crate::queue::ids::TaskId;
use crate::queue::row_error::RowError;
use crate::queue::starts::{self, Start};

use super::clears::start_log_error;
use super::counters::pending_by_point;
use super::{Store, StoreError};
use crate::queue::model::{
    HistoryFilter, HistoryRow, OutcomeCount, PendingFilter, PendingRow, Stats, TaskRow,
};

impl Store {
    /// One task.
    pub fn task(&self, id: &str) -> Result<Option<TaskRow>, StoreError> {
        Ok(self
            .conn
            .prepare_cached(&format!(
                "SELECT {} FROM tasks WHERE id = ?1",
                TaskRow::COLUMNS
            ))?
            .query_row([id], TaskRow::from_row)
            .optional()?)
    }

    /// Tasks, optionally of one plan, by id.
    pub fn tasks(&self, plan: Option<&str>) -> Result<Vec<TaskRow>, StoreError> {
        // A filter written as `?1 IS NULL OR plan = ?1` keeps SQLite from using the index.
        let of_plan = if plan.is_some() {
            "plan = ?1"
        } else {
            "?1 IS NULL"
        };
        let sql = format!(
            "SELECT {} FROM tasks WHERE {of_plan} ORDER BY id",
            TaskRow::COLUMNS
        );
        let rows = self
            .conn
            .prepare_cached(&sql)?
            .query_map([plan], TaskRow::from_row)?
            .collect::<Result<_, _>>()?;
        Ok(rows)
    }

    /// Pending points in the order they run, from occurrence `after` (exclusive), at most `limit`,
    /// of one task or all. Starts a pass logged (in `arc.db-starts`) and not folded yet are
    /// counted in `passes`.
    pub fn pending(
        &self,
        after: i64,
        limit: usize,
        task: Option<&str>,
    ) -> Result<Vec<PendingRow>, StoreError> {
        // The file before the rows: a fold commits before it empties the file.
        let starts = self.unfolded_starts()?;
        let sql = format!(
            "{} WHERE h.id > ?1 AND (?2 IS NULL OR h.task = ?2) ORDER BY h.id LIMIT ?3",
            PendingRow::SELECT
        );
        let mut rows: Vec<PendingRow> = self
            .conn
            .prepare_cached(&sql)?
            .query_map(params![after, task, limit as i64], PendingRow::from_row)?
            .collect::<Result<_, _>>()?;
        if !starts.is_empty() {
            let by_id = starts::by_id(&starts);
            for r in &mut rows {
                if let Some(own) = by_id.get(&r.id) {
                    r.count_starts(own);
                }
            }
        }
        Ok(rows)
    }

    /// Pending points as `filter` narrows them, in the order they run; unfolded starts counted
    /// as in [`Store::pending`].
    pub fn pending_where(&self, filter: &PendingFilter) -> Result<Vec<PendingRow>, StoreError> {
        let Some(point) = &filter.point else {
            return self.pending(filter.after, filter.limit, filter.task.as_ref().map(|t| t.as_str()));
        };
        let starts = self.unfolded_starts()?;
        let sql = format!(
            "{} WHERE h.id > ?1 AND h.point = ?4 AND (?2 IS NULL OR h.task = ?2) ORDER BY h.id LIMIT ?3",
            PendingRow::SELECT
        );
        let mut rows: Vec<PendingRow> = self
            .conn
            .prepare_cached(&sql)?
            .query_map(
                params![filter.after, filter.task, filter.limit as i64, point],
                PendingRow::from_row,
            )?
            .collect::<Result<_, _>>()?;
        for r in &mut rows {
            r.count_starts(&starts);
        }
        Ok(rows)
    }

    /// One pending point, its unfolded starts counted as in [`Store::pending`].
    pub fn pending_occurrence(&self, id: i64) -> Result<Option<PendingRow>, StoreError> {
        let starts = self.unfolded_starts()?;
        let sql = format!("{} WHERE h.id = ?1", PendingRow::SELECT);
        let mut row = self
            .conn
            .prepare_cached(&sql)?
            .query_row([id], PendingRow::from_row)
            .optional()?;
        if let Some(r) = &mut row {
            r.count_starts(&starts);
        }
        Ok(row)
    }

    /// What the start log holds now.
    pub(super) fn unfolded_starts(&self) -> Result<Vec<Start>, StoreError> {
        let path = starts::path_for(&self.path);
        starts::read(&path).map_err(|e| start_log_error(&path, "read", e))
    }

    /// History, newest first, optionally of one task or one occurrence.
    pub fn history(
        &self,
        task: Option<&str>,
        occurrence: Option<i64>,
        limit: usize,
    ) -> Result<Vec<HistoryRow>, StoreError> {
        self.history_where(&HistoryFilter {
            task: task
                .map(TaskId::new)
                .transpose()
                .map_err(|e| RowError::Invalid(e.to_string()))?,
            occurrence,
            limit,
            ..HistoryFilter::default()
        })
    }

    /// History rows as `filter` narrows them, newest first. A row has no host on SQLite, so a
    /// host filter finds none.
    pub fn history_where(&self, filter: &HistoryFilter) -> Result<Vec<HistoryRow>, StoreError> {
        if filter.host.is_some() {
            return Ok(Vec::new());
        }
        // Plain equalities for the filters given, so each reaches its index: `hook_history_by_task`
        // serves only a plain `task = ?`, never `(? IS NULL OR task = ?)`.
        let mut conditions = vec!["1".to_owned()];
        let mut args: Vec<rusqlite::types::Value> = Vec::new();
        let mut and = |test: &str, value: rusqlite::types::Value| {
            args.push(value);
            conditions.push(format!("{test} ?{}", args.len()));
        };
        if let Some(task) = &filter.task {
            and("task =", task.as_str().to_owned().into());
        }
        if let Some(point) = &filter.point {
            and("point =", point.as_str().to_owned().into());
        }
        if let Some(outcome) = &filter.outcome {
            and("outcome =", outcome.as_str().to_owned().into());
        }
        if let Some(occurrence) = filter.occurrence {
            and("occurrence =", occurrence.into());
        }
        if let Some(before) = filter.before {
            and("id <", before.into());
        }
        args.push(i64::try_from(filter.limit).unwrap_or(i64::MAX).into());
        let sql = format!(
            "{} WHERE {} ORDER BY id DESC LIMIT ?{}",
            HistoryRow::SELECT,
            conditions.join(" AND "),
            args.len()
        );
        let rows = self
            .conn
            .prepare_cached(&sql)?
            .query_map(rusqlite::params_from_iter(args), HistoryRow::from_row)?
            .collect::<Result<_, _>>()?;
        Ok(rows)
    }

    /// History rows that finished since `since_ms`, counted by outcome per interval of
    /// `bucket_ms` from `since_ms` on (only the intervals and outcomes that have rows), oldest
    /// first. Reads the finish-time index: as cheap as the rows in the window.
    pub fn outcomes(&self, since_ms: i64, bucket_ms: i64) -> Result<Vec<OutcomeCount>, StoreError> {
        let bucket_ms = bucket_ms.max(1);
        let rows = self
            .conn
            .prepare_cached(
                "SELECT ?1 + (finished_ms - ?1) / ?2 * ?2 AS start, outcome, COUNT(*)
                 FROM hook_history WHERE finished_ms >= ?1
                 GROUP BY start, outcome ORDER BY start, outcome",
            )?
            .query_map(params![since_ms, bucket_ms], |r| {
                Ok(OutcomeCount {
                    start_ms: r.get(0)?,
                    outcome: r.get(1)?,
                    count: r.get(2)?,
                })
            })?
            .collect::<Result<_, _>>()?;
        Ok(rows)
    }

    /// The `limit` longest command runs that finished since `since_ms`, longest first.
    pub fn slowest(&self, since_ms: i64, limit: usize) -> Result<Vec<HistoryRow>, StoreError> {
        let sql = format!(
            "{} WHERE finished_ms >= ?1 AND duration_ms IS NOT NULL
             ORDER BY duration_ms DESC, id DESC LIMIT ?2",
            HistoryRow::SELECT
        );
        let rows = self
            .conn
            .prepare_cached(&sql)?
            .query_map(params![since_ms, limit as i64], HistoryRow::from_row)?
            .collect::<Result<_, _>>()?;
        Ok(rows)
    }

    /// One history row.
    pub fn history_row(&self, id: i64) -> Result<Option<HistoryRow>, StoreError> {
        let sql = format!("{} WHERE id = ?1", HistoryRow::SELECT);
        Ok(self
            .conn
            .prepare_cached(&sql)?
            .query_row([id], HistoryRow::from_row)
            .optional()?)
    }

    /// Counts for `queue stats`, read from the kept counters and the few points recorded since
    /// they last counted (recording counts new points in every few hundred): as cheap with a
    /// million pending points as with ten. The interrupted count adds the start log's points not counted yet
    /// (one lookup per line; the log holds the starts of the last batch or so).
    pub fn stats(&self) -> Result<Stats, StoreError> {
        let starts = self.unfolded_starts()?;
        // One snapshot for every count: a fold committing between two of them could otherwise
        // hide a running point from both.
        let snapshot = self.conn.unchecked_transaction()?;
        let c = &self.conn;
        let counts: Vec<(String, String, i64)> = c
            .prepare_cached(
                "SELECT kind, name, n FROM queue_counts WHERE n != 0 ORDER BY kind, name",
            )?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<Result<_, _>>()?;
        let of = |kind: &str| -> Vec<(String, i64)> {
            counts
                .iter()
                .filter(|(k, _, _)| k == kind)
                .map(|(_, name, n)| (name.clone(), *n))
                .collect()
        };
        let pending_by_point = pending_by_point(c)?;
        let oldest: Option<i64> = c
            .prepare_cached("SELECT recorded_ms FROM pending_hooks ORDER BY id LIMIT 1")?
            .query_row([], |r| r.get(0))
            .optional()?;
        let interrupted = c
            .prepare_cached("SELECT COUNT(*) FROM pending_hooks WHERE passes > 0")?
            .query_row([], |r| r.get::<_, i64>(0))?
            + self.newly_started(&starts)?;
        let paused_since_ms = self.paused()?;
        snapshot.commit()?;
        Ok(Stats {
            pending: pending_by_point.iter().map(|(_, n)| n).sum(),
            pending_by_point,
            interrupted,
            oldest_recorded_ms: oldest,
            history_by_outcome: of("history"),
            tasks: of("tasks").first().map_or(0, |(_, n)| *n),
            paused_since_ms,
        })
    }

    /// How many pending points with no counted start the start log has started.
    fn newly_started(&self, starts: &[Start]) -> Result<i64, StoreError> {
        let mut ids: Vec<i64> = starts.iter().map(|s| s.id).collect();
        ids.sort_unstable();
        ids.dedup();
        let mut n = 0;
        let mut st = self
            .conn
            .prepare_cached("SELECT passes, last_started_ms FROM pending_hooks WHERE id = ?1")?;
        for id in ids {
            let Some((mut passes, mut last)) = st
                .query_row([id], |r| Ok((r.get::<_, i64>(0)?, r.get(1)?)))
                .optional()?
            else {
                continue;
            };
            if passes == 0 {
                starts::apply(starts, id, &mut passes, &mut last);
                n += i64::from(passes > 0);
            }
        }
        Ok(n)
    }
}
