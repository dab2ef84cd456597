//! Recording transitions and their hook points inside the host's own
//! [`postgres::Transaction`], by the same rules as the SQLite queue's recording ([`Recorder`]
//! prepares the call once on a connection a host keeps); and [`notify_hubs`], the call that
//! wakes the queue's hubs once the host has committed.
//!
//! Nothing here commits: the phase write, the `pending_hooks` row and its state row are written
//! in the caller's transaction. A rolled-back transaction leaves nothing. Nothing here runs a
//! hook.
//!
//! Recording takes no lock that another task's recording needs. Occurrence ids come from a
//! sequence, which holds nothing past the call; a move holds its task's row until it commits, so
//! one task's points get increasing ids in the order they commit, and two moves of one task take
//! turns. Across tasks ids promise no order: a transaction that took its id first may commit
//! last, and the drain runs such a point in its next pass.
//!
//! Nor is anything notified inside the transaction: PostgreSQL serializes the commits of every
//! transaction that sent a `NOTIFY`, cluster-wide, holding one lock across each commit's WAL
//! flush, so notifying writers would take turns again. [`notify_hubs`] notifies after the
//! commit instead, and hubs poll as well.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use postgres::types::{ToSql, Type};
use postgres::{Client, GenericClient, Transaction};

use crate::queue::ids::{PlanId, TaskId};
use crate::queue::pg::error::PgError;
use crate::queue::pg::lock::WRITER_CLASS;
use crate::queue::pg::name::QueueName;
use crate::queue::phase::{Phase, Point};
use crate::queue::record::{MoveFacts, Occurrence, Transition};
use crate::queue::row_error::RowError;
use crate::queue::model::now_ms;

/// The one channel every queue's commits were notified on before each queue had its own
/// ([`QueueName::channel`]), with the queue's name as the payload. hookq notifies it no more;
/// its hubs and views still listen on it, beside their queue's own, so that hosts of an older
/// hookq keep waking them while a fleet upgrades: until hookq 0.3, which drops it (this constant,
/// and its `LISTEN` and its match in the listener that the hubs' and the live view's watchers
/// share, `pg/listener.rs`).
pub const LEGACY_CHANNEL: &str = "hookq";

/// Tells the hubs of `queue` that a transaction recording its points committed, so that they
/// drain within milliseconds rather than at their next poll: a notification on the queue's own
/// channel ([`QueueName::channel`]), which wakes no other queue's hubs. Call it on any
/// connection after the commit (never inside the recording transaction: there it would
/// serialize the commit with every other notifying commit of the cluster). `PgStore::write`
/// calls it itself.
///
/// It costs one round trip, a transaction of its own committed without waiting for the disk (a
/// lost notification costs only the wait for the next poll). Calls for one queue from many
/// threads of a process at once are folded: a call returns at once when a notification that
/// began after it was called is on its way; otherwise it waits for the one on its way (begun
/// earlier, it may not cover this commit) and then sends one itself, unless another caller did
/// meanwhile. So a burst of commits sends about one notification a round trip, every commit is
/// followed by one begun after it, and no call waits for more than one other.
///
/// A process with many writers shares a [`Notifier`](crate::queue::pg::Notifier) instead: its
/// callers never wait, and a burst sends one notification per
/// [`Notifier::DEBOUNCE`](crate::queue::pg::Notifier::DEBOUNCE).
pub fn notify_hubs(client: &mut Client, queue: &QueueName) -> Result<(), PgError> {
    type Folds = Mutex<Option<HashMap<QueueName, Arc<Fold>>>>;
    static FOLDS: Folds = Mutex::new(None);
    let fold = {
        let mut map = FOLDS.lock().unwrap_or_else(PoisonError::into_inner);
        let map = map.get_or_insert_with(HashMap::new);
        Arc::clone(map.entry(queue.clone()).or_default())
    };
    let mut st = fold.state.lock().unwrap_or_else(PoisonError::into_inner);
    st.called += 1;
    let me = st.called;
    loop {
        if st.sending {
            if st.in_flight_covers >= me {
                return Ok(());
            }
            st = fold.done.wait(st).unwrap_or_else(PoisonError::into_inner);
            continue;
        }
        if st.sent_covers >= me {
            return Ok(());
        }
        st.sending = true;
        st.in_flight_covers = st.called;
        break;
    }
    drop(st);
    let sent = client.batch_execute(&crate::queue::pg::notify::notification([queue]));
    let mut st = fold.state.lock().unwrap_or_else(PoisonError::into_inner);
    st.sending = false;
    if sent.is_ok() {
        st.sent_covers = st.sent_covers.max(st.in_flight_covers);
    }
    drop(st);
    fold.done.notify_all();
    Ok(sent?)
}

/// The notifications of one queue from this process: calls are numbered as they come, and a
/// notification covers every call numbered before it began.
#[derive(Default)]
struct Fold {
    state: Mutex<FoldState>,
    /// Signalled when a notification has been sent (or failed).
    done: Condvar,
}

#[derive(Default)]
struct FoldState {
    /// Calls so far.
    called: u64,
    /// Whether a notification is on its way.
    sending: bool,
    /// The calls the one on its way covers (those numbered up to this).
    in_flight_covers: u64,
    /// The calls the notifications sent so far cover.
    sent_covers: u64,
}

/// Takes `n` new occurrence ids of `queue`, in increasing order, in one statement that holds
/// the queue's writer tag ([`WRITER_CLASS`]) before it takes them: the tag's subquery calls a
/// volatile function, so it is run once, before the rows whose ids are taken.
fn take_ids(tx: &mut Transaction<'_>, queue: &QueueName, n: i64) -> Result<Vec<i64>, PgError> {
    let mut ids: Vec<i64> = tx
        .query_typed(
            "SELECT nextval('hookq_occurrence_ids')
             FROM (SELECT pg_advisory_xact_lock_shared($2, hashtext($3))) tag,
                 generate_series(1, $1)",
            &[
                (&n, Type::INT8),
                (&WRITER_CLASS, Type::INT4),
                (&queue.as_str(), Type::TEXT),
            ],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect();
    ids.sort_unstable();
    Ok(ids)
}

/// Records `point` for `task` entering `phase`: takes the next id and writes the point and its
/// state, in one call of the schema's `hookq_record_point` (one round trip, and planned once
/// per session).
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
            "SELECT hookq_record_point($1, $2, $3, $4, $5)",
            &[
                (&queue.as_str(), Type::TEXT),
                (&task.as_str(), Type::TEXT),
                (&point.as_str(), Type::TEXT),
                (&phase.as_str(), Type::TEXT),
                (&now, Type::INT8),
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
        warning: None,
    })
}

/// Moves `task` of `queue` into `to`, recording its point when `to` has one. A write that
/// leaves the phase as it was records nothing (the facts are still updated).
///
/// The call is planned anew each time; a host that records many transitions on a connection it
/// keeps saves that with a [`Recorder`] prepared on it.
pub fn move_task(
    tx: &mut Transaction<'_>,
    queue: &QueueName,
    task: &TaskId,
    to: &Phase,
    facts: &MoveFacts,
) -> Result<Transition, PgError> {
    move_by(tx, None, queue, task, to, facts)
}

/// The statement [`move_task`] sends: one call of the schema's `hookq_move_task`, so that a
/// transition costs the round trips of a bare commit and its statements are planned once per
/// session.
const MOVE_TASK: &str =
    "SELECT from_phase, point_id FROM hookq_move_task($1, $2, $3, $4, $5, $6, $7)";

/// The statement a [`Recorder`] prepares: the body of `hookq_move_task` itself, so that the
/// server runs one statement without the PL/pgSQL call around it. Parameters and result are
/// [`MOVE_TASK`]'s.
const MOVE_STATEMENT: &str = "WITH moved AS (
        UPDATE hookq_tasks t SET left_phase = t.phase, phase = $3, updated_ms = $4,
                merged_sha = COALESCE($5, t.merged_sha), attempt = COALESCE($6, t.attempt)
            WHERE t.queue = $1 AND t.id = $2
            RETURNING t.left_phase),
    tag AS (
        SELECT pg_advisory_xact_lock_shared(1751871745, hashtext($1)) FROM moved
            WHERE $7 IS NOT NULL AND moved.left_phase <> $3),
    point AS (
        SELECT nextval('hookq_occurrence_ids') AS id FROM moved, tag),
    written AS (
        INSERT INTO hookq_pending_hooks (queue, id, task, point, recorded_ms)
            SELECT $1, point.id, $2, $7, $4 FROM point),
    state AS (
        INSERT INTO hookq_pending_hook_states (queue, hook_id, state)
            SELECT $1, point.id, $3 FROM point)
    SELECT moved.left_phase, (SELECT point.id FROM point) FROM moved";

/// The types of [`MOVE_TASK`]'s parameters.
const MOVE_TASK_TYPES: [Type; 7] = [
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::INT8,
    Type::TEXT,
    Type::INT8,
    Type::TEXT,
];

/// The recording statements prepared once on one connection, for a host that records many
/// transitions on a connection it keeps: [`move_task`] sends its call to be parsed and planned
/// every time, which costs the server about a fifth of a transition's work; a `Recorder` sends
/// only the values, of the move's own statement (the body of `hookq_move_task`, without the
/// PL/pgSQL call around it).
///
/// Use it only in transactions of the connection it was prepared on, as with any
/// [`postgres::Statement`]: on another, the server finds no such statement and the call fails
/// with that error (aborting that transaction; nothing is recorded).
#[derive(Clone, Debug)]
pub struct Recorder {
    move_task: postgres::Statement,
}

impl Recorder {
    /// Prepares the recording statements on `client` (a [`Client`] or a [`Transaction`] of it: the
    /// statements outlive the transaction, as prepared statements do). One round trip.
    pub fn prepare(client: &mut impl GenericClient) -> Result<Self, PgError> {
        Ok(Self {
            move_task: client.prepare_typed(MOVE_STATEMENT, &MOVE_TASK_TYPES)?,
        })
    }

    /// [`move_task`], on the prepared statement.
    pub fn move_task(
        &self,
        tx: &mut Transaction<'_>,
        queue: &QueueName,
        task: &TaskId,
        to: &Phase,
        facts: &MoveFacts,
    ) -> Result<Transition, PgError> {
        move_by(tx, Some(&self.move_task), queue, task, to, facts)
    }
}

/// [`move_task`], on `prepared` when given (a statement of [`MOVE_TASK`]).
fn move_by(
    tx: &mut Transaction<'_>,
    prepared: Option<&postgres::Statement>,
    queue: &QueueName,
    task: &TaskId,
    to: &Phase,
    facts: &MoveFacts,
) -> Result<Transition, PgError> {
    let now = now_ms();
    let attempt = facts.attempt.map(|a| i64::from(a.get()));
    let merged_sha = facts.merged_sha.as_deref();
    let point = to.point().map(Point::as_str);
    let params: [&(dyn ToSql + Sync); 7] = [
        &queue.as_str(),
        &task.as_str(),
        &to.as_str(),
        &now,
        &merged_sha,
        &attempt,
        &point,
    ];
    let row = match prepared {
        Some(statement) => tx.query_opt(statement, &params)?,
        None => {
            let typed: Vec<(&(dyn ToSql + Sync), Type)> =
                params.iter().copied().zip(MOVE_TASK_TYPES).collect();
            tx.query_typed_opt(MOVE_TASK, &typed)?
        }
    }
    .ok_or_else(|| RowError::NoTask(task.to_string()))?;
    let from: String = row.get(0);
    let occurrence = row.get::<_, Option<i64>>(1).map(|id| Occurrence {
        id,
        point: to.point().expect("a point was recorded only for a phase with one"),
    });
    // Read while the move holds the task's row: the head the merge left as the move records.
    // Only a move that recorded `after_merge` without a sha pays the second statement.
    let mut warning = None;
    if let Some(read) = facts.read_sha(occurrence.as_ref().map(|o| o.point)) {
        let sha = read.map_err(|why| warning = Some(why)).ok();
        tx.execute_typed(
            "UPDATE hookq_tasks SET merged_sha = $3 WHERE queue = $1 AND id = $2",
            &[
                (&queue.as_str(), Type::TEXT),
                (&task.as_str(), Type::TEXT),
                (&sha, Type::TEXT),
            ],
        )?;
    }
    Ok(Transition {
        task: task.to_string(),
        from: Some(from),
        to: to.to_string(),
        occurrence,
        warning,
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
    let ids = take_ids(tx, queue, from.len() as i64)?;
    let tasks: Vec<&str> = from.iter().map(|(t, _)| t.as_str()).collect();
    tx.execute(
        "INSERT INTO hookq_pending_hooks (queue, id, task, point, recorded_ms)
         SELECT $1, i, t, $3, $4 FROM unnest($2::bigint[], $5::text[]) AS u(i, t)",
        &[&queue.as_str(), &ids, &point.as_str(), &now, &tasks],
    )?;
    tx.execute(
        "INSERT INTO hookq_pending_hook_states (queue, hook_id, state)
         SELECT $1, i, $3 FROM unnest($2::bigint[]) AS u(i)",
        &[&queue.as_str(), &ids, &cancelled.as_str()],
    )?;
    tx.execute(
        "UPDATE hookq_tasks SET left_phase = phase, phase = $3, updated_ms = $4
         WHERE queue = $1 AND id = ANY($2)",
        &[&queue.as_str(), &tasks, &cancelled.as_str(), &now],
    )?;
    let to = cancelled.to_string();
    Ok(from
        .into_iter()
        .zip(ids)
        .map(|((task, phase), id)| Transition {
            task,
            from: Some(phase),
            to: to.clone(),
            occurrence: Some(Occurrence { id, point }),
            warning: None,
        })
        .collect())
}

/// Re-queues the point of history row `history_id` of `queue` as a new occurrence (same task,
/// point and recorded state), as `hookq queue retry` does.
pub fn retry(
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
            "history row {history_id} has no recorded state (its point was parked for that); it cannot be retried"
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

#[cfg(test)]
mod tests {
    use super::MOVE_STATEMENT;

    /// A `Recorder` runs the body of the schema's `hookq_move_task` without the function around
    /// it: the two are one statement written twice (with `$n` here, the parameters' names
    /// there), and must stay the same statement.
    #[test]
    fn the_recorder_runs_the_functions_own_statement() {
        let migration = include_str!("../../../migrations/postgres/V10__writer_tags.sql");
        let body = migration
            .split("RETURN QUERY")
            .nth(1)
            .and_then(|b| b.split(";\nEND").next())
            .expect("hookq_move_task's RETURN QUERY");
        let mut body = body.to_owned();
        for (i, name) in [
            "p_queue",
            "p_task",
            "p_to",
            "p_now_ms",
            "p_merged_sha",
            "p_attempt",
            "p_point",
        ]
        .iter()
        .enumerate()
        {
            // Whole words only: `p_to` must not eat into another name.
            body = body
                .split_inclusive(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .map(|w| match w.strip_prefix(name) {
                    Some(rest) if rest.len() <= 1 && !rest.starts_with('_') => {
                        format!("${}{rest}", i + 1)
                    }
                    _ => w.to_owned(),
                })
                .collect();
        }
        let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(words(&body), words(MOVE_STATEMENT));
    }

    /// The statements spell the writer tags' class as a number.
    #[test]
    fn the_statements_tag_writers_with_the_writer_class() {
        let class = super::WRITER_CLASS.to_string();
        let migration = include_str!("../../../migrations/postgres/V10__writer_tags.sql");
        let tag = format!("pg_advisory_xact_lock_shared({class}, ");
        assert_eq!(migration.matches(&tag).count(), 2);
        assert!(MOVE_STATEMENT.contains(&tag));
        for marks in [
            crate::queue::pg::marks::MARKS,
            crate::queue::pg::marks::MARKS_FEW,
            crate::queue::pg::store::CHANGE_MARK,
        ] {
            assert!(marks.contains(&format!("{class}::oid")), "{marks}");
        }
        // Those that look in the lock table only when a writer holds the tag try that tag.
        let tried = format!("pg_try_advisory_xact_lock({class}, hashtext(");
        assert!(crate::queue::pg::marks::MARKS_FEW.contains(&tried));
        assert!(crate::queue::pg::store::CHANGE_MARK.contains(&tried));
    }
}
