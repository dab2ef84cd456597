//! What the binary does on SQLite, shown to hold on PostgreSQL too: a point whose runner is
//! killed mid-hook too often is parked and the points behind it run, old history is pruned by
//! each pass, `run --jobs N` keeps each task's points in recorded order, and a pass reading a
//! half-written config clears nothing unrun.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use hookq::queue::model::{HistoryRow, PendingRow};
use hookq::queue::pg::PgStore;

use crate::cli::{no_password, open, pg_config, pg_workspace_with};
use crate::support::queue::{Config, Ws};

const DAY_MS: i64 = 86_400_000;

/// The queue's pending points, in order.
fn pending(s: &mut PgStore) -> Vec<PendingRow> {
    s.pending(0, 100_000, None).unwrap()
}

/// The queue's history, oldest first.
fn history(s: &mut PgStore) -> Vec<HistoryRow> {
    let mut h = s.history(None, None, 100_000).unwrap();
    h.reverse();
    h
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// As the SQLite test of the same name does, with passes of `hookq run` and `hookq hub` killed
/// by their own hook command: the point is parked as `abandoned` once `max_interrupted_runs`
/// passes started it, `queue history` and `queue show` say so, the point behind it runs, and a
/// retry runs it again.
#[test]
fn a_point_interrupted_too_often_is_parked_and_can_be_retried() {
    if crate::without_postgres("a_point_interrupted_too_often_is_parked_and_can_be_retried") {
        return;
    }
    let hooks = r#"after_fail = ['echo ran >> out', 'kill -KILL $PPID']
after_awaiting_human = ['echo "$ARC_TASK" >> later']"#;
    let cfg = Config {
        max_interrupted_runs: 2,
        ..Config::hooks(hooks)
    };
    let (ws, _db, url) = pg_workspace_with(&cfg, "");
    // Parked only by a config that was not written just now.
    ws.settle_config();
    let mut s = open(&url, "q");
    ws.hookq(&["task", "add", "t1", "--plan", "p"]).ok();
    ws.hookq(&["task", "add", "t2", "--plan", "p"]).ok();
    ws.hookq(&["task", "move", "t1", "failed.x", "--no-run"])
        .ok();
    ws.hookq(&["task", "move", "t2", "review.awaiting_human", "--no-run"])
        .ok();
    let poisoned = pending(&mut s)[0].id;

    // The first pass a cron run, the second a hub: each is killed by the point's second command.
    let out = ws.hookq(&["run"]);
    assert_eq!(out.signal(), Some(9), "pass 1: {}", out.describe());
    assert_eq!(pending(&mut s)[0].passes, 1);
    let out = ws.spawn(&["hub"]).wait_within(Duration::from_secs(120));
    assert_eq!(out.signal(), Some(9), "pass 2, a hub: {}", out.describe());
    assert_eq!(pending(&mut s)[0].passes, 2);
    assert_eq!(ws.lines("out"), ["ran", "ran"]);
    assert!(!ws.root().join("later").exists(), "points behind it wait");

    let out = ws.hookq(&["run"]).expect_code(0);
    no_password(&out);
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
    assert!(pending(&mut s).is_empty());
    let parked: Vec<HistoryRow> = history(&mut s)
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
    assert!(
        v["logs"]
            .as_str()
            .is_some_and(|l| l.contains("on the host that ran it")),
        "{v}"
    );
    let out = ws.hookq(&["queue", "show", &id]).ok();
    let text = out.stdout();
    assert!(
        text.starts_with(&format!("occurrence {id}: cleared\n"))
            && text.contains(" abandoned ")
            && text.contains("logs      each command's log is on the host that ran it"),
        "{}",
        out.describe()
    );

    let out = ws
        .hookq(&["queue", "retry", &parked[0].id.to_string()])
        .ok();
    assert!(
        out.stdout().contains("queued after_fail again"),
        "{}",
        out.describe()
    );
    let again = pending(&mut s);
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

    // Fixed: the retried point runs.
    let fixed = Config {
        max_interrupted_runs: 2,
        ..Config::hooks("after_fail = ['echo ran >> out']")
    };
    ws.write_config_text(pg_config(&fixed, &url, "q", "").as_bytes());
    ws.hookq(&["run"]).ok();
    assert_eq!(ws.lines("out"), ["ran", "ran", "ran"]);
    assert_eq!(history(&mut s).last().unwrap().outcome, "ok");
    assert!(pending(&mut s).is_empty());
}

/// As the SQLite test of the same name: the points a killed pass finished may run once more,
/// but the point that kills its runner has what finished before it cleared first on each later
/// pass, so it cannot drag them down with it again; then it is parked.
#[test]
fn points_finished_before_a_runner_killing_point_are_not_run_again_with_it() {
    if crate::without_postgres(
        "points_finished_before_a_runner_killing_point_are_not_run_again_with_it",
    ) {
        return;
    }
    let hooks = r#"after_awaiting_human = ['echo "$ARC_TASK" >> ran']
after_fail = ['kill -KILL $PPID']"#;
    let cfg = Config {
        max_interrupted_runs: 3,
        ..Config::hooks(hooks)
    };
    let (ws, _db, url) = pg_workspace_with(&cfg, "");
    // Parked only by a config that was not written just now.
    ws.settle_config();
    let mut s = open(&url, "q");
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
    assert!(pending(&mut s).is_empty());
    let ran = ws.lines("ran");
    for t in ["t1", "t2"] {
        let times = ran.iter().filter(|r| *r == t).count();
        assert!((1..=2).contains(&times), "{t} ran {times} times: {ran:?}");
    }
    let outcomes: Vec<(String, String)> = history(&mut s)
        .into_iter()
        .map(|h| (h.task.to_string(), h.outcome.to_string()))
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

/// One backend's view of a workspace's history, for the pruning scenario.
trait Histories {
    /// Sets the finish time of `task`'s history rows.
    fn finished(&mut self, task: &str, ms: i64);
    /// The tasks of the history rows, oldest first.
    fn tasks(&mut self) -> Vec<String>;
}

struct Sqlite<'a>(&'a Ws);

impl Histories for Sqlite<'_> {
    fn finished(&mut self, task: &str, ms: i64) {
        let n = self
            .0
            .db()
            .execute(
                "UPDATE hook_history SET finished_ms = ?1 WHERE task = ?2",
                rusqlite::params![ms, task],
            )
            .unwrap();
        assert_eq!(n, 1, "{task}'s history");
    }

    fn tasks(&mut self) -> Vec<String> {
        self.0
            .history()
            .into_iter()
            .map(|h| h.task.to_string())
            .collect()
    }
}

struct Postgres(PgStore);

impl Histories for Postgres {
    fn finished(&mut self, task: &str, ms: i64) {
        let q = self.0.queue().as_str().to_owned();
        let n = self
            .0
            .client()
            .execute(
                "UPDATE hookq_hook_history SET finished_ms = $1 WHERE queue = $2 AND task = $3",
                &[&ms, &q, &task],
            )
            .unwrap();
        assert_eq!(n, 1, "{task}'s history");
    }

    fn tasks(&mut self) -> Vec<String> {
        history(&mut self.0)
            .into_iter()
            .map(|h| h.task.to_string())
            .collect()
    }
}

/// `keep_history_days = 2`: a pass of `hookq run`, even with nothing pending, and a hub's pass
/// delete the history rows that finished before the window, and keep those inside it.
fn old_history_is_pruned(ws: &Ws, h: &mut impl Histories) {
    // History is pruned only by a config that was not written just now.
    ws.settle_config();
    for t in ["t1", "t2", "t3", "t4"] {
        ws.task_add(t, "p", "failed.x").ok();
    }
    ws.hookq(&["run"]).ok();
    assert_eq!(h.tasks(), ["t1", "t2", "t3", "t4"]);

    let now = now_ms();
    h.finished("t1", now - 3 * DAY_MS);
    h.finished("t2", now - DAY_MS);
    let out = ws.hookq(&["run"]).ok();
    assert!(out.stdout().is_empty(), "nothing ran: {}", out.describe());
    assert_eq!(
        h.tasks(),
        ["t2", "t3", "t4"],
        "only the row older than two days went"
    );

    h.finished("t3", now - 5 * DAY_MS);
    let mut hub = ws.spawn(&["hub"]);
    ws.eventually("the hub's pass to prune t3's row", || {
        h.tasks() == ["t2", "t4"]
    });
    // It keeps what is inside the window while it waits.
    std::thread::sleep(Duration::from_millis(300));
    assert!(!hub.exited());
    assert_eq!(h.tasks(), ["t2", "t4"]);
    hub.signal(rustix::process::Signal::TERM);
    let out = hub.wait_within(Duration::from_secs(60));
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    assert!(out.warnings().is_empty(), "{}", out.describe());
}

const PRUNED_HOOKS: &str = "after_fail = ['true']";
const KEEP_TWO_DAYS: &str = "keep_history_days = 2\n";

#[test]
fn old_history_is_pruned_on_sqlite() {
    if crate::without_postgres("old_history_is_pruned_on_sqlite") {
        return;
    }
    let ws = Ws::init();
    let text = Config::hooks(PRUNED_HOOKS).text().replacen(
        "[queue]\n",
        &format!("[queue]\n{KEEP_TWO_DAYS}"),
        1,
    );
    ws.write_config_text(text.as_bytes());
    old_history_is_pruned(&ws, &mut Sqlite(&ws));
}

/// As on SQLite, and a queue prunes only its own history: another queue's old rows in the same
/// database stay until a pass of that queue.
#[test]
fn old_history_is_pruned_on_postgres_queue_by_queue() {
    if crate::without_postgres("old_history_is_pruned_on_postgres_queue_by_queue") {
        return;
    }
    let cfg = Config::hooks(PRUNED_HOOKS);
    let (ws, _db, url) = pg_workspace_with(&cfg, KEEP_TWO_DAYS);
    let other = Ws::init();
    other.write_config_text(pg_config(&cfg, &url, "other", KEEP_TWO_DAYS).as_bytes());
    other.settle_config();
    other.task_add("o1", "p", "failed.x").ok();
    other.hookq(&["run"]).ok();
    let mut theirs = Postgres(open(&url, "other"));
    theirs.finished("o1", now_ms() - 10 * DAY_MS);

    old_history_is_pruned(&ws, &mut Postgres(open(&url, "q")));
    assert_eq!(theirs.tasks(), ["o1"], "another queue's history was pruned");
    no_password(&other.hookq(&["run"]).ok());
    assert!(theirs.tasks().is_empty(), "its own pass prunes it");
}

/// `run --jobs 3` on PostgreSQL: each task's points start only after its previous point ended,
/// in recorded order; points of different tasks run side by side; at most three at once; and the
/// drain leaves nothing pending.
#[test]
fn jobs_keep_each_tasks_points_in_recorded_order() {
    if crate::without_postgres("jobs_keep_each_tasks_points_in_recorded_order") {
        return;
    }
    let hooks = r#"after_fail = ['echo "start $ARC_TASK $ARC_STATE" >> times; sleep 0.2; echo "end $ARC_TASK $ARC_STATE" >> times']"#;
    let (ws, _db, url) = pg_workspace_with(&Config::hooks(hooks), "");
    let mut s = open(&url, "q");
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
    assert_eq!(pending(&mut s).len(), total);

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

    assert!(pending(&mut s).is_empty(), "nothing stays pending");
    let h = history(&mut s);
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

/// As `config_writes::a_pass_during_a_slow_rewrite_never_clears_the_point_unrun` on SQLite: a
/// writer process truncates `config.toml`, writes it up to `[hooks]` (its `[queue] database`
/// included), pauses 2 s and writes the rest, while `hookq run --jobs 2` drains the PostgreSQL
/// queue. The pass leaves the point pending, unstarted, rather than clear it as `empty`; once
/// the file is whole, the point runs.
#[test]
fn a_pass_during_a_slow_rewrite_never_clears_the_point_unrun() {
    if crate::without_postgres("a_pass_during_a_slow_rewrite_never_clears_the_point_unrun") {
        return;
    }
    let cfg = Config::hooks(r#"after_fail = ['echo "$ARC_TASK" >> ran.out']"#);
    let (ws, _db, url) = pg_workspace_with(&cfg, "");
    let text = String::from_utf8(std::fs::read(ws.config_path()).unwrap()).unwrap();
    let cut = text.find("[hooks]\n").unwrap() + "[hooks]\n".len();
    let mut s = open(&url, "q");
    ws.hookq(&["task", "add", "t1", "--plan", "p"]).ok();
    ws.hookq(&["task", "move", "t1", "failed.x", "--no-run"])
        .ok();
    let mut writer = ws.slow_config_writer(&text, cut);
    let out = ws.hookq(&["run", "--jobs", "2"]).expect_code(0);
    // Checked when the pass read the first part alone, as it did unless the machine held it up
    // for the writer's whole pause.
    if writer.try_wait().unwrap().is_none() {
        assert!(
            out.stderr().starts_with("note: left 1 point(s) pending: "),
            "{}",
            out.describe()
        );
        let left = pending(&mut s);
        assert_eq!((left.len(), left[0].passes), (1, 0), "nothing started it");
        assert!(history(&mut s).is_empty());
    }
    assert!(writer.wait().unwrap().success());
    ws.hookq(&["run", "--jobs", "2"]).ok();
    assert_eq!(ws.lines("ran.out"), ["t1"], "the hook ran once");
    assert!(pending(&mut s).is_empty());
    let outcomes: Vec<String> = history(&mut s)
        .into_iter()
        .map(|h| h.outcome.to_string())
        .collect();
    assert_eq!(outcomes, ["ok"], "nothing cleared as empty");
}

/// `queue drop` of a point the runner holding the queue's lock has started says so, as on
/// SQLite, and that only the drop is kept in history: the runner's clear finds the point gone
/// and writes no row for it (a clear writes history only for points it removed, so that a
/// holder whose lease ran out cannot account for a point twice). A point no runner started is
/// dropped quietly.
#[test]
fn dropping_a_started_point_says_its_commands_may_still_run() {
    if crate::without_postgres("dropping_a_started_point_says_its_commands_may_still_run") {
        return;
    }
    let cfg = Config::hooks(
        "after_fail = ['touch started; n=0; while [ ! -e go ] && [ $n -lt 6000 ]; do sleep 0.02; n=$((n + 1)); done']",
    );
    let (ws, _db, url) = pg_workspace_with(&cfg, "");
    let mut s = open(&url, "q");
    ws.hookq(&["task", "add", "t1", "--plan", "p"]).ok();
    ws.hookq(&["task", "add", "t2", "--plan", "p"]).ok();
    for t in ["t1", "t2"] {
        ws.hookq(&["task", "move", t, "failed.x", "--no-run"]).ok();
    }
    let ids: Vec<i64> = pending(&mut s).iter().map(|p| p.id).collect();
    let run = ws.spawn(&["run"]);
    ws.eventually("t1's command to start", || {
        ws.root().join("started").exists()
    });
    let out = ws.hookq(&["queue", "drop", &ids[0].to_string()]).ok();
    no_password(&out);
    assert!(
        out.stdout().contains(&format!(
            "note: the runner holding the lock (pid {} on ",
            run.pid()
        )) && out.stdout().contains("only the drop is kept in history"),
        "{}",
        out.describe()
    );
    let out = ws.hookq(&["queue", "drop", &ids[1].to_string()]).ok();
    assert!(!out.stdout().contains("note:"), "{}", out.describe());
    std::fs::write(ws.root().join("go"), "").unwrap();
    run.wait_within(Duration::from_secs(60)).ok();
    let outcomes: Vec<(i64, String)> = history(&mut s)
        .into_iter()
        .map(|h| (h.occurrence, h.outcome.to_string()))
        .collect();
    assert_eq!(
        outcomes,
        [
            (ids[0], "dropped".to_owned()),
            (ids[1], "dropped".to_owned())
        ]
    );
    assert!(pending(&mut s).is_empty());
}
