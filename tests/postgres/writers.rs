//! Many writers on one queue: recording takes no lock another task's recording needs, a point
//! that commits after points with higher ids is still run, and a database of the counter-row
//! schema upgrades in place with its pending points.

use std::sync::mpsc;
use std::time::Duration;

use hookq::exec::Stop;
use hookq::queue::hub::{self, HubOptions};
use hookq::queue::pg::{self, PgQueue, PgStore, Target, record};
use hookq::queue::watch::Watcher;
use hookq::queue::{Drainer, MoveFacts, Wait};

use super::cluster::cluster;
use super::{fresh, hooked_workspace, open, ph, plan, ran, task};
use crate::support::{HANG, eventually};

/// Whether the connection named `app` waits for a lock, as the server sees it.
fn waits_for_a_lock(db: &str, app: &str) -> bool {
    let mut admin = cluster().admin(db);
    admin
        .query_opt(
            "SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'",
            &[&app],
        )
        .unwrap()
        .is_some()
}

/// A host holds a transaction that recorded a point for t1 open; another connection's recording
/// for t2 commits meanwhile (it waited for nothing of t1's), while a second move of t1 waits for
/// the first to commit and then gets the higher id.
#[test]
fn a_recording_waits_only_for_transactions_on_its_own_task() {
    if crate::postgres::without_postgres("a_recording_waits_only_for_transactions_on_its_own_task")
    {
        return;
    }
    let (db, mut a) = fresh("turns");
    a.write(|tx, q| {
        for t in ["t1", "t2"] {
            record::add_task(tx, q, &task(t), &plan("p"), &ph("todo.ready"))?;
        }
        Ok(())
    })
    .unwrap();
    let q = a.queue().clone();
    let none = MoveFacts::default();
    let mut held = a.client().transaction().unwrap();
    let first = record::move_task(&mut held, &q, &task("t1"), &ph("failed.a"), &none).unwrap();

    // Another task's recording commits while t1's transaction stays open: if it waited for
    // it, it would never finish before the commit below, which comes only after it.
    let (done_tx, done_rx) = mpsc::channel();
    let other_task = std::thread::spawn({
        let db = db.clone();
        move || {
            let mut b = open(&db, "turns");
            let moved = b
                .write(|tx, q| {
                    record::move_task(tx, q, &task("t2"), &ph("failed.b"), &MoveFacts::default())
                })
                .unwrap();
            done_tx.send(()).unwrap();
            moved
        }
    });
    assert!(
        done_rx.recv_timeout(HANG).is_ok(),
        "t2's recording waited for t1's open transaction"
    );
    let t2 = other_task.join().unwrap();

    // A second move of t1, through a Recorder's statement, waits for the first to commit.
    let same_task = std::thread::spawn({
        let db = db.clone();
        move || {
            let target = Target::parse(&cluster().url(&db, "application_name=second")).unwrap();
            let mut c = PgStore::open(&target, super::queue("turns")).unwrap();
            let recorder = pg::Recorder::prepare(c.client()).unwrap();
            c.write(|tx, q| {
                recorder.move_task(tx, q, &task("t1"), &ph("failed.c"), &MoveFacts::default())
            })
            .unwrap()
        }
    });
    eventually(
        "the second move of t1 waits for the first's row lock",
        || waits_for_a_lock(&db, "second"),
    );
    assert!(!same_task.is_finished());
    held.commit().unwrap();
    let second = same_task.join().unwrap();
    assert_eq!(
        second.from.as_deref(),
        Some("failed.a"),
        "it read t1's committed move"
    );
    let (first, second) = (first.occurrence.unwrap().id, second.occurrence.unwrap().id);
    assert!(
        first < second,
        "t1's points in commit order: {first}, {second}"
    );
    // Across tasks no order is promised: t2 committed first, with a higher id than t1's first.
    assert!(t2.occurrence.unwrap().id > first);
}

/// A hub drains while a host's transaction that took its id first stays open; the later points
/// run. When it commits, without telling anyone, the hub's poll finds it and runs it: a point
/// whose id is below those already run is never skipped.
#[test]
fn a_point_committed_after_points_with_higher_ids_is_run_by_the_hub() {
    if crate::postgres::without_postgres(
        "a_point_committed_after_points_with_higher_ids_is_run_by_the_hub",
    ) {
        return;
    }
    let (dir, ws) = hooked_workspace(r#"after_fail = ['echo "$ARC_TASK $ARC_STATE" >> ran']"#);
    let (db, mut s) = fresh("late");
    s.write(|tx, q| {
        for t in ["early", "t1", "t2"] {
            record::add_task(tx, q, &task(t), &plan("p"), &ph("todo.ready"))?;
        }
        Ok(())
    })
    .unwrap();
    let q = s.queue().clone();

    // The host's transaction takes its id first and stays open.
    let mut host = open(&db, "late");
    let mut late = host.client().transaction().unwrap();
    let early = record::move_task(
        &mut late,
        &q,
        &task("early"),
        &ph("failed.late"),
        &MoveFacts::default(),
    )
    .unwrap()
    .occurrence
    .unwrap()
    .id;

    let stop = Stop::new();
    std::thread::scope(|scope| {
        let hub = scope.spawn(|| {
            let lock = s.lock(Wait::No).unwrap().expect("the queue's runner lock");
            let mut watcher = Watcher::postgres(s.target().clone(), s.queue().clone()).unwrap();
            let mut pq = PgQueue::new(s, lock).unwrap();
            let mut drainer = Drainer::new(ws.clone(), &stop);
            // Only the watcher's mark can wake it: no rescan within the test's time.
            let opts = HubOptions {
                poll: Duration::from_millis(100),
                rescan: Duration::from_secs(3600),
                ..HubOptions::default()
            };
            let mut errors = Vec::new();
            hub::run(
                &ws,
                &mut pq,
                &mut watcher,
                &mut drainer,
                &stop,
                opts,
                &mut |e| errors.push(e.to_string()),
            )
            .unwrap();
            assert!(errors.is_empty(), "{errors:?}");
            pq.release().unwrap()
        });

        // Two later points commit and run.
        let mut writer = open(&db, "late");
        let mut ids = Vec::new();
        for (t, to) in [("t1", "failed.one"), ("t2", "failed.two")] {
            let moved = writer
                .write(|tx, q| record::move_task(tx, q, &task(t), &ph(to), &MoveFacts::default()))
                .unwrap();
            ids.push(moved.occurrence.unwrap().id);
        }
        assert!(ids.iter().all(|&id| id > early), "{early} {ids:?}");
        eventually("the later points run", || ran(&dir).len() == 2);
        assert_eq!(ran(&dir), ["t1 failed.one", "t2 failed.two"]);

        // The early one commits last, and nobody notifies. (The hub finishes its passes
        // first, which it has once it let go of the workspace's runner lock: a commit while a
        // pass still runs is found by any mark, and this test is about the one that is not.)
        eventually("the later points are cleared", || {
            let mut c = open(&db, "late");
            c.history(None, None, 10).unwrap().len() == 2
        });
        eventually("the hub to end its pass", || {
            let f = std::fs::File::open(ws.lock_path()).unwrap();
            fs2::FileExt::try_lock_exclusive(&f).is_ok()
        });
        late.commit().unwrap();
        eventually("the point committed last runs", || ran(&dir).len() == 3);
        assert_eq!(ran(&dir)[2], "early failed.late");
        stop.request();
        let mut s = hub.join().unwrap();
        assert!(super::pending(&mut s).is_empty());
        let h = s.history(None, Some(early), 10).unwrap();
        assert_eq!(h.len(), 1, "{h:?}");
        assert_eq!(h[0].outcome, "ok");
    });
}

/// A database made by the schema whose ids came from each queue's counter row, with points
/// pending and history kept, upgrades in place: every pending point is still pending once with
/// its id and state, the history stays, new ids come after every old one, and one drain runs
/// each old point once.
#[test]
fn a_database_of_the_counter_schema_upgrades_with_its_pending_points() {
    if crate::postgres::without_postgres(
        "a_database_of_the_counter_schema_upgrades_with_its_pending_points",
    ) {
        return;
    }
    let db = cluster().database();
    let url = cluster().url(&db, "");
    let mut client = pg::connect(&Target::parse(&url).unwrap(), "old hookq").unwrap();
    let old: Vec<refinery::Migration> = [
        (
            "V1__initial",
            include_str!("../../migrations/postgres/V1__initial.sql"),
        ),
        (
            "V2__record_functions",
            include_str!("../../migrations/postgres/V2__record_functions.sql"),
        ),
    ]
    .iter()
    .map(|(name, sql)| refinery::Migration::unapplied(name, sql).unwrap())
    .collect();
    let mut runner = refinery::Runner::new(&old).set_grouped(true);
    runner.set_migration_table_name(pg::schema::HISTORY_TABLE);
    runner.run(&mut client).unwrap();
    assert_eq!(pg::schema::applied_version(&mut client).unwrap(), Some(2));

    // What the older hookq wrote: two queues, tasks, pending points and a history row, through
    // its own functions (the counter row, the notification inside).
    client
        .batch_execute(
            "INSERT INTO hookq_queues (queue, created_ms) VALUES ('up', 1), ('other', 1);
             INSERT INTO hookq_tasks (queue, id, plan, phase, created_ms, updated_ms) VALUES
                 ('up', 't1', 'p', 'todo.ready', 1, 1), ('up', 't2', 'p', 'todo.ready', 1, 1),
                 ('other', 'x', 'p', 'todo.ready', 1, 1);
             SELECT hookq_move_task('up', 't1', 'failed.a', 2, NULL, NULL, 'after_fail', 'hookq');
             SELECT hookq_move_task('up', 't2', 'failed.b', 3, NULL, NULL, 'after_fail', 'hookq');
             SELECT hookq_move_task('up', 't1', 'review.rework_pending', 4, NULL, NULL, 'after_rework', 'hookq');
             SELECT hookq_move_task('other', 'x', 'failed.x', 5, NULL, NULL, 'after_fail', 'hookq');
             DELETE FROM hookq_pending_hooks WHERE queue = 'up' AND id = 2;
             INSERT INTO hookq_hook_history (queue, occurrence, task, point, state, recorded_ms,
                 passes, outcome, finished_ms)
                 VALUES ('up', 2, 't2', 'after_fail', 'failed.b', 3, 0, 'empty',
                     (extract(epoch FROM now()) * 1000)::bigint);",
        )
        .unwrap();
    let last_id: i64 = client
        .query_one("SELECT last_id FROM hookq_queues WHERE queue = 'up'", &[])
        .unwrap()
        .get(0);
    assert_eq!(last_id, 3);
    drop(client);

    let (dir, ws) = hooked_workspace(
        r#"after_fail = ['echo "fail $ARC_TASK $ARC_STATE" >> ran']
after_rework = ['echo "rework $ARC_TASK" >> ran']"#,
    );
    let mut s = open(&db, "up");
    let before = super::pending(&mut s);
    assert_eq!(
        before,
        [
            (1, "t1".into(), "after_fail".into(), Some("failed.a".into())),
            (
                3,
                "t1".into(),
                "after_rework".into(),
                Some("review.rework_pending".into())
            ),
        ]
    );
    assert_eq!(s.history(None, None, 10).unwrap().len(), 1);
    let mut other = open(&db, "other");
    assert_eq!(super::pending(&mut other).len(), 1);
    // New ids come after every id either queue gave.
    let moved = s
        .write(|tx, q| {
            record::move_task(tx, q, &task("t2"), &ph("failed.c"), &MoveFacts::default())
        })
        .unwrap();
    assert!(moved.occurrence.unwrap().id > 3);

    let stop = Stop::new();
    let lock = s.lock(Wait::No).unwrap().unwrap();
    let mut pq = PgQueue::new(s, lock).unwrap();
    let runner = hookq::queue::RunnerLock::acquire(&ws.lock_path(), Wait::No, &|| true)
        .unwrap()
        .unwrap();
    let report = Drainer::new(ws.clone(), &stop)
        .drain(&mut pq, &runner)
        .unwrap();
    drop(runner);
    assert_eq!(report.cleared, 3);
    assert_eq!(
        ran(&dir),
        ["fail t1 failed.a", "rework t1", "fail t2 failed.c"],
        "each old point once, in order"
    );
    let mut s = pq.release().unwrap();
    assert!(super::pending(&mut s).is_empty());
    let h = s.history(None, None, 10).unwrap();
    assert_eq!(h.len(), 4, "{h:#?}");
}

/// A `Notifier` wakes the hubs of the queues it was asked for, without the caller waiting: a
/// lone call at once, a burst of calls from many threads with few notifications, each naming
/// every queue asked for since the one before; `flush` waits until all were covered.
#[test]
fn a_notifier_wakes_hubs_from_its_own_thread_and_folds_a_burst() {
    if crate::postgres::without_postgres(
        "a_notifier_wakes_hubs_from_its_own_thread_and_folds_a_burst",
    ) {
        return;
    }
    let (db, mut listener) = fresh("notifier");
    listener
        .client()
        .batch_execute(&format!(
            "LISTEN \"hookq:notifier\"; LISTEN \"hookq:other\"; LISTEN \"{}\"",
            super::channels::MARKER
        ))
        .unwrap();
    // The payloads of all that reached the listener of what was committed so far (the marker,
    // sent from its own connection, comes after them).
    let received = |l: &mut PgStore| -> Vec<String> {
        super::channels::mark(l.client());
        super::channels::until_marker(l)
            .into_iter()
            .map(|(_, payload)| payload)
            .collect()
    };
    let target = Target::parse(&cluster().url(&db, "")).unwrap();
    let notifier = pg::Notifier::new(&target);
    let (a, b) = (super::queue("notifier"), super::queue("other"));

    notifier.notify(&a);
    assert!(notifier.flush(HANG));
    assert_eq!(received(&mut listener), ["notifier"]);

    const THREADS: usize = 8;
    const CALLS: usize = 500;
    std::thread::scope(|scope| {
        for i in 0..THREADS {
            let (notifier, q) = (notifier.clone(), if i % 2 == 0 { &a } else { &b });
            scope.spawn(move || {
                for _ in 0..CALLS {
                    notifier.notify(q);
                }
            });
        }
    });
    assert!(notifier.flush(HANG));
    let got = received(&mut listener);
    assert!(
        got.len() < THREADS * CALLS / 10,
        "{} notifications for {} calls",
        got.len(),
        THREADS * CALLS
    );
    // The last notification names both queues: each was asked for after the one before began.
    assert!(got.iter().any(|p| p == "notifier") && got.iter().any(|p| p == "other"));

    // A store given the notifier wakes the hubs through it after its writes.
    let mut s = open(&db, "notifier").with_notifier(notifier.clone());
    s.write(|tx, q| record::add_task(tx, q, &task("t"), &plan("p"), &ph("failed.x")))
        .unwrap();
    assert!(notifier.flush(HANG));
    assert_eq!(received(&mut listener), ["notifier"]);

    // A notifier that cannot connect gives up on what it was asked, and says so only in a log.
    let closed = Target::parse("postgres://hookq@127.0.0.1:1/none?connect_timeout=2").unwrap();
    let lost = pg::Notifier::new(&closed);
    lost.notify(&a);
    assert!(
        lost.flush(HANG),
        "a failed notification still covers its calls"
    );
}

/// A `Recorder` records as `record::move_task` does, with its statement prepared once; used in
/// another connection's transaction it fails (that connection never prepared it) and records
/// nothing.
#[test]
fn a_recorder_moves_tasks_on_its_prepared_statement() {
    if crate::postgres::without_postgres("a_recorder_moves_tasks_on_its_prepared_statement") {
        return;
    }
    let (db, mut s) = fresh("recorder");
    s.write(|tx, q| {
        for t in ["t1", "t2"] {
            record::add_task(tx, q, &task(t), &plan("p"), &ph("todo.ready"))?;
        }
        Ok(())
    })
    .unwrap();
    let recorder = pg::Recorder::prepare(s.client()).unwrap();
    let none = MoveFacts::default();
    let moved = s
        .write(|tx, q| recorder.move_task(tx, q, &task("t1"), &ph("failed.a"), &none))
        .unwrap();
    assert_eq!(moved.from.as_deref(), Some("todo.ready"));
    assert!(moved.occurrence.is_some());
    let left: Option<String> = s
        .client()
        .query_one("SELECT left_phase FROM hookq_tasks WHERE id = 't1'", &[])
        .unwrap()
        .get(0);
    assert_eq!(left.as_deref(), Some("todo.ready"), "the phase t1 left");
    let same = s
        .write(|tx, q| recorder.move_task(tx, q, &task("t1"), &ph("failed.a"), &none))
        .unwrap();
    assert_eq!(same.from.as_deref(), Some("failed.a"));
    assert!(
        same.occurrence.is_none(),
        "a move into its own phase records nothing"
    );
    let missing = s.write(|tx, q| recorder.move_task(tx, q, &task("nope"), &ph("failed.a"), &none));
    assert!(missing.unwrap_err().to_string().contains("nope"));

    let mut other = open(&db, "recorder");
    let q = other.queue().clone();
    let mut tx = other.client().transaction().unwrap();
    assert!(
        recorder
            .move_task(&mut tx, &q, &task("t2"), &ph("failed.b"), &none)
            .is_err()
    );
    drop(tx);
    let pending = super::pending(&mut s);
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(pending[0].1, "t1");
}

/// A move whose task another transaction moved and then rolled back goes on from the phase it
/// read: it waited for the row lock, and left the phase that stayed. Both ways of moving: the
/// schema's function, and a Recorder's statement.
#[test]
fn a_move_waiting_on_a_rolled_back_move_leaves_the_phase_that_stayed() {
    if crate::postgres::without_postgres(
        "a_move_waiting_on_a_rolled_back_move_leaves_the_phase_that_stayed",
    ) {
        return;
    }
    let (db, mut a) = fresh("rollback");
    for (t, prepared) in [("t1", false), ("t2", true)] {
        a.write(|tx, q| record::add_task(tx, q, &task(t), &plan("p"), &ph("todo.ready")))
            .unwrap();
        let q = a.queue().clone();
        let mut held = a.client().transaction().unwrap();
        record::move_task(
            &mut held,
            &q,
            &task(t),
            &ph("failed.a"),
            &MoveFacts::default(),
        )
        .unwrap();
        let app = format!("waiting-{t}");
        let waiting = std::thread::spawn({
            let (db, app) = (db.clone(), app.clone());
            move || {
                let target =
                    Target::parse(&cluster().url(&db, &format!("application_name={app}"))).unwrap();
                let mut c = PgStore::open(&target, super::queue("rollback")).unwrap();
                let recorder = pg::Recorder::prepare(c.client()).unwrap();
                let none = MoveFacts::default();
                c.write(|tx, q| {
                    if prepared {
                        recorder.move_task(tx, q, &task(t), &ph("failed.b"), &none)
                    } else {
                        record::move_task(tx, q, &task(t), &ph("failed.b"), &none)
                    }
                })
                .unwrap()
            }
        });
        eventually("the second move waits for the first's row lock", || {
            waits_for_a_lock(&db, &app)
        });
        held.rollback().unwrap();
        let moved = waiting.join().unwrap();
        assert_eq!(moved.from.as_deref(), Some("todo.ready"), "{t}");
        let pending: Vec<_> = super::pending(&mut a)
            .into_iter()
            .filter(|p| p.1 == t)
            .collect();
        assert_eq!(pending.len(), 1, "{pending:?}");
        assert_eq!(pending[0].3.as_deref(), Some("failed.b"));
    }
}

/// A host's recording reads the target branch's head when its `MoveFacts` name one and give no
/// sha, through `record::move_task` and a `Recorder` alike: the sha kept with the task; a given
/// sha wins; a branch that is not there records the move with a warning and no sha, even for a
/// task that had one; a move that records nothing keeps the sha it had.
#[test]
fn a_host_move_into_done_merged_reads_the_target_head() {
    if crate::postgres::without_postgres("a_host_move_into_done_merged_reads_the_target_head") {
        return;
    }
    let repo = tempfile::tempdir().unwrap();
    crate::support::git::make_repo(repo.path(), 1);
    let sha = crate::support::git::git(repo.path(), &["rev-parse", "main"])
        .trim()
        .to_owned();
    let (_db, mut s) = fresh("head");
    s.write(|tx, q| {
        for t in ["t1", "t2", "t3"] {
            record::add_task(tx, q, &task(t), &plan("p"), &ph("todo.ready"))?;
        }
        Ok(())
    })
    .unwrap();
    let recorder = pg::Recorder::prepare(s.client()).unwrap();
    let head = |branch: &str| MoveFacts {
        target_head: Some(hookq::queue::TargetHead {
            repo: repo.path().to_path_buf(),
            branch: branch.into(),
        }),
        ..MoveFacts::default()
    };
    let merged = ph("done.merged");
    let kept = |s: &mut PgStore, t: &str| {
        s.task(t)
            .unwrap()
            .unwrap()
            .merged_sha
            .map(|s| s.to_string())
    };
    let moved = s
        .write(|tx, q| record::move_task(tx, q, &task("t1"), &merged, &head("main")))
        .unwrap();
    assert_eq!(
        (moved.warning, kept(&mut s, "t1")),
        (None, Some(sha.clone()))
    );
    let moved = s
        .write(|tx, q| recorder.move_task(tx, q, &task("t2"), &merged, &head("main")))
        .unwrap();
    assert_eq!(
        (moved.warning, kept(&mut s, "t2")),
        (None, Some(sha.clone()))
    );
    let given = MoveFacts {
        merged_sha: Some("abcdef12".parse().unwrap()),
        ..head("main")
    };
    s.write(|tx, q| recorder.move_task(tx, q, &task("t3"), &merged, &given))
        .unwrap();
    assert_eq!(kept(&mut s, "t3").as_deref(), Some("abcdef12"));

    // Already merged: nothing recorded, nothing read, the sha stays.
    let same = s
        .write(|tx, q| recorder.move_task(tx, q, &task("t3"), &merged, &head("nope")))
        .unwrap();
    assert!(same.occurrence.is_none() && same.warning.is_none());
    assert_eq!(kept(&mut s, "t3").as_deref(), Some("abcdef12"));

    s.write(|tx, q| recorder.move_task(tx, q, &task("t1"), &ph("todo.ready"), &head("main")))
        .unwrap();
    let moved = s
        .write(|tx, q| recorder.move_task(tx, q, &task("t1"), &merged, &head("nope")))
        .unwrap();
    assert!(moved.occurrence.is_some(), "the move recorded");
    let warning = moved.warning.unwrap();
    assert!(warning.contains("nope"), "{warning}");
    assert_eq!(kept(&mut s, "t1"), None, "no stale sha");
}

/// Steps `watcher` until its queue was read `reads` more times: whether a step told of a change.
fn changed_within(watcher: &mut Watcher, reads: u64) -> bool {
    let count = watcher.reads();
    let until = count.load(std::sync::atomic::Ordering::Relaxed) + reads;
    let hang = std::time::Instant::now() + HANG;
    let pause = Stop::new();
    while count.load(std::sync::atomic::Ordering::Relaxed) < until {
        if watcher.step(&pause) {
            return true;
        }
        assert!(std::time::Instant::now() < hang, "the watcher read nothing");
    }
    false
}

/// A queue's mark names the transactions recording on that queue alone: a point whose id was
/// taken before a read and that commits after it, below an id still pending, moves it, while a
/// recording on another queue of the database, open or committed, leaves it as it is (with the
/// writers of every queue in it, each commit anywhere woke the watchers of every queue).
#[test]
fn a_queues_mark_moves_with_its_own_writers_only() {
    if crate::postgres::without_postgres("a_queues_mark_moves_with_its_own_writers_only") {
        return;
    }
    let (db, mut mine) = fresh("mine");
    let mut theirs = open(&db, "theirs");
    mine.write(|tx, q| {
        for t in ["early", "later"] {
            record::add_task(tx, q, &task(t), &plan("p"), &ph("todo.ready"))?;
        }
        Ok(())
    })
    .unwrap();
    theirs
        .write(|tx, q| record::add_task(tx, q, &task("other"), &plan("p"), &ph("todo.ready")))
        .unwrap();
    let (qm, qt) = (mine.queue().clone(), theirs.queue().clone());

    // A host's transaction takes its id first and stays open; a later point commits and stays
    // pending, since no hub drains.
    let mut host = open(&db, "mine");
    let mut late = host.client().transaction().unwrap();
    record::move_task(
        &mut late,
        &qm,
        &task("early"),
        &ph("failed.late"),
        &MoveFacts::default(),
    )
    .unwrap();
    mine.write(|tx, q| {
        record::move_task(
            tx,
            q,
            &task("later"),
            &ph("failed.one"),
            &MoveFacts::default(),
        )
    })
    .unwrap();
    let mut watcher = Watcher::postgres(mine.target().clone(), qm).unwrap();
    watcher.set_poll(Duration::from_millis(20));

    let mut other = open(&db, "theirs");
    let mut open_there = other.client().transaction().unwrap();
    record::move_task(
        &mut open_there,
        &qt,
        &task("other"),
        &ph("failed.x"),
        &MoveFacts::default(),
    )
    .unwrap();
    assert!(
        !changed_within(&mut watcher, 3),
        "another queue's open recording"
    );
    open_there.commit().unwrap();
    assert!(!changed_within(&mut watcher, 3), "another queue's commit");

    late.commit().unwrap();
    assert!(
        changed_within(&mut watcher, 3),
        "the point committed last, below one pending"
    );
}
