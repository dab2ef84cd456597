//! The queue on PostgreSQL against a real server, which this binary starts itself (see
//! `cluster.rs`): recording and its rules inside the host's transaction, queues kept apart in
//! one database, the runner lock, the errors a user meets, concurrent writers, TLS, and the web
//! view in a real browser.

#[cfg(feature = "ui")]
mod browser;
// The browser tests' scenarios, shared with the `ui` binary's browser tests; each binary uses a different
// part of them.
#[cfg(feature = "ui")]
#[allow(dead_code)]
#[path = "../browser/scenarios.rs"]
mod scenarios;
#[cfg(feature = "ui")]
#[allow(dead_code)]
#[path = "../browser/server.rs"]
mod server;

mod channels;
pub(crate) mod cli;
mod cluster;
mod conns;
mod fault;
mod fleet;
#[cfg(feature = "ui")]
mod live;
// The live view's test client, shared with the `ui` binary's live tests.
mod listener;
#[cfg(feature = "ui")]
#[allow(dead_code)]
#[path = "../ui_live/client.rs"]
mod live_client;
mod logs;
mod metrics;
mod pause;
mod prune;
mod relay;
mod takeover;
mod ui;
mod writers;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use crate::support;
use cluster::{PASSWORD, cluster};
use hookq::failure::{Failure, code};
use hookq::queue::RowError;
use hookq::queue::model::{Cleared, NewHistory, Outcome};
use hookq::queue::pg::{
    self, ConnectFailure, PgError, PgQueue, PgRunnerLock, PgStore, QueueName, Target, record, store,
};
use hookq::queue::{Mark, MoveFacts, Phase, PlanId, TaskId, Wait};

fn ph(s: &str) -> Phase {
    Phase::new(s).unwrap()
}
fn task(s: &str) -> TaskId {
    TaskId::new(s).unwrap()
}
fn plan(s: &str) -> PlanId {
    PlanId::new(s).unwrap()
}
fn queue(s: &str) -> QueueName {
    QueueName::new(s).unwrap()
}

/// Whether `test` cannot run here, as this machine has no PostgreSQL server binaries to start
/// the binary's cluster with: said in one `SKIPPED` line naming what is missing and how to
/// install it, and the test passes; under CI, which installs them, it fails. Every test of this
/// binary asks first.
pub fn without_postgres(test: &str) -> bool {
    match cluster::find_bin_dir() {
        Ok(_) => false,
        Err(why) => {
            support::skipped(test, &why);
            true
        }
    }
}

/// A fresh database and `name`'s queue in it.
fn fresh(name: &str) -> (String, PgStore) {
    let db = cluster().database();
    let s = open(&db, name);
    (db, s)
}

fn open(db: &str, name: &str) -> PgStore {
    let target = Target::parse(&cluster().url(db, "")).unwrap();
    PgStore::open(&target, queue(name)).unwrap()
}

/// `(id, task, point, state)` of every pending point, in order.
fn pending(s: &mut PgStore) -> Vec<(i64, String, String, Option<String>)> {
    s.pending(0, 1_000_000, None)
        .unwrap()
        .into_iter()
        .map(|r| (r.id, r.task.to_string(), r.point.to_string(), r.state))
        .collect()
}

#[test]
fn recording_follows_the_rules_and_a_rollback_leaves_nothing() {
    if crate::postgres::without_postgres(
        "recording_follows_the_rules_and_a_rollback_leaves_nothing",
    ) {
        return;
    }
    let (_db, mut s) = fresh("q");
    let none = MoveFacts::default();
    let (r1, r2) = s
        .write(|tx, q| {
            let t1 = task("t1");
            let a = record::add_task(tx, q, &t1, &plan("p"), &ph("todo.proposed"))?;
            assert_eq!(a.occurrence.unwrap().point.as_str(), "after_proposed");
            let ready = record::move_task(tx, q, &t1, &ph("todo.ready"), &none)?;
            assert!(ready.occurrence.is_none() && ready.changed());
            let r1 = record::move_task(tx, q, &t1, &ph("review.rework_pending"), &none)?;
            let same = record::move_task(tx, q, &t1, &ph("review.rework_pending"), &none)?;
            assert!(same.occurrence.is_none() && !same.changed());
            record::move_task(tx, q, &t1, &ph("todo.ready"), &none)?;
            let r2 = record::move_task(tx, q, &t1, &ph("review.rework_pending"), &none)?;
            Ok((r1.occurrence.unwrap().id, r2.occurrence.unwrap().id))
        })
        .unwrap();
    assert!(r2 > r1);
    let rows = pending(&mut s);
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert_eq!(
        rows.iter()
            .map(|r| (r.2.as_str(), r.3.as_deref()))
            .collect::<Vec<_>>(),
        [
            ("after_proposed", Some("todo.proposed")),
            ("after_rework", Some("review.rework_pending")),
            ("after_rework", Some("review.rework_pending")),
        ]
    );

    // A rolled-back transaction leaves nothing: no task, no point, no phase change.
    let q = s.queue().clone();
    {
        let mut tx = s.client().transaction().unwrap();
        record::add_task(&mut tx, &q, &task("t9"), &plan("p"), &ph("failed.x")).unwrap();
        let facts = MoveFacts {
            merged_sha: Some("abc123".parse().unwrap()),
            attempt: Some(hookq::queue::model::Attempt::new(2).unwrap()),
            target_head: None,
        };
        record::move_task(&mut tx, &q, &task("t1"), &ph("done.merged"), &facts).unwrap();
        tx.rollback().unwrap();
    }
    assert_eq!(pending(&mut s), rows);
    assert!(s.task("t9").unwrap().is_none());
    let t1 = s.task("t1").unwrap().unwrap();
    assert_eq!(
        (t1.phase.as_str(), t1.attempt.get()),
        ("review.rework_pending", 1)
    );

    // The facts of a move are kept; a bad one cannot be made.
    let facts = MoveFacts {
        merged_sha: Some("abc123".parse().unwrap()),
        attempt: Some(hookq::queue::model::Attempt::new(2).unwrap()),
        target_head: None,
    };
    s.write(|tx, q| record::move_task(tx, q, &task("t1"), &ph("done.merged"), &facts))
        .unwrap();
    let t1 = s.task("t1").unwrap().unwrap();
    assert_eq!(
        (t1.merged_sha.as_deref(), t1.attempt.get()),
        (Some("abc123"), 2)
    );
    let bad = "not a sha".parse::<hookq::queue::model::Sha>().unwrap_err();
    assert!(matches!(bad, RowError::Invalid(_)), "{bad}");
    let err = s
        .write(|tx, q| record::move_task(tx, q, &task("nope"), &ph("failed.x"), &none))
        .unwrap_err();
    assert!(matches!(err, PgError::Row(RowError::NoTask(_))), "{err}");
    assert_eq!(err.exit_code(), code::NOT_FOUND);
    let err = s
        .write(|tx, q| record::add_task(tx, q, &task("t1"), &plan("p"), &ph("todo.ready")))
        .unwrap_err();
    assert!(
        matches!(err, PgError::Row(RowError::TaskExists(_))),
        "{err}"
    );
    assert_eq!(pending(&mut s).len(), 4);

    // A plan cancel ends every unfinished task of the plan, one point per task, in one go.
    let cancelled = s
        .write(|tx, q| {
            for (t, phase) in [
                ("c", "todo.ready"),
                ("a", "review.awaiting_human"),
                ("b", "failed.before"),
                ("d", "done.merged"),
            ] {
                record::add_task(tx, q, &task(t), &plan("big"), &ph(phase))?;
            }
            record::add_task(tx, q, &task("e"), &plan("other"), &ph("todo.ready"))?;
            record::cancel_plan(tx, q, &plan("big"))
        })
        .unwrap();
    let ids: Vec<i64> = cancelled
        .iter()
        .map(|t| t.occurrence.as_ref().unwrap().id)
        .collect();
    assert_eq!(
        cancelled
            .iter()
            .map(|t| (t.task.as_str(), t.from.as_deref().unwrap()))
            .collect::<Vec<_>>(),
        [("a", "review.awaiting_human"), ("c", "todo.ready")]
    );
    assert_eq!(ids[1], ids[0] + 1);
    let rows = pending(&mut s);
    for (id, t) in ids.iter().zip(["a", "c"]) {
        let row = rows.iter().find(|r| r.0 == *id).unwrap();
        assert_eq!(
            (row.1.as_str(), row.2.as_str(), row.3.as_deref()),
            (t, "after_fail", Some("failed.cancelled"))
        );
    }
    for (t, phase) in [
        ("a", "failed.cancelled"),
        ("c", "failed.cancelled"),
        ("b", "failed.before"),
        ("d", "done.merged"),
        ("e", "todo.ready"),
    ] {
        assert_eq!(s.task(t).unwrap().unwrap().phase, phase);
    }
    // The phase each cancelled task left is kept beside its phase, as a move keeps it.
    let left: Vec<(String, Option<String>)> = s
        .client()
        .query(
            "SELECT id, left_phase FROM hookq_tasks WHERE plan = 'big' ORDER BY id",
            &[],
        )
        .unwrap()
        .into_iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(
        left,
        [
            ("a".to_owned(), Some("review.awaiting_human".to_owned())),
            ("b".to_owned(), None),
            ("c".to_owned(), Some("todo.ready".to_owned())),
            ("d".to_owned(), None),
        ]
    );
    // Cancelling it again finds nothing unfinished.
    assert!(
        s.write(|tx, q| record::cancel_plan(tx, q, &plan("big")))
            .unwrap()
            .is_empty()
    );
}

/// Recording notifies no one from inside the writer's transaction (so that writers' commits do
/// not take turns on PostgreSQL's notification lock); the hubs are woken after the commit, by
/// `PgStore::write` itself or by a host's `notify_hubs`, and a burst of calls from many threads
/// sends fewer notifications than calls, never none after the last commit.
#[test]
fn hubs_are_notified_after_the_commit_never_inside_it() {
    if crate::postgres::without_postgres("hubs_are_notified_after_the_commit_never_inside_it") {
        return;
    }
    let (db, mut s) = fresh("notified");
    let mut listener = open(&db, "notified");
    let q = s.queue().clone();
    listener
        .client()
        .batch_execute(&format!(
            "LISTEN \"{}\"; LISTEN \"{}\"",
            q.channel(),
            channels::MARKER
        ))
        .unwrap();
    // What reached the listener of all that `s` and others committed so far.
    let sent = |s: &mut PgStore, l: &mut PgStore| {
        channels::mark(s.client());
        channels::until_marker(l)
    };
    let notified = || vec![("hookq:notified".to_owned(), "notified".to_owned())];
    {
        let mut tx = s.client().transaction().unwrap();
        record::add_task(&mut tx, &q, &task("t"), &plan("p"), &ph("failed.x")).unwrap();
        tx.rollback().unwrap();
    }
    assert!(
        sent(&mut s, &mut listener).is_empty(),
        "a rollback notified"
    );
    // A host's own transaction records and commits: nothing is sent from inside it.
    {
        let mut tx = s.client().transaction().unwrap();
        record::add_task(&mut tx, &q, &task("t"), &plan("p"), &ph("failed.x")).unwrap();
        tx.commit().unwrap();
    }
    assert!(
        sent(&mut s, &mut listener).is_empty(),
        "the recording transaction notified"
    );
    // The host's one call after its commit: one notification.
    pg::notify_hubs(s.client(), &q).unwrap();
    assert_eq!(sent(&mut s, &mut listener), notified(), "one per call");
    // hookq's own transactions notify once they committed.
    s.write(|tx, q| {
        record::move_task(tx, q, &task("t"), &ph("failed.y"), &MoveFacts::default())?;
        record::add_task(tx, q, &task("u"), &plan("p"), &ph("failed.y"))
    })
    .unwrap();
    assert_eq!(
        sent(&mut s, &mut listener),
        notified(),
        "a commit of write notifies, once per transaction"
    );
    // Eight threads of one process, each notifying after every one of 50 commits of its own.
    const THREADS: usize = 8;
    const COMMITS: usize = 50;
    let target = Target::parse(&cluster().url(&db, "")).unwrap();
    std::thread::scope(|scope| {
        for _ in 0..THREADS {
            let (target, q) = (&target, &q);
            scope.spawn(move || {
                let mut c = pg::connect(target, "burst").unwrap();
                for _ in 0..COMMITS {
                    c.batch_execute("BEGIN; SELECT 1; COMMIT").unwrap();
                    pg::notify_hubs(&mut c, q).unwrap();
                }
            });
        }
    });
    let sent = sent(&mut s, &mut listener).len();
    assert!(
        (1..THREADS * COMMITS).contains(&sent),
        "{sent} notifications for {} calls",
        THREADS * COMMITS
    );
}

#[test]
fn queues_in_one_database_never_see_each_other() {
    if crate::postgres::without_postgres("queues_in_one_database_never_see_each_other") {
        return;
    }
    let (db, mut a) = fresh("repo-a");
    let mut b = open(&db, "github.com/org/repo-b");
    for (s, phase) in [(&mut a, "failed.a"), (&mut b, "review.awaiting_human")] {
        s.write(|tx, q| {
            record::add_task(tx, q, &task("t1"), &plan("p"), &ph("todo.ready"))?;
            record::add_task(tx, q, &task("t2"), &plan("p"), &ph("todo.ready"))?;
            record::move_task(tx, q, &task("t1"), &ph(phase), &MoveFacts::default())
        })
        .unwrap();
    }
    // Each queue sees its own points only.
    let (pa, pb) = (pending(&mut a), pending(&mut b));
    assert_eq!(
        pa.iter().map(|p| (&p.1, &p.2, &p.3)).collect::<Vec<_>>(),
        [(
            &"t1".to_owned(),
            &"after_fail".to_owned(),
            &Some("failed.a".to_owned())
        )]
    );
    assert_eq!(
        pb.iter().map(|p| (&p.1, &p.2, &p.3)).collect::<Vec<_>>(),
        [(
            &"t1".to_owned(),
            &"after_awaiting_human".to_owned(),
            &Some("review.awaiting_human".to_owned())
        )]
    );
    let b_point = pb[0].0;
    // A plan cancel in one leaves the other's tasks of the same plan alone.
    a.write(|tx, q| record::cancel_plan(tx, q, &plan("p")))
        .unwrap();
    let tasks_b = b.tasks(Some("p")).unwrap();
    assert_eq!(
        tasks_b.iter().map(|t| t.phase.as_str()).collect::<Vec<_>>(),
        ["review.awaiting_human", "todo.ready"]
    );
    assert_eq!(pending(&mut b), pb);
    assert_eq!(a.stats().unwrap().pending, 2);
    assert_eq!(b.stats().unwrap().pending, 1);
    // One runner per queue: holding a's lock does not keep b's.
    let _la = a.lock(Wait::No).unwrap().expect("a's lock");
    let mut lb = b.lock(Wait::No).unwrap().expect("b's lock is its own");
    // Clearing in b never touches a's points, nor does a clear of b's id in a.
    assert!(a.pending_occurrence(b_point).unwrap().is_none());
    let entry = b.pending_occurrence(b_point).unwrap().unwrap();
    store::clear_all(
        &mut lb,
        &[Cleared {
            entry,
            rows: vec![NewHistory::bare(Outcome::Empty)],
        }],
    )
    .unwrap();
    assert!(pending(&mut b).is_empty());
    assert_eq!(pending(&mut a).len(), 2);
    assert!(a.history(None, None, 10).unwrap().is_empty());
    assert_eq!(b.history(None, None, 10).unwrap().len(), 1);
}

/// Waits for `queue`'s lock, failing after [`support::HANG`].
fn lock_soon(s: &PgStore) -> PgRunnerLock {
    s.lock(Wait::For(support::HANG))
        .unwrap()
        .expect("the lock was freed")
}

#[test]
fn the_runner_lock_is_one_per_queue_and_goes_with_its_connection() {
    if crate::postgres::without_postgres(
        "the_runner_lock_is_one_per_queue_and_goes_with_its_connection",
    ) {
        return;
    }
    let (db, mut s) = fresh("locked");
    let q = s.queue().clone();
    assert!(pg::holder(s.client(), &q).unwrap().is_none());
    let first = s.lock(Wait::No).unwrap().expect("free");
    assert!(
        s.lock(Wait::No).unwrap().is_none(),
        "a second connection took it"
    );
    let t0 = Instant::now();
    assert!(
        s.lock(Wait::For(Duration::from_millis(300)))
            .unwrap()
            .is_none()
    );
    assert!(t0.elapsed() >= Duration::from_millis(300));

    // The holder is named: host, pid, since when, and its backend.
    let h = pg::holder(s.client(), &q).unwrap().expect("a holder");
    assert_eq!(h.pid, Some(std::process::id()));
    assert_eq!(h.host.as_deref(), Some(pg::lock::host_name().as_str()));
    assert!(h.since.is_some());
    assert!(
        h.application_name
            .as_deref()
            .unwrap()
            .starts_with("hookq runner pid"),
        "{h:?}"
    );
    assert!(
        h.to_string()
            .starts_with(&format!("pid {} on ", std::process::id()))
    );
    // The query docs/postgres.md gives for reading the holder by hand names it too.
    let by_hand: (String, i64, i32) = {
        let doc = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/postgres.md"),
        )
        .unwrap();
        let start = doc.find("SELECT r.host").expect("the holder query");
        let sql = doc[start..][..doc[start..].find("```").unwrap()]
            .replace("'github.com/acme/app'", "$1");
        let row = s.client().query_one(&sql, &[&q.as_str()]).unwrap();
        (row.get("host"), row.get("pid"), row.get("backend"))
    };
    assert_eq!(
        by_hand,
        (
            pg::lock::host_name(),
            i64::from(std::process::id()),
            h.backend_pid
        )
    );

    // Closed with its connection.
    drop(first);
    let mut second = lock_soon(&s);
    let h2 = pg::holder(s.client(), &q).unwrap().unwrap();
    assert_ne!(h2.backend_pid, h.backend_pid);
    second.check().unwrap();

    // Terminated by the server: the lock goes, the next runner takes over, and the old
    // holder's writes fail instead of clearing anything.
    s.write(|tx, q| record::add_task(tx, q, &task("t"), &plan("p"), &ph("failed.x")))
        .unwrap();
    let entry = s.pending(0, 1, None).unwrap().remove(0);
    cluster()
        .admin(&db)
        .execute("SELECT pg_terminate_backend($1)", &[&h2.backend_pid])
        .unwrap();
    let mut third = lock_soon(&s);
    let err = second.check().unwrap_err();
    assert!(matches!(err, PgError::LockLost { .. }), "{err}");
    assert!(err.hint().is_some());
    let cleared = Cleared {
        entry: entry.clone(),
        rows: vec![NewHistory::bare(Outcome::Ok)],
    };
    assert!(store::clear_all(&mut second, std::slice::from_ref(&cleared)).is_err());
    assert_eq!(pending(&mut s).len(), 1, "the lost holder cleared nothing");
    assert_eq!(
        pg::holder(s.client(), &q).unwrap().unwrap().backend_pid,
        third
            .client()
            .query_one("SELECT pg_backend_pid()", &[])
            .unwrap()
            .get::<_, i32>(0)
    );
    store::clear_all(&mut third, &[cleared]).unwrap();
    assert!(pending(&mut s).is_empty());

    // Released: free at once, and no one is named.
    third.release().unwrap();
    assert!(pg::holder(s.client(), &q).unwrap().is_none());
    let waited = Instant::now();
    let _fourth = s.lock(Wait::Forever).unwrap().unwrap();
    // A free lock is taken at once; the bound only catches a hang.
    assert!(waited.elapsed() < crate::support::HANG);
}

#[test]
fn a_waiter_keeps_one_connection_and_gives_up_when_told() {
    if crate::postgres::without_postgres("a_waiter_keeps_one_connection_and_gives_up_when_told") {
        return;
    }
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let (_db, mut s) = fresh("waiter");
    let holder = s.lock(Wait::No).unwrap().expect("free");
    let waiting = Arc::new(AtomicBool::new(true));
    let waiter = {
        let s = open(&_db, "waiter");
        let waiting = Arc::clone(&waiting);
        std::thread::spawn(move || {
            s.lock_while(Wait::Forever, &|| waiting.load(Ordering::SeqCst))
                .unwrap()
        })
    };
    // Watched from the first sighting of both for three seconds, the runner connections of
    // this process to this test's database are the holder's and the waiter's, the same two
    // throughout: the waiter does not connect again while it waits.
    let mut backends = std::collections::BTreeSet::new();
    let mut look = || {
        for row in s
            .client()
            .query(
                "SELECT pid FROM pg_stat_activity
                 WHERE application_name LIKE $1 AND datname = current_database()",
                &[&format!("hookq runner pid {} %", std::process::id())],
            )
            .unwrap()
        {
            backends.insert(row.get::<_, i32>(0));
        }
        backends.len()
    };
    let both = crate::support::within(crate::support::HANG, Duration::from_millis(100), || {
        (look() >= 2).then_some(())
    });
    if both.is_some() {
        // A connection made again has no event to wait for: the three seconds are the window
        // in which one would show, cut short if a third does.
        crate::support::within(Duration::from_secs(3), Duration::from_millis(100), || {
            (look() > 2).then_some(())
        });
    }
    assert!(both.is_some(), "runner connections seen: {backends:?}");
    assert_eq!(backends.len(), 2, "runner connections seen: {backends:?}");
    // Told to stop, it gives up without the lock.
    waiting.store(false, Ordering::SeqCst);
    assert!(
        waiter.join().unwrap().is_none(),
        "the waiter took a held lock"
    );
    // Waiting again, it takes the lock once the holder releases it: released once the server
    // shows the new waiter's connection having tried for it.
    let runners = |s: &mut PgStore| -> Vec<(i32, String)> {
        s.client()
            .query(
                "SELECT pid, query FROM pg_stat_activity
                 WHERE application_name LIKE $1 AND datname = current_database()",
                &[&format!("hookq runner pid {} %", std::process::id())],
            )
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect()
    };
    support::eventually("the first waiter's connection to close", || {
        runners(&mut s).len() == 1
    });
    let before: HashSet<i32> = runners(&mut s).into_iter().map(|(pid, _)| pid).collect();
    let again = {
        let s = open(&_db, "waiter");
        std::thread::spawn(move || s.lock_while(Wait::Forever, &|| true).unwrap())
    };
    support::eventually("the second waiter to try for the lock", || {
        runners(&mut s)
            .iter()
            .any(|(pid, query)| !before.contains(pid) && query.contains("pg_try_advisory_lock"))
    });
    holder.release().unwrap();
    assert!(
        again.join().unwrap().is_some(),
        "the waiter never took the freed lock"
    );
}

fn connect_error(text: &str) -> PgError {
    let target = Target::parse(text).unwrap();
    PgStore::open(&target, queue("q")).unwrap_err()
}

#[test]
fn a_wrong_password_is_refused_in_one_line_without_the_password() {
    if crate::postgres::without_postgres(
        "a_wrong_password_is_refused_in_one_line_without_the_password",
    ) {
        return;
    }
    let c = cluster();
    let wrong = "wrong-Pa55word";
    for text in [
        format!(
            "postgres://hookq:{wrong}@127.0.0.1:{}/postgres?sslmode=disable",
            c.port
        ),
        format!(
            "host=127.0.0.1 port={} user=hookq password='{wrong}' dbname=postgres sslmode=require",
            c.port
        ),
    ] {
        let err = connect_error(&text);
        let shown = format!("{err}\n{:?}\n{}", err, err.hint().unwrap());
        assert!(
            matches!(
                err,
                PgError::Connect {
                    kind: ConnectFailure::Auth,
                    ..
                }
            ),
            "{shown}"
        );
        assert!(shown.contains("password authentication failed"), "{shown}");
        assert!(shown.contains("***"), "{shown}");
        assert!(!shown.contains(wrong), "{shown}");
        assert!(!err.to_string().contains('\n'), "one line: {err}");
        assert_eq!(err.exit_code(), code::DATABASE);
    }
    // The right one works, and no message ever needed it.
    let target = Target::parse(&c.url("postgres", "")).unwrap();
    assert!(!format!("{target} {target:?}").contains(PASSWORD));
}

#[test]
fn an_unknown_host_or_a_closed_port_is_refused_with_a_hint() {
    if crate::postgres::without_postgres("an_unknown_host_or_a_closed_port_is_refused_with_a_hint")
    {
        return;
    }
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    for text in [
        "postgres://hookq:s3cret@no-such-host.invalid/db".to_owned(),
        format!("host=127.0.0.1 port={closed} user=hookq password=s3cret sslmode=disable"),
    ] {
        let err = connect_error(&text);
        assert!(
            matches!(
                err,
                PgError::Connect {
                    kind: ConnectFailure::Unreachable,
                    ..
                }
            ),
            "{text}: {err:?}"
        );
        let shown = format!("{err} {}", err.hint().unwrap());
        assert!(shown.contains("check the host and port"), "{shown}");
        assert!(!shown.contains("s3cret"), "{shown}");
    }
}

#[test]
fn a_database_without_the_schema_or_with_a_newer_one_is_refused() {
    if crate::postgres::without_postgres(
        "a_database_without_the_schema_or_with_a_newer_one_is_refused",
    ) {
        return;
    }
    let c = cluster();
    let db = c.database();
    let target = Target::parse(&c.url(&db, "")).unwrap();
    let err = PgStore::open_existing(&target, queue("q")).unwrap_err();
    assert!(matches!(err, PgError::NoSchema { .. }), "{err}");
    assert!(err.to_string().contains("no hookq queue schema"), "{err}");
    assert!(err.hint().is_some());
    // A host recording into it without opening the queue first gets the same answer.
    let mut client = pg::connect(&target, "host").unwrap();
    let mut tx = client.transaction().unwrap();
    let err = record::add_task(
        &mut tx,
        &queue("q"),
        &task("t"),
        &plan("p"),
        &ph("failed.x"),
    )
    .unwrap_err();
    assert!(
        matches!(&err, PgError::NoSchema { table } if table == "hookq_tasks"),
        "{err}"
    );
    drop(tx);

    // Opened once, it has the schema; then a newer hookq migrates it.
    drop(PgStore::open(&target, queue("q")).unwrap());
    PgStore::open_existing(&target, queue("q")).unwrap();
    client
        .execute(
            &format!(
                "INSERT INTO {} (version, name, applied_on, checksum) VALUES (999, 'future', '', '0')",
                pg::schema::HISTORY_TABLE
            ),
            &[],
        )
        .unwrap();
    for err in [
        PgStore::open(&target, queue("q")).unwrap_err(),
        PgStore::open_existing(&target, queue("q")).unwrap_err(),
    ] {
        assert!(
            matches!(err, PgError::NewerSchema { found: 999, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("upgrade hookq"), "{err}");
        assert_eq!(err.exit_code(), code::DATABASE);
    }
}

#[test]
fn opening_one_new_database_from_many_connections_at_once_migrates_it_once() {
    if crate::postgres::without_postgres(
        "opening_one_new_database_from_many_connections_at_once_migrates_it_once",
    ) {
        return;
    }
    let c = cluster();
    let db = c.database();
    let target = Target::parse(&c.url(&db, "")).unwrap();
    let barrier = std::sync::Barrier::new(6);
    std::thread::scope(|scope| {
        let opened: Vec<_> = (0..6)
            .map(|i| {
                let (target, barrier) = (&target, &barrier);
                scope.spawn(move || {
                    barrier.wait();
                    PgStore::open(target, queue(&format!("q{}", i % 2))).map(drop)
                })
            })
            .collect();
        for o in opened {
            o.join().unwrap().unwrap();
        }
    });
    let mut client = pg::connect(&target, "check").unwrap();
    assert_eq!(
        pg::schema::applied_version(&mut client).unwrap(),
        Some(pg::schema::schema_version())
    );
}

/// Eight writer processes record 2,000 transitions each at once, one transaction each, while a
/// hub drains: every point is recorded once, each where its writer saw it, one task's with ids
/// in the order they committed; every one runs, and none is left pending.
#[test]
fn eight_writers_each_recording_two_thousand_transitions_while_a_hub_drains() {
    if crate::postgres::without_postgres(
        "eight_writers_each_recording_two_thousand_transitions_while_a_hub_drains",
    ) {
        return;
    }
    use hookq::exec::Stop;
    use hookq::queue::Drainer;
    use hookq::queue::hub::{self, HubOptions};
    const WRITERS: usize = 8;
    const TRANSITIONS: usize = 2_000;
    const TASKS: usize = 16;
    let (db, mut s) = fresh("busy");
    s.write(|tx, q| {
        for w in 0..WRITERS {
            for t in 0..TASKS {
                record::add_task(
                    tx,
                    q,
                    &task(&format!("w{w}-t{t}")),
                    &plan("p"),
                    &ph("todo.ready"),
                )?;
            }
        }
        Ok(())
    })
    .unwrap();
    let q = s.queue().clone();
    // A hub drains the queue while they write, running each point's command.
    let (_hooked, ws) = hooked_workspace("after_fail = ['true']");
    let stop = std::sync::Arc::new(Stop::new());
    let lock = s.lock(Wait::No).unwrap().expect("the queue's runner lock");
    let mut drained = PgQueue::new(open(&db, "busy"), lock).unwrap();
    let mut watcher =
        hookq::queue::watch::Watcher::postgres(s.target().clone(), q.clone()).unwrap();
    let hub = std::thread::spawn({
        let (stop, ws) = (std::sync::Arc::clone(&stop), ws.clone());
        move || {
            let mut drainer = Drainer::new(ws.clone(), &stop).jobs(2);
            let mut errors = Vec::new();
            hub::run(
                &ws,
                &mut drained,
                &mut watcher,
                &mut drainer,
                &stop,
                HubOptions::default(),
                &mut |e| errors.push(e.to_string()),
            )
            .unwrap();
            assert!(errors.is_empty(), "{errors:?}");
            drained.release().unwrap();
        }
    });
    // Each writer is a process of its own: this test binary again, running `writer_process`
    // below, which connects, waits for the go on its stdin, records and writes what it
    // recorded to a file.
    let url = cluster().url(&db, "");
    let dir = tempfile::tempdir().unwrap();
    let mut writers: Vec<std::process::Child> = (0..WRITERS)
        .map(|w| {
            std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "postgres::writer_process",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(
                    WRITER_ENV,
                    format!(
                        "{url}\t{w}\t{TASKS}\t{TRANSITIONS}\t{}",
                        dir.path().join(format!("w{w}")).display()
                    ),
                )
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for w in &mut writers {
        use std::io::Write as _;
        w.stdin.take().unwrap().write_all(b"go\n").unwrap();
    }
    let mut recorded: Vec<(i64, String, String)> = Vec::new();
    for (n, w) in writers.into_iter().enumerate() {
        let out = w.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "writer {n}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let lines = std::fs::read_to_string(dir.path().join(format!("w{n}"))).unwrap();
        recorded.extend(lines.lines().map(|l| {
            let mut f = l.split('\t');
            let id = f.next().unwrap().parse().unwrap();
            (
                id,
                f.next().unwrap().to_owned(),
                f.next().unwrap().to_owned(),
            )
        }));
    }
    let total = WRITERS * TRANSITIONS;
    assert_eq!(recorded.len(), total);
    let ids: HashSet<i64> = recorded.iter().map(|r| r.0).collect();
    assert_eq!(ids.len(), total, "no id twice");
    // One task's points have increasing ids in the order its writer committed them.
    let mut last: HashMap<&str, i64> = HashMap::new();
    for (id, t, _) in &recorded {
        let before = last.insert(t, *id);
        assert!(before.is_none_or(|b| b < *id), "{t}: {before:?} then {id}");
    }
    // The hub runs them all: a generous bound that only catches a hang.
    let drained = crate::support::within(
        HUB_DRAINS_SIXTEEN_THOUSAND,
        Duration::from_millis(100),
        || (s.stats().unwrap().pending == 0).then_some(()),
    );
    assert!(drained.is_some(), "points left pending");
    stop.request();
    hub.join().unwrap();
    // Each point once in history, run with the state its writer moved its task into.
    let history = s.history(None, None, total * 2).unwrap();
    let by_id: BTreeMap<i64, (String, String, String)> = history
        .into_iter()
        .map(|h| {
            (
                h.occurrence,
                (h.task.to_string(), h.state, h.outcome.to_string()),
            )
        })
        .collect();
    assert_eq!(by_id.len(), total, "every point cleared once");
    for (id, t, to) in &recorded {
        assert_eq!(
            by_id[id],
            (t.clone(), to.clone(), "ok".to_owned()),
            "occurrence {id}"
        );
    }
    assert!(pending(&mut s).is_empty());
    // The points' state rows went with them.
    let states: i64 = s
        .client()
        .query_one(
            "SELECT COUNT(*) FROM hookq_pending_hook_states WHERE queue = $1",
            &[&q.as_str()],
        )
        .unwrap()
        .get(0);
    assert_eq!(states, 0, "state rows left behind their points");
}

/// How long the hub of
/// `eight_writers_each_recording_two_thousand_transitions_while_a_hub_drains` may take to run
/// its sixteen thousand points before the test calls it a hang. Longer than [`support::HANG`],
/// which bounds one thing a test waits for: this is a whole stress run's work, on a machine
/// shared with other builds. Nothing is asserted about how fast it goes.
const HUB_DRAINS_SIXTEEN_THOUSAND: Duration = Duration::from_secs(600);

/// Names what a writer process of
/// `eight_writers_each_recording_two_thousand_transitions_while_a_hub_drains` does:
/// `<url>\t<writer>\t<tasks>\t<transitions>\t<out file>`.
const WRITER_ENV: &str = "HOOKQ_TEST_PG_WRITER";

/// One writer process of the four-writers test, started by it with [`WRITER_ENV`] set; run
/// without it (as every test run does), it does nothing.
#[test]
fn writer_process() {
    if crate::postgres::without_postgres("writer_process") {
        return;
    }
    let Ok(spec) = std::env::var(WRITER_ENV) else {
        return;
    };
    let f: Vec<&str> = spec.split('\t').collect();
    let (url, w, tasks, transitions, out) = (
        f[0],
        f[1],
        f[2].parse::<usize>().unwrap(),
        f[3].parse::<usize>().unwrap(),
        f[4],
    );
    let mut s = PgStore::open(&Target::parse(url).unwrap(), queue("busy")).unwrap();
    let mut go = String::new();
    std::io::stdin().read_line(&mut go).unwrap();
    let mut mine = String::new();
    for n in 0..transitions {
        let t = format!("w{w}-t{}", n % tasks);
        // Every move changes the phase, so every one records a point.
        let to = if (n / tasks).is_multiple_of(2) {
            "failed.a"
        } else {
            "failed.b"
        };
        let moved = s
            .write(|tx, q| record::move_task(tx, q, &task(&t), &ph(to), &MoveFacts::default()))
            .unwrap();
        mine.push_str(&format!("{}\t{t}\t{to}\n", moved.occurrence.unwrap().id));
    }
    std::fs::write(out, mine).unwrap();
}

/// Whether `s`'s connection is encrypted, as the server sees it.
fn encrypted(s: &mut PgStore) -> bool {
    s.client()
        .query_one(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .unwrap()
        .get(0)
}

#[test]
fn tls_require_and_verify_full_against_the_test_server() {
    if crate::postgres::without_postgres("tls_require_and_verify_full_against_the_test_server") {
        return;
    }
    let c = cluster();
    let db = c.database();
    let ca = c.ca.display().to_string();
    let other = c.other_ca.display().to_string();
    let open_with = |text: &str| Target::parse(text).and_then(|t| PgStore::open(&t, queue("tls")));
    let url = |params: &str| c.url(&db, params);
    let kv = |host: &str, params: &str| {
        format!(
            "host={host} port={} user=hookq password={PASSWORD} dbname={db} {params}",
            c.port
        )
    };
    for text in [
        url("sslmode=require"),
        url(&format!("sslmode=verify-full&sslrootcert={ca}")),
        url(&format!("sslmode=verify-ca&sslrootcert={ca}")),
        kv(
            "localhost",
            &format!("sslmode=verify-full sslrootcert='{ca}'"),
        ),
        kv("127.0.0.1", "sslmode=prefer"),
    ] {
        let mut s = open_with(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert!(encrypted(&mut s), "{text}");
    }
    let mut plain = open_with(&url("sslmode=disable")).unwrap();
    assert!(!encrypted(&mut plain));

    // A certificate its CA did not sign is refused by the verifying modes.
    for text in [
        url(&format!("sslmode=verify-full&sslrootcert={other}")),
        url(&format!("sslmode=verify-ca&sslrootcert={other}")),
        url(&format!("sslmode=require&sslrootcert={other}")),
    ] {
        let err = open_with(&text).unwrap_err();
        assert!(
            matches!(
                err,
                PgError::Connect {
                    kind: ConnectFailure::Tls,
                    ..
                }
            ),
            "{text}: {err:?}"
        );
        let shown = format!("{err} {:?} {}", err, err.hint().unwrap());
        assert!(!shown.contains(PASSWORD), "{shown}");
        assert!(shown.contains("sslrootcert"), "{shown}");
    }
    // A CA file that is missing is named.
    let err = open_with(&url("sslmode=verify-full&sslrootcert=/nonexistent/ca.pem")).unwrap_err();
    assert!(err.to_string().contains("/nonexistent/ca.pem"), "{err}");
}

#[test]
fn the_drains_reads_and_writes() {
    if crate::postgres::without_postgres("the_drains_reads_and_writes") {
        return;
    }
    let (_db, mut s) = fresh("drained");
    s.write(|tx, q| {
        record::add_task(tx, q, &task("t1"), &plan("p"), &ph("failed.x"))?;
        record::add_task(tx, q, &task("t2"), &plan("p"), &ph("review.awaiting_human"))?;
        record::move_task(
            tx,
            q,
            &task("t1"),
            &ph("review.rework_pending"),
            &MoveFacts::default(),
        )
    })
    .unwrap();
    // The newest occurrence the queue knows, pending or in its history: what a recording raises.
    let newest = |s: &mut PgStore| {
        let pending = s.pending(0, 100, None).unwrap().into_iter().map(|r| r.id);
        let history = s.history(None, None, 100).unwrap().into_iter();
        pending.chain(history.map(|r| r.occurrence)).max()
    };
    let seen = newest(&mut s);
    // The next batch, in order, from a cursor; one task's points.
    let first = s.pending(0, 2, None).unwrap();
    assert_eq!(first.iter().map(|r| r.id).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(first[0].plan.as_deref(), Some("p"));
    assert_eq!(first[0].attempt.map(|a| a.get()), Some(1));
    let rest = s.pending(2, 10, None).unwrap();
    assert_eq!(rest.iter().map(|r| r.id).collect::<Vec<_>>(), [3]);
    let t1 = s.pending(0, 10, Some("t1")).unwrap();
    assert_eq!(t1.iter().map(|r| r.id).collect::<Vec<_>>(), [1, 3]);

    let mut lock = s.lock(Wait::No).unwrap().unwrap();
    // Starts are counted, each later than the last.
    assert_eq!(
        store::mark_started(&mut lock, &first[0]).unwrap(),
        Mark::Started
    );
    assert_eq!(
        store::mark_started(&mut lock, &first[0]).unwrap(),
        Mark::Started
    );
    let e1 = s.pending_occurrence(1).unwrap().unwrap();
    assert_eq!(e1.passes, 2);
    assert!(e1.last_started_ms.is_some());
    assert_eq!(s.stats().unwrap().interrupted, 1);

    // Cleared with a history row per command.
    let ran = |i: usize, outcome| NewHistory {
        command_index: Some(i),
        command: Some(format!("echo {i}")),
        outcome,
        exit_code: Some(if outcome == Outcome::Ok { 0 } else { 3 }),
        signal: None,
        started_ms: Some(1),
        duration_ms: Some(2),
        log_path: Some(format!("after_fail-0{i}.log")),
    };
    store::clear_all(
        &mut lock,
        &[Cleared {
            entry: e1.clone(),
            rows: vec![ran(1, Outcome::Ok), ran(2, Outcome::Failed)],
        }],
    )
    .unwrap();
    let h = s.history(Some("t1"), None, 10).unwrap();
    assert_eq!(
        h.iter()
            .map(|r| (r.occurrence, r.command_index, r.outcome.as_str(), r.passes))
            .collect::<Vec<_>>(),
        [(1, Some(2), "failed", 2), (1, Some(1), "ok", 2)]
    );
    assert_eq!(h[0].state, "failed.x");
    assert_eq!(h[0].exit_code, Some(3));
    assert_eq!(s.history_row(h[1].id).unwrap().unwrap(), h[1]);
    assert_eq!(s.history(None, Some(1), 10).unwrap().len(), 2);

    // Parked, dropped.
    store::park(&mut lock, &first[1..2]).unwrap();
    let parked = s.history(Some("t2"), None, 10).unwrap();
    assert_eq!(parked[0].outcome, "abandoned");
    let dropped = s.drop_occurrence(3).unwrap();
    assert_eq!(dropped.task, "t1");
    let err = s.drop_occurrence(3).unwrap_err();
    assert!(
        matches!(err, PgError::Row(RowError::NoOccurrence(3))),
        "{err}"
    );
    assert_eq!(
        store::mark_started(&mut lock, &dropped).unwrap(),
        Mark::Gone
    );
    assert!(pending(&mut s).is_empty());
    assert_eq!(newest(&mut s), seen, "clears record nothing");

    // Re-queued as a new occurrence, a point recorded.
    let again = s.write(|tx, q| record::retry(tx, q, parked[0].id)).unwrap();
    assert_eq!(again.id, 4);
    assert_eq!(newest(&mut s), Some(4));
    let stats = s.stats().unwrap();
    assert_eq!((stats.pending, stats.tasks, stats.interrupted), (1, 2, 0));
    assert_eq!(
        stats.history_by_outcome,
        [
            ("abandoned".to_owned(), 1),
            ("dropped".to_owned(), 1),
            ("failed".to_owned(), 1),
            ("ok".to_owned(), 1)
        ]
    );

    // Pruned oldest first, at most the limit.
    let later = chrono::Utc::now().timestamp_millis() + 1000;
    assert_eq!(
        store::prune_history(&mut lock, later, 3, &mut |_| {}).unwrap(),
        3
    );
    assert_eq!(
        store::prune_history(&mut lock, later, 3, &mut |_| {}).unwrap(),
        1
    );
    assert!(s.history(None, None, 10).unwrap().is_empty());
}

/// A workspace in a fresh temporary directory whose `config.toml` has this `[hooks]` body.
fn hooked_workspace(hooks: &str) -> (tempfile::TempDir, hookq::queue::Workspace) {
    let dir = tempfile::tempdir().unwrap();
    let ws = hookq::queue::Workspace::at(dir.path());
    std::fs::create_dir_all(ws.state_dir()).unwrap();
    std::fs::write(ws.config_path(), format!("[hooks]\n{hooks}")).unwrap();
    (dir, ws)
}

/// The lines the hooks appended to `ran` in the workspace.
fn ran(dir: &tempfile::TempDir) -> Vec<String> {
    std::fs::read_to_string(dir.path().join("ran"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_drainer_drains_a_postgres_queue_in_order_per_task() {
    if crate::postgres::without_postgres("the_drainer_drains_a_postgres_queue_in_order_per_task") {
        return;
    }
    use hookq::exec::Stop;
    use hookq::queue::{Drainer, QueueStore, RunnerLock};
    let (dir, ws) = hooked_workspace(
        r#"after_fail = ['echo "fail $ARC_TASK $ARC_STATE" >> ran', 'true']
after_rework = ['echo "rework $ARC_TASK" >> ran']
after_proposed = ['echo "proposed $ARC_TASK" >> ran', 'exit 3']
"#,
    );
    let (db, mut s) = fresh("hooked");
    let none = MoveFacts::default();
    s.write(|tx, q| {
        record::add_task(tx, q, &task("t1"), &plan("p"), &ph("failed.x"))?;
        record::add_task(tx, q, &task("t2"), &plan("p"), &ph("todo.proposed"))?;
        record::move_task(tx, q, &task("t1"), &ph("review.rework_pending"), &none)?;
        record::move_task(tx, q, &task("t2"), &ph("review.rework_pending"), &none)?;
        record::move_task(tx, q, &task("t1"), &ph("failed.y"), &none)
    })
    .unwrap();
    let lock = s.lock(Wait::No).unwrap().unwrap();
    let mut other = open(&db, "hooked");
    assert!(
        other.lock(Wait::No).unwrap().is_none(),
        "the queue's runner lock is held while its PgQueue lives"
    );
    let mut pq = PgQueue::new(s, lock).unwrap();
    let stop = Stop::new();
    let runner = RunnerLock::acquire(&ws.lock_path(), Wait::No, &|| true)
        .unwrap()
        .unwrap();
    let mut warnings = Vec::new();
    let seen = pq.change_mark().unwrap();
    let report = Drainer::with_warnings(ws.clone(), &stop, |w| warnings.push(w.to_owned()))
        .jobs(2)
        .drain(&mut pq, &runner)
        .unwrap();
    drop(runner);
    // What the hub compares after a pass does not see the pass's own starts and clears.
    assert_eq!(
        pq.change_mark().unwrap(),
        seen,
        "a pass's starts and clears"
    );
    assert_eq!(
        (
            report.cleared,
            report.commands,
            report.failed,
            report.parked
        ),
        (5, 8, 1, 0),
        "{warnings:?}"
    );
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("after_proposed-02 for task t2"),
        "{warnings:?}"
    );

    // Each task's points ran in the order they were recorded.
    let lines = ran(&dir);
    let of = |t: &str| -> Vec<&str> {
        lines
            .iter()
            .filter(|l| l.split(' ').nth(1) == Some(t))
            .map(String::as_str)
            .collect()
    };
    assert_eq!(
        of("t1"),
        ["fail t1 failed.x", "rework t1", "fail t1 failed.y"]
    );
    assert_eq!(of("t2"), ["proposed t2", "rework t2"]);
    assert_eq!(lines.len(), 5);
    assert!(pending(pq.store()).is_empty(), "nothing stays pending");

    // A history row per command, each with its outcome, the point's state and one pass.
    let mut h = pq.store().history(None, None, 100).unwrap();
    h.sort_by_key(|r| (r.occurrence, r.command_index));
    assert_eq!(
        h.iter()
            .map(|r| (
                r.occurrence,
                r.task.as_str(),
                r.point.as_str(),
                r.command_index,
                r.outcome.as_str(),
                r.exit_code,
                r.passes,
            ))
            .collect::<Vec<_>>(),
        [
            (1, "t1", "after_fail", Some(1), "ok", Some(0), 1),
            (1, "t1", "after_fail", Some(2), "ok", Some(0), 1),
            (2, "t2", "after_proposed", Some(1), "ok", Some(0), 1),
            (2, "t2", "after_proposed", Some(2), "failed", Some(3), 1),
            (3, "t1", "after_rework", Some(1), "ok", Some(0), 1),
            (4, "t2", "after_rework", Some(1), "ok", Some(0), 1),
            (5, "t1", "after_fail", Some(1), "ok", Some(0), 1),
            (5, "t1", "after_fail", Some(2), "ok", Some(0), 1),
        ]
    );
    assert_eq!(h[0].state, "failed.x");
    assert_eq!(h[6].state, "failed.y");
    assert!(
        h.iter()
            .all(|r| r.log_path.as_deref().is_some_and(|p| p.ends_with(".log")))
    );

    // The queue's watcher, as a hub waits on it: a rollback wakes no one, a commit does, and
    // only this queue's. Its poll is an hour: only a notification wakes it.
    let mut watcher = hookq::queue::watch::Watcher::postgres(
        pq.store().target().clone(),
        pq.store().queue().clone(),
    )
    .unwrap();
    watcher.set_poll(Duration::from_secs(3600));
    let never = Stop::new();
    let quiet_for = |watcher: &mut hookq::queue::watch::Watcher, d: Duration| {
        let until = Instant::now() + d;
        while Instant::now() < until {
            assert!(!watcher.step(&never), "woken");
        }
    };
    quiet_for(&mut watcher, Duration::from_millis(200));
    {
        let oq = other.queue().clone();
        let mut tx = other.client().transaction().unwrap();
        record::add_task(&mut tx, &oq, &task("t3"), &plan("p"), &ph("failed.z")).unwrap();
        tx.rollback().unwrap();
    }
    quiet_for(&mut watcher, Duration::from_millis(300));
    let mut elsewhere = open(&db, "elsewhere");
    elsewhere
        .write(|tx, q| record::add_task(tx, q, &task("t3"), &plan("p"), &ph("failed.z")))
        .unwrap();
    quiet_for(&mut watcher, Duration::from_millis(300));
    let (waiting, is_waiting) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        waiting.send(()).unwrap();
        let started = Instant::now();
        while !watcher.step(&Stop::new()) {
            if started.elapsed() > Duration::from_secs(30) {
                return (false, started.elapsed());
            }
        }
        (true, started.elapsed())
    });
    // The commit comes once the waiter is about to wait. Nothing the server shows says when it
    // blocks on its connection (it sends no query to wait), and it need not: a commit it has
    // not yet waited for when it starts wakes it all the same, as it must.
    is_waiting.recv().unwrap();
    other
        .write(|tx, q| record::add_task(tx, q, &task("t3"), &plan("p"), &ph("failed.z")))
        .unwrap();
    let (woken, waited) = waiter.join().unwrap();
    assert!(woken && waited < Duration::from_secs(20), "{waited:?}");

    // Released, the lock is free for the next runner.
    let mut s = pq.release().unwrap();
    assert_eq!(pending(&mut s).len(), 1);
    assert!(other.lock(Wait::No).unwrap().is_some());
}

#[test]
fn a_runner_whose_lock_connection_was_lost_runs_and_clears_nothing() {
    if crate::postgres::without_postgres(
        "a_runner_whose_lock_connection_was_lost_runs_and_clears_nothing",
    ) {
        return;
    }
    use hookq::exec::Stop;
    use hookq::queue::{Drainer, RunnerLock};
    let (dir, ws) = hooked_workspace("after_fail = ['echo \"$ARC_TASK\" >> ran']\n");
    let (db, mut s) = fresh("lost");
    s.write(|tx, q| record::add_task(tx, q, &task("t1"), &plan("p"), &ph("failed.x")))
        .unwrap();
    let lock = s.lock(Wait::No).unwrap().unwrap();
    let mut pq = PgQueue::new(s, lock).unwrap();
    let mut admin = cluster().admin(&db);
    let n = admin
        .execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE datname = current_database() AND application_name LIKE 'hookq runner%'",
            &[],
        )
        .unwrap();
    assert_eq!(n, 1);
    let stop = Stop::new();
    let runner = RunnerLock::acquire(&ws.lock_path(), Wait::No, &|| true)
        .unwrap()
        .unwrap();
    let err = Drainer::with_warnings(ws.clone(), &stop, |_| {})
        .drain(&mut pq, &runner)
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("queue lost: lost the connection that held the runner lock"),
        "{err}"
    );
    assert_eq!(err.exit_code(), code::DATABASE);
    assert!(ran(&dir).is_empty(), "a hook ran without the lock");
    assert_eq!(pending(pq.store()).len(), 1);
}
