//! Recording transitions and their hook points inside the caller's transaction.
//!
//! Every function here takes a [`rusqlite::Transaction`] and never commits it: a host that owns
//! its transaction (the arc runner) records its phase changes and their points next to its own
//! writes, and either all of them commit or none does. Nothing here runs a hook.

use rusqlite::{OptionalExtension, Transaction, params};
use serde::Serialize;

use crate::queue::ids::{PlanId, TaskId};
use crate::queue::merged::TargetHead;
use crate::queue::phase::{Phase, Point};
use crate::queue::row_error::RowError;
use crate::queue::model::{Attempt, Sha, now_ms};
use crate::queue::store::{COUNT_EVERY, IdMarks, StoreError, count_pending, count_up_to, id_mark_columns, set_counted_mark};

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
    /// Why the `after_merge` this move recorded runs without `ARC_MERGED_SHA`: no sha was
    /// given and the target branch's head could not be read (see [`MoveFacts::target_head`]).
    /// The move itself recorded; a caller shows this as a `warning:` line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
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
    /// Where to read the sha when [`merged_sha`](Self::merged_sha) is `None`: a move that
    /// records `after_merge` then reads the target branch's head, in the same call, and keeps
    /// it as the task's merged sha, as a given one would be. When it cannot be read, the move
    /// still records, the task keeps no merged sha (its point runs without `ARC_MERGED_SHA`)
    /// and [`Transition::warning`] says why. `None`: nothing is read, and the task keeps
    /// whatever merged sha it had. [`Queue::move_task`](crate::queue::Queue::move_task) fills
    /// it from the workspace when the caller left it `None`.
    pub target_head: Option<TargetHead>,
}

impl MoveFacts {
    /// The sha to keep for a move that recorded `point`, when it is `after_merge`, no sha was
    /// given and a target branch to read is: `Some(Ok(sha))`, or `Some(Err(why))` when it could
    /// not be read. `None` when the move keeps what it was given.
    pub(crate) fn read_sha(&self, point: Option<Point>) -> Option<Result<String, String>> {
        if point != Some(Point::AfterMerge) || self.merged_sha.is_some() {
            return None;
        }
        let head = self.target_head.as_ref()?;
        Some(head.read().map_err(|e| {
            format!("after_merge runs without ARC_MERGED_SHA: cannot read the head of target branch {:?}: {e}", head.branch)
        }))
    }
}

/// Checks a move's facts, as both drivers refuse them before writing anything: the merged sha
/// ([`Sha::new`]) and the attempt ([`Attempt::new`]).
pub(crate) fn check_facts(facts: &MoveFacts) -> Result<(), RowError> {
    if let Some(sha) = &facts.merged_sha {
        Sha::new(sha.as_str())?;
    }
    if let Some(n) = facts.attempt {
        Attempt::new(i64::from(n))?;
    }
    Ok(())
}

/// Records `point` for `task` entering `phase`: the `pending_hooks` row and its
/// `pending_hook_states` row. `marks` are the point ids' as read in this transaction.
fn record_point(
    tx: &Transaction<'_>,
    task: &TaskId,
    phase: &Phase,
    point: Point,
    now: i64,
    marks: IdMarks,
) -> Result<Occurrence, StoreError> {
    let id = marks.next_id()?;
    tx.prepare_cached(
        "INSERT INTO pending_hooks (id, task, point, recorded_ms) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![id, task.as_str(), point.as_str(), now])?;
    tx.prepare_cached("INSERT INTO pending_hook_states (hook_id, state) VALUES (?1, ?2)")?
        .execute(params![id, phase.as_str()])?;
    // Counted in batches: writing the counter's page every time made each transition
    // measurably slower (docs/design.md).
    if id - marks.counted > COUNT_EVERY {
        count_up_to(
            tx,
            IdMarks {
                newest: id,
                ..marks
            },
        )?;
    }
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
        return Err(RowError::TaskExists(task.to_string()).into());
    }
    let occurrence = match phase.point() {
        Some(point) => Some(record_point(
            tx,
            task,
            phase,
            point,
            now,
            IdMarks::read(tx)?,
        )?),
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

/// Moves `task` into `to`, recording its point when `to` has one. A write that leaves the phase
/// as it was records nothing (the facts are still updated).
pub fn move_task(
    tx: &Transaction<'_>,
    task: &TaskId,
    to: &Phase,
    facts: &MoveFacts,
) -> Result<Transition, StoreError> {
    check_facts(facts)?;
    let no_task = || RowError::NoTask(task.to_string());
    // A move into a phase with a point reads the point ids' marks with the phase: one statement
    // fewer on the path figure 1 of the bench times.
    let (from, marks): (String, Option<IdMarks>) = if to.point().is_some() {
        tx.prepare_cached(concat!(
            "SELECT phase, ",
            id_mark_columns!(),
            " FROM tasks WHERE id = ?1"
        ))?
        .query_row([task.as_str()], |r| {
            Ok((r.get(0)?, Some(IdMarks::from_row(r, 1)?)))
        })
        .optional()?
        .ok_or_else(no_task)?
    } else {
        tx.prepare_cached("SELECT phase FROM tasks WHERE id = ?1")?
            .query_row([task.as_str()], |r| Ok((r.get(0)?, None)))
            .optional()?
            .ok_or_else(no_task)?
    };
    let now = now_ms();
    tx.prepare_cached(
        "UPDATE tasks SET phase = ?2, updated_ms = ?3, merged_sha = COALESCE(?4, merged_sha), attempt = COALESCE(?5, attempt) WHERE id = ?1",
    )?
    .execute(params![task.as_str(), to.as_str(), now, facts.merged_sha, facts.attempt])?;
    // `marks` is read exactly when `to` has a point.
    let occurrence = match (to.point(), marks) {
        (Some(point), Some(marks)) if from != to.as_str() => {
            Some(record_point(tx, task, to, point, now, marks)?)
        }
        _ => None,
    };
    // Read under the write lock, so the sha is the head the merge left as the move records.
    let mut warning = None;
    if let Some(read) = facts.read_sha(occurrence.as_ref().map(|o| o.point)) {
        let sha = read.map_err(|why| warning = Some(why)).ok();
        tx.prepare_cached("UPDATE tasks SET merged_sha = ?2 WHERE id = ?1")?
            .execute(params![task.as_str(), sha])?;
    }
    Ok(Transition {
        task: task.to_string(),
        from: Some(from),
        to: to.to_string(),
        occurrence,
        warning,
    })
}

/// Ends every unfinished task of `plan` (not `done.*` or `failed.*`) in `failed.cancelled`, one
/// `after_fail` point per task, all inside `tx`.
///
/// Set-based: a few statements for the whole plan rather than four per task, so cancelling a
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
    let marks = IdMarks::read(tx)?;
    // The points recorded before are counted first, so that the mark can move past these.
    count_up_to(tx, marks)?;
    let before = marks.next_id()? - 1;
    marks.ids_after(from.len() as i64)?;
    // The first task's point takes the next id; SQLite numbers the rows the second statement
    // inserts from the highest id up, in the order it inserts them (`from`'s). Both reach the
    // ids above every one ever cleared. (Numbering all of them in one statement, by
    // `row_number()`, made the cancel a quarter slower.)
    let first_task = &from[0].0;
    tx.prepare_cached(
        "INSERT INTO pending_hooks (id, task, point, recorded_ms) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![before + 1, first_task, point.as_str(), now])?;
    let inserted = 1 + tx
        .prepare_cached(&format!(
            "INSERT INTO pending_hooks (task, point, recorded_ms) SELECT id, ?3, ?2 FROM tasks WHERE {UNFINISHED} AND id > ?4 ORDER BY id"
        ))?
        .execute(params![plan.as_str(), now, point.as_str(), first_task])?;
    let last = tx.last_insert_rowid();
    count_pending(tx, point.as_str(), inserted as i64)?;
    set_counted_mark(tx, last)?;
    tx.prepare_cached(
        "INSERT INTO pending_hook_states (hook_id, state) SELECT id, ?2 FROM pending_hooks WHERE id > ?1",
    )?
    .execute(params![before, cancelled.as_str()])?;
    tx.prepare_cached(&format!(
        "UPDATE tasks SET phase = ?3, updated_ms = ?2 WHERE {UNFINISHED}"
    ))?
    .execute(params![plan.as_str(), now, cancelled.as_str()])?;
    // The occurrence ids are the `n` ids ending at `last`, in `from`'s order. The new rows are
    // exactly those above `before`; that they start at `first` is checked.
    let n = from.len();
    let first = last - n as i64 + 1;
    let lowest_new: Option<i64> = tx
        .prepare_cached("SELECT MIN(id) FROM pending_hooks WHERE id > ?1")?
        .query_row([before], |r| r.get(0))?;
    if inserted != n || lowest_new != Some(first) {
        return Err(RowError::BadRow(format!(
            "plan cancel recorded {inserted} points for {n} tasks, ids {lowest_new:?} to {last}"
        )).into());
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
            warning: None,
        })
        .collect())
}

/// Re-queues the point of history row `history_id` as a new occurrence (same task, point and
/// recorded state), as `hookq queue retry` does.
pub fn retry(tx: &Transaction<'_>, history_id: i64) -> Result<Occurrence, StoreError> {
    let (task, point, state): (String, String, String) = tx
        .prepare_cached("SELECT task, point, state FROM hook_history WHERE id = ?1")?
        .query_row([history_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .optional()?
        .ok_or(RowError::NoHistory(history_id))?;
    if state.is_empty() {
        // A point whose recorded state was missing was parked for it; run again, its hook would
        // have no `ARC_STATE` either.
        return Err(RowError::Invalid(format!(
            "history row {history_id} has no recorded state (its point was parked for that); it cannot be retried"
        )).into());
    }
    let bad =
        |e: &dyn std::fmt::Display| RowError::BadRow(format!("history row {history_id}: {e}"));
    let task = TaskId::new(task).map_err(|e| bad(&e))?;
    let point: Point = point.parse().map_err(|e| bad(&e))?;
    let state = Phase::new(&state).map_err(|e| bad(&e))?;
    let exists: bool = tx
        .prepare_cached("SELECT EXISTS (SELECT 1 FROM tasks WHERE id = ?1)")?
        .query_row([task.as_str()], |r| r.get(0))?;
    if !exists {
        return Err(RowError::NoTask(task.to_string()).into());
    }
    record_point(tx, &task, &state, point, now_ms(), IdMarks::read(tx)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::store::Store;

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
            .map(|r| (r.task.to_string(), r.point.to_string(), r.state))
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
    /// retrying it says why it cannot, instead of failing to parse "".
    #[test]
    fn retry_without_a_recorded_state_is_refused() {
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
        let err = store.write(|tx| retry(tx, id)).unwrap_err();
        assert!(
            matches!(&err, StoreError::Row(RowError::Invalid(m)) if m.contains("no recorded state")),
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
        store.drop_occurrence(newest).unwrap();
        let before = pending(&store).len();
        // A host's trigger on the points sees each new point once, and nothing else.
        store
            .conn()
            .execute_batch(
                "CREATE TABLE host_seen (id INTEGER, task TEXT);
                 CREATE TRIGGER host_sees AFTER INSERT ON pending_hooks BEGIN
                     INSERT INTO host_seen (id, task) VALUES (NEW.id, NEW.task);
                 END;",
            )
            .unwrap();
        let moved = store.write(|tx| cancel_plan(tx, &p)).unwrap();
        let seen: Vec<(i64, String)> =
            pairs(&store, "SELECT id, task FROM host_seen ORDER BY rowid");
        let recorded: Vec<(i64, String)> = moved
            .iter()
            .map(|m| (m.occurrence.as_ref().unwrap().id, m.task.clone()))
            .collect();
        assert_eq!(seen, recorded);
        assert_eq!(
            moved.iter().map(|m| m.task.as_str()).collect::<Vec<_>>(),
            ["a", "c"]
        );
        for m in &moved {
            let id = m.occurrence.as_ref().unwrap().id;
            assert!(id > newest);
            assert_eq!(store.pending_occurrence(id).unwrap().unwrap().task, m.task.as_str());
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
            target_head: None,
        };
        let err = store
            .write(|tx| move_task(tx, &t, &Phase::new("done.merged").unwrap(), &facts))
            .unwrap_err();
        assert!(err.to_string().starts_with("invalid merged sha"), "{err}");
        assert_eq!(store.task("t1").unwrap().unwrap().phase, "todo.ready");
        assert!(pending(&store).is_empty());
    }
    /// A move that records `after_merge` without a sha reads the target branch's head from a
    /// real repository and keeps it; a branch that is not there records the move with a
    /// warning and no sha.
    #[test]
    fn a_merge_without_a_sha_reads_the_target_head() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        let git = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .arg("-C")
                .arg(&repo)
                .args(args)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .envs([("GIT_AUTHOR_NAME", "t"), ("GIT_AUTHOR_EMAIL", "t@t")])
                .envs([("GIT_COMMITTER_NAME", "t"), ("GIT_COMMITTER_EMAIL", "t@t")])
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8(out.stdout).unwrap().trim().to_owned()
        };
        std::fs::create_dir(&repo).unwrap();
        git(&["init", "-q", "-b", "main"]);
        git(&["commit", "-q", "--allow-empty", "-m", "one"]);
        let sha = git(&["rev-parse", "main"]);
        let mut store = with_ready_task(dir.path());
        let (t, _) = ids("t1", "p1");
        let facts = |branch: &str| MoveFacts {
            target_head: Some(TargetHead {
                repo: repo.clone(),
                branch: branch.into(),
            }),
            ..MoveFacts::default()
        };
        let merged = Phase::new("done.merged").unwrap();
        let moved = store
            .write(|tx| move_task(tx, &t, &merged, &facts("main")))
            .unwrap();
        assert_eq!(moved.warning, None);
        assert_eq!(store.task("t1").unwrap().unwrap().merged_sha.map(|s| s.to_string()), Some(sha));
        move_into(&mut store, &t, "todo.ready");
        let moved = store
            .write(|tx| move_task(tx, &t, &merged, &facts("nope")))
            .unwrap();
        assert!(moved.occurrence.is_some());
        assert!(moved.warning.unwrap().contains("nope"));
        assert_eq!(store.task("t1").unwrap().unwrap().merged_sha, None);
    }

    /// The two-column rows `sql` selects.
    fn pairs<A: rusqlite::types::FromSql, B: rusqlite::types::FromSql>(
        store: &Store,
        sql: &str,
    ) -> Vec<(A, B)> {
        let mut st = store.conn().prepare(sql).unwrap();
        let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
        rows.collect::<Result<_, _>>().unwrap()
    }

    /// Point ids and the pending counters as they stand.
    fn marks(store: &Store) -> IdMarks {
        IdMarks::read(store.conn()).unwrap()
    }

    /// Moves `task` into `to` in a transaction of its own; the id of the point it recorded.
    fn move_into(store: &mut Store, task: &TaskId, to: &str) -> Option<i64> {
        let to = Phase::new(to).unwrap();
        let moved = store.write(|tx| move_task(tx, task, &to, &MoveFacts::default()));
        moved.unwrap().occurrence.map(|o| o.id)
    }

    /// Without `AUTOINCREMENT`, a new point's id is still above every id pending or ever
    /// cleared: not given again after the newest point is dropped, after a host deletes
    /// every point by SQL of its own, or by another connection.
    #[test]
    fn an_occurrence_id_is_never_given_twice() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = with_ready_task(dir.path());
        let (t, _) = ids("t1", "p1");
        assert_eq!(move_into(&mut store, &t, "failed.x"), Some(1));
        assert_eq!(move_into(&mut store, &t, "review.awaiting_human"), Some(2));
        store.drop_occurrence(2).unwrap();
        assert_eq!(move_into(&mut store, &t, "failed.y"), Some(3));
        store
            .conn()
            .execute("DELETE FROM pending_hooks", [])
            .unwrap();
        assert_eq!(
            marks(&store),
            IdMarks {
                newest: 0,
                cleared: 3,
                counted: 0
            }
        );
        assert_eq!(move_into(&mut store, &t, "review.awaiting_human"), Some(4));
        drop(store);
        let mut store = Store::open(&dir.path().join("arc.db")).unwrap();
        store.drop_occurrence(4).unwrap();
        assert_eq!(move_into(&mut store, &t, "failed.z"), Some(5));
        let occurrences: Vec<i64> = store
            .history(None, None, 10)
            .unwrap()
            .into_iter()
            .map(|h| h.occurrence)
            .collect();
        assert_eq!(occurrences, [4, 2]);
    }

    /// Recording counts pending points in batches: `queue stats` is exact for
    /// points below the counters' mark and above it, through clears of both and a plan cancel.
    #[test]
    fn stats_count_every_point_across_the_counted_mark() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("arc.db")).unwrap();
        let p = PlanId::new("p").unwrap();
        let n = 2 * COUNT_EVERY as usize + 40;
        let tasks: Vec<TaskId> = (0..n)
            .map(|i| TaskId::new(format!("t{i}")).unwrap())
            .collect();
        let ready = Phase::new("todo.ready").unwrap();
        store
            .write(|tx| {
                tasks
                    .iter()
                    .try_for_each(|t| add_task(tx, t, &p, &ready).map(drop))
            })
            .unwrap();
        let check = |store: &Store| {
            let actual: Vec<(String, i64)> = pairs(
                store,
                "SELECT point, COUNT(*) FROM pending_hooks GROUP BY point ORDER BY point",
            );
            let stats = store.stats().unwrap();
            assert_eq!(stats.pending_by_point, actual);
            assert_eq!(stats.pending, actual.iter().map(|(_, n)| n).sum::<i64>());
        };
        for (i, t) in tasks.iter().enumerate() {
            let to = if i % 3 == 0 {
                "failed.x"
            } else {
                "review.awaiting_human"
            };
            assert!(move_into(&mut store, t, to).is_some());
            if i % 25 == 0 {
                check(&store);
            }
        }
        let m = marks(&store);
        assert!(
            m.counted > 0 && m.newest - m.counted <= COUNT_EVERY,
            "{m:?}"
        );
        store.drop_occurrence(1).unwrap();
        store.drop_occurrence(m.newest).unwrap();
        check(&store);
        // A counted point a host deletes by SQL of its own goes off the counters too.
        assert!(2 <= m.counted);
        store
            .conn()
            .execute("DELETE FROM pending_hooks WHERE id = 2", [])
            .unwrap();
        check(&store);
        // The cancel counts what it found uncounted and its own points.
        let moved = store.write(|tx| cancel_plan(tx, &p)).unwrap();
        assert_eq!(moved.len(), n - n.div_ceil(3));
        check(&store);
        let m = marks(&store);
        assert_eq!(m.counted, m.newest);
        for e in store.pending(0, 10_000, None).unwrap() {
            store.drop_occurrence(e.id).unwrap();
        }
        check(&store);
        assert_eq!(store.stats().unwrap().pending, 0);
    }

    #[test]
    fn used_up_ids_are_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = with_ready_task(dir.path());
        let (t, p) = ids("t1", "p1");
        store
            .conn()
            .execute_batch(&format!(
                "INSERT INTO pending_hooks (id, task, point, recorded_ms) VALUES ({max}, 't1', 'after_fail', 0);
                 INSERT INTO pending_hook_states (hook_id, state) VALUES ({max}, 'failed.x');",
                max = i64::MAX
            ))
            .unwrap();
        store.drop_occurrence(i64::MAX).unwrap();
        let to = Phase::new("failed.y").unwrap();
        let err = store
            .write(|tx| move_task(tx, &t, &to, &MoveFacts::default()))
            .unwrap_err();
        assert!(err.to_string().contains("used up"), "{err}");
        let err = store.write(|tx| cancel_plan(tx, &p)).unwrap_err();
        assert!(err.to_string().contains("used up"), "{err}");
        assert_eq!(store.task("t1").unwrap().unwrap().phase, "todo.ready");
        assert!(pending(&store).is_empty());
    }
}
