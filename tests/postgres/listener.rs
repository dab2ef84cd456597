//! The listener that a process's watchers of one server share: one connection listening for
//! all of their queues, a notification waking only its own queue's watchers, one statement
//! reading every queue's mark, and a connection lost counted as a change by every watcher.

use std::time::Duration;

use hookq::exec::Stop;
use hookq::queue::pg::{self, PgStore, QueueName, Target, record};
use hookq::queue::watch::Watcher;
use hookq::testing::listener::{APPLICATION_NAME, statements};

use super::cluster::cluster;
use super::{fresh, ph, plan, task};
use crate::support::{HANG, eventually};

/// How many connections of this process to `s`'s database are named `name` (`LIKE`, with the
/// process's pid).
fn named(s: &mut PgStore, name: &str) -> i64 {
    s.client()
        .query_one(
            "SELECT count(*) FROM pg_stat_activity
             WHERE datname = current_database() AND application_name LIKE $1",
            &[&format!("{name} pid {}%", std::process::id())],
        )
        .unwrap()
        .get(0)
}

/// Steps `watcher` until it tells of a change; fails on a hang.
fn woken(watcher: &mut Watcher, what: &str) {
    let never = Stop::new();
    let started = std::time::Instant::now();
    while !watcher.step(&never) {
        assert!(started.elapsed() < HANG, "{what}: never woken");
    }
}

/// A point recorded in `queue` on `s`'s connection, in a transaction that notifies no one.
fn quietly(s: &mut PgStore, queue: &QueueName, id: &str) {
    let mut tx = s.client().transaction().unwrap();
    record::add_task(&mut tx, queue, &task(id), &plan("p"), &ph("failed.x")).unwrap();
    tx.commit().unwrap();
}

/// The watchers of `queues` at `target`, each polling every `poll`.
fn watchers(target: &Target, queues: &[QueueName], poll: Duration) -> Vec<Watcher> {
    queues
        .iter()
        .map(|q| {
            let mut w = Watcher::postgres(target.clone(), q.clone()).unwrap();
            w.set_poll(poll);
            w
        })
        .collect()
}

/// Fifty watchers of fifty queues of one server, in one process: one connection listens for
/// them all (no other connection of the process but the test's own), one notifying commit for
/// every queue wakes all fifty on a read or two, and so does a commit on every queue that
/// notifies no one, found by the poll; then, the watchers gone, the connection closes.
#[test]
fn fifty_queues_of_one_server_share_one_connection_and_one_read() {
    if crate::postgres::without_postgres(
        "fifty_queues_of_one_server_share_one_connection_and_one_read",
    ) {
        return;
    }
    let (_db, mut s) = fresh("q0");
    let target = s.target().clone();
    let queues: Vec<QueueName> = (0..50)
        .map(|i| QueueName::new(format!("q{i}")).unwrap())
        .collect();
    // An hour's poll: only a notification, or a poll set shorter below, reads.
    let mut all = watchers(&target, &queues, Duration::from_secs(3600));
    assert_eq!(named(&mut s, APPLICATION_NAME), 1, "listening connections");
    // The test's own store is the process's only other connection there.
    assert_eq!(named(&mut s, "hookq"), 1, "the store's connection");

    let before = statements(&target).expect("a listener runs");
    let notify: Vec<String> = queues
        .iter()
        .map(|q| format!("pg_notify('{}', '{}')", q.channel(), q.as_str()))
        .collect();
    s.client()
        .batch_execute(&format!("SELECT {}", notify.join(", ")))
        .unwrap();
    for w in &mut all {
        woken(w, "a notification of its queue");
    }
    let read = statements(&target).unwrap() - before;
    // One read after the notifications arrived; a second when some came after it began.
    assert!(
        read <= 3,
        "{read} reads told fifty watchers of fifty notifications"
    );

    let before = statements(&target).unwrap();
    let mut tx = s.client().transaction().unwrap();
    for q in &queues {
        record::add_task(&mut tx, q, &task("quiet"), &plan("p"), &ph("failed.x")).unwrap();
    }
    tx.commit().unwrap();
    for w in &mut all {
        w.set_poll(Duration::from_millis(100));
    }
    for w in &mut all {
        woken(w, "a commit nobody announced");
    }
    let read = statements(&target).unwrap() - before;
    assert!(
        read <= 3,
        "{read} reads told fifty watchers of fifty quiet commits"
    );

    drop(all);
    eventually("the listener's connection to close", || {
        named(&mut s, APPLICATION_NAME) == 0
    });
}

/// Two queues' watchers on one listener: a commit of A (notified) wakes A's and not B's, which
/// has seen the very read that woke A; the legacy channel naming B wakes B's and not A's; a
/// commit of B that notifies no one is found by B's poll.
#[test]
fn a_commit_wakes_only_its_own_queues_watcher_on_a_shared_listener() {
    if crate::postgres::without_postgres(
        "a_commit_wakes_only_its_own_queues_watcher_on_a_shared_listener",
    ) {
        return;
    }
    let (_db, mut a) = fresh("acme/a");
    let b = QueueName::new("acme/b").unwrap();
    let hour = Duration::from_secs(3600);
    let mut ws = watchers(a.target(), &[a.queue().clone(), b.clone()], hour);
    let never = Stop::new();

    a.write(|tx, q| record::add_task(tx, q, &task("t1"), &plan("p"), &ph("failed.x")))
        .unwrap();
    woken(&mut ws[0], "A's commit");
    assert!(!ws[1].step(&never), "B's watcher woken by A's commit");

    // As an older hookq notifies: on the one legacy channel, naming the queue.
    a.client()
        .batch_execute(&format!(
            "SELECT pg_notify('{}', '{}')",
            pg::LEGACY_CHANNEL,
            b.as_str()
        ))
        .unwrap();
    woken(&mut ws[1], "the legacy channel naming B");
    assert!(
        !ws[0].step(&never),
        "A's watcher woken by the legacy channel naming B"
    );

    ws[1].set_poll(Duration::from_millis(100));
    quietly(&mut a, &b, "t2");
    woken(&mut ws[1], "B's commit nobody announced");
}

/// The listener's connection ended by the server: every watcher of the listener counts it as a
/// change (it may have missed a notification), and the listener connects again.
#[test]
fn a_lost_listener_connection_is_a_change_for_every_watcher() {
    if crate::postgres::without_postgres("a_lost_listener_connection_is_a_change_for_every_watcher")
    {
        return;
    }
    let (db, mut s) = fresh("x");
    let queues: Vec<QueueName> = ["x", "y", "z"]
        .iter()
        .map(|n| QueueName::new(*n).unwrap())
        .collect();
    let mut all = watchers(s.target(), &queues, Duration::from_millis(100));
    let mut admin = cluster().admin(&db);
    let ended: i64 = admin
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
             WHERE datname = current_database() AND application_name LIKE $1",
            &[&format!("{APPLICATION_NAME} pid {}%", std::process::id())],
        )
        .unwrap()
        .get(0);
    assert_eq!(ended, 1);
    for w in &mut all {
        woken(w, "the listener's connection lost");
    }
    // The ended backend may linger a moment in the server's list.
    eventually("one listening connection again", || {
        named(&mut s, APPLICATION_NAME) == 1
    });
}
