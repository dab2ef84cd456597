//! Which writes record which point, driven through the CLI. Every point runs the
//! `record.sh` fixture, which appends `<point> <task> <state>` to `fired.log`.

use crate::support::queue as common;

use common::{Ws, every_point};

const RECORD: &str = r#"sh "$FIXTURES/hooks/record.sh""#;

fn ws() -> Ws {
    let ws = Ws::init();
    ws.write_config(&every_point(RECORD));
    ws
}

fn fired(ws: &Ws) -> Vec<String> {
    ws.lines("fired.log")
}

#[test]
fn each_phase_fires_its_point() {
    let ws = ws();
    ws.git_init();
    let cases = [
        ("done.merged", "after_merge"),
        ("failed.gate_failed", "after_fail"),
        ("failed.cancelled", "after_fail"),
        ("failed.x9", "after_fail"),
        ("review.rework_pending", "after_rework"),
        ("review.awaiting_human", "after_awaiting_human"),
        ("todo.proposed", "after_proposed"),
    ];
    let mut expected = Vec::new();
    for (i, (phase, point)) in cases.iter().enumerate() {
        let task = format!("t{i}");
        ws.hookq(&["task", "add", &task, "--plan", "p"]).ok();
        assert!(
            ws.pending().is_empty(),
            "a task created in todo.ready records nothing"
        );
        let out = ws.hookq(&["task", "move", &task, phase]).ok();
        assert!(
            out.stdout().contains(&format!("recorded {point}")),
            "{}",
            out.describe()
        );
        expected.push(format!("{point} {task} {phase}"));
        assert_eq!(fired(&ws), expected, "after moving {task} to {phase}");
        assert_eq!(ws.phase(&task).as_deref(), Some(*phase));
    }
    assert!(ws.pending().is_empty());
    let history = ws.history();
    assert_eq!(history.len(), cases.len());
    for (h, (phase, point)) in history.iter().zip(cases) {
        assert_eq!(
            (h.point.as_str(), h.state.as_str(), h.outcome.as_str()),
            (point, phase, "ok")
        );
    }
}

#[test]
fn task_created_in_todo_proposed_records_after_proposed() {
    let ws = ws();
    let out = ws.task_add("t1", "p", "todo.proposed").ok();
    assert!(
        out.stdout().contains("recorded after_proposed"),
        "{}",
        out.describe()
    );
    let pending = ws.pending();
    assert_eq!(pending.len(), 1);
    assert_eq!(
        (pending[0].task.as_str(), pending[0].point.as_str()),
        ("t1", "after_proposed")
    );
    assert_eq!(pending[0].state.as_deref(), Some("todo.proposed"));
    assert!(fired(&ws).is_empty(), "task add only records");

    ws.hookq(&["run"]).ok();
    assert_eq!(fired(&ws), ["after_proposed t1 todo.proposed"]);
    assert!(ws.pending().is_empty());

    // Moving it into the phase it is in records nothing more.
    ws.hookq(&["task", "move", "t1", "todo.proposed"]).ok();
    assert!(ws.pending().is_empty());
    assert_eq!(fired(&ws).len(), 1);
}

#[test]
fn phases_without_a_point_fire_nothing() {
    let ws = ws();
    ws.hookq(&["task", "add", "t1", "--plan", "p"]).ok();
    for phase in [
        "running.gate",
        "review.pending",
        "done.abandoned",
        "todo.ready",
        "todo.proposedx",
        "review.awaiting",
    ] {
        let out = ws.hookq(&["task", "move", "t1", phase]).ok();
        assert!(!out.stdout().contains("recorded"), "{}", out.describe());
        assert_eq!(ws.phase("t1").as_deref(), Some(phase));
    }
    // A conflict rework back to todo.ready fires nothing; only the entry into rework did.
    ws.hookq(&["task", "move", "t1", "review.rework_pending", "--no-run"])
        .ok();
    ws.hookq(&["task", "move", "t1", "todo.ready", "--no-run"])
        .ok();
    assert_eq!(ws.pending().len(), 1);
    ws.hookq(&["run"]).ok();
    assert_eq!(fired(&ws), ["after_rework t1 review.rework_pending"]);
    assert_eq!(ws.history().len(), 1);
}

#[test]
fn a_write_that_keeps_the_phase_records_nothing() {
    let ws = ws();
    ws.hookq(&["task", "add", "t1", "--plan", "p"]).ok();
    ws.hookq(&["task", "move", "t1", "review.awaiting_human", "--no-run"])
        .ok();
    let before = ws.pending();
    assert_eq!(before.len(), 1);
    let out = ws
        .hookq(&["task", "move", "t1", "review.awaiting_human", "--no-run"])
        .ok();
    assert!(
        out.stdout()
            .contains("already review.awaiting_human; nothing recorded"),
        "{}",
        out.describe()
    );
    assert_eq!(ws.pending(), before);
    ws.hookq(&["run"]).ok();
    assert_eq!(
        fired(&ws),
        ["after_awaiting_human t1 review.awaiting_human"]
    );

    // Also when the point ran in between: still the same phase, still nothing.
    ws.hookq(&["task", "move", "t1", "review.awaiting_human"])
        .ok();
    assert!(ws.pending().is_empty());
    assert_eq!(fired(&ws).len(), 1);
    assert_eq!(ws.history().len(), 1);
}

#[test]
fn two_entries_into_rework_pending_are_two_occurrences() {
    let ws = ws();
    ws.hookq(&["task", "add", "t1", "--plan", "p"]).ok();
    ws.hookq(&["task", "move", "t1", "review.rework_pending", "--no-run"])
        .ok();
    ws.hookq(&["task", "move", "t1", "todo.ready", "--no-run"])
        .ok();
    ws.hookq(&["task", "move", "t1", "review.rework_pending", "--no-run"])
        .ok();
    let pending = ws.pending();
    assert_eq!(pending.len(), 2, "{pending:?}");
    assert!(pending[0].id < pending[1].id);
    assert!(
        pending
            .iter()
            .all(|p| p.point == "after_rework"
                && p.state.as_deref() == Some("review.rework_pending"))
    );

    let out = ws.hookq(&["run"]).ok();
    assert!(
        out.stdout().contains("ran 2 point(s)"),
        "{}",
        out.describe()
    );
    assert_eq!(fired(&ws), ["after_rework t1 review.rework_pending"; 2]);
    let occurrences: Vec<i64> = ws.history().iter().map(|h| h.occurrence).collect();
    assert_eq!(occurrences, [pending[0].id, pending[1].id]);
}

/// Sets up plan `p` with tasks in every kind of phase (and plan `q` beside it), all points
/// run and `fired.log` emptied.
fn plan_with_tasks(ws: &Ws) {
    let tasks = [
        ("a", "p", "todo.ready"),
        ("b", "p", "running.gate"),
        ("c", "p", "done.merged"),
        ("d", "p", "failed.gate_failed"),
        ("e", "p", "review.awaiting_human"),
        ("f", "p", "todo.proposed"),
        ("g", "q", "todo.ready"),
    ];
    for (task, plan, phase) in tasks {
        ws.hookq(&["task", "add", task, "--plan", plan, "--phase", phase])
            .ok();
    }
    ws.hookq(&["run"]).ok();
    assert!(ws.pending().is_empty());
    std::fs::remove_file(ws.root().join("fired.log")).unwrap();
}

#[test]
fn plan_cancel_ends_every_unfinished_task_once() {
    let ws = ws();
    plan_with_tasks(&ws);
    let finished_rows = |ws: &Ws| {
        ws.db()
            .prepare("SELECT * FROM tasks WHERE id IN ('c', 'd', 'g') ORDER BY id")
            .unwrap()
            .query_map([], |r| {
                Ok(format!(
                    "{:?}",
                    (
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, i64>(6)?
                    )
                ))
            })
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap()
    };
    let untouched = finished_rows(&ws);
    let history_before = ws.history().len();

    let out = ws.hookq(&["plan", "cancel", "p"]).ok();
    assert!(
        out.stdout().contains("plan p: cancelled 4 task(s)"),
        "{}",
        out.describe()
    );
    assert_eq!(
        fired(&ws),
        [
            "after_fail a failed.cancelled",
            "after_fail b failed.cancelled",
            "after_fail e failed.cancelled",
            "after_fail f failed.cancelled"
        ]
    );
    for t in ["a", "b", "e", "f"] {
        assert_eq!(ws.phase(t).as_deref(), Some("failed.cancelled"), "{t}");
    }
    assert_eq!(ws.phase("c").as_deref(), Some("done.merged"));
    assert_eq!(ws.phase("d").as_deref(), Some("failed.gate_failed"));
    assert_eq!(ws.phase("g").as_deref(), Some("todo.ready"));
    assert_eq!(
        finished_rows(&ws),
        untouched,
        "done, failed and other plans' tasks are not written"
    );
    assert!(ws.pending().is_empty());
    assert_eq!(ws.history().len(), history_before + 4);

    // Nothing is left unfinished: a second cancel records nothing.
    let out = ws.hookq(&["plan", "cancel", "p"]).ok();
    assert!(
        out.stdout().contains("cancelled 0 task(s)"),
        "{}",
        out.describe()
    );
    assert!(ws.pending().is_empty());
    assert_eq!(fired(&ws).len(), 4);
}

#[test]
fn plan_cancel_is_one_transaction() {
    let ws = ws();
    for t in ["a", "b", "c"] {
        ws.hookq(&["task", "add", t, "--plan", "p"]).ok();
    }
    // Make the write of the last task fail, after the first two were written in the same
    // transaction.
    ws.db()
        .execute_batch("CREATE TRIGGER refuse_c BEFORE UPDATE ON tasks WHEN NEW.id = 'c' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;")
        .unwrap();
    let before = ws.snapshot();
    let out = ws.hookq(&["plan", "cancel", "p"]);
    assert_eq!(out.code(), Some(1), "{}", out.describe());
    assert_eq!(out.errors().len(), 1, "{}", out.describe());
    assert!(
        out.errors()[0].contains("refused by the test"),
        "{}",
        out.describe()
    );
    assert_eq!(ws.snapshot(), before, "a failed cancel writes nothing");
    assert_eq!(ws.phase("a").as_deref(), Some("todo.ready"));

    ws.db().execute_batch("DROP TRIGGER refuse_c").unwrap();
    ws.hookq(&["plan", "cancel", "p", "--no-run"]).ok();
    let pending = ws.pending();
    assert_eq!(
        pending.iter().map(|p| p.task.as_str()).collect::<Vec<_>>(),
        ["a", "b", "c"]
    );
    assert!(
        pending
            .iter()
            .all(|p| p.point == "after_fail" && p.state.as_deref() == Some("failed.cancelled"))
    );
    assert!(fired(&ws).is_empty(), "--no-run only records");
}

/// `task show` lists the task's pending points, and says so when there are more than it lists
/// rather than give a count that is short.
#[test]
fn task_show_lists_the_pending_points_and_says_when_there_are_more() {
    let ws = ws();
    ws.hookq(&["task", "add", "t1", "--plan", "p"]).ok();
    let out = ws.hookq(&["task", "show", "t1"]).ok();
    assert!(out.stdout().contains("pending: 0"), "{}", out.describe());
    // 1,001 entries into failed.x, recorded in one transaction through the library.
    let mut store = hookq::Store::open(&ws.db_path()).unwrap();
    let t1 = hookq::TaskId::new("t1").unwrap();
    let facts = hookq::MoveFacts::default();
    store
        .write(|tx| {
            for _ in 0..1001 {
                for phase in ["failed.x", "todo.ready"] {
                    let phase = hookq::Phase::new(phase).unwrap();
                    hookq::queue::record::move_task(tx, &t1, &phase, &facts)?;
                }
            }
            Ok(())
        })
        .unwrap();
    let out = ws.hookq(&["task", "show", "t1"]).ok();
    assert!(
        out.stdout()
            .contains("pending: more than 1000, the first 1000 below"),
        "{}",
        out.describe()
    );
    let out = ws.hookq(&["task", "show", "t1", "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&out.stdout()).unwrap();
    assert_eq!(v["pending"].as_array().unwrap().len(), 1000);
    assert_eq!(v["more_pending"], true);
}

/// A plan exists only through its tasks: cancelling one that has none (a misspelt id) changes
/// nothing, exits 0, and says so rather than report a cancel of zero tasks.
#[test]
fn cancelling_a_plan_with_no_tasks_says_so() {
    let ws = ws();
    ws.hookq(&["task", "add", "t1", "--plan", "p"]).ok();
    let before = ws.snapshot();
    let out = ws.hookq(&["plan", "cancel", "nosuchplan"]).expect_code(0);
    assert_eq!(
        out.warnings(),
        ["warning: plan nosuchplan has no tasks; nothing cancelled"],
        "{}",
        out.describe()
    );
    assert!(!out.stdout().contains("cancelled 0"), "{}", out.describe());
    assert_eq!(ws.snapshot(), before);
}

/// An attempt is written one way everywhere, as `ARC_ATTEMPT` spells it: `<task>-<n>`.
#[test]
fn an_attempt_is_task_dash_n_everywhere() {
    let ws = ws();
    ws.hookq(&["task", "add", "t42", "--plan", "p"]).ok();
    ws.hookq(&["task", "move", "t42", "failed.x", "--attempt", "t42-3"])
        .ok();
    let list = ws.hookq(&["task", "list"]).ok();
    let row = list.stdout().lines().nth(1).unwrap().to_owned();
    assert_eq!(
        row.split_whitespace().nth(3),
        Some("t42-3"),
        "{}",
        list.describe()
    );
    let show = ws.hookq(&["task", "show", "t42"]).ok();
    assert!(
        show.stdout().contains("attempt  t42-3\n"),
        "{}",
        show.describe()
    );
    let list: serde_json::Value =
        serde_json::from_str(&ws.hookq(&["task", "list", "--json"]).ok().stdout()).unwrap();
    assert_eq!(list[0]["attempt"], "t42-3", "{list}");
    let show: serde_json::Value =
        serde_json::from_str(&ws.hookq(&["task", "show", "t42", "--json"]).ok().stdout()).unwrap();
    assert_eq!(show["task"]["attempt"], "t42-3", "{show}");
    // The number alone is still taken, and another task's attempt is refused.
    ws.hookq(&["task", "move", "t42", "todo.ready", "--attempt", "4"])
        .ok();
    let show: serde_json::Value =
        serde_json::from_str(&ws.hookq(&["task", "show", "t42", "--json"]).ok().stdout()).unwrap();
    assert_eq!(show["task"]["attempt"], "t42-4", "{show}");
    let out = ws
        .hookq(&["task", "move", "t42", "failed.x", "--attempt", "t41-5"])
        .expect_code(2);
    assert!(
        out.stderr().contains("invalid attempt \"t41-5\""),
        "{}",
        out.describe()
    );
}
