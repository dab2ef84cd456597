//! Recording transitions and their hook points inside the host's own
//! [`postgres::Transaction`], by the same rules as the SQLite queue's recording.
//!
//! Nothing here commits: the phase write, the `pending_hooks` row and its state row are written
//! in the caller's transaction, with a `NOTIFY` that PostgreSQL delivers only when it commits.
//! A rolled-back transaction leaves nothing, and wakes no one. Nothing here runs a hook.
//!
//! Recording a point takes the queue's id counter row until the transaction ends: transactions
//! that record points in one queue take turns there (as SQLite's single writer does), which is
//! what gives ids in the order of their commits.

use postgres::Transaction;
use postgres::types::Type;

use crate::queue::ids::{PlanId, TaskId};
use crate::queue::pg::error::PgError;
use crate::queue::pg::name::QueueName;
use crate::queue::phase::{Phase, Point};
use crate::queue::record::{MoveFacts, Occurrence, Transition};
use crate::queue::row_error::RowError;
use crate::queue::store::now_ms;

/// The channel a recording transaction notifies, with the queue's name as the payload.
pub const CHANNEL: &str = "hookq";

/// Takes `n` new occurrence ids of `queue` (creating its row on first use): the last one.
fn take_ids(tx: &mut Transaction<'_>, queue: &QueueName, n: i64) -> Result<i64, PgError> {
    Ok(tx
        .query_typed_one(
            "INSERT INTO hookq_queues (queue, last_id, created_ms) VALUES ($1, $2, $3)
             ON CONFLICT (queue) DO UPDATE SET last_id = hookq_queues.last_id + EXCLUDED.last_id
             RETURNING last_id",
            &[
                (&queue.as_str(), Type::TEXT),
                (&n, Type::INT8),
                (&now_ms(), Type::INT8),
            ],
        )?
        .get(0))
}

/// Sends the queue's notification; delivered on commit, dropped on rollback, one per
/// transaction however many points it records.
fn notify(tx: &mut Transaction<'_>, queue: &QueueName) -> Result<(), PgError> {
    tx.query_typed(
        "SELECT pg_notify($1, $2)",
        &[(&CHANNEL, Type::TEXT), (&queue.as_str(), Type::TEXT)],
    )?;
    Ok(())
}

/// Records `point` for `task` entering `phase`: takes the next id, writes the point and its
/// state and notifies, in one call of the schema's `hookq_record_point` (one round trip, and
/// planned once per session).
fn record_point(
    tx: &mut Transaction<'_>,
    queue: &QueueName,
    task: &TaskId,
    phase: &Phase,
    point: Point,
    now: i64,
) -> Result<Occurrence, PgError> {
    let id = tx
        .query_typed_one(
            "SELECT hookq_record_point($1, $2, $3, $4, $5, $6)",
            &[
                (&queue.as_str(), Type::TEXT),
                (&task.as_str(), Type::TEXT),
                (&point.as_str(), Type::TEXT),
                (&phase.as_str(), Type::TEXT),
                (&now, Type::INT8),
                (&CHANNEL, Type::TEXT),
            ],
        )?
        .get(0);
    Ok(Occurrence { id, point })
}

/// Creates `task` of `plan` in `phase` in `queue`. A task created in a phase with a point
/// (`todo.proposed` fires `after_proposed`) records it.
pub fn add_task(
    tx: &mut Transaction<'_>,
    queue: &QueueName,
    task: &TaskId,
    plan: &PlanId,
    phase: &Phase,
) -> Result<Transition, PgError> {
    let now = now_ms();
    let inserted = tx.execute_typed(
        "INSERT INTO hookq_tasks (queue, id, plan, phase, created_ms, updated_ms) VALUES ($1, $2, $3, $4, $5, $5)
         ON CONFLICT (queue, id) DO NOTHING",
        &[
            (&queue.as_str(), Type::TEXT),
            (&task.as_str(), Type::TEXT),
            (&plan.as_str(), Type::TEXT),
            (&phase.as_str(), Type::TEXT),
            (&now, Type::INT8),
        ],
    )?;
    if inserted == 0 {
        return Err(RowError::TaskExists(task.to_string()).into());
    }
    let occurrence = match phase.point() {
        Some(point) => Some(record_point(tx, queue, task, phase, point, now)?),
        None => None,
    };
    Ok(Transition {
        task: task.to_string(),
        from: None,
        to: phase.to_string(),
        occurrence,
    })
}

/// Moves `task` of `queue` into `to`, recording its point when `to` has one. A write that
/// leaves the phase as it was records nothing (the facts are still updated).
pub fn move_task(
    tx: &mut Transaction<'_>,
    queue: &QueueName,
    task: &TaskId,
    to: &Phase,
    facts: &MoveFacts,
) -> Result<Transition, PgError> {
    if let Some(sha) = &facts.merged_sha {
        crate::queue::record::validate_sha(sha).map_err(|e| RowError::Invalid(e.to_string()))?;
    }
    if facts.attempt == Some(0) {
        return Err(RowError::Invalid(
            "invalid attempt 0: attempts count from 1".into(),
        ).into());
    }
    let now = now_ms();
    let attempt = facts.attempt.map(i64::from);
    let point = to.point().map(Point::as_str);
    // One call of the schema's `hookq_move_task`, so that a transition costs the round trips
    // of a bare commit and its statements are planned once per session.
    let row = tx
        .query_typed_opt(
            "SELECT from_phase, point_id FROM hookq_move_task($1, $2, $3, $4, $5, $6, $7, $8)",
            &[
                (&queue.as_str(), Type::TEXT),
                (&task.as_str(), Type::TEXT),
                (&to.as_str(), Type::TEXT),
                (&now, Type::INT8),
                (&facts.merged_sha, Type::TEXT),
                (&attempt, Type::INT8),
                (&point, Type::TEXT),
                (&CHANNEL, Type::TEXT),
            ],
        )?
        .ok_or_else(|| RowError::NoTask(task.to_string()))?;
    let from: String = row.get(0);
    let occurrence = row.get::<_, Option<i64>>(1).map(|id| Occurrence {
        id,
        point: to.point().expect("a point was recorded only for a phase with one"),
    });
    Ok(Transition {
        task: task.to_string(),
        from: Some(from),
        to: to.to_string(),
        occurrence,
    })
}

/// Ends every unfinished task of `plan` in `queue` (not `done.*` or `failed.*`) in
/// `failed.cancelled`, one `after_fail` point per task, in task id order.
pub fn cancel_plan(
    tx: &mut Transaction<'_>,
    queue: &QueueName,
    plan: &PlanId,
) -> Result<Vec<Transition>, PgError> {
    let cancelled = Phase::new("failed.cancelled").expect("a valid phase");
    let point = cancelled.point().expect("failed.* records a point");
    // Byte order of ids, as SQLite sorts them, whatever the database's collation.
    let from: Vec<(String, String)> = tx
        .query(
            r#"SELECT id, phase FROM hookq_tasks
               WHERE queue = $1 AND plan = $2 AND phase NOT LIKE 'done.%' AND phase NOT LIKE 'failed.%'
               ORDER BY id COLLATE "C" FOR UPDATE"#,
            &[&queue.as_str(), &plan.as_str()],
        )?
        .into_iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    if from.is_empty() {
        return Ok(Vec::new());
    }
    let now = now_ms();
    let n = from.len() as i64;
    let last = take_ids(tx, queue, n)?;
    let first = last - n + 1;
    let tasks: Vec<&str> = from.iter().map(|(t, _)| t.as_str()).collect();
    tx.execute(
        "INSERT INTO hookq_pending_hooks (queue, id, task, point, recorded_ms)
         SELECT $1, $2 + ord - 1, t, $3, $4 FROM unnest($5::text[]) WITH ORDINALITY AS u(t, ord)",
        &[&queue.as_str(), &first, &point.as_str(), &now, &tasks],
    )?;
    tx.execute(
        "INSERT INTO hookq_pending_hook_states (queue, hook_id, state)
         SELECT $1, g, $4 FROM generate_series($2::bigint, $3::bigint) AS g",
        &[&queue.as_str(), &first, &last, &cancelled.as_str()],
    )?;
    tx.execute(
        "UPDATE hookq_tasks SET phase = $3, updated_ms = $4 WHERE queue = $1 AND id = ANY($2)",
        &[&queue.as_str(), &tasks, &cancelled.as_str(), &now],
    )?;
    notify(tx, queue)?;
    let to = cancelled.to_string();
    Ok(from
        .into_iter()
        .zip(first..=last)
        .map(|((task, phase), id)| Transition {
            task,
            from: Some(phase),
            to: to.clone(),
            occurrence: Some(Occurrence { id, point }),
        })
        .collect())
}

/// Re-queues the point of history row `history_id` of `queue` as a new occurrence (same task,
/// point and recorded state), as `hookq queue retry` does.
pub fn requeue(
    tx: &mut Transaction<'_>,
    queue: &QueueName,
    history_id: i64,
) -> Result<Occurrence, PgError> {
    let row = tx
        .query_opt(
            "SELECT task, point, state FROM hookq_hook_history WHERE queue = $1 AND id = $2",
            &[&queue.as_str(), &history_id],
        )?
        .ok_or(RowError::NoHistory(history_id))?;
    let (task, point, state): (String, String, String) = (row.get(0), row.get(1), row.get(2));
    if state.is_empty() {
        return Err(RowError::Invalid(format!(
            "history row {history_id} has no recorded state (its point was parked for that); it cannot be re-queued"
        )).into());
    }
    let bad = |e: &dyn std::fmt::Display| RowError::BadRow(format!("history row {history_id}: {e}"));
    let task = TaskId::new(task).map_err(|e| bad(&e))?;
    let point: Point = point.parse().map_err(|e| bad(&e))?;
    let state = Phase::new(&state).map_err(|e| bad(&e))?;
    let exists = tx
        .query_opt(
            "SELECT 1 FROM hookq_tasks WHERE queue = $1 AND id = $2 FOR UPDATE",
            &[&queue.as_str(), &task.as_str()],
        )?
        .is_some();
    if !exists {
        return Err(RowError::NoTask(task.to_string()).into());
    }
    record_point(tx, queue, &task, &state, point, now_ms())
}
