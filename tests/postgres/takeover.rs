//! Holders that fail without their process dying, through the real binary: a hub frozen with
//! SIGSTOP (it and its command's process group), and a hub whose connection goes silent (a TCP
//! relay between it and the server that stops forwarding, sending neither FIN nor RST). The
//! other hub takes the queue over once the holder's lease ran out, and the old holder starts
//! nothing more. Also: an error that waiting does not mend stops a hub, and `run --wait N`
//! waits N in all.

use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hookq::queue::pg::{PgRunnerLock, QueueName, Target, holder};
use hookq::queue::{RunnerLock, Wait};
use rustix::process::{Pid, Signal};

use crate::postgres::cluster::cluster;
use crate::postgres::fault::{host, open, pending_count, until};
use crate::postgres::relay::Relay;
use crate::support::HANG;
use crate::support::queue::{Running, Ws};

/// The lease the hubs of these tests keep: short, so that a takeover takes seconds.
const LEASE_MS: &str = "3000";

/// The takeover bound hookq documents for its default settings; the tests' shorter lease
/// stays well inside it, so passing it only means that nothing hung.
const BOUND: Duration = Duration::from_secs(30);

/// An `after_fail` hook that appends `start <name> <task> <pgid> <ns>` and `end ...` to
/// `times` around a sleep of `sleep` seconds (`$$`, the hook's shell, leads its group).
fn named_hook(times: &Path, name: &str, sleep: &str) -> String {
    let t = times.display();
    format!(
        "after_fail = ['echo \"start {name} $ARC_TASK $$ $(date +%s%N)\" >> {t}; sleep {sleep}; echo \"end {name} $ARC_TASK $$ $(date +%s%N)\" >> {t}']\n"
    )
}

/// One line of `times`.
#[derive(Debug, Clone)]
struct Event {
    what: String,
    host: String,
    task: String,
    pgid: i32,
    ns: u128,
}

fn events(times: &Path) -> Vec<Event> {
    std::fs::read_to_string(times)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let w: Vec<&str> = l.split(' ').collect();
            Event {
                what: w[0].into(),
                host: w[1].into(),
                task: w[2].into(),
                pgid: w[3].parse().unwrap(),
                ns: w[4].parse().unwrap(),
            }
        })
        .collect()
}

fn started(times: &Path, host: &str, task: &str) -> Option<Event> {
    events(times)
        .into_iter()
        .find(|e| e.what == "start" && e.host == host && e.task == task)
}

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

fn hub(ws: &Ws) -> Running {
    ws.spawn_env(
        &["hub"],
        &[("HOOKQ_LOG", "info"), ("HOOKQ_LEASE_MS", LEASE_MS)],
    )
}

/// Waits until the process of `hub` holds queue `q`'s runner lock.
fn until_holding(url: &str, hub: &Running, others: &[&Running]) {
    let mut s = open(url);
    let q = s.queue().clone();
    let pid = hub.pid() as u32;
    let mut all = vec![hub];
    all.extend_from_slice(others);
    until("the first hub holds the lock", &all, || {
        holder(s.client(), &q).unwrap().and_then(|h| h.pid) == Some(pid)
    });
}

/// Runs of the queue's hooks, `(start, end, host, task)`; a run with no end line ends never.
fn runs(times: &Path) -> Vec<(u128, u128, String, String)> {
    let ev = events(times);
    ev.iter()
        .filter(|e| e.what == "start")
        .map(|s| {
            let end = ev
                .iter()
                .find(|e| e.what == "end" && e.pgid == s.pgid && e.host == s.host)
                .map_or(u128::MAX, |e| e.ns);
            (s.ns, end, s.host.clone(), s.task.clone())
        })
        .collect()
}

/// No two runs overlap, except `allowed` (host, task) with anything.
fn never_two_at_once(times: &Path, allowed: Option<(&str, &str)>) {
    let mut rs: Vec<_> = runs(times)
        .into_iter()
        .filter(|r| allowed.is_none_or(|(h, t)| !(r.2 == h && r.3 == t)))
        .collect();
    rs.sort();
    for w in rs.windows(2) {
        assert!(
            w[1].0 >= w[0].1,
            "{} on {} started before {} on {} ended: {rs:?}",
            w[1].3,
            w[1].2,
            w[0].3,
            w[0].2
        );
    }
}

/// Sends `sig` to the process group `pgid`, ignoring a group gone.
fn signal_group(pgid: i32, sig: Signal) {
    let _ = rustix::process::kill_process_group(Pid::from_raw(pgid).unwrap(), sig);
}

/// Resumes a frozen hub and its command's group however the test ends, so that no stopped
/// process outlives it.
struct Frozen {
    pid: i32,
    pgid: i32,
}

impl Frozen {
    fn freeze(pid: i32, pgid: i32) -> Self {
        signal_group(pgid, Signal::STOP);
        let _ = rustix::process::kill_process(Pid::from_raw(pid).unwrap(), Signal::STOP);
        Self { pid, pgid }
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        signal_group(self.pgid, Signal::CONT);
        let _ = rustix::process::kill_process(Pid::from_raw(self.pid).unwrap(), Signal::CONT);
    }
}

/// A hub frozen with SIGSTOP (it and its running command's process group) keeps its session,
/// and so the queue's advisory lock: the other hub ends that session once the frozen hub's
/// lease has run out, and runs the queue (the frozen hub's point again, and the next) within
/// the documented bound. Resumed, the frozen hub lets its command finish (the one run the
/// docs allow to overlap), says it lost the lock, and starts nothing more.
#[test]
fn a_frozen_holder_is_taken_over_and_starts_nothing_once_resumed() {
    if crate::postgres::without_postgres(
        "a_frozen_holder_is_taken_over_and_starts_nothing_once_resumed",
    ) {
        return;
    }
    let db = cluster().database();
    let url = cluster().url(&db, "");
    let dir = tempfile::tempdir().unwrap();
    let times = dir.path().join("times");
    let a = host(&url, &named_hook(&times, "A", "2"));
    let b = host(&url, &named_hook(&times, "B", "0.2"));
    let hub_a = hub(&a);
    until_holding(&url, &hub_a, &[]);
    let hub_b = hub(&b);
    a.task_add("f0", "p", "failed.x").ok();
    until("A starts f0", &[&hub_a, &hub_b], || {
        started(&times, "A", "f0").is_some()
    });
    let f0 = started(&times, "A", "f0").unwrap();
    let frozen = Frozen::freeze(hub_a.pid(), f0.pgid);
    let froze = Instant::now();
    b.task_add("f1", "p", "failed.x").ok();
    until("B runs f0 again and f1", &[&hub_a, &hub_b], || {
        started(&times, "B", "f0").is_some() && started(&times, "B", "f1").is_some()
    });
    let took = froze.elapsed();
    println!("takeover of a frozen holder: {took:?} (lease {LEASE_MS} ms)");
    assert!(took < BOUND, "took {took:?}");
    assert!(
        hub_b
            .stderr_so_far()
            .contains("ended the session of the runner lock's holder"),
        "B says it broke the lease: {}",
        hub_b.stderr_so_far()
    );

    let resumed = now_ns();
    drop(frozen);
    until("A says it lost the lock", &[&hub_a, &hub_b], || {
        hub_a
            .stderr_so_far()
            .contains("warning: hub lost the queue's database")
    });
    b.task_add("f2", "p", "failed.x").ok();
    let mut s = open(&url);
    until("the queue is finished", &[&hub_a, &hub_b], || {
        pending_count(&mut s) == 0 && started(&times, "B", "f2").is_some()
    });
    // Past two more leases, the resumed hub still started nothing. Kept as a window: what is
    // under test is that nothing starts during the time A's stale lease would still cover, and
    // no event marks the end of something that does not happen (A, waiting for the lock B
    // holds, shows the server only try-locks, before and after a stale start alike).
    std::thread::sleep(Duration::from_millis(2 * LEASE_MS.parse::<u64>().unwrap()));
    let late: Vec<Event> = events(&times)
        .into_iter()
        .filter(|e| e.what == "start" && e.host == "A" && e.ns > resumed)
        .collect();
    assert!(late.is_empty(), "the resumed holder started {late:?}");
    never_two_at_once(&times, Some(("A", "f0")));
    let err_a = hub_a.stderr_so_far();
    assert!(
        err_a.contains("gave up the runner lock of queue q")
            || err_a.contains("lost the connection that held the runner lock"),
        "A says why: {err_a}"
    );
}

/// A hub whose connections to the server go silent (a relay that stops forwarding, with no FIN
/// or RST: the server's keepalive probes are still answered by the relay's end) keeps its
/// session on the server: the other hub ends it once its lease has run out and runs the queue
/// within the documented bound; the cut-off hub finds its lease gone (its renewal gets no
/// answer), says so, and starts nothing, then or once the relay is gone.
#[test]
fn a_holder_cut_off_silently_is_taken_over_and_starts_nothing() {
    if crate::postgres::without_postgres(
        "a_holder_cut_off_silently_is_taken_over_and_starts_nothing",
    ) {
        return;
    }
    let c = cluster();
    let db = c.database();
    let url = c.url(&db, "");
    let relay = Relay::to(c.port);
    let relayed = url.replace(&format!(":{}/", c.port), &format!(":{}/", relay.port));
    let dir = tempfile::tempdir().unwrap();
    let times = dir.path().join("times");
    let a = host(&relayed, &named_hook(&times, "A", "0.2"));
    let b = host(&url, &named_hook(&times, "B", "0.2"));
    let hub_a = hub(&a);
    until_holding(&url, &hub_a, &[]);
    let hub_b = hub(&b);
    // A drains while the network is up.
    a.task_add("c0", "p", "failed.x").ok();
    let mut s = open(&url);
    until("A runs c0", &[&hub_a, &hub_b], || {
        started(&times, "A", "c0").is_some() && pending_count(&mut s) == 0
    });
    relay.cut();
    let cut_at = (Instant::now(), now_ns());
    b.task_add("c1", "p", "failed.x").ok();
    until("B runs c1", &[&hub_a, &hub_b], || {
        started(&times, "B", "c1").is_some()
    });
    let took = cut_at.0.elapsed();
    println!("takeover of a silently cut-off holder: {took:?} (lease {LEASE_MS} ms)");
    assert!(took < BOUND, "took {took:?}");
    // The thread that renews A's lease gets no answer and says so.
    until("A says its lease is gone", &[&hub_a, &hub_b], || {
        hub_a.stderr_so_far().contains("the server did not answer")
    });
    // The network comes back as a broken connection: A connects again (the relay is gone
    // now, so it keeps trying), and starts nothing.
    drop(relay);
    until("A says it lost the database", &[&hub_a, &hub_b], || {
        hub_a
            .stderr_so_far()
            .contains("warning: hub lost the queue's database")
    });
    b.task_add("c2", "p", "failed.x").ok();
    until("the queue is finished", &[&hub_a, &hub_b], || {
        pending_count(&mut s) == 0 && started(&times, "B", "c2").is_some()
    });
    let late: Vec<Event> = events(&times)
        .into_iter()
        .filter(|e| e.what == "start" && e.host == "A" && e.ns > cut_at.1)
        .collect();
    assert!(late.is_empty(), "the cut-off holder started {late:?}");
    never_two_at_once(&times, None);
}

/// A role that may connect but has no rights on hookq's tables: the hub stops at once with
/// one `error:` line naming the permission denied (exit 5), rather than connect again for ever.
#[test]
fn a_permission_error_stops_the_hub_with_one_error() {
    if crate::postgres::without_postgres("a_permission_error_stops_the_hub_with_one_error") {
        return;
    }
    let c = cluster();
    let db = c.database();
    drop(open(&c.url(&db, "")));
    let role = format!("norights_{db}");
    c.admin(&db)
        .batch_execute(&format!("CREATE ROLE {role} LOGIN PASSWORD 'n0-rights'"))
        .unwrap();
    let url = format!(
        "postgres://{role}:n0-rights@127.0.0.1:{}/{db}?sslmode=disable",
        c.port
    );
    let ws = host(&url, "");
    let out = ws.spawn(&["hub"]).wait_within(HANG).expect_code(5);
    assert_eq!(out.errors().len(), 1, "{}", out.describe());
    assert!(
        out.stderr().contains("permission denied"),
        "{}",
        out.describe()
    );
    assert!(out.warnings().is_empty(), "no retrying: {}", out.describe());
}

/// `hookq run --wait N` waits N in all: with the queue's lock held for most of N and the
/// workspace's `runner.lock` held throughout, it gives up N after it started, not after the
/// first wait plus N more.
#[test]
fn run_wait_bounds_both_locks_together() {
    if crate::postgres::without_postgres("run_wait_bounds_both_locks_together") {
        return;
    }
    let c = cluster();
    let db = c.database();
    let url = c.url(&db, "");
    let ws = host(&url, "");
    let target = Target::parse(&url).unwrap();
    let q = QueueName::new("q").unwrap();
    drop(open(&url));
    let queue_lock = PgRunnerLock::acquire(&target, &q, Wait::No)
        .unwrap()
        .unwrap();
    let file_lock = RunnerLock::acquire(&ws.lock_path(), Wait::No, &|| true)
        .unwrap()
        .unwrap();
    let release = std::thread::spawn(move || {
        // The queue's lock held for 4.5 s of the 5 s wait: the time is the thing under test.
        std::thread::sleep(Duration::from_millis(4500));
        queue_lock.release().unwrap();
    });
    let t = Instant::now();
    let out = ws
        .spawn(&["run", "--wait", "5"])
        .wait_within(HANG)
        .expect_code(6);
    let took = t.elapsed();
    println!("run --wait 5 gave up after {took:?}");
    assert!(out.stderr().contains("runner lock"), "{}", out.describe());
    // One wait of 5 s, not 4.5 s and then 5 s more.
    assert!(took >= Duration::from_secs(4), "{took:?}");
    assert!(took < Duration::from_millis(8500), "{took:?}");
    release.join().unwrap();
    drop(file_lock);
}

/// The runner lock's session has the server's TCP keepalives set as the connection string
/// says (hookq's defaults when it says nothing), and the statement and lock timeouts that
/// keep a runner from waiting for ever; the client's side has the same keepalives.
#[test]
fn the_runners_session_has_keepalives_and_timeouts() {
    if crate::postgres::without_postgres("the_runners_session_has_keepalives_and_timeouts") {
        return;
    }
    let c = cluster();
    let db = c.database();
    drop(open(&c.url(&db, "")));
    let q = QueueName::new("q").unwrap();
    for (params, idle) in [("", "10"), ("keepalives_idle=7", "7")] {
        let target = Target::parse(&c.url(&db, params)).unwrap();
        let want = Duration::from_secs(idle.parse().unwrap());
        assert_eq!(target.config().get_keepalives_idle(), want);
        assert_eq!(
            target.config().get_keepalives_interval(),
            Some(Duration::from_secs(5))
        );
        assert_eq!(target.config().get_keepalives_retries(), Some(3));
        assert!(target.config().get_tcp_user_timeout().is_some());
        let mut lock = PgRunnerLock::acquire(&target, &q, Wait::No)
            .unwrap()
            .unwrap();
        let show = |lock: &mut PgRunnerLock, what: &str| -> String {
            lock.client()
                .query_one(&format!("SHOW {what}"), &[])
                .unwrap()
                .get(0)
        };
        assert_eq!(show(&mut lock, "tcp_keepalives_idle"), idle);
        assert_eq!(show(&mut lock, "tcp_keepalives_interval"), "5");
        assert_eq!(show(&mut lock, "tcp_keepalives_count"), "3");
        // Half and a quarter of the default lease of 20 s.
        assert_eq!(show(&mut lock, "statement_timeout"), "10s");
        assert_eq!(show(&mut lock, "lock_timeout"), "5s");
        lock.release().unwrap();
    }
}

/// A lease that is not milliseconds from 1000 to 3600000 is refused in one line naming the
/// variable, with the usage exit code, before anything runs.
#[test]
fn a_bad_lease_setting_is_refused() {
    if crate::postgres::without_postgres("a_bad_lease_setting_is_refused") {
        return;
    }
    let c = cluster();
    let db = c.database();
    let ws = host(&c.url(&db, ""), "");
    for bad in ["5", "soon", "3600001"] {
        for cmd in [&["run"][..], &["hub"][..]] {
            let out = ws
                .spawn_env(cmd, &[("HOOKQ_LEASE_MS", bad)])
                .wait_within(HANG)
                .expect_code(2);
            assert_eq!(out.errors().len(), 1, "{}", out.describe());
            assert!(
                out.stderr().contains("HOOKQ_LEASE_MS") && out.stderr().contains("1000 to 3600000"),
                "{}",
                out.describe()
            );
        }
    }
}
