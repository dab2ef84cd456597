//! One hub process over many PostgreSQL queues of one server: the connections it holds there
//! do not grow with its queues (one lock session for every runner lock, a small pool for the
//! reads), a second hub over the same queues takes every one over from one killed or
//! frozen, and one queue whose lease is lost stops alone while its neighbours drain on.

use hookq::queue::pg::{QueueName, holder};
use rustix::process::{Pid, Signal};

use crate::postgres::cli::{open, pg_config};
use crate::postgres::cluster::cluster;
use crate::postgres::fault::until;
use crate::support::HANG;
use crate::support::queue::{Config, Running, Ws};

/// The lease of these tests' hubs: short, so that a takeover takes seconds.
const LEASE_MS: &str = "3000";

/// A new database's URL, and its name.
fn database() -> (String, String) {
    let db = cluster().database();
    (cluster().url(&db, ""), db)
}

/// `n` workspaces whose queues `q0`..`q{n-1}` live in `url`'s database, each running `hooks`,
/// and a listing file naming them all (in the first workspace's base).
fn workspaces(url: &str, n: usize, hooks: &str) -> (Vec<Ws>, std::path::PathBuf) {
    let all: Vec<Ws> = (0..n)
        .map(|i| {
            let ws = Ws::init();
            ws.write_config_text(
                pg_config(&Config::hooks(hooks), url, &format!("q{i}"), "").as_bytes(),
            );
            ws
        })
        .collect();
    let listing = all[0].base().join("workspaces");
    let lines: Vec<String> = all.iter().map(|w| w.root().display().to_string()).collect();
    std::fs::write(&listing, lines.join("\n") + "\n").unwrap();
    (all, listing)
}

fn hub(ws: &Ws, listing: &std::path::Path) -> Running {
    ws.spawn_env(
        &[
            "hub",
            "--workspaces",
            listing.to_str().unwrap(),
            "--jobs",
            "2",
        ],
        &[("HOOKQ_LOG", "info"), ("HOOKQ_LEASE_MS", LEASE_MS)],
    )
}

fn ready(n: usize) -> String {
    format!("hookq hub: ready, {n} queues attached")
}

/// Waits until `hub` says every one of its `n` queues is attached.
fn until_ready(hub: &mut Running, n: usize) {
    let line = ready(n);
    crate::support::eventually(&format!("the hub to say {line}"), || {
        assert!(!hub.exited(), "the hub exited: {}", hub.stderr_so_far());
        hub.stdout_so_far().lines().any(|l| l == line)
    });
}

/// The connections process `pid` holds to database `db`, by kind: its lock sessions
/// (`hookq runner`), its pooled read connections (`hookq pool`), and the rest (its listener,
/// `hookq listener`, and any other).
fn connections(db: &str, pid: i32) -> (usize, usize, usize) {
    let names: Vec<String> = cluster()
        .admin(db)
        .query(
            "SELECT application_name FROM pg_stat_activity
             WHERE datname = current_database()
                 AND (application_name LIKE $1 OR application_name = $2)",
            &[
                &format!("hookq%pid {pid} on %"),
                &format!("hookq listener pid {pid}"),
            ],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let runner = names
        .iter()
        .filter(|n| n.starts_with("hookq runner "))
        .count();
    let pool = names
        .iter()
        .filter(|n| n.starts_with("hookq pool "))
        .count();
    (runner, pool, names.len() - runner - pool)
}

/// One hub over twenty queues of one server holds one lock session, at most two pooled
/// connections and one listener there, while it drains every queue: the number does not grow
/// with the queues.
#[test]
fn a_hub_of_twenty_queues_holds_one_lock_session_and_a_pool_of_two() {
    if crate::postgres::without_postgres(
        "a_hub_of_twenty_queues_holds_one_lock_session_and_a_pool_of_two",
    ) {
        return;
    }
    let n = 20;
    let (url, db) = database();
    let (all, listing) = workspaces(&url, n, r#"after_fail = ['echo "$ARC_TASK" >> ran']"#);
    let mut h = hub(&all[0], &listing);
    until_ready(&mut h, n);
    let pid = h.pid();
    for (i, ws) in all.iter().enumerate() {
        ws.task_add(&format!("t{i}"), "p", "failed.x").ok();
    }
    let mut most = (0, 0, 0);
    until("every queue to drain", &[&h], || {
        let (runner, pool, rest) = connections(&db, pid);
        most = (most.0.max(runner), most.1.max(pool), most.2.max(rest));
        all.iter()
            .enumerate()
            .all(|(i, ws)| ws.lines("ran") == [format!("t{i}")])
    });
    let (runner, pool, rest) = connections(&db, pid);
    println!(
        "connections of a hub of {n} queues: {runner} lock session, {pool} pooled, {rest} other; at most {most:?} while draining"
    );
    assert_eq!(runner, 1, "one lock session for every queue's runner lock");
    assert!(pool <= 2, "at most two pooled connections, found {pool}");
    assert_eq!(rest, 1, "one listener for every queue's watcher");
    assert!(
        most.0 <= 1 && most.1 <= 2 && most.2 <= 1,
        "while draining: {most:?}"
    );
    // Every queue's lock is held on that one session.
    let mut s = open(&url, "q0");
    let backends: std::collections::HashSet<i32> = (0..n)
        .map(|i| {
            let q = QueueName::new(format!("q{i}")).unwrap();
            holder(s.client(), &q).unwrap().expect("held").backend_pid
        })
        .collect();
    assert_eq!(backends.len(), 1, "{backends:?}");

    h.signal(Signal::TERM);
    let out = h.wait_within(HANG);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
}

/// Resumes a frozen process however the test ends.
struct Frozen(i32);

impl Frozen {
    fn freeze(pid: i32) -> Self {
        rustix::process::kill_process(Pid::from_raw(pid).unwrap(), Signal::STOP).unwrap();
        Self(pid)
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        let _ = rustix::process::kill_process(Pid::from_raw(self.0).unwrap(), Signal::CONT);
    }
}

/// Two hubs over the same five queues (each on checkouts of its own, as on another host): the
/// second stands by for every queue's lock, and takes every one over when the first is killed
/// with SIGKILL; a third takes every queue over from the second frozen with SIGSTOP, once the
/// frozen session's leases ran out (its one session ended frees all its locks at once).
#[test]
fn a_standby_hub_takes_every_queue_over_from_a_killed_or_frozen_one() {
    if crate::postgres::without_postgres(
        "a_standby_hub_takes_every_queue_over_from_a_killed_or_frozen_one",
    ) {
        return;
    }
    let n = 5;
    let (url, _db) = database();
    // Each hub on a host of its own: its own checkouts of the same five queues, so that a
    // frozen hub holds no other hub's workspace files.
    let hooks = r#"after_fail = ['echo "$ARC_TASK" >> ran']"#;
    let hosts: Vec<(Vec<Ws>, std::path::PathBuf)> =
        (0..3).map(|_| workspaces(&url, n, hooks)).collect();
    let mut first = hub(&hosts[0].0[0], &hosts[0].1);
    until_ready(&mut first, n);
    let mut second = hub(&hosts[1].0[0], &hosts[1].1);
    let all = &hosts[0].0;
    let ran = |round: &str, i: usize| {
        let task = format!("{round}{i}");
        hosts
            .iter()
            .any(|(wss, _)| wss[i].lines("ran").contains(&task))
    };
    let drained = |round: &str, hubs: &[&Running]| {
        for (i, ws) in all.iter().enumerate() {
            ws.task_add(&format!("{round}{i}"), "p", "failed.x").ok();
        }
        until(&format!("every queue to run round {round}"), hubs, || {
            (0..n).all(|i| ran(round, i))
        });
    };
    drained("a", &[&first, &second]);
    assert!(
        !second.stdout_so_far().contains("ready"),
        "the standby holds no lock the first hub holds: {}",
        second.stdout_so_far()
    );

    first.signal(Signal::KILL);
    until_ready(&mut second, n);
    drained("b", &[&second]);

    let mut third = hub(&hosts[2].0[0], &hosts[2].1);
    let frozen = Frozen::freeze(second.pid());
    until_ready(&mut third, n);
    assert!(
        third
            .stderr_so_far()
            .contains("ended the session of the runner lock's holder"),
        "the third hub says it ended the frozen one's session: {}",
        third.stderr_so_far()
    );
    drained("c", &[&third]);
    // Every queue is the third's, on its one session.
    let mut s = open(&url, "q0");
    let backends: std::collections::HashSet<i32> = (0..n)
        .map(|i| {
            let q = QueueName::new(format!("q{i}")).unwrap();
            let h = holder(s.client(), &q).unwrap().expect("held");
            assert_eq!(h.pid, Some(third.pid() as u32));
            h.backend_pid
        })
        .collect();
    assert_eq!(backends.len(), 1, "{backends:?}");
    drop(frozen);
    second.signal(Signal::KILL);
    third.signal(Signal::TERM);
    let out = third.wait_within(HANG);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
}

/// One queue whose lease is lost (its row's lease ended on the server, as when it runs out
/// for that queue alone) stops alone: its running point finishes but is not cleared, and runs
/// again once the hub has taken the queue back; the other queue of the same hub drains on,
/// its lock never leaving the hub's one session.
#[test]
fn a_queue_that_lost_its_lease_stops_alone() {
    if crate::postgres::without_postgres("a_queue_that_lost_its_lease_stops_alone") {
        return;
    }
    let gate_dir = tempfile::tempdir().unwrap();
    let gate = gate_dir.path().join("gate");
    let db = cluster().database();
    let url = cluster().url(&db, "");
    let slow = Ws::init();
    let g = gate.display();
    slow.write_config_text(
        pg_config(
            &Config::hooks(&format!(
                r#"after_fail = ['echo "start $ARC_TASK" >> ran; while [ ! -e {g} ]; do sleep 0.05; done; echo "end $ARC_TASK" >> ran']"#
            )),
            &url,
            "slow",
            "",
        )
        .as_bytes(),
    );
    let quick = Ws::init();
    quick.write_config_text(
        pg_config(
            &Config::hooks(r#"after_fail = ['echo "$ARC_TASK" >> ran']"#),
            &url,
            "quick",
            "",
        )
        .as_bytes(),
    );
    let listing = slow.base().join("workspaces");
    std::fs::write(
        &listing,
        format!("{}\n{}\n", slow.root().display(), quick.root().display()),
    )
    .unwrap();
    let mut h = hub(&slow, &listing);
    until_ready(&mut h, 2);
    let mut s = open(&url, "quick");
    let quick_q = QueueName::new("quick").unwrap();
    let session = holder(s.client(), &quick_q).unwrap().unwrap().backend_pid;

    slow.task_add("s1", "p", "failed.x").ok();
    until("the slow queue's point to start", &[&h], || {
        slow.lines("ran") == ["start s1"]
    });
    cluster()
        .admin(&db)
        .execute(
            "UPDATE hookq_runners SET lease_until_ms = 0 WHERE queue = 'slow'",
            &[],
        )
        .unwrap();
    until("the hub to let the slow queue go", &[&h], || {
        h.stderr_so_far()
            .contains("queue slow: lost the runner lock's lease")
    });
    // The other queue drains on, on the same session, while the slow queue's command runs.
    quick.task_add("k1", "p", "failed.x").ok();
    until("the quick queue to drain", &[&h], || {
        quick.lines("ran") == ["k1"]
    });
    assert_eq!(slow.lines("ran"), ["start s1"], "the slow point still runs");

    std::fs::write(&gate, "").unwrap();
    // Its clear refused, the point runs again once the hub holds the queue again.
    let mut slow_store = open(&url, "slow");
    until("the slow point to run again and clear", &[&h], || {
        slow.lines("ran")
            .iter()
            .filter(|l| *l == "start s1")
            .count()
            == 2
            && slow_store.pending(0, 10, None).unwrap().is_empty()
    });
    quick.task_add("k2", "p", "failed.x").ok();
    until("the quick queue to drain again", &[&h], || {
        quick.lines("ran") == ["k1", "k2"]
    });
    assert_eq!(
        holder(s.client(), &quick_q).unwrap().unwrap().backend_pid,
        session,
        "the quick queue's lock never left the session"
    );
    let err = h.stderr_so_far();
    let quick_lost = format!("{}: warning: lost", quick.root().display());
    assert!(
        !err.contains(&quick_lost),
        "the quick queue lost nothing: {err}"
    );
    let slow_lost = format!("{}: warning: lost", slow.root().display());
    assert!(
        err.contains(&slow_lost),
        "the slow queue says it lost its lock: {err}"
    );

    h.signal(Signal::TERM);
    let out = h.wait_within(HANG);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
}
