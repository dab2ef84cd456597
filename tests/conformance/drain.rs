//! Recording and draining through the binary: points run in recorded order per task, `--jobs`
//! side by side across tasks; a point that kills its runner is parked after
//! `max_interrupted_runs` passes and can be retried; a pass never clears a point unrun while the
//! config is half-written; a drop of a started point says so; old history is pruned.

use std::collections::{BTreeMap, BTreeSet};

use super::Driver;
use crate::support::HANG;
use crate::support::queue::{Config, Ws};

conformance!(
    a_point_interrupted_too_often_is_parked_and_can_be_retried,
    points_finished_before_a_runner_killing_point_are_not_run_again_with_it,
    jobs_keep_each_tasks_points_in_recorded_order,
    jobs_run_tasks_side_by_side_and_at_most_n_at_once,
    a_pass_during_a_slow_rewrite_never_clears_the_point_unrun,
    dropping_a_started_point_says_its_commands_may_still_run,
    old_history_is_pruned,
);

/// Passes of `hookq run` and `hookq hub` killed by their own hook command: the point is parked
/// as `abandoned` once `max_interrupted_runs` passes started it, `queue history` and `queue
/// show` say so, the point behind it runs, and a retry runs it again.
fn a_point_interrupted_too_often_is_parked_and_can_be_retried(d: Driver) {
    let hooks = r#"after_fail = ['echo ran >> out', 'kill -KILL $PPID']
after_awaiting_human = ['echo "$ARC_TASK" >> later']"#;
    let cfg = Config {
        max_interrupted_runs: 2,
        ..Config::hooks(hooks)
    };
    let ws = d.workspace(&cfg, "");
    // Parked only by a config that was not written just now.
    ws.settle_config();
    ws.hookq(&["task", "add", "t1", "--plan", "p"]).ok();
    ws.hookq(&["task", "add", "t2", "--plan", "p"]).ok();
    ws.hookq(&["task", "move", "t1", "failed.x", "--no-run"])
        .ok();
    ws.hookq(&["task", "move", "t2", "review.awaiting_human", "--no-run"])
        .ok();
    let poisoned = ws.pending()[0].id;

    // The first pass a cron run, the second a hub: each is killed by the point's second command.
    let out = ws.hookq(&["run"]);
    assert_eq!(out.signal(), Some(9), "pass 1: {}", out.describe());
    assert_eq!(ws.pending()[0].passes, 1);
    let out = ws.spawn(&["hub"]).wait_within(HANG);
    assert_eq!(out.signal(), Some(9), "pass 2, a hub: {}", out.describe());
    assert_eq!(ws.pending()[0].passes, 2);
    assert_eq!(ws.lines("out"), ["ran", "ran"]);
    assert!(!ws.root().join("later").exists(), "points behind it wait");

    let out = ws.hookq(&["run"]).expect_code(0);
    #[cfg(feature = "postgres")]
    crate::postgres::cli::no_password(&out);
    let warnings = out.warnings();
    assert_eq!(warnings.len(), 1, "{}", out.describe());
    assert!(
        warnings[0].contains("after_fail")
            && warnings[0].contains("task t1")
            && warnings[0].contains("abandoned")
            && warnings[0].contains("hookq queue retry"),
        "{}",
        warnings[0]
    );
    assert!(
        out.stdout()
            .contains("ran 2 point(s): 1 command(s), 0 failed, 1 parked"),
        "{}",
        out.describe()
    );
    assert_eq!(
        ws.lines("out"),
        ["ran", "ran"],
        "a parked point does not run again"
    );
    assert_eq!(ws.lines("later"), ["t2"], "the points behind it run");
    assert!(ws.pending().is_empty());
    let parked: Vec<_> = ws
        .history()
        .into_iter()
        .filter(|h| h.occurrence == poisoned)
        .collect();
    assert_eq!(parked.len(), 1, "{parked:?}");
    assert_eq!(
        (
            parked[0].outcome.as_str(),
            parked[0].passes,
            parked[0].command_index,
            parked[0].state.as_str()
        ),
        ("abandoned", 2, None, "failed.x")
    );

    // The views say so.
    let out = ws.hookq(&["queue", "history", "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&out.stdout()).unwrap();
    let shown: Vec<(i64, &str, &str, i64)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["occurrence"].as_i64().unwrap(),
                h["task"].as_str().unwrap(),
                h["outcome"].as_str().unwrap(),
                h["passes"].as_i64().unwrap(),
            )
        })
        .collect();
    assert!(
        shown.contains(&(poisoned, "t1", "abandoned", 2)),
        "{shown:?}"
    );
    let out = ws.hookq(&["queue", "history", "--task", "t1"]).ok();
    let row = out
        .stdout()
        .lines()
        .find(|l| l.contains(" abandoned "))
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("no abandoned row: {}", out.describe()));
    assert!(
        row.contains(" t1 ") && row.contains(" after_fail "),
        "{row}"
    );
    let id = poisoned.to_string();
    let out = ws.hookq(&["queue", "show", &id, "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&out.stdout()).unwrap();
    assert_eq!(v["status"], "cleared", "{v}");
    assert_eq!(v["history"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v["history"][0]["outcome"], "abandoned", "{v}");
    let out = ws.hookq(&["queue", "show", &id]).ok();
    let text = out.stdout();
    assert!(
        text.starts_with(&format!("occurrence {id}: cleared\n")) && text.contains(" abandoned "),
        "{}",
        out.describe()
    );
    if d.is_postgres() {
        // The logs stay on the host that ran the commands, which the database does not reach.
        assert!(
            v["logs"]
                .as_str()
                .is_some_and(|l| l.contains("on the host that ran it")),
            "{v}"
        );
        assert!(
            text.contains("logs      each command's log is on the host that ran it"),
            "{}",
            out.describe()
        );
    }

    let out = ws
        .hookq(&["queue", "retry", &parked[0].id.to_string()])
        .ok();
    assert!(
        out.stdout().contains("queued after_fail again"),
        "{}",
        out.describe()
    );
    let again = ws.pending();
    assert_eq!(again.len(), 1);
    assert_eq!(
        (
            again[0].task.as_str(),
            again[0].point.as_str(),
            again[0].state.as_deref(),
            again[0].passes
        ),
        ("t1", "after_fail", Some("failed.x"), 0)
    );
    assert!(again[0].id > poisoned);

    // Fixed: the re-queued point runs.
    let fixed = Config {
        max_interrupted_runs: 2,
        ..Config::hooks("after_fail = ['echo ran >> out']")
    };
    ws.write_config_text(d.config_text(&ws, &fixed).as_bytes());
    ws.hookq(&["run"]).ok();
    assert_eq!(ws.lines("out"), ["ran", "ran", "ran"]);
    assert_eq!(ws.history().last().unwrap().outcome, "ok");
    assert!(ws.pending().is_empty());
}

/// Clears are committed in batches, so a pass killed right after t1 and t2 finished may run
/// them again once. A point an earlier pass started has the batch before it committed first:
/// a command that kills its runner every time cannot drag t1 and t2 down with it again; then
/// it is parked.
fn points_finished_before_a_runner_killing_point_are_not_run_again_with_it(d: Driver) {
    let hooks = r#"after_awaiting_human = ['echo "$ARC_TASK" >> ran']
after_fail = ['kill -KILL $PPID']"#;
    let cfg = Config {
        max_interrupted_runs: 3,
        ..Config::hooks(hooks)
    };
    let ws = d.workspace(&cfg, "");
    // Parked only by a config that was not written just now.
    ws.settle_config();
    for (t, phase) in [
        ("t1", "review.awaiting_human"),
        ("t2", "review.awaiting_human"),
        ("t3", "failed.x"),
    ] {
        ws.task_add(t, "p", phase).ok();
    }
    for pass in 1..=3 {
        let out = ws.hookq(&["run"]);
        assert_eq!(out.signal(), Some(9), "pass {pass}: {}", out.describe());
    }
    let out = ws.hookq(&["run"]).expect_code(0);
    assert_eq!(out.warnings().len(), 1, "t3 is parked: {}", out.describe());
    assert!(ws.pending().is_empty());
    let ran = ws.lines("ran");
    for t in ["t1", "t2"] {
        let times = ran.iter().filter(|r| *r == t).count();
        assert!((1..=2).contains(&times), "{t} ran {times} times: {ran:?}");
    }
    let outcomes: Vec<(String, String)> = ws
        .history()
        .into_iter()
        .map(|h| (h.task, h.outcome))
        .collect();
    for t in ["t1", "t2"] {
        assert!(
            outcomes.contains(&(t.to_owned(), "ok".to_owned())),
            "{outcomes:?}"
        );
    }
    assert!(
        outcomes.contains(&("t3".to_owned(), "abandoned".to_owned())),
        "{outcomes:?}"
    );
}

/// `run --jobs 4` over points recorded interleaved across four tasks, two commands each, one
/// of which fails: each task's points and commands run in recorded order, the failure is
/// warned about, and each point ran once.
fn jobs_keep_each_tasks_points_in_recorded_order(d: Driver) {
    let cfg = Config::hooks(&crate::support::queue::every_point_runs(&[
        r#"echo "$ARC_HOOK $ARC_STATE" >> "order-$ARC_TASK""#,
        r#"echo "$ARC_HOOK 2" >> "order-$ARC_TASK"; [ "$ARC_TASK" != t2 ] || [ "$ARC_HOOK" != after_fail ] || exit 4"#,
    ]));
    let ws = d.workspace(&cfg, "");
    ws.git_init();
    let tasks = ["t1", "t2", "t3", "t4"];
    for t in tasks {
        ws.hookq(&["task", "add", t, "--plan", "p"]).ok();
    }
    let phases = [
        "review.awaiting_human",
        "review.rework_pending",
        "failed.x",
        "todo.proposed",
        "done.merged",
    ];
    let points = [
        "after_awaiting_human",
        "after_rework",
        "after_fail",
        "after_proposed",
        "after_merge",
    ];
    // Interleaved across tasks, as a busy runner would record them.
    for phase in phases {
        for t in tasks {
            ws.hookq(&["task", "move", t, phase, "--no-run"]).ok();
        }
    }
    assert_eq!(ws.pending().len(), 20);

    let out = ws.hookq(&["run", "--jobs", "4"]).expect_code(0);
    let warnings = out.warnings();
    assert_eq!(warnings.len(), 1, "{}", out.describe());
    assert!(
        warnings[0].contains("after_fail-02")
            && warnings[0].contains("task t2")
            && warnings[0].contains("exit 4"),
        "{}",
        warnings[0]
    );
    for t in tasks {
        let expected: Vec<String> = points
            .iter()
            .zip(phases)
            .flat_map(|(point, phase)| [format!("{point} {phase}"), format!("{point} 2")])
            .collect();
        assert_eq!(ws.lines(format!("order-{t}")), expected, "task {t}");
    }
    assert!(ws.pending().is_empty());
    let history = ws.history();
    assert_eq!(history.len(), 40, "each point ran once");
    assert!(history.iter().all(|h| h.passes == 1));
    assert_eq!(history.iter().filter(|h| h.outcome != "ok").count(), 1);
}

/// `run --jobs 3`: each task's points start only after its previous point ended; points of
/// different tasks run side by side, at most three at once; the drain leaves nothing pending
/// and releases the runner lock. Each task's first point waits, bounded, until another task's
/// has started, so that side by side is shown rather than hoped for.
fn jobs_run_tasks_side_by_side_and_at_most_n_at_once(d: Driver) {
    let hooks = r#"after_fail = ['echo "start $ARC_TASK $ARC_STATE" >> times; touch "started-$ARC_TASK"; if [ "$ARC_STATE" = failed.s1 ]; then n=0; while [ "$(ls started-* | wc -l)" -lt 2 ] && [ $n -lt 6000 ]; do sleep 0.02; n=$((n + 1)); done; fi; echo "end $ARC_TASK $ARC_STATE" >> times']"#;
    let ws = d.workspace(&Config::hooks(hooks), "");
    let tasks = ["t1", "t2", "t3", "t4"];
    let states = ["failed.s1", "failed.s2", "failed.s3", "failed.s4"];
    // Interleaved across tasks, as a busy runner would record them.
    for t in tasks {
        ws.task_add(t, "p", states[0]).ok();
    }
    for state in &states[1..] {
        for t in tasks {
            ws.hookq(&["task", "move", t, state, "--no-run"]).ok();
        }
    }
    let total = tasks.len() * states.len();
    assert_eq!(ws.pending().len(), total);

    let out = ws.hookq(&["run", "--jobs", "3"]).expect_code(0);
    assert!(out.warnings().is_empty(), "{}", out.describe());
    assert!(
        out.stdout().contains(&format!(
            "ran {total} point(s): {total} command(s), 0 failed, 0 parked"
        )),
        "{}",
        out.describe()
    );

    // The lines are appended in the order they happened: a point's start line follows the end
    // line of whatever its runner waited for.
    let lines = ws.lines("times");
    assert_eq!(lines.len(), 2 * total, "{lines:?}");
    let mut of: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut running: BTreeSet<&str> = BTreeSet::new();
    let mut most = 0;
    for l in &lines {
        let mut w = l.split(' ');
        let (event, task, state) = (w.next().unwrap(), w.next().unwrap(), w.next().unwrap());
        of.entry(task).or_default().push(format!("{event} {state}"));
        if event == "start" {
            assert!(running.insert(task), "{task} ran twice at once: {lines:?}");
        } else {
            assert!(running.remove(task), "{task} ended unstarted: {lines:?}");
        }
        most = most.max(running.len());
    }
    let expected: Vec<String> = states
        .iter()
        .flat_map(|s| [format!("start {s}"), format!("end {s}")])
        .collect();
    for t in tasks {
        assert_eq!(of.get(t), Some(&expected), "task {t}: {lines:?}");
    }
    assert!(most >= 2, "no two tasks ever ran side by side: {lines:?}");
    assert!(most <= 3, "more than three points at once: {lines:?}");

    assert!(ws.pending().is_empty(), "nothing stays pending");
    let h = ws.history();
    assert_eq!(h.len(), total, "each point ran once");
    assert!(
        h.iter().all(|r| r.outcome == "ok" && r.passes == 1),
        "{h:?}"
    );
    let out = ws.hookq(&["queue", "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&out.stdout()).unwrap();
    assert_eq!(v["pending"].as_array().map(Vec::len), Some(0), "{v}");
    assert!(v["lock"].is_null(), "the lock was released: {v}");
}

/// A writer process truncates `config.toml`, writes it up to a cut, pauses 2 s and writes the
/// rest, while `hookq run --jobs 2` drains. Cut to nothing or after `[hooks]`, the file parses
/// as a config that gives after_fail no commands; cut inside the list, it does not parse. The
/// pass leaves the point pending, unstarted, rather than clear it as `empty`; once the file is
/// whole, the point runs. (On PostgreSQL the database is named under `[queue]`, before
/// `[hooks]`: a file cut to nothing names no database, so that cut is SQLite's alone.)
fn a_pass_during_a_slow_rewrite_never_clears_the_point_unrun(d: Driver) {
    let cfg = Config::hooks(r#"after_fail = ['echo "$ARC_TASK" >> ran.out']"#);
    for cut_at in ["", "[hooks]\n", "after_fail = ["] {
        if cut_at.is_empty() && d.is_postgres() {
            continue;
        }
        let ws = d.workspace(&cfg, "");
        let text = ws.read(ws.config_path());
        let cut = text.find(cut_at).unwrap() + cut_at.len();
        let parses = cut_at != "after_fail = [";
        ws.hookq(&["task", "add", "t1", "--plan", "p"]).ok();
        ws.hookq(&["task", "move", "t1", "failed.x", "--no-run"])
            .ok();
        let mut writer = ws.slow_config_writer(&text, cut);
        let out = ws.hookq(&["run", "--jobs", "2"]);
        // What the pass did is checked when it read the first part alone, as it did unless the
        // machine held it up for the writer's whole pause.
        let read_the_first_part = writer.try_wait().unwrap().is_none();
        assert!(writer.wait().unwrap().success());
        // The queue is read once the file is whole (on PostgreSQL the config names it); nothing
        // ran in between.
        if read_the_first_part {
            if parses {
                assert_eq!(out.code(), Some(0), "cut {cut}: {}", out.describe());
                assert!(
                    out.stderr().starts_with("note: left 1 point(s) pending: "),
                    "cut {cut}: {}",
                    out.describe()
                );
            } else {
                assert_eq!(out.code(), Some(3), "cut {cut}: {}", out.describe());
                assert_eq!(out.errors().len(), 1, "cut {cut}: {}", out.describe());
            }
            let left = ws.pending();
            assert_eq!((left.len(), left[0].passes), (1, 0), "cut {cut}: unstarted");
            assert!(ws.history().is_empty(), "cut {cut}");
            assert!(!ws.root().join("ran.out").exists());
        } else {
            eprintln!("cut {cut}: the pass ended after the writer; only the end is checked");
        }
        // The config is whole now, and written just now: a point it gives commands runs.
        ws.hookq(&["run", "--jobs", "2"]).ok();
        assert_eq!(ws.lines("ran.out"), ["t1"], "cut {cut}: the hook ran once");
        assert!(ws.pending().is_empty(), "cut {cut}");
        let outcomes: Vec<String> = ws.history().into_iter().map(|h| h.outcome).collect();
        assert_eq!(outcomes, ["ok"], "cut {cut}: nothing cleared as empty");
    }
}

/// `queue drop` of a point the runner has started says so; a point no runner started is
/// dropped quietly. What history keeps differs: on SQLite the command that started finishes
/// and its run is kept beside the drop; on PostgreSQL only the drop is kept, as the runner's
/// clear finds the point gone and writes no row for it (a clear writes history only for points
/// it removed, so that a holder whose lease ran out cannot account for a point twice).
fn dropping_a_started_point_says_its_commands_may_still_run(d: Driver) {
    let cfg = Config::hooks(
        "after_fail = ['touch started; n=0; while [ ! -e go ] && [ $n -lt 6000 ]; do sleep 0.02; n=$((n + 1)); done']",
    );
    let ws = d.workspace(&cfg, "");
    for t in ["t1", "t2"] {
        ws.hookq(&["task", "add", t, "--plan", "p"]).ok();
        ws.hookq(&["task", "move", t, "failed.x", "--no-run"]).ok();
    }
    let ids: Vec<i64> = ws.pending().iter().map(|p| p.id).collect();
    let run = ws.spawn(&["run"]);
    ws.eventually("t1's command to start", || {
        ws.root().join("started").exists()
    });
    let out = ws.hookq(&["queue", "drop", &ids[0].to_string()]).ok();
    let note = if d.is_postgres() {
        format!("note: the runner holding the lock (pid {} on ", run.pid())
    } else {
        format!("note: runner pid {} started it", run.pid())
    };
    assert!(out.stdout().contains(&note), "{}", out.describe());
    if d.is_postgres() {
        assert!(
            out.stdout().contains("only the drop is kept in history"),
            "{}",
            out.describe()
        );
    }
    let out = ws.hookq(&["queue", "drop", &ids[1].to_string()]).ok();
    assert!(!out.stdout().contains("note:"), "{}", out.describe());
    std::fs::write(ws.root().join("go"), "").unwrap();
    run.wait_within(HANG).ok();
    let mut outcomes: Vec<(i64, String)> = ws
        .history()
        .into_iter()
        .map(|h| (h.occurrence, h.outcome))
        .collect();
    outcomes.sort();
    let mut expected = vec![
        (ids[0], "dropped".to_owned()),
        (ids[1], "dropped".to_owned()),
    ];
    if !d.is_postgres() {
        expected.insert(1, (ids[0], "ok".to_owned()));
    }
    assert_eq!(outcomes, expected);
    assert!(ws.pending().is_empty());
}

const DAY_MS: i64 = 86_400_000;

/// `keep_history_days = 2`: a pass of `hookq run`, even with nothing pending, and a hub's pass
/// delete the history rows that finished before the window, and keep those inside it.
fn old_history_is_pruned(d: Driver) {
    let ws = d.workspace(
        &Config::hooks("after_fail = ['true']"),
        "keep_history_days = 2\n",
    );
    // History is pruned only by a config that was not written just now.
    ws.settle_config();
    for t in ["t1", "t2", "t3", "t4"] {
        ws.task_add(t, "p", "failed.x").ok();
    }
    ws.hookq(&["run"]).ok();
    let tasks = || -> Vec<String> { ws.history().into_iter().map(|h| h.task).collect() };
    assert_eq!(tasks(), ["t1", "t2", "t3", "t4"]);

    let now = chrono::Utc::now().timestamp_millis();
    age(d, &ws, "t1", now - 3 * DAY_MS);
    age(d, &ws, "t2", now - DAY_MS);
    let out = ws.hookq(&["run"]).ok();
    assert!(out.stdout().is_empty(), "nothing ran: {}", out.describe());
    assert_eq!(
        tasks(),
        ["t2", "t3", "t4"],
        "only the row older than two days went"
    );

    age(d, &ws, "t3", now - 5 * DAY_MS);
    let mut hub = ws.spawn(&["hub"]);
    ws.eventually("the hub's pass to prune t3's row", || {
        tasks() == ["t2", "t4"]
    });
    // It keeps what is inside the window: the pass that runs a point recorded after the
    // prune leaves t2 and t4.
    ws.task_add("t5", "p", "failed.x").ok();
    ws.eventually("t5's point to run", || tasks().contains(&"t5".to_owned()));
    assert_eq!(tasks(), ["t2", "t4", "t5"]);
    assert!(!hub.exited());
    hub.signal(rustix::process::Signal::TERM);
    let out = hub.wait_within(crate::support::HANG);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    assert!(out.warnings().is_empty(), "{}", out.describe());
}

/// Sets the finish time of `task`'s one history row, as if it had finished at `ms`.
fn age(d: Driver, ws: &Ws, task: &str, ms: i64) {
    let n = match d {
        Driver::Sqlite => ws
            .db()
            .execute(
                "UPDATE hook_history SET finished_ms = ?1 WHERE task = ?2",
                rusqlite::params![ms, task],
            )
            .unwrap(),
        #[cfg(feature = "postgres")]
        Driver::Postgres => {
            let mut s = crate::postgres::cli::open(&d.database_url(ws), "q");
            s.client()
                .execute(
                    "UPDATE hookq_hook_history SET finished_ms = $1 \
                     WHERE queue = 'q' AND task = $2",
                    &[&ms, &task],
                )
                .unwrap()
                .try_into()
                .unwrap()
        }
    };
    assert_eq!(n, 1, "{task}'s history");
}
