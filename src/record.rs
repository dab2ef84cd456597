//! Recording transitions and their hook points inside the caller's transaction (SPEC §3).
//!
//! Every function here takes a [`rusqlite::Transaction`] and never commits it: a host that owns
//! its transaction (the arc runner) records its phase changes and their points next to its own
//! writes, and either all of them commit or none does. Nothing here runs a hook.

use rusqlite::{OptionalExtension, Transaction, params};
use serde::Serialize;

use crate::ids::{PlanId, TaskId};
use crate::phase::{Phase, Point};
use crate::store::{StoreError, count_pending, now_ms};

/// A point recorded by a transition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Occurrence {
    /// The occurrence id (the pending row's id); points run in this order.
    pub id: i64,
    /// The point.
    pub point: Point,
}

/// What a transition wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Transition {
    /// The task.
    pub task: String,
    /// The phase before, `None` for a task created by this write.
    pub from: Option<String>,
    /// The phase after.
    pub to: String,
    /// The point recorded, if the write entered a phase with one.
    pub occurrence: Option<Occurrence>,
}

impl Transition {
    /// Whether the write changed the task's phase.
    pub fn changed(&self) -> bool {
        self.from.as_deref() != Some(self.to.as_str())
    }
}

/// Extra facts a move may set on the task.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MoveFacts {
    /// The sha the merge put on the target branch (`ARC_MERGED_SHA` for `after_merge`).
    pub merged_sha: Option<String>,
    /// The task's current attempt, from 1 (`ARC_ATTEMPT`).
    pub attempt: Option<u32>,
}

/// Checks a merged sha: 4 to 64 hex digits.
pub fn validate_sha(sha: &str) -> Result<(), StoreError> {
    if (4..=64).contains(&sha.len()) && sha.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(())
    } else {
        let cut: String = sha.chars().take(40).collect();
        Err(StoreError::Invalid(format!(
            "invalid merged sha {cut:?}: expected 4 to 64 hex digits"
        )))
    }
}

/// Records `point` for `task` entering `phase`: the `pending_hooks` row and its
/// `pending_hook_states` row.
fn record_point(
    tx: &Transaction<'_>,
    task: &TaskId,
    phase: &Phase,
    point: Point,
    now: i64,
) -> Result<Occurrence, StoreError> {
    tx.prepare_cached("INSERT INTO pending_hooks (task, point, recorded_ms) VALUES (?1, ?2, ?3)")?
        .execute(params![task.as_str(), point.as_str(), now])?;
    let id = tx.last_insert_rowid();
    tx.prepare_cached("INSERT INTO pending_hook_states (hook_id, state) VALUES (?1, ?2)")?
        .execute(params![id, phase.as_str()])?;
    count_pending(tx, point.as_str(), 1)?;
    Ok(Occurrence { id, point })
}

/// Creates `task` of `plan` in `phase`. A task created in a phase with a point (`todo.proposed`
/// fires `after_proposed`) records it.
pub fn add_task(
    tx: &Transaction<'_>,
    task: &TaskId,
    plan: &PlanId,
    phase: &Phase,
) -> Result<Transition, StoreError> {
    let now = now_ms();
    let inserted = tx
        .prepare_cached(
            "INSERT INTO tasks (id, plan, phase, created_ms, updated_ms) VALUES (?1, ?2, ?3, ?4, ?4) ON CONFLICT (id) DO NOTHING",
        )?
        .execute(params![task.as_str(), plan.as_str(), phase.as_str(), now])?;
    if inserted == 0 {
        return Err(StoreError::TaskExists(task.to_string()));
    }
    let occurrence = match phase.point() {
        Some(point) => Some(record_point(tx, task, phase, point, now)?),
        None => None,
    };
    Ok(Transition {
        task: task.to_string(),
        from: None,
        to: phase.to_string(),
        occurrence,
    })
}

/// Moves `task` into `to`, recording its point when `to` has one. A write that leaves the phase
/// as it was records nothing (the facts are still updated).
pub fn move_task(
    tx: &Transaction<'_>,
    task: &TaskId,
    to: &Phase,
    facts: &MoveFacts,
) -> Result<Transition, StoreError> {
    if let Some(sha) = &facts.merged_sha {
        validate_sha(sha)?;
    }
    if facts.attempt == Some(0) {
        return Err(StoreError::Invalid(
            "invalid attempt 0: attempts count from 1".into(),
        ));
    }
    let from: String = tx
        .prepare_cached("SELECT phase FROM tasks WHERE id = ?1")?
        .query_row([task.as_str()], |r| r.get(0))
        .optional()?
        .ok_or_else(|| StoreError::NoTask(task.to_string()))?;
    let now = now_ms();
    tx.prepare_cached(
        "UPDATE tasks SET phase = ?2, updated_ms = ?3, merged_sha = COALESCE(?4, merged_sha), attempt = COALESCE(?5, attempt) WHERE id = ?1",
    )?
    .execute(params![task.as_str(), to.as_str(), now, facts.merged_sha, facts.attempt])?;
    let occurrence = match to.point() {
        Some(point) if from != to.as_str() => Some(record_point(tx, task, to, point, now)?),
        _ => None,
    };
    Ok(Transition {
        task: task.to_string(),
        from: Some(from),
        to: to.to_string(),
        occurrence,
    })
}

/// Ends every unfinished task of `plan` (not `done.*` or `failed.*`) in `failed.cancelled`, one
/// `after_fail` point per task, all inside `tx`.
///
/// Set-based: three statements for the whole plan rather than four per task, so cancelling a
/// plan of ten thousand tasks costs close to inserting its rows.
pub fn cancel_plan(tx: &Transaction<'_>, plan: &PlanId) -> Result<Vec<Transition>, StoreError> {
    // `Phase::is_finished` in SQL: the plan's tasks not in `done.*` or `failed.*`.
    const UNFINISHED: &str = "plan = ?1 AND phase NOT LIKE 'done.%' AND phase NOT LIKE 'failed.%'";
    let cancelled = Phase::new("failed.cancelled").expect("a valid phase");
    // The point any move into `failed.*` records, by the same rule as `move_task`.
    let point = cancelled.point().expect("failed.* records a point");
    let from: Vec<(String, String)> = tx
        .prepare_cached(&format!(
            "SELECT id, phase FROM tasks WHERE {UNFINISHED} ORDER BY id"
        ))?
        .query_map([plan.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    if from.is_empty() {
        return Ok(Vec::new());
    }
    let now = now_ms();
    let before: i64 = tx
        .prepare_cached("SELECT COALESCE(MAX(id), 0) FROM pending_hooks")?
        .query_row([], |r| r.get(0))?;
    let inserted = tx
        .prepare_cached(&format!(
            "INSERT INTO pending_hooks (task, point, recorded_ms) SELECT id, ?3, ?2 FROM tasks WHERE {UNFINISHED} ORDER BY id"
        ))?
        .execute(params![plan.as_str(), now, point.as_str()])?;
    let last = tx.last_insert_rowid();
    count_pending(tx, point.as_str(), inserted as i64)?;
    tx.prepare_cached(
        "INSERT INTO pending_hook_states (hook_id, state) SELECT id, ?2 FROM pending_hooks WHERE id > ?1",
    )?
    .execute(params![before, cancelled.as_str()])?;
    tx.prepare_cached(&format!(
        "UPDATE tasks SET phase = ?3, updated_ms = ?2 WHERE {UNFINISHED}"
    ))?
    .execute(params![plan.as_str(), now, cancelled.as_str()])?;
    // One statement holding the write lock numbers its rows one after another, in the order it
    // inserts them, which is `from`'s: the occurrence ids are the `n` ids ending at `last`. The
    // new rows are exactly those above `before`; that they start at `first` is checked.
    let n = from.len();
    let first = last - n as i64 + 1;
    let lowest_new: Option<i64> = tx
        .prepare_cached("SELECT MIN(id) FROM pending_hooks WHERE id > ?1")?
        .query_row([before], |r| r.get(0))?;
    if inserted != n || lowest_new != Some(first) {
        return Err(StoreError::BadRow(format!(
            "plan cancel recorded {inserted} points for {n} tasks, ids {lowest_new:?} to {last}"
        )));
    }
    let ids = first..=last;
    let to = cancelled.to_string();
    Ok(from
        .into_iter()
        .zip(ids)
        .map(|((task, phase), id)| Transition {
            task,
            from: Some(phase),
            to: to.clone(),
            occurrence: Some(Occurrence { id, point }),
        })
        .collect())
}

/// Re-queues the point of history row `history_id` as a new occurrence (same task, point and
/// recorded state), as `hookq queue retry` does.
pub fn requeue(tx: &Transaction<'_>, history_id: i64) -> Result<Occurrence, StoreError> {
    let (task, point, state): (String, String, String) = tx
        .prepare_cached("SELECT task, point, state FROM hook_history WHERE id = ?1")?
        .query_row([history_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .optional()?
        .ok_or(StoreError::NoHistory(history_id))?;
    if state.is_empty() {
        // A point whose recorded state was missing was parked for it; run again, its hook would
        // have no `ARC_STATE` either.
        return Err(StoreError::Invalid(format!(
            "history row {history_id} has no recorded state (its point was parked for that); it cannot be re-queued"
        )));
    }
    let bad =
        |e: &dyn std::fmt::Display| StoreError::BadRow(format!("history row {history_id}: {e}"));
    let task = TaskId::new(task).map_err(|e| bad(&e))?;
    let point: Point = point.parse().map_err(|e| bad(&e))?;
    let state = Phase::new(&state).map_err(|e| bad(&e))?;
    let exists: bool = tx
        .prepare_cached("SELECT EXISTS (SELECT 1 FROM tasks WHERE id = ?1)")?
        .query_row([task.as_str()], |r| r.get(0))?;
    if !exists {
        return Err(StoreError::NoTask(task.to_string()));
    }
    record_point(tx, &task, &state, point, now_ms())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    fn ids(t: &str, p: &str) -> (TaskId, PlanId) {
        (TaskId::new(t).unwrap(), PlanId::new(p).unwrap())
    }

    /// A store in `dir` with task `t1` of plan `p1` in `todo.ready`.
    fn with_ready_task(dir: &std::path::Path) -> Store {
        let mut store = Store::open(&dir.join("arc.db")).unwrap();
        let (t, p) = ids("t1", "p1");
        store
            .write(|tx| add_task(tx, &t, &p, &Phase::new("todo.ready").unwrap()))
            .unwrap();
        store
    }

    fn pending(store: &Store) -> Vec<(String, String, Option<String>)> {
        store
            .pending(0, 100, None)
            .unwrap()
            .into_iter()
            .map(|r| (r.task, r.point, r.state))
            .collect()
    }

    #[test]
    fn rollback_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("arc.db")).unwrap();
        let (t, p) = ids("t1", "p1");
        {
            let tx = store.transaction().unwrap();
            add_task(&tx, &t, &p, &Phase::new("todo.proposed").unwrap()).unwrap();
            tx.rollback().unwrap();
        }
        assert!(pending(&store).is_empty());
        assert!(store.task("t1").unwrap().is_none());
    }

    /// A point parked because its state row was missing leaves a history row with no state;
    /// re-queueing it says why it cannot, instead of failing to parse "".
    #[test]
    fn requeue_without_a_recorded_state_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = with_ready_task(dir.path());
        store
            .conn()
            .execute(
                "INSERT INTO hook_history (occurrence, task, point, state, recorded_ms, passes, outcome, finished_ms)
                 VALUES (1, 't1', 'after_fail', '', 0, 0, 'abandoned', 0)",
                [],
            )
            .unwrap();
        let id = store.conn().last_insert_rowid();
        let err = store.write(|tx| requeue(tx, id)).unwrap_err();
        assert!(
            matches!(&err, StoreError::Invalid(m) if m.contains("no recorded state")),
            "{err}"
        );
        assert!(pending(&store).is_empty());
    }

    #[test]
    fn spec_rules() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("arc.db")).unwrap();
        let (t, p) = ids("t1", "p1");
        let ph = |s| Phase::new(s).unwrap();
        store
            .write(|tx| {
                let a = add_task(tx, &t, &p, &ph("todo.proposed"))?;
                assert_eq!(a.occurrence.unwrap().point, Point::AfterProposed);
                assert!(
                    move_task(tx, &t, &ph("todo.ready"), &MoveFacts::default())?
                        .occurrence
                        .is_none()
                );
                let r1 = move_task(tx, &t, &ph("review.rework_pending"), &MoveFacts::default())?;
                let same = move_task(tx, &t, &ph("review.rework_pending"), &MoveFacts::default())?;
                assert!(same.occurrence.is_none() && !same.changed());
                move_task(tx, &t, &ph("todo.ready"), &MoveFacts::default())?;
                let r2 = move_task(tx, &t, &ph("review.rework_pending"), &MoveFacts::default())?;
                assert!(r2.occurrence.unwrap().id > r1.occurrence.unwrap().id);
                Ok(())
            })
            .unwrap();
        let rows = pending(&store);
        assert_eq!(rows.len(), 3);
        assert_eq!(
            rows[1],
            (
                "t1".into(),
                "after_rework".into(),
                Some("review.rework_pending".into())
            )
        );
        assert_eq!(rows[1], rows[2]);
    }

    #[test]
    fn cancel_plan_ends_unfinished_tasks_only() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("arc.db")).unwrap();
        let p = PlanId::new("p").unwrap();
        store
            .write(|tx| {
                for (t, ph) in [
                    ("a", "todo.ready"),
                    ("b", "done.merged"),
                    ("c", "running.gate"),
                    ("d", "failed.x"),
                ] {
                    add_task(tx, &TaskId::new(t).unwrap(), &p, &Phase::new(ph).unwrap())?;
                }
                add_task(
                    tx,
                    &TaskId::new("e").unwrap(),
                    &PlanId::new("other").unwrap(),
                    &Phase::new("todo.ready").unwrap(),
                )?;
                Ok(())
            })
            .unwrap();
        // Drop the newest pending point, so the next id is not MAX(id) + 1.
        let newest = store.pending(0, 100, None).unwrap().last().unwrap().id;
        store.drop_entry(newest).unwrap();
        let before = pending(&store).len();
        let moved = store.write(|tx| cancel_plan(tx, &p)).unwrap();
        assert_eq!(
            moved.iter().map(|m| m.task.as_str()).collect::<Vec<_>>(),
            ["a", "c"]
        );
        for m in &moved {
            let id = m.occurrence.as_ref().unwrap().id;
            assert!(id > newest);
            assert_eq!(store.pending_entry(id).unwrap().unwrap().task, m.task);
        }
        let rows = pending(&store);
        assert_eq!(rows.len(), before + 2);
        assert!(
            rows[before..]
                .iter()
                .all(|r| r.1 == "after_fail" && r.2.as_deref() == Some("failed.cancelled"))
        );
    }

    #[test]
    fn bad_facts_write_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = with_ready_task(dir.path());
        let (t, _) = ids("t1", "p1");
        let facts = MoveFacts {
            merged_sha: Some("xyz; rm -rf /".into()),
            attempt: None,
        };
        let err = store
            .write(|tx| move_task(tx, &t, &Phase::new("done.merged").unwrap(), &facts))
            .unwrap_err();
        assert!(err.to_string().starts_with("invalid merged sha"), "{err}");
        assert_eq!(store.task("t1").unwrap().unwrap().phase, "todo.ready");
        assert!(pending(&store).is_empty());
    }
}
