use std::time::{Duration, Instant};

use super::*;
use crate::exec::Stop;
use crate::queue::Error;
use crate::queue::ids::{PlanId, TaskId};
use crate::queue::lock::RunnerLock;
use crate::queue::lock::Wait;
use crate::queue::phase::Phase;
use crate::queue::phase::Point;
use crate::queue::record::{self, MoveFacts};
use crate::queue::model::{Outcome};
use crate::queue::store::{Store};
use crate::queue::store::StoreOptions;
use crate::queue::workspace::Workspace;

/// A workspace whose config gives these hooks, written a minute ago (see [`settled`]), with
/// tasks a and b each recorded entering `failed.x`.
fn workspace(hooks: &str) -> (tempfile::TempDir, Workspace, Store) {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::at(dir.path());
    let mut store = Store::open(&ws.db_path()).unwrap();
    std::fs::write(ws.config_path(), format!("[hooks]\n{hooks}\n")).unwrap();
    settled(&ws);
    walk(&mut store, &["a", "b"], true, &["failed.x"]);
    (dir, ws, store)
}

/// Sets the config's modification time a minute back, as a config written long ago has it: a
/// pass may then clear points without running them by it.
fn settled(ws: &Workspace) {
    let file = std::fs::File::options()
        .write(true)
        .open(ws.config_path())
        .unwrap();
    let then = std::time::SystemTime::now() - Duration::from_secs(60);
    file.set_modified(then).unwrap();
}

/// The workspace's runner lock, free in these tests.
fn runner_lock(ws: &Workspace) -> RunnerLock {
    RunnerLock::acquire(&ws.lock_path(), Wait::No, &|| true)
        .unwrap()
        .expect("the runner lock is free")
}

/// Moves each of `tasks` through `phases`, creating it in `todo.ready` first with `create`.
fn walk(store: &mut Store, tasks: &[&str], create: bool, phases: &[&str]) {
    store
        .write(|tx| {
            for t in tasks {
                let t = TaskId::new(*t).unwrap();
                if create {
                    let ready = Phase::new("todo.ready").unwrap();
                    record::add_task(tx, &t, &PlanId::new("p").unwrap(), &ready)?;
                }
                for p in phases {
                    let p = Phase::new(p).unwrap();
                    record::move_task(tx, &t, &p, &MoveFacts::default())?;
                }
            }
            Ok(())
        })
        .unwrap();
}

/// How many passes started each point in history, oldest first.
fn history_passes(store: &Store) -> Vec<i64> {
    store
        .history(None, None, 10)
        .unwrap()
        .iter()
        .map(|h| h.passes)
        .collect()
}

#[test]
fn each_point_is_counted_as_started_once() {
    let (_dir, ws, mut store) = workspace("after_fail = ['true']");
    let stop = Stop::new();
    let lock = runner_lock(&ws);
    let report = Drainer::new(ws, &stop).drain(&mut store, &lock).unwrap();
    assert_eq!((report.cleared, report.commands), (2, 2));
    assert_eq!(
        history_passes(&store),
        [1, 1],
        "each point counted as started once"
    );
}

#[test]
fn a_point_missing_its_task_or_its_state_is_parked_with_a_warning() {
    // Only SQL written by hand makes either: a point of a task deleted with the triggers
    // out of the way, and a state row deleted. Both are listed, parked as abandoned with
    // one warning each, and the point between them runs.
    let (_dir, ws, mut store) = workspace("after_fail = ['true']");
    walk(&mut store, &["c"], true, &["failed.x"]);
    store
        .conn()
        .execute_batch(
            "DROP TRIGGER tasks_delete_kept_for_points;
             DELETE FROM tasks WHERE id = 'a';
             DELETE FROM pending_hook_states WHERE hook_id = (SELECT id FROM pending_hooks WHERE task = 'c');",
        )
        .unwrap();
    let listed = store.pending(0, 10, None).unwrap();
    let shape: Vec<_> = listed
        .iter()
        .map(|p| (p.task.as_str(), p.plan.as_deref(), p.state.as_deref()))
        .collect();
    assert_eq!(
        shape,
        [
            ("a", None, Some("failed.x")),
            ("b", Some("p"), Some("failed.x")),
            ("c", Some("p"), None)
        ]
    );
    let stop = Stop::new();
    let lock = runner_lock(&ws);
    let mut warnings = Vec::new();
    let report = Drainer::with_warnings(ws, &stop, |w| warnings.push(w.to_owned()))
        .drain(&mut store, &lock)
        .unwrap();
    assert_eq!((report.parked, report.cleared, report.commands), (2, 1, 1));
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].starts_with("warning: after_fail for task a "));
    assert!(warnings[0].contains("the task does not exist; parked as abandoned"));
    assert!(warnings[1].starts_with("warning: after_fail for task c "));
    assert!(warnings[1].contains("its recorded state is missing; parked as abandoned"));
    let outcomes: Vec<_> = store
        .history(None, None, 10)
        .unwrap()
        .into_iter()
        .map(|h| (h.task.to_string(), h.outcome.to_string()))
        .collect();
    assert_eq!(
        outcomes,
        [
            ("c".into(), "abandoned".into()),
            ("b".into(), "ok".into()),
            ("a".into(), "abandoned".into())
        ],
        "newest first"
    );
    assert!(store.pending(0, 10, None).unwrap().is_empty());
    assert_eq!(store.stats().unwrap().pending_by_point, []);
}

#[test]
fn a_stop_asked_for_between_points_leaves_the_next_one_unstarted() {
    // Once for tasks with log folders from earlier points, whose next log is opened ahead,
    // and once for new tasks, whose folders are made only as a command starts.
    for folders_exist in [true, false] {
        let (_dir, ws, mut store) = workspace("after_fail = ['exit 1']");
        if folders_exist {
            for task in ["a", "b"] {
                std::fs::create_dir_all(ws.hook_log_dir(&TaskId::new(task).unwrap())).unwrap();
            }
        }
        let stop = Stop::new();
        let lock = runner_lock(&ws);
        // The warning for the first point's failure arrives after the next point was chosen
        // to be marked started, and asks to stop: the second point must not keep the mark.
        let report = Drainer::with_warnings(ws.clone(), &stop, |_| stop.request())
            .drain(&mut store, &lock)
            .unwrap();
        assert_eq!(report.cleared, 1);
        assert!(report.stopped);
        let left = store.pending(0, 10, None).unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].passes, 0, "no pass started it");
        let task = left[0].task.clone();
        if folders_exist {
            // Its log, opened ahead while the first point ran, is not left behind empty.
            let log = ws.hook_log_path(&task, Point::AfterFail, 1);
            assert!(!log.exists(), "{} exists", log.display());
        } else {
            let dir = ws.hook_log_dir(&task);
            assert!(!dir.exists(), "{} made ahead", dir.display());
        }
    }
}

#[test]
fn an_error_starting_a_job_lets_the_running_ones_finish_and_be_cleared() {
    // With two workers, a breaks the config while b runs and fails (a waits for b to start,
    // at most 10 s: under load, b's worker could otherwise find the config broken as it
    // starts b). c, prepared meanwhile to wait for a worker, finds the config changed when
    // one takes it and goes back to the pass, which cannot prepare it again. The pass
    // still reports b's failure and clears a and b before it ends with the error.
    let (_dir, ws, mut store) = workspace(
        r#"after_fail = ['if [ "$ARC_TASK" = a ]; then i=0; while [ ! -e b-started ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i + 1)); done; printf "not toml [" > .radian/arc/config.toml; sleep 0.5; fi; if [ "$ARC_TASK" = b ]; then touch b-started; sleep 0.5; exit 3; fi']"#,
    );
    walk(&mut store, &["c"], true, &["failed.x"]);
    let stop = Stop::new();
    let lock = runner_lock(&ws);
    let mut warnings = Vec::new();
    let err = Drainer::with_warnings(ws, &stop, |w| warnings.push(w.to_owned()))
        .jobs(2)
        .drain(&mut store, &lock)
        .unwrap_err();
    assert!(matches!(err, Error::Config(_)), "{err}");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("task b") && warnings[0].contains("exit 3"));
    let cleared: Vec<(String, String)> = store
        .history(None, None, 10)
        .unwrap()
        .into_iter()
        .map(|h| (h.task.to_string(), h.outcome.to_string()))
        .collect();
    assert_eq!(cleared.len(), 2, "{cleared:?}");
    assert!(cleared.contains(&("a".into(), "ok".into())));
    assert!(cleared.contains(&("b".into(), "failed".into())));
    let left = store.pending(0, 10, None).unwrap();
    assert_eq!(
        (left.len(), left[0].task.as_str(), left[0].passes),
        (1, "c", 0)
    );
}

/// a and b run for a second each on the two workers of a pass; c waits for a worker.
const C_WAITS: &str = r#"after_fail = ['if [ "$ARC_TASK" != c ]; then touch "started-$ARC_TASK"; sleep 1; fi; echo v1 > "ran-$ARC_TASK"']"#;

/// Drains with two workers on another thread, calling `meanwhile` once a and b run, while c
/// waits prepared for a worker.
fn drain_while_c_waits(
    ws: &Workspace,
    store: &mut Store,
    stop: &Stop,
    meanwhile: impl FnOnce(),
) -> PassReport {
    let lock = runner_lock(ws);
    std::thread::scope(|scope| {
        let pass = scope.spawn(|| {
            Drainer::with_warnings(ws.clone(), stop, |_| {})
                .jobs(2)
                .drain(store, &lock)
        });
        let deadline = Instant::now() + Duration::from_secs(20);
        while !["a", "b"]
            .iter()
            .all(|t| ws.root().join(format!("started-{t}")).exists())
        {
            assert!(Instant::now() < deadline, "a and b never started");
            std::thread::sleep(Duration::from_millis(5));
        }
        meanwhile();
        pass.join().unwrap().unwrap()
    })
}

fn ran(ws: &Workspace, task: &str) -> Option<String> {
    std::fs::read_to_string(ws.root().join(format!("ran-{task}"))).ok()
}

#[test]
fn a_point_dropped_while_it_waits_for_a_worker_does_not_run() {
    let (_dir, ws, mut store) = workspace(C_WAITS);
    walk(&mut store, &["c"], true, &["failed.x"]);
    let c = store.pending(0, 10, None).unwrap()[2].id;
    let report = drain_while_c_waits(&ws, &mut store, &Stop::new(), || {
        let mut other = Store::open(&ws.db_path()).unwrap();
        assert_eq!(other.drop_occurrence(c).unwrap().task, "c");
    });
    assert_eq!((report.cleared, report.commands), (2, 2));
    assert_eq!(ran(&ws, "c"), None, "c ran after it was dropped");
    let c_rows: Vec<String> = store
        .history(None, None, 10)
        .unwrap()
        .into_iter()
        .filter(|h| h.task == "c")
        .map(|h| h.outcome.to_string())
        .collect();
    assert_eq!(c_rows, ["dropped"]);
    assert!(store.pending(0, 10, None).unwrap().is_empty());
}

#[test]
fn a_point_that_waited_for_a_worker_runs_with_the_config_as_it_is_when_it_starts() {
    let (_dir, ws, mut store) = workspace(C_WAITS);
    walk(&mut store, &["c"], true, &["failed.x"]);
    let report = drain_while_c_waits(&ws, &mut store, &Stop::new(), || {
        std::fs::write(
            ws.config_path(),
            "[hooks]\nafter_fail = ['echo v2 > \"ran-$ARC_TASK\"']\n",
        )
        .unwrap();
    });
    assert_eq!((report.cleared, report.commands), (3, 3));
    assert_eq!(ran(&ws, "a").as_deref(), Some("v1\n"));
    assert_eq!(
        ran(&ws, "c").as_deref(),
        Some("v2\n"),
        "c ran the old config"
    );
    assert_eq!(
        history_passes(&store),
        [1, 1, 1],
        "each point counted as started once"
    );
}

#[test]
fn a_stop_leaves_a_point_waiting_for_a_worker_unstarted() {
    let (_dir, ws, mut store) = workspace(C_WAITS);
    walk(&mut store, &["c"], true, &["failed.x"]);
    let stop = Stop::new();
    let report = drain_while_c_waits(&ws, &mut store, &stop, || stop.request());
    assert_eq!((report.cleared, report.commands), (2, 2));
    assert!(report.stopped);
    assert_eq!(ran(&ws, "c"), None);
    let left = store.pending(0, 10, None).unwrap();
    assert_eq!(
        (left.len(), left[0].task.as_str(), left[0].passes),
        (1, "c", 0),
        "c is left pending, not counted as started"
    );
}

/// Polls for `path` every 5 ms until it exists or `limit` passed; whether it exists.
fn appears(path: &std::path::Path, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while !path.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    path.exists()
}

#[test]
fn a_busy_database_never_holds_up_a_running_commands_timeout() {
    // a's clear falls due while b runs. Another writer holds the database from a's start
    // until b's TERM trap has run: the batch must wait for the database without making b's
    // five-second timeout wait with it. (The store waits a minute for a busy database, longer
    // than the writer holds it at most: without that, the trap would run only after it let
    // go.) a ends once the writer holds the database, well inside its timeout.
    let (dir, ws, _) = workspace("");
    std::fs::write(
        ws.config_path(),
        r#"[gate]
command_timeout_secs = 5
[hooks]
after_fail = ['touch "$ARC_TASK.started"; if [ "$ARC_TASK" = a ]; then until [ -e held ]; do sleep 0.01; done; else trap "touch b.termed; exit 1" TERM; sleep 30 & wait; fi']
"#,
    )
    .unwrap();
    let opts = StoreOptions {
        busy_timeout: Duration::from_secs(60),
        ..StoreOptions::default()
    };
    let mut store = Store::open_with(&ws.db_path(), opts).unwrap();
    let (root, db) = (dir.path().to_owned(), ws.db_path());
    let writer = std::thread::spawn(move || {
        assert!(appears(&root.join("a.started"), Duration::from_secs(30)));
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.busy_timeout(Duration::from_secs(10)).unwrap();
        conn.execute_batch("BEGIN IMMEDIATE").unwrap();
        std::fs::write(root.join("held"), "").unwrap();
        let termed = appears(&root.join("b.termed"), Duration::from_secs(40));
        conn.execute_batch("ROLLBACK").unwrap();
        termed
    });
    let stop = Stop::new();
    let lock = runner_lock(&ws);
    // Its warning is the test's to check, not the test run's output.
    let mut warnings = Vec::new();
    let report = Drainer::with_warnings(ws, &stop, |w| warnings.push(w.to_owned()))
        .drain(&mut store, &lock)
        .unwrap();
    assert!(
        writer.join().unwrap(),
        "b's timeout was served while another writer held the database"
    );
    assert_eq!((report.cleared, report.commands, report.failed), (2, 2, 1));
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("warning: after_fail-01 for task b ")
            && warnings[0].contains(": timed out"),
        "{warnings:?}"
    );
    let mut outcomes: Vec<(String, String)> = store
        .history(None, None, 10)
        .unwrap()
        .into_iter()
        .map(|h| (h.task.to_string(), h.outcome.to_string()))
        .collect();
    outcomes.sort();
    assert_eq!(
        outcomes,
        [("a".into(), "ok".into()), ("b".into(), "timed_out".into())]
    );
    assert!(store.pending(0, 10, None).unwrap().is_empty());
}

#[test]
fn finished_points_are_cleared_when_a_later_one_cannot_run() {
    // Two points with no command, then two whose log folder cannot be made: the pass ends
    // with the error, the first two are cleared all the same, the others stay pending.
    let (_dir, ws, mut store) = workspace("after_fail = ['true']");
    walk(&mut store, &["c", "d"], true, &["review.awaiting_human"]);
    // The workspace recorded a and b first; record their points again after c and d's.
    for id in [1, 2] {
        store.drop_occurrence(id).unwrap();
    }
    walk(&mut store, &["a", "b"], false, &["todo.ready", "failed.x"]);
    std::fs::create_dir_all(ws.state_dir().join("runs")).unwrap();
    std::fs::write(ws.state_dir().join("runs/a"), "not a folder").unwrap();
    let stop = Stop::new();
    let lock = runner_lock(&ws);
    let err = Drainer::new(ws, &stop)
        .drain(&mut store, &lock)
        .unwrap_err();
    assert!(matches!(err, Error::Exec(_)), "{err}");
    let left: Vec<String> = store
        .pending(0, 10, None)
        .unwrap()
        .into_iter()
        .map(|p| p.task.to_string())
        .collect();
    assert_eq!(left, ["a", "b"]);
    let empty = store
        .history(None, None, 10)
        .unwrap()
        .iter()
        .filter(|h| h.outcome == "empty")
        .count();
    assert_eq!(empty, 2, "the points with no command were cleared");
}

/// Outcomes in history, oldest first, as (task, outcome).
fn outcomes(store: &Store) -> Vec<(String, String)> {
    let mut rows: Vec<_> = store
        .history(None, None, 100)
        .unwrap()
        .into_iter()
        .map(|h| (h.task.to_string(), h.outcome.to_string()))
        .collect();
    rows.reverse();
    rows
}

#[test]
fn a_point_without_commands_waits_for_a_config_written_a_while_ago() {
    // Written just now, the config may be half-written: a and b, which it gives no commands,
    // stay pending and unstarted. Once the file has gone unmodified, a pass clears them.
    let (_dir, ws, mut store) = workspace("after_merge = ['true']");
    std::fs::write(ws.config_path(), "[hooks]\nafter_merge = ['true']\n").unwrap();
    let stop = Stop::new();
    let mut drainer = Drainer::with_warnings(ws.clone(), &stop, |w| panic!("{w}"));
    let lock = runner_lock(&ws);
    let report = drainer.drain(&mut store, &lock).unwrap();
    assert_eq!((report.cleared, report.held), (0, 2), "{report:?}");
    let wait = report.retry_in.expect("says when the config settles");
    assert!(wait > Duration::ZERO && wait <= crate::queue::config::QUIET);
    let left = store.pending(0, 10, None).unwrap();
    assert_eq!(left.iter().map(|p| p.passes).collect::<Vec<_>>(), [0, 0]);
    assert!(store.history(None, None, 10).unwrap().is_empty());

    settled(&ws);
    let report = drainer.drain(&mut store, &lock).unwrap();
    assert_eq!((report.cleared, report.held, report.retry_in), (2, 0, None));
    assert_eq!(
        outcomes(&store),
        [("a".into(), "empty".into()), ("b".into(), "empty".into())]
    );
}

#[test]
fn a_held_point_holds_back_its_tasks_later_points_and_no_other_task() {
    // a's after_fail has no commands in a config written just now: held. a's next point,
    // which has commands, must not run before it; b's points run.
    for jobs in [1, 2] {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::at(dir.path());
        let mut store = Store::open(&ws.db_path()).unwrap();
        walk(&mut store, &["a"], true, &["failed.x", "review.awaiting_human"]);
        walk(&mut store, &["b"], true, &["review.awaiting_human"]);
        std::fs::write(
            ws.config_path(),
            "[hooks]\nafter_awaiting_human = ['echo \"$ARC_TASK\" >> ran']\n",
        )
        .unwrap();
        let stop = Stop::new();
        let lock = runner_lock(&ws);
        let report = Drainer::new(ws.clone(), &stop)
            .jobs(jobs)
            .drain(&mut store, &lock)
            .unwrap();
        assert_eq!((report.cleared, report.held), (1, 1), "jobs {jobs}: {report:?}");
        assert_eq!(ran(&ws, "a"), None);
        let out = std::fs::read_to_string(ws.root().join("ran")).unwrap();
        assert_eq!(out, "b\n", "jobs {jobs}");
        let left: Vec<_> = store
            .pending(0, 10, None)
            .unwrap()
            .into_iter()
            .map(|p| (p.task.to_string(), p.point.to_string(), p.passes))
            .collect();
        assert_eq!(
            left,
            [
                ("a".into(), "after_fail".into(), 0),
                ("a".into(), "after_awaiting_human".into(), 0),
            ],
            "jobs {jobs}"
        );
        settled(&ws);
        let report = Drainer::new(ws.clone(), &stop)
            .jobs(jobs)
            .drain(&mut store, &lock)
            .unwrap();
        assert_eq!((report.cleared, report.held), (2, 0), "jobs {jobs}");
        let a: Vec<_> = outcomes(&store)
            .into_iter()
            .filter(|(t, _)| t == "a")
            .map(|(_, o)| o)
            .collect();
        assert_eq!(a, ["empty", "ok"], "jobs {jobs}: in recorded order");
    }
}

#[test]
fn a_point_interrupted_too_often_is_parked_only_by_a_config_written_a_while_ago() {
    // A half-written config can lack max_interrupted_runs and give the default, 5, where the
    // whole file says more: a and b, started 5 times, must not be parked by one written just now.
    let (_dir, ws, mut store) = workspace("");
    store
        .conn()
        .execute_batch("UPDATE pending_hooks SET passes = 5")
        .unwrap();
    std::fs::write(ws.config_path(), "[hooks]\nafter_fail = ['true']\n").unwrap();
    let stop = Stop::new();
    let lock = runner_lock(&ws);
    let mut drainer = Drainer::with_warnings(ws.clone(), &stop, |_| {});
    let report = drainer.drain(&mut store, &lock).unwrap();
    assert_eq!((report.parked, report.held, report.commands), (0, 2, 0));
    assert!(store.history(None, None, 10).unwrap().is_empty());
    settled(&ws);
    let report = drainer.drain(&mut store, &lock).unwrap();
    assert_eq!((report.parked, report.held), (2, 0));
}

/// The SQLite store, whose workers' markers panic as they mark a point of task `b` started: a
/// bug in a worker, injected.
struct PanicsOnB(Store);

struct PanickingMarker(crate::queue::store::StartMarker);

impl crate::queue::MarkStarts for PanickingMarker {
    fn mark_started(
        &mut self,
        entry: &crate::queue::model::PendingRow,
    ) -> Result<crate::queue::Mark, Error> {
        assert!(entry.task != "b", "injected panic marking b");
        crate::queue::MarkStarts::mark_started(&mut self.0, entry)
    }
}

impl crate::queue::QueueStore for PanicsOnB {
    type Marker = PanickingMarker;

    fn next_batch(
        &mut self,
        after: i64,
        limit: usize,
    ) -> Result<Vec<crate::queue::model::PendingRow>, Error> {
        self.0.next_batch(after, limit)
    }
    fn mark_started(
        &mut self,
        entry: &crate::queue::model::PendingRow,
        lock: &RunnerLock,
    ) -> Result<crate::queue::Mark, Error> {
        crate::queue::QueueStore::mark_started(&mut self.0, entry, lock)
    }
    fn paused(&mut self) -> Result<bool, Error> {
        crate::queue::QueueStore::paused(&mut self.0)
    }
    fn start_marker(&mut self, lock: &RunnerLock) -> PanickingMarker {
        PanickingMarker(crate::queue::QueueStore::start_marker(&mut self.0, lock))
    }
    fn fold_starts(&mut self, lock: &RunnerLock) -> Result<usize, Error> {
        crate::queue::QueueStore::fold_starts(&mut self.0, lock)
    }
    fn clear_all(&mut self, points: &[crate::queue::model::Cleared]) -> Result<(), Error> {
        crate::queue::QueueStore::clear_all(&mut self.0, points)
    }
    fn try_clear_all(&mut self, points: &[crate::queue::model::Cleared]) -> Result<bool, Error> {
        crate::queue::QueueStore::try_clear_all(&mut self.0, points)
    }
    fn prune_history(
        &mut self,
        cutoff_ms: i64,
        limit: usize,
        remove_logs: &mut dyn FnMut(&str),
    ) -> Result<usize, Error> {
        crate::queue::QueueStore::prune_history(&mut self.0, cutoff_ms, limit, remove_logs)
    }
    fn change_mark(&mut self) -> Result<crate::queue::backend::ChangeMark, Error> {
        self.0.change_mark()
    }
    fn pass<T, E: From<Error>>(
        &mut self,
        _lock: &RunnerLock,
        f: impl FnOnce(&mut Self) -> Result<T, E>,
    ) -> Result<T, E> {
        f(self)
    }
    fn located(&self, source: crate::queue::store::StoreError) -> Error {
        self.0.located(source)
    }
}

#[test]
fn a_worker_that_panics_fails_the_pass_and_leaves_its_point_pending() {
    // a, b and c go to the two workers at once; the worker taking b panics as it marks b
    // started. The pass must end (not wait for b's worker for good) with one error naming
    // b, after a and c ran and were cleared; b stays pending, unstarted.
    let (dir, ws, mut store) = workspace("after_fail = ['echo \"$ARC_TASK\" >> ran']");
    walk(&mut store, &["c"], true, &["failed.x"]);
    let (tx, rx) = std::sync::mpsc::channel();
    let pass_ws = ws.clone();
    std::thread::spawn(move || {
        let mut store = PanicsOnB(store);
        let stop = Stop::new();
        let lock = runner_lock(&pass_ws);
        let mut warnings = Vec::new();
        let out = Drainer::with_warnings(pass_ws, &stop, |w| warnings.push(w.to_owned()))
            .jobs(2)
            .drain(&mut store, &lock);
        let _ = tx.send((out, warnings));
    });
    // Generous: only there to catch a pass that waits for the panicked worker.
    let (out, warnings) = rx
        .recv_timeout(Duration::from_secs(120))
        .expect("the pass ended after its worker panicked");
    let err = out.unwrap_err();
    assert!(
        matches!(&err, Error::WorkerPanicked { task, .. } if task == "b"),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("panicked running after_fail for task b")
            && text.contains("injected panic marking b"),
        "{text}"
    );
    assert!(warnings.is_empty(), "{warnings:?}");
    let store = Store::open(&ws.db_path()).unwrap();
    let left = store.pending(0, 10, None).unwrap();
    assert_eq!(
        left.iter()
            .map(|p| (p.task.as_str(), p.passes))
            .collect::<Vec<_>>(),
        [("b", 0)],
        "b stays pending, unstarted"
    );
    let mut cleared = outcomes(&store);
    cleared.sort();
    assert_eq!(
        cleared,
        [("a".into(), "ok".into()), ("c".into(), "ok".into())]
    );
    let mut ran: Vec<String> = std::fs::read_to_string(dir.path().join("ran"))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    ran.sort();
    assert_eq!(ran, ["a", "c"], "b's command never ran");
}

#[test]
fn a_paused_queue_starts_nothing_until_resumed() {
    let (_dir, ws, mut store) = workspace("after_fail = ['echo \"$ARC_TASK\" >> ran']");
    let stop = Stop::new();
    assert!(store.pause().unwrap().changed);
    let report = Drainer::new(ws.clone(), &stop)
        .drain(&mut store, &runner_lock(&ws))
        .unwrap();
    assert!(report.paused);
    assert_eq!((report.cleared, report.commands), (0, 0));
    assert!(!ws.root().join("ran").exists());
    let pending = store.pending(0, 10, None).unwrap();
    assert_eq!(pending.iter().map(|p| p.passes).collect::<Vec<_>>(), [0, 0]);

    store.resume().unwrap().unwrap();
    let report = Drainer::new(ws.clone(), &stop)
        .drain(&mut store, &runner_lock(&ws))
        .unwrap();
    assert!(!report.paused);
    assert_eq!(report.cleared, 2);
    assert_eq!(std::fs::read_to_string(ws.root().join("ran")).unwrap(), "a\nb\n");
}

#[test]
fn a_pause_mid_pass_lets_the_running_point_finish_and_starts_no_other() {
    // a's command runs until the test has paused the queue from another connection.
    let (_dir, ws, mut store) = workspace(
        "after_fail = ['echo \"$ARC_TASK\" >> ran; while [ ! -e go ]; do sleep 0.02; done']",
    );
    let stop = Stop::new();
    let root = ws.root().to_path_buf();
    let db = ws.db_path();
    let pauser = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        while std::fs::read_to_string(root.join("ran")).unwrap_or_default() != "a\n" {
            assert!(Instant::now() < deadline, "a never started");
            std::thread::sleep(Duration::from_millis(10));
        }
        Store::open(&db).unwrap().pause().unwrap();
        std::fs::write(root.join("go"), "").unwrap();
    });
    let report = Drainer::new(ws.clone(), &stop)
        .drain(&mut store, &runner_lock(&ws))
        .unwrap();
    pauser.join().unwrap();
    assert!(report.paused);
    assert_eq!((report.cleared, report.commands), (1, 1));
    assert_eq!(std::fs::read_to_string(ws.root().join("ran")).unwrap(), "a\n");
    // b stays pending, not counted as started, and its log was not left behind.
    let pending = store.pending(0, 10, None).unwrap();
    assert_eq!(
        pending.iter().map(|p| (p.task.as_str(), p.passes)).collect::<Vec<_>>(),
        [("b", 0)]
    );
    let b = TaskId::new("b").unwrap();
    assert!(!ws.hook_log_path(&b, Point::AfterFail, 1).exists());
}

#[test]
fn a_pause_mid_parallel_pass_lets_the_running_points_finish_and_starts_no_other() {
    let (_dir, ws, mut store) = workspace(
        "after_fail = ['echo \"$ARC_TASK\" >> ran; while [ ! -e go ]; do sleep 0.02; done']",
    );
    walk(&mut store, &["c"], true, &["failed.x"]);
    let stop = Stop::new();
    let root = ws.root().to_path_buf();
    let db = ws.db_path();
    // a and b run at once; c waits, prepared, behind one of them.
    let pauser = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        while std::fs::read_to_string(root.join("ran"))
            .unwrap_or_default()
            .lines()
            .count()
            < 2
        {
            assert!(Instant::now() < deadline, "a and b never started");
            std::thread::sleep(Duration::from_millis(10));
        }
        Store::open(&db).unwrap().pause().unwrap();
        std::fs::write(root.join("go"), "").unwrap();
    });
    let report = Drainer::new(ws.clone(), &stop)
        .jobs(2)
        .drain(&mut store, &runner_lock(&ws))
        .unwrap();
    pauser.join().unwrap();
    assert!(report.paused);
    assert_eq!((report.cleared, report.commands), (2, 2));
    let mut ran: Vec<String> = std::fs::read_to_string(ws.root().join("ran"))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    ran.sort();
    assert_eq!(ran, ["a", "b"]);
    let pending = store.pending(0, 10, None).unwrap();
    assert_eq!(
        pending
            .iter()
            .map(|p| (p.task.as_str(), p.passes))
            .collect::<Vec<_>>(),
        [("c", 0)]
    );
}

/// What an observer was told, as text: `after_fail ok`, `after_fail failed slept` (a failure
/// that lasted 50 ms or more), `pass 2 cleared 4 commands`, `pass failed`.
fn observed(ws: &Workspace, store: &mut Store, jobs: usize) -> Vec<String> {
    let stop = Stop::new();
    let seen = std::cell::RefCell::new(Vec::new());
    let mut drainer = Drainer::with_warnings(ws.clone(), &stop, |_| {})
        .jobs(jobs)
        .observe(|event| {
            seen.borrow_mut().push(match event {
                DrainEvent::Command {
                    point,
                    outcome,
                    duration,
                } => {
                    // The failing command sleeps 50 ms first: its duration is at least that.
                    let long = duration >= Duration::from_millis(50);
                    let mark = if outcome == Outcome::Failed && long { " slept" } else { "" };
                    format!("{} {}{mark}", point.as_str(), outcome.as_str())
                }
                DrainEvent::Pass(Ok(r)) => {
                    format!("pass {} cleared {} commands", r.cleared, r.commands)
                }
                DrainEvent::Pass(Err(_)) => "pass failed".to_owned(),
            })
        });
    let lock = runner_lock(ws);
    let _ = drainer.drain(store, &lock);
    drop(drainer);
    seen.into_inner()
}

#[test]
fn an_observer_is_told_of_each_command_and_each_pass() {
    for jobs in [1, 2] {
        let (_dir, ws, mut store) = workspace("after_fail = ['true', 'sleep 0.05; exit 3']");
        let mut seen = observed(&ws, &mut store, jobs);
        assert_eq!(seen.pop().as_deref(), Some("pass 2 cleared 4 commands"));
        seen.sort();
        assert_eq!(
            seen,
            [
                "after_fail failed slept",
                "after_fail failed slept",
                "after_fail ok",
                "after_fail ok"
            ],
            "jobs {jobs}"
        );
        std::fs::write(ws.config_path(), "[hooks]\nafter_fail = [").unwrap();
        assert_eq!(observed(&ws, &mut store, jobs), ["pass failed"]);
    }
}

#[test]
fn a_drainer_prunes_history_at_its_first_pass_then_once_a_while() {
    let (_dir, ws, mut store) = workspace("after_fail = ['true']");
    std::fs::write(
        ws.config_path(),
        "[queue]\nkeep_history_days = 1\n[hooks]\nafter_fail = ['true']\n",
    )
    .unwrap();
    settled(&ws);
    let stop = Stop::new();
    let lock = runner_lock(&ws);
    let mut drainer = Drainer::with_warnings(ws.clone(), &stop, |w| panic!("{w}"));
    let tasks = |store: &Store| -> Vec<String> {
        let mut t: Vec<String> = store
            .history(None, None, 10)
            .unwrap()
            .into_iter()
            .map(|h| h.task.to_string())
            .collect();
        t.sort();
        t
    };
    let age = |task: &str| {
        let db = rusqlite::Connection::open(ws.db_path()).unwrap();
        let n = db
            .execute("UPDATE hook_history SET finished_ms = 0 WHERE task = ?1", [task])
            .unwrap();
        assert_eq!(n, 1);
    };
    drainer.drain(&mut store, &lock).unwrap();
    assert_eq!(tasks(&store), ["a", "b"]);

    // A pass soon after its first leaves history as it is.
    age("a");
    walk(&mut store, &["c"], true, &["failed.x"]);
    drainer.drain(&mut store, &lock).unwrap();
    assert_eq!(tasks(&store), ["a", "b", "c"]);

    // Once its time comes, the next pass prunes, even with nothing pending.
    drainer.prune_at = Some(Instant::now());
    drainer.drain(&mut store, &lock).unwrap();
    assert_eq!(tasks(&store), ["b", "c"]);
    assert!(drainer.prune_at.is_some_and(|at| at > Instant::now()));

    // A new drainer (a `hookq run`) prunes at its first pass.
    age("b");
    Drainer::new(ws.clone(), &stop).drain(&mut store, &lock).unwrap();
    assert_eq!(tasks(&store), ["c"]);
}
