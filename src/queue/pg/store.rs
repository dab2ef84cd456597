//! The queue's rows on PostgreSQL: opening a queue (connect, migrate), the reads `queue` and
//! the drain make, and the drain's writes, which go through the runner lock's own connection.
//!
//! Every statement names its queue. Rows are the SQLite store's ([`PendingRow`],
//! [`HistoryRow`], [`TaskRow`], [`Stats`]), so that both stores look alike to their callers.

use postgres::types::{ToSql, Type};
use postgres::{Client, GenericClient, Row, Transaction};

use crate::queue::pg::marks::{queue_writers, writer_locks};

use crate::queue::backend::Mark;
use crate::queue::driver::Place;
use crate::queue::lock::Wait;
use crate::queue::pg::connect::{Prepared, connect};
use crate::queue::pg::error::PgError;
use crate::queue::pg::lock::{PgRunnerLock, host_name, queue_number};
use crate::queue::pg::name::QueueName;
use crate::queue::pg::notify::Notifier;
use crate::queue::pg::schema;
use crate::queue::pg::target::Target;
pub use crate::queue::pg::prune::prune_history;
use crate::queue::ids::TaskId;
use crate::queue::row_error::RowError;
use crate::queue::model::{Cleared, HistoryFilter, HistoryRow, NewHistory, Outcome, OutcomeCount, PendingFilter, PendingRow, Paused, Stats, TaskRow, now_ms};

/// A connection to one queue in a PostgreSQL database.
pub struct PgStore {
    client: Client,
    queue: QueueName,
    target: Target,
    prepared: Prepared,
    notifier: Option<Notifier>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("queue", &self.queue)
            .field("target", &self.target)
            .finish()
    }
}

impl PgStore {
    /// Connects to `target` and opens `queue`: creates or upgrades the schema (refusing one
    /// from a newer hookq) and the queue's row.
    pub fn open(target: &Target, queue: QueueName) -> Result<Self, PgError> {
        let mut client = connect(target, &application_name())?;
        schema::migrate(&mut client)?;
        queue_number(&mut client, &queue)?;
        Ok(Self {
            client,
            queue,
            target: target.clone(),
            prepared: Prepared::default(),
            notifier: None,
        })
    }

    /// Connects to `target` and opens `queue` without changing the schema: a database without
    /// it, or with an older or newer one, is refused.
    pub fn open_existing(target: &Target, queue: QueueName) -> Result<Self, PgError> {
        let mut client = connect(target, &application_name())?;
        schema::check(&mut client)?;
        Ok(Self {
            client,
            queue,
            target: target.clone(),
            prepared: Prepared::default(),
            notifier: None,
        })
    }

    /// The queue.
    pub fn queue(&self) -> &QueueName {
        &self.queue
    }

    /// Where it connects (the password masked when shown).
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// Where the queue lives, as its errors name it.
    pub fn place(&self) -> Place {
        Place::postgres(&self.queue, &self.target)
    }

    /// Wakes the queue's hubs after [`PgStore::write`] through `notifier` rather than on the
    /// store's own connection: the write then returns without waiting for the notification,
    /// and the writers sharing `notifier` send one per [`Notifier::DEBOUNCE`] between them.
    pub fn with_notifier(mut self, notifier: Notifier) -> Self {
        self.notifier = Some(notifier);
        self
    }

    /// The connection, for reads and for a host's own statements.
    pub fn client(&mut self) -> &mut Client {
        &mut self.client
    }

    /// `sql` prepared on the store's connection, once per connection.
    pub(crate) fn prepared(
        &mut self,
        sql: &'static str,
    ) -> Result<postgres::Statement, postgres::Error> {
        self.prepared.get(&mut self.client, sql)
    }

    /// Takes the queue's runner lock on a connection of its own (see [`PgRunnerLock`]).
    pub fn lock(&self, wait: Wait) -> Result<Option<PgRunnerLock>, PgError> {
        PgRunnerLock::acquire(&self.target, &self.queue, wait)
    }

    /// [`PgStore::lock`], giving up early when `keep_waiting` returns false (see
    /// [`PgRunnerLock::acquire_while`]).
    pub fn lock_while(
        &self,
        wait: Wait,
        keep_waiting: &dyn Fn() -> bool,
    ) -> Result<Option<PgRunnerLock>, PgError> {
        PgRunnerLock::acquire_while(&self.target, &self.queue, wait, keep_waiting)
    }

    /// Runs `f` in a transaction and commits it when `f` succeeds: record transitions in it
    /// with [`crate::queue::pg::record`], passing [`PgStore::queue`]. Once committed, the
    /// queue's hubs are woken ([`notify_hubs`](crate::queue::pg::notify_hubs), or the store's
    /// [`Notifier`] when it was given one); a notification
    /// that fails is only a `tracing` warning, since the hubs' poll finds the commit anyway.
    pub fn write<T>(
        &mut self,
        f: impl FnOnce(&mut Transaction<'_>, &QueueName) -> Result<T, PgError>,
    ) -> Result<T, PgError> {
        let mut tx = self.client.transaction()?;
        let out = f(&mut tx, &self.queue)?;
        tx.commit()?;
        if let Some(notifier) = &self.notifier {
            notifier.notify(&self.queue);
        } else if let Err(e) = crate::queue::pg::record::notify_hubs(&mut self.client, &self.queue)
        {
            tracing::warn!(queue = %self.queue, "cannot notify the queue's hubs: {e}");
        }
        Ok(out)
    }
}

/// The queue's reads and hand changes, on the store's own connection: what
/// [`PostgresDriver`](crate::queue::pg::PostgresDriver) does for [`Queue`](crate::queue::Queue),
/// for a host that holds a store.
impl PgStore {
    /// Task `id`, when the queue has it.
    pub fn task(&mut self, id: &str) -> Result<Option<TaskRow>, PgError> {
        task(&mut self.client, &self.queue, id)
    }

    /// The queue's tasks, of one plan or all, by id.
    pub fn tasks(&mut self, plan: Option<&str>) -> Result<Vec<TaskRow>, PgError> {
        tasks(&mut self.client, &self.queue, plan)
    }

    /// Pending points in the order they run, after occurrence `after`, at most `limit`,
    /// optionally of one task.
    pub fn pending(
        &mut self,
        after: i64,
        limit: usize,
        task: Option<&str>,
    ) -> Result<Vec<PendingRow>, PgError> {
        pending(&mut self.client, &self.queue, after, limit, task)
    }

    /// Pending points as `filter` narrows them, in the order they run.
    pub fn pending_where(&mut self, filter: &PendingFilter) -> Result<Vec<PendingRow>, PgError> {
        pending_where(&mut self.client, &self.queue, filter)
    }

    /// Pending occurrence `id`, when it is pending.
    pub fn pending_occurrence(&mut self, id: i64) -> Result<Option<PendingRow>, PgError> {
        pending_occurrence(&mut self.client, &self.queue, id)
    }

    /// History, newest first, optionally of one task or one occurrence.
    pub fn history(
        &mut self,
        task: Option<&str>,
        occurrence: Option<i64>,
        limit: usize,
    ) -> Result<Vec<HistoryRow>, PgError> {
        history(&mut self.client, &self.queue, task, occurrence, limit)
    }

    /// History as `filter` narrows it, newest first.
    pub fn history_where(&mut self, filter: &HistoryFilter) -> Result<Vec<HistoryRow>, PgError> {
        history_where(&mut self.client, &self.queue, filter)
    }

    /// History row `id`.
    pub fn history_row(&mut self, id: i64) -> Result<Option<HistoryRow>, PgError> {
        history_row(&mut self.client, &self.queue, id)
    }

    /// History rows finished since `since_ms`, counted by outcome per `bucket_ms`.
    pub fn outcomes(&mut self, since_ms: i64, bucket_ms: i64) -> Result<Vec<OutcomeCount>, PgError> {
        outcomes(&mut self.client, &self.queue, since_ms, bucket_ms)
    }

    /// The `limit` longest command runs finished since `since_ms`, longest first.
    pub fn slowest(&mut self, since_ms: i64, limit: usize) -> Result<Vec<HistoryRow>, PgError> {
        slowest(&mut self.client, &self.queue, since_ms, limit)
    }

    /// The queue's counts.
    pub fn stats(&mut self) -> Result<Stats, PgError> {
        stats(&mut self.client, &self.queue)
    }

    /// When the queue was paused (unix ms), or `None` while it runs.
    pub fn paused(&mut self) -> Result<Option<i64>, PgError> {
        paused(&mut self.client, &self.queue)
    }

    /// Pauses the queue ([`pause`] in a transaction of the store's own).
    pub fn pause(&mut self) -> Result<Paused, PgError> {
        self.write(pause)
    }

    /// Resumes the queue, waking its hubs; `None` when it was not paused.
    pub fn resume(&mut self) -> Result<Option<Paused>, PgError> {
        self.write(resume)
    }

    /// Removes pending occurrence `id` without running it, keeping it in history as dropped.
    pub fn drop_occurrence(&mut self, id: i64) -> Result<PendingRow, PgError> {
        drop_occurrence(&mut self.client, &self.queue, id)
    }
}

fn application_name() -> String {
    format!("hookq pid {} on {}", std::process::id(), host_name())
}

/// What [`change_mark`] reads: the highest occurrence id the queue holds, pending or in its
/// history, and the transactions now recording on the queue on other connections (their writer
/// tags, [`WRITER_CLASS`](crate::queue::pg::lock::WRITER_CLASS)).
pub(crate) const CHANGE_MARK: &str = concat!(
    "SELECT GREATEST(
        (SELECT MAX(id) FROM hookq_pending_hooks WHERE queue = $1),
        (SELECT MAX(occurrence) FROM hookq_hook_history WHERE queue = $1)), ",
    queue_writers!("$1"),
    ", (SELECT paused_ms FROM hookq_queues WHERE queue = $1)"
);

/// A mark of `queue` that differs from one read earlier when a point may have been committed
/// since: a hub compares two to know whether to drain, a pass whether to look again. Only
/// equality means anything.
///
/// A new point's id is higher than every id given before it, so a point committed since raises
/// the highest id the queue holds; clears, drops and parking only move points from the outbox
/// to the history, which leaves it as it was. But ids are handed out before the commit, so a
/// transaction that took its id before the first mark and committed after it would raise
/// nothing. Such a transaction holds the queue's writer tag from before it takes its id until
/// it has committed, so the mark also names the transactions holding it: one that commits
/// leaves the set, and the mark changes. Writers of other queues hold other tags (two names
/// whose hashes clash share one, which costs a pass that finds nothing). A pause or a
/// resume changes it too, so that a hub that waits on a paused queue drains once it is resumed.
///
/// The lock table is read only while a writer holds the queue's tag ([`queue_writers`], which
/// holds the tag it tries to its transaction's end: hence a connection, never a
/// transaction). Three index probes and a try of one lock otherwise: nothing that grows with
/// the queue.
pub(crate) fn change_mark(client: &mut Client, queue: &QueueName) -> Result<i64, PgError> {
    use std::hash::{Hash, Hasher};
    let row = client.query_one(CHANGE_MARK, &[&queue.as_str()])?;
    let mut h = std::hash::DefaultHasher::new();
    row.get::<_, Option<i64>>(0).hash(&mut h);
    row.get::<_, Option<String>>(1).hash(&mut h);
    row.get::<_, Option<i64>>(2).hash(&mut h);
    Ok(h.finish() as i64)
}

/// Column `i` of `r`, parsed into its type: a stored value the type refuses is the row's
/// error ([`RowError::BadRow`]), never a panic.
fn cell<'a, T: postgres::types::FromSql<'a>>(r: &'a Row, i: usize) -> Result<T, PgError> {
    r.try_get(i).map_err(|e| {
        let why = std::error::Error::source(&e).map_or_else(|| e.to_string(), |s| s.to_string());
        RowError::BadRow(why).into()
    })
}

const TASK_COLUMNS: &str = "id, plan, phase, attempt, merged_sha, created_ms, updated_ms";

fn task_row(r: &Row) -> Result<TaskRow, PgError> {
    Ok(TaskRow {
        id: cell(r, 0)?,
        plan: cell(r, 1)?,
        phase: cell(r, 2)?,
        attempt: cell(r, 3)?,
        merged_sha: cell(r, 4)?,
        created_ms: cell(r, 5)?,
        updated_ms: cell(r, 6)?,
    })
}

/// One task of `queue`.
pub(crate) fn task(
    client: &mut impl GenericClient,
    queue: &QueueName,
    id: &str,
) -> Result<Option<TaskRow>, PgError> {
    let sql = format!("SELECT {TASK_COLUMNS} FROM hookq_tasks WHERE queue = $1 AND id = $2");
    client
        .query_opt(&sql, &[&queue.as_str(), &id])?
        .map(|r| task_row(&r))
        .transpose()
}

/// Tasks of `queue`, optionally of one plan, by id (byte order).
pub(crate) fn tasks(
    client: &mut impl GenericClient,
    queue: &QueueName,
    plan: Option<&str>,
) -> Result<Vec<TaskRow>, PgError> {
    let rows = match plan {
        Some(plan) => client.query(
            &format!(
                r#"SELECT {TASK_COLUMNS} FROM hookq_tasks WHERE queue = $1 AND plan = $2 ORDER BY id COLLATE "C""#
            ),
            &[&queue.as_str(), &plan],
        )?,
        None => client.query(
            &format!(
                r#"SELECT {TASK_COLUMNS} FROM hookq_tasks WHERE queue = $1 ORDER BY id COLLATE "C""#
            ),
            &[&queue.as_str()],
        )?,
    };
    rows.iter().map(task_row).collect::<Result<_, _>>()
}

const PENDING_SELECT: &str = r#"
    SELECT h.id, h.task, t.plan, h.point, s.state, h.recorded_ms, h.passes, h.last_started_ms,
           t.attempt, t.merged_sha
    FROM hookq_pending_hooks h
    LEFT JOIN hookq_tasks t ON t.queue = h.queue AND t.id = h.task
    LEFT JOIN hookq_pending_hook_states s ON s.queue = h.queue AND s.hook_id = h.id"#;

fn pending_row(r: &Row) -> Result<PendingRow, PgError> {
    Ok(PendingRow {
        id: cell(r, 0)?,
        task: cell(r, 1)?,
        plan: cell(r, 2)?,
        point: cell(r, 3)?,
        state: cell(r, 4)?,
        recorded_ms: cell(r, 5)?,
        passes: cell(r, 6)?,
        last_started_ms: cell(r, 7)?,
        attempt: cell(r, 8)?,
        merged_sha: cell(r, 9)?,
    })
}

/// The drain's next batch, as [`pending`] reads it without a task: prepared once per connection
/// by [`PgQueue`](crate::queue::pg::PgQueue), so that its plan is made once, not on every batch.
pub(crate) const NEXT_BATCH: &str = "SELECT h.id, h.task, t.plan, h.point, s.state, h.recorded_ms, h.passes,
        h.last_started_ms, t.attempt, t.merged_sha
    FROM hookq_pending_hooks h
    LEFT JOIN hookq_tasks t ON t.queue = h.queue AND t.id = h.task
    LEFT JOIN hookq_pending_hook_states s ON s.queue = h.queue AND s.hook_id = h.id
    WHERE h.queue = $1 AND h.id > $2 ORDER BY h.id LIMIT $3";

/// Rows of [`NEXT_BATCH`] or [`pending`] as points.
pub(crate) fn pending_rows(rows: &[Row]) -> Result<Vec<PendingRow>, PgError> {
    rows.iter().map(pending_row).collect()
}

/// Pending points of `queue` in the order they run, from occurrence `after` (exclusive), at
/// most `limit`, optionally of one task: the drain's next batch.
pub(crate) fn pending(
    client: &mut impl GenericClient,
    queue: &QueueName,
    after: i64,
    limit: usize,
    task: Option<&str>,
) -> Result<Vec<PendingRow>, PgError> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    // Typed, so one round trip: the drain reads a batch at a time.
    let rows = match task {
        Some(task) => client.query_typed(
            &format!(
                "{PENDING_SELECT} WHERE h.queue = $1 AND h.id > $2 AND h.task = $4 ORDER BY h.id LIMIT $3"
            ),
            &[
                (&queue.as_str(), Type::TEXT),
                (&after, Type::INT8),
                (&limit, Type::INT8),
                (&task, Type::TEXT),
            ],
        )?,
        None => client.query_typed(
            NEXT_BATCH,
            &[
                (&queue.as_str(), Type::TEXT),
                (&after, Type::INT8),
                (&limit, Type::INT8),
            ],
        )?,
    };
    rows.iter().map(pending_row).collect::<Result<_, _>>()
}

/// Pending points of `queue` as `filter` narrows them, in the order they run.
pub(crate) fn pending_where(
    client: &mut impl GenericClient,
    queue: &QueueName,
    filter: &PendingFilter,
) -> Result<Vec<PendingRow>, PgError> {
    let Some(point) = &filter.point else {
        return pending(client, queue, filter.after, filter.limit, filter.task.as_ref().map(|t| t.as_str()));
    };
    let limit = i64::try_from(filter.limit).unwrap_or(i64::MAX);
    let q = queue.as_str();
    let mut params: Vec<&(dyn postgres::types::ToSql + Sync)> =
        vec![&q, &filter.after, &limit, point];
    let mut sql =
        format!("{PENDING_SELECT} WHERE h.queue = $1 AND h.id > $2 AND h.point = $4");
    if let Some(task) = &filter.task {
        params.push(task);
        sql.push_str(" AND h.task = $5");
    }
    sql.push_str(" ORDER BY h.id LIMIT $3");
    client.query(&sql, &params)?.iter().map(pending_row).collect::<Result<_, _>>()
}

/// One pending point of `queue`.
pub(crate) fn pending_occurrence(
    client: &mut impl GenericClient,
    queue: &QueueName,
    id: i64,
) -> Result<Option<PendingRow>, PgError> {
    client
        .query_opt(
            &format!("{PENDING_SELECT} WHERE h.queue = $1 AND h.id = $2"),
            &[&queue.as_str(), &id],
        )?
        .map(|r| pending_row(&r))
        .transpose()
}

const HISTORY_SELECT: &str = r#"
    SELECT id, occurrence, task, point, state, recorded_ms, passes, command_index, command,
           outcome, exit_code, signal, started_ms, duration_ms, log_path, finished_ms, host
    FROM hookq_hook_history"#;

fn history_of_row(r: &Row) -> Result<HistoryRow, PgError> {
    Ok(HistoryRow {
        id: cell(r, 0)?,
        occurrence: cell(r, 1)?,
        task: cell(r, 2)?,
        point: cell(r, 3)?,
        state: cell(r, 4)?,
        recorded_ms: cell(r, 5)?,
        passes: cell(r, 6)?,
        command_index: cell(r, 7)?,
        command: cell(r, 8)?,
        outcome: cell(r, 9)?,
        exit_code: cell(r, 10)?,
        signal: cell(r, 11)?,
        started_ms: cell(r, 12)?,
        duration_ms: cell(r, 13)?,
        log_path: cell(r, 14)?,
        finished_ms: cell(r, 15)?,
        host: cell(r, 16)?,
    })
}

/// History of `queue`, newest first, optionally of one task or one occurrence.
pub(crate) fn history(
    client: &mut impl GenericClient,
    queue: &QueueName,
    task: Option<&str>,
    occurrence: Option<i64>,
    limit: usize,
) -> Result<Vec<HistoryRow>, PgError> {
    let filter = HistoryFilter {
        task: task.map(TaskId::new).transpose().map_err(|e| RowError::Invalid(e.to_string()))?,
        occurrence,
        limit,
        ..HistoryFilter::default()
    };
    history_where(client, queue, &filter)
}

/// History of `queue` as `filter` narrows it, newest first.
pub(crate) fn history_where(
    client: &mut impl GenericClient,
    queue: &QueueName,
    filter: &HistoryFilter,
) -> Result<Vec<HistoryRow>, PgError> {
    let limit = i64::try_from(filter.limit).unwrap_or(i64::MAX);
    // Plain equalities where a filter is given, so each reaches its index.
    let mut sql = format!("{HISTORY_SELECT} WHERE queue = $1");
    let q = queue.as_str();
    let mut params: Vec<&(dyn postgres::types::ToSql + Sync)> = vec![&q, &limit];
    let texts: [(&str, Option<&str>); 4] = [
        ("task", filter.task.as_ref().map(|t| t.as_str())),
        ("point", filter.point.map(|p| p.as_str())),
        ("outcome", filter.outcome.map(|o| o.as_str())),
        ("host", filter.host.as_deref()),
    ];
    for (column, value) in &texts {
        if let Some(value) = value {
            params.push(value);
            sql.push_str(&format!(" AND {column} = ${}", params.len()));
        }
    }
    if let Some(occurrence) = &filter.occurrence {
        params.push(occurrence);
        sql.push_str(&format!(" AND occurrence = ${}", params.len()));
    }
    if let Some(before) = &filter.before {
        params.push(before);
        sql.push_str(&format!(" AND id < ${}", params.len()));
    }
    sql.push_str(" ORDER BY id DESC LIMIT $2");
    client
        .query(&sql, &params)?
        .iter()
        .map(history_of_row)
        .collect::<Result<_, _>>()
}

/// One history row of `queue`.
pub(crate) fn history_row(
    client: &mut impl GenericClient,
    queue: &QueueName,
    id: i64,
) -> Result<Option<HistoryRow>, PgError> {
    client
        .query_opt(
            &format!("{HISTORY_SELECT} WHERE queue = $1 AND id = $2"),
            &[&queue.as_str(), &id],
        )?
        .map(|r| history_of_row(&r))
        .transpose()
}

/// History rows of `queue` that finished since `since_ms`, counted by outcome per interval of
/// `bucket_ms` from `since_ms` on, oldest first.
pub(crate) fn outcomes(
    client: &mut impl GenericClient,
    queue: &QueueName,
    since_ms: i64,
    bucket_ms: i64,
) -> Result<Vec<OutcomeCount>, PgError> {
    let bucket_ms = bucket_ms.max(1);
    client
        .query(
            "SELECT $2 + (finished_ms - $2) / $3 * $3 AS start, outcome, COUNT(*)
             FROM hookq_hook_history WHERE queue = $1 AND finished_ms >= $2
             GROUP BY start, outcome ORDER BY start, outcome",
            &[&queue.as_str(), &since_ms, &bucket_ms],
        )?
        .iter()
        .map(|r| {
            Ok(OutcomeCount {
                start_ms: cell(r, 0)?,
                outcome: cell(r, 1)?,
                count: cell(r, 2)?,
            })
        })
        .collect::<Result<_, PgError>>()
}

/// The `limit` longest command runs of `queue` that finished since `since_ms`, longest first.
pub(crate) fn slowest(
    client: &mut impl GenericClient,
    queue: &QueueName,
    since_ms: i64,
    limit: usize,
) -> Result<Vec<HistoryRow>, PgError> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    client
        .query(
            &format!(
                "{HISTORY_SELECT} WHERE queue = $1 AND finished_ms >= $2 AND duration_ms IS NOT NULL
                 ORDER BY duration_ms DESC, id DESC LIMIT $3"
            ),
            &[&queue.as_str(), &since_ms, &limit],
        )?
        .iter()
        .map(history_of_row)
        .collect::<Result<_, _>>()
}

/// Counts for `queue stats`, in one snapshot. They count rows, so they cost more as the queue
/// and its history grow.
pub(crate) fn stats(client: &mut Client, queue: &QueueName) -> Result<Stats, PgError> {
    let mut tx = client
        .build_transaction()
        .isolation_level(postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()?;
    let q = queue.as_str();
    let by = |rows: Vec<Row>| -> Vec<(String, i64)> {
        rows.iter().map(|r| (r.get(0), r.get(1))).collect()
    };
    let pending_by_point = by(tx.query(
        "SELECT point, COUNT(*) FROM hookq_pending_hooks WHERE queue = $1 GROUP BY point ORDER BY point",
        &[&q],
    )?);
    let history_by_outcome = by(tx.query(
        "SELECT outcome, COUNT(*) FROM hookq_hook_history WHERE queue = $1 GROUP BY outcome ORDER BY outcome",
        &[&q],
    )?);
    let row = tx.query_one(
        "SELECT (SELECT COUNT(*) FROM hookq_pending_hooks WHERE queue = $1 AND passes > 0),
                (SELECT recorded_ms FROM hookq_pending_hooks WHERE queue = $1 ORDER BY id LIMIT 1),
                (SELECT COUNT(*) FROM hookq_tasks WHERE queue = $1),
                (SELECT paused_ms FROM hookq_queues WHERE queue = $1)",
        &[&q],
    )?;
    tx.commit()?;
    Ok(Stats {
        pending: pending_by_point.iter().map(|(_, n)| n).sum(),
        pending_by_point,
        interrupted: row.get(0),
        oldest_recorded_ms: row.get(1),
        history_by_outcome,
        tasks: row.get(2),
        paused_since_ms: row.get(3),
    })
}

/// The statement [`mark_started`] sends.
/// Only while this connection's lease on the queue is live by the server's clock: a waiter
/// ends a holder's session only once its lease ran out, so no start commits after that, and
/// the next holder, which takes the lock once that session is gone, never runs a point beside
/// one this holder started late.
const MARK_STARTED: &str = "UPDATE hookq_pending_hooks
    SET passes = passes + 1, last_started_ms = GREATEST($3, COALESCE(last_started_ms, 0) + 1)
    WHERE queue = $1 AND id = $2
        AND EXISTS (SELECT 1 FROM hookq_runners WHERE queue = $1 AND backend_pid = pg_backend_pid()
            AND lease_until_ms > (extract(epoch FROM clock_timestamp()) * 1000)::bigint)
        AND NOT EXISTS (SELECT 1 FROM hookq_queues WHERE queue = $1 AND paused_ms IS NOT NULL)";

/// Counts that this pass starts `entry` now: one more pass, started later than any counted
/// before. Marks nothing when the point is no longer pending (dropped since it was read:
/// [`Mark::Gone`]) or the queue is paused, by any host ([`Mark::Paused`]): the pause is read
/// in the statement that marks, so a start costs no round trip more for it.
pub fn mark_started(lock: &mut PgRunnerLock, entry: &PendingRow) -> Result<Mark, PgError> {
    let queue = lock.queue().clone();
    let n = {
        let mut conn = lock.conn()?;
        // Prepared once per connection: a start is marked before every command.
        let mark = conn.prepared(MARK_STARTED)?;
        conn.execute(&mark, &[&queue.as_str(), &entry.id, &now_ms()])?
    };
    if n == 1 {
        return Ok(Mark::Started);
    }
    // Dropped since it was read, paused, or the lease is gone: the last is an error.
    lock.check()?;
    let mut client = lock.conn()?;
    Ok(if paused(&mut *client, &queue)?.is_some() {
        Mark::Paused
    } else {
        Mark::Gone
    })
}

/// When `queue` was paused (unix ms), or `None` while it runs (or before it has a row).
pub fn paused(client: &mut impl GenericClient, queue: &QueueName) -> Result<Option<i64>, PgError> {
    Ok(client
        .query_opt(
            "SELECT paused_ms FROM hookq_queues WHERE queue = $1",
            &[&queue.as_str()],
        )?
        .and_then(|r| r.get::<_, Option<i64>>(0)))
}

/// Pauses `queue` for every host that drains it: from the commit on, no runner starts a point
/// of it (a point already running finishes) until [`resume`]; transitions are recorded as
/// usual. Pausing a paused queue changes nothing and says since when it is. Call it in a
/// transaction, as [`PgStore::write`] runs one.
pub fn pause(tx: &mut Transaction<'_>, queue: &QueueName) -> Result<Paused, PgError> {
    queue_number(tx, queue)?;
    let changed = tx.execute(
        "UPDATE hookq_queues SET paused_ms = $2 WHERE queue = $1 AND paused_ms IS NULL",
        &[&queue.as_str(), &now_ms()],
    )? == 1;
    let since: i64 = tx
        .query_one(
            "SELECT paused_ms FROM hookq_queues WHERE queue = $1",
            &[&queue.as_str()],
        )?
        .get(0);
    Ok(Paused {
        since_ms: since,
        changed,
    })
}

/// Resumes `queue`: the next pass of any host starts its points. `None` when it was not
/// paused. Call it in a transaction, as [`PgStore::write`] runs one, which then wakes the
/// queue's hubs ([`notify_hubs`](crate::queue::pg::notify_hubs)); a hub nobody notifies finds
/// the resume at its watcher's next poll, since it changes the mark the watcher reads.
pub fn resume(tx: &mut Transaction<'_>, queue: &QueueName) -> Result<Option<Paused>, PgError> {
    // Locked, so that of two resumes at once only one says it resumed the queue.
    let since: Option<i64> = tx
        .query_opt(
            "SELECT paused_ms FROM hookq_queues WHERE queue = $1 FOR UPDATE",
            &[&queue.as_str()],
        )?
        .and_then(|r| r.get(0));
    let Some(since_ms) = since else {
        return Ok(None);
    };
    tx.execute(
        "UPDATE hookq_queues SET paused_ms = NULL WHERE queue = $1",
        &[&queue.as_str()],
    )?;
    Ok(Some(Paused {
        since_ms,
        changed: true,
    }))
}

/// Clears points, each with its history rows, in one transaction on the lock's connection.
pub fn clear_all(lock: &mut PgRunnerLock, points: &[Cleared]) -> Result<(), PgError> {
    if points.is_empty() {
        return Ok(());
    }
    let queue = lock.queue().clone();
    let mut conn = lock.conn()?;
    let clear = conn.prepared(CLEAR)?;
    let mut tx = conn.transaction()?;
    clear_in(&mut tx, Some(&clear), &queue, points)?;
    tx.commit()?;
    Ok(())
}

/// [`clear_all`] unless another transaction holds a row it must change (a `queue drop` of
/// the same point, a host's transaction on the task): then it gives up within
/// [`TRY_LOCK_TIMEOUT`], clears nothing and returns `Ok(false)`.
pub fn try_clear_all(lock: &mut PgRunnerLock, points: &[Cleared]) -> Result<bool, PgError> {
    if points.is_empty() {
        return Ok(true);
    }
    let queue = lock.queue().clone();
    let mut conn = lock.conn()?;
    let clear = conn.prepared(CLEAR)?;
    let mut tx = conn.transaction()?;
    tx.batch_execute(&format!(
        "SET LOCAL lock_timeout = '{}ms'",
        TRY_LOCK_TIMEOUT.as_millis()
    ))?;
    match clear_in(&mut tx, Some(&clear), &queue, points) {
        Ok(()) => {}
        // Rolled back as the transaction drops.
        Err(e) if e.code() == Some(&postgres::error::SqlState::LOCK_NOT_AVAILABLE) => {
            return Ok(false);
        }
        Err(e) => return Err(e.into()),
    }
    tx.commit()?;
    Ok(true)
}

/// How long [`try_clear_all`] waits for a row another transaction holds.
pub const TRY_LOCK_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(20);

/// Parks points to history as `abandoned` (passes started them too often without clearing
/// them, or they cannot run), in one transaction on the lock's connection.
pub fn park(lock: &mut PgRunnerLock, entries: &[PendingRow]) -> Result<(), PgError> {
    let points: Vec<Cleared> = entries
        .iter()
        .map(|entry| Cleared {
            entry: entry.clone(),
            rows: vec![NewHistory::bare(Outcome::Abandoned)],
        })
        .collect();
    clear_all(lock, &points)
}

/// Drops a pending point of `queue` to history as `dropped` (`hookq queue drop`).
pub(crate) fn drop_occurrence(client: &mut Client, queue: &QueueName, id: i64) -> Result<PendingRow, PgError> {
    let mut tx = client.transaction()?;
    // Locked, so that a pass clearing it meanwhile and this drop do not both write history.
    let locked = tx
        .query_opt(
            "SELECT 1 FROM hookq_pending_hooks WHERE queue = $1 AND id = $2 FOR UPDATE",
            &[&queue.as_str(), &id],
        )?
        .is_some();
    let entry = if locked {
        pending_occurrence(&mut tx, queue, id)?
    } else {
        None
    };
    let entry = entry.ok_or(RowError::NoOccurrence(id))?;
    let dropped = Cleared {
        entry,
        rows: vec![NewHistory::bare(Outcome::Dropped)],
    };
    clear_in(&mut tx, None, queue, std::slice::from_ref(&dropped))?;
    let entry = dropped.entry;
    tx.commit()?;
    Ok(entry)
}


/// The statement of [`clear_in`]. The state rows go with the points, in the same statement (no
/// foreign key cascades).
const CLEAR: &str = "WITH gone AS (
             DELETE FROM hookq_pending_hooks WHERE queue = $1 AND id = ANY($17) RETURNING id),
         states AS (
             DELETE FROM hookq_pending_hook_states WHERE queue = $1 AND hook_id = ANY($17))
         INSERT INTO hookq_hook_history (queue, occurrence, task, point, state, recorded_ms,
             passes, command_index, command, outcome, exit_code, signal, started_ms, duration_ms,
             log_path, finished_ms, host)
         SELECT $1, occurrence, task, point, state, recorded_ms, passes, command_index, command,
             outcome, exit_code, signal, started_ms, duration_ms, log_path, $16, $18
         FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bigint[],
             $8::bigint[], $9::text[], $10::text[], $11::bigint[], $12::bigint[], $13::bigint[],
             $14::bigint[], $15::text[])
             WITH ORDINALITY AS u(occurrence, task, point, state, recorded_ms, passes,
                 command_index, command, outcome, exit_code, signal, started_ms, duration_ms,
                 log_path, ord)
         WHERE u.occurrence IN (SELECT id FROM gone)
         ORDER BY ord";

/// Deletes `points` and writes their history rows, in the order given, in one statement
/// whatever their number (the rows go as arrays, one per column). Only the points this
/// statement deleted get history rows: a point already gone (dropped meanwhile, or cleared by a
/// hub that took the queue over from a holder that froze) was accounted for by whoever removed
/// it, and is not written twice. Runs `prepared` when given (a statement of [`CLEAR`], as the
/// runner's connection keeps it), else sends [`CLEAR`] as text.
fn clear_in(
    tx: &mut Transaction<'_>,
    prepared: Option<&postgres::Statement>,
    queue: &QueueName,
    points: &[Cleared],
) -> Result<(), postgres::Error> {
    let ids: Vec<i64> = points.iter().map(|p| p.entry.id).collect();
    let mut h = HistoryColumns::default();
    for p in points {
        for row in &p.rows {
            h.push(&p.entry, row);
        }
    }
    let now = now_ms();
    let typed: [(&(dyn ToSql + Sync), Type); 18] = [
        (&queue.as_str(), Type::TEXT),
        (&h.occurrence, Type::INT8_ARRAY),
        (&h.task, Type::TEXT_ARRAY),
        (&h.point, Type::TEXT_ARRAY),
        (&h.state, Type::TEXT_ARRAY),
        (&h.recorded_ms, Type::INT8_ARRAY),
        (&h.passes, Type::INT8_ARRAY),
        (&h.command_index, Type::INT8_ARRAY),
        (&h.command, Type::TEXT_ARRAY),
        (&h.outcome, Type::TEXT_ARRAY),
        (&h.exit_code, Type::INT8_ARRAY),
        (&h.signal, Type::INT8_ARRAY),
        (&h.started_ms, Type::INT8_ARRAY),
        (&h.duration_ms, Type::INT8_ARRAY),
        (&h.log_path, Type::TEXT_ARRAY),
        (&now, Type::INT8),
        (&ids, Type::INT8_ARRAY),
        (&this_host(), Type::TEXT),
    ];
    match prepared {
        Some(statement) => {
            let values: Vec<&(dyn ToSql + Sync)> = typed.iter().map(|(v, _)| *v).collect();
            tx.execute(statement, &values)?;
        }
        None => {
            tx.execute_typed(CLEAR, &typed)?;
        }
    }
    Ok(())
}

/// This machine's name, read once: the host every history row this process writes names.
pub(super) fn this_host() -> &'static str {
    static HOST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HOST.get_or_init(host_name)
}

/// History rows to write, one array per column.
#[derive(Default)]
struct HistoryColumns<'a> {
    occurrence: Vec<i64>,
    task: Vec<&'a str>,
    point: Vec<&'a str>,
    state: Vec<&'a str>,
    recorded_ms: Vec<i64>,
    passes: Vec<i64>,
    command_index: Vec<Option<i64>>,
    command: Vec<Option<&'a str>>,
    outcome: Vec<&'static str>,
    exit_code: Vec<Option<i64>>,
    signal: Vec<Option<i64>>,
    started_ms: Vec<Option<i64>>,
    duration_ms: Vec<Option<i64>>,
    log_path: Vec<Option<&'a str>>,
}

impl<'a> HistoryColumns<'a> {
    fn push(&mut self, entry: &'a PendingRow, h: &'a NewHistory) {
        self.occurrence.push(entry.id);
        self.task.push(entry.task.as_str());
        self.point.push(entry.point.as_str());
        self.state.push(entry.state.as_deref().unwrap_or(""));
        self.recorded_ms.push(entry.recorded_ms);
        self.passes.push(entry.passes);
        self.command_index.push(h.command_index.map(|i| i as i64));
        self.command.push(h.command.as_deref());
        self.outcome.push(h.outcome.as_str());
        self.exit_code.push(h.exit_code.map(i64::from));
        self.signal.push(h.signal.map(i64::from));
        self.started_ms.push(h.started_ms);
        self.duration_ms.push(h.duration_ms);
        self.log_path.push(h.log_path.as_deref());
    }
}
