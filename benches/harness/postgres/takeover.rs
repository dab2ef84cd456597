//! Figure P4: takeover after `kill -9` of the hub that holds a PostgreSQL queue's runner lock,
//! timed from the kill to the start of the next hook on the other hub. Figures P8a and P8b:
//! the same after the holder freezes (SIGSTOP of it and its hook's group) and after its
//! connections go silent (a relay that stops forwarding), which its lease bounds.
//!
//! Two workspaces stand for two hosts on one queue. Each round records one point; hub A takes
//! it, its hook writes its start and sleeps; hub B is started and waits for the lock; then A is
//! killed mid-hook. The server sees A's connection close, which releases the advisory lock, B
//! takes it and runs the point again (at least once): its hook's start ends the measurement.

use std::path::Path;
use std::time::{Duration, Instant};

use super::super::hub::{LOST, Seen, now_ns};
use super::super::report::{Row, Target};
use super::super::sizes::Sizes;
use super::super::stats::{median, ms, percentile};
use super::hub::{commit, start_hub, stop, workspace};
use super::{Server, fixture};

/// What figure P4 measured.
pub struct Takeover {
    /// Kill-to-next-hook-start, ms, one per round.
    pub times: Vec<f64>,
}

/// How many takeovers a run times: one per 25 of the hub's timed transitions, at least one.
pub fn rounds(sizes: &Sizes) -> usize {
    (sizes.hub_transitions / 25).max(1)
}

/// Waits until a connection of `pid`'s shows in `pg_stat_activity`: the hub is up and trying
/// for the lock.
fn wait_connected(c: &mut postgres::Client, pid: u32) {
    let name = format!("hookq runner pid {pid} %");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let n: i64 = c
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE $1",
                &[&name],
            )
            .expect("read pg_stat_activity")
            .get(0);
        if n > 0 {
            return;
        }
        assert!(Instant::now() < deadline, "hub {pid} never connected");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Runs [`rounds`] takeovers.
pub fn measure(server: &Server, dir: &Path, sizes: &Sizes) -> Takeover {
    let n = rounds(sizes);
    let url = server.database();
    let a = workspace(
        dir,
        "pg-takeover-a",
        r#"echo "$ARC_TASK $(date +%s%N)" >> ../seen-a.log; echo "$$" >> ../held.pids; exec sleep 60"#,
    );
    let b = workspace(
        dir,
        "pg-takeover-b",
        r#"echo "$ARC_TASK $(date +%s%N)" >> ../seen-b.log"#,
    );
    for name in ["seen-a.log", "seen-b.log", "held.pids"] {
        std::fs::write(dir.join(name), "").expect("create a log of the takeover");
    }
    let mut store = fixture::open(&url);
    fixture::add_tasks(store.client(), "k", "running.gate", n);
    let mut watch = fixture::client(&url);
    let (mut seen_a, mut seen_b) = (
        Seen::new(&dir.join("seen-a.log")),
        Seen::new(&dir.join("seen-b.log")),
    );
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let task = format!("k{i:07}");
        commit(&mut store, "k", i);
        let mut hub_a = start_hub(&a, &url, dir, "pg-takeover-a");
        seen_a
            .wait_for(&task, Duration::from_secs(60))
            .expect("hub A ran the point (see pg-takeover-a.stderr in the bench dir)");
        let mut hub_b = start_hub(&b, &url, dir, "pg-takeover-b");
        wait_connected(&mut watch, hub_b.id());
        let killed = now_ns();
        hub_a.kill().expect("kill -9 hub A");
        let started = seen_b.wait_for(&task, LOST);
        hub_a.wait().expect("reap hub A");
        times.push(started.map_or(ms(LOST), |at| (at - killed) as f64 / 1e6));
        // B clears the point; then it stops, and A's orphaned hook goes.
        let deadline = Instant::now() + Duration::from_secs(60);
        while fixture::pending_count(&mut watch) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        stop(&mut hub_b);
        end_held(dir);
    }
    Takeover { times }
}

/// Kills the process groups of hub A's hooks, left running by its kill.
fn end_held(dir: &Path) {
    let pids = std::fs::read_to_string(dir.join("held.pids")).expect("read held.pids");
    for pid in pids.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
        if let Some(group) = rustix::process::Pid::from_raw(pid) {
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
    }
    std::fs::write(dir.join("held.pids"), "").expect("empty held.pids");
}

/// Row P4.
pub fn rows(t: &Takeover) -> Vec<Row> {
    let num = super::super::report::num;
    vec![
        Row::new("P4", "PostgreSQL: takeover after kill -9 of the holding hub -> next hook start (slowest)", percentile(&t.times, 100.0), "ms")
            .target(Target::value_at_most(2000.0))
            .note(format!(
                "the slowest of {} rounds (median {} ms): two hubs on one queue, the holder SIGKILLed mid-hook, the other waiting for the lock; the server releases the lock as the killed hub's connection closes, the other hub runs the point again",
                t.times.len(),
                num(median(&t.times))
            )),
    ]
}

/// What figures P8a and P8b measured, at the default lease.
pub struct Failed {
    /// Freeze-to-next-hook-start, ms, one per round.
    pub frozen: Vec<f64>,
    /// Cut-to-next-hook-start, ms, one per round.
    pub cut: Vec<f64>,
}

/// How long a round of P8 waits for the other hub at most: the documented bound is 30 s.
const P8_LIMIT: Duration = Duration::from_secs(120);

/// How many rounds of each of P8a and P8b: each takes the lease (20 s), so two at most.
pub fn failed_rounds(sizes: &Sizes) -> usize {
    rounds(sizes).min(2)
}

/// Runs [`failed_rounds`] takeovers of a frozen holder, then as many of a holder cut off.
pub fn measure_failed(server: &Server, dir: &Path, sizes: &Sizes) -> Failed {
    let n = failed_rounds(sizes);
    let mut out = Failed {
        frozen: Vec::with_capacity(n),
        cut: Vec::with_capacity(n),
    };
    for (kind, cut) in [("frozen", false), ("cut", true)] {
        let url = server.database();
        let a_name = format!("pg-p8-{kind}-a");
        let b_name = format!("pg-p8-{kind}-b");
        let seen_a_log = format!("seen-{kind}-a.log");
        let seen_b_log = format!("seen-{kind}-b.log");
        let a = workspace(
            dir,
            &a_name,
            &format!(
                r#"echo "$ARC_TASK $(date +%s%N)" >> ../{seen_a_log}; echo "$$" >> ../held.pids; exec sleep 60"#
            ),
        );
        let b = workspace(
            dir,
            &b_name,
            &format!(r#"echo "$ARC_TASK $(date +%s%N)" >> ../{seen_b_log}"#),
        );
        for name in [&seen_a_log, &seen_b_log, &"held.pids".to_owned()] {
            std::fs::write(dir.join(name), "").expect("create a log of the takeover");
        }
        let mut store = fixture::open(&url);
        fixture::add_tasks(store.client(), "f", "running.gate", n);
        let mut watch = fixture::client(&url);
        let (mut seen_a, mut seen_b) = (
            Seen::new(&dir.join(&seen_a_log)),
            Seen::new(&dir.join(&seen_b_log)),
        );
        for i in 0..n {
            let task = format!("f{i:07}");
            commit(&mut store, "f", i);
            // A relay of each round's own: a cut one forwards nothing more.
            let relay = super::relay::Relay::to(server.port());
            let relayed = url.replace(
                &format!(":{}/", server.port()),
                &format!(":{}/", relay.port),
            );
            let mut hub_a = start_hub(&a, if cut { &relayed } else { &url }, dir, &a_name);
            seen_a
                .wait_for(&task, Duration::from_secs(60))
                .expect("hub A ran the point (see its stderr in the bench dir)");
            let mut hub_b = start_hub(&b, &url, dir, &b_name);
            wait_connected(&mut watch, hub_b.id());
            let pid = rustix::process::Pid::from_raw(hub_a.id() as i32).expect("a pid");
            let failed = now_ns();
            if cut {
                relay.cut();
            } else {
                signal_held(dir, rustix::process::Signal::STOP);
                rustix::process::kill_process(pid, rustix::process::Signal::STOP)
                    .expect("SIGSTOP hub A");
            }
            let started = seen_b.wait_for(&task, P8_LIMIT);
            let time = started.map_or(ms(P8_LIMIT), |at| (at - failed) as f64 / 1e6);
            if cut {
                out.cut.push(time);
            } else {
                out.frozen.push(time);
            }
            // A goes for good: resumed only to be killed, with its hook.
            signal_held(dir, rustix::process::Signal::CONT);
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::CONT);
            hub_a.kill().expect("kill hub A");
            hub_a.wait().expect("reap hub A");
            end_held(dir);
            let deadline = Instant::now() + Duration::from_secs(60);
            while fixture::pending_count(&mut watch) > 0 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            stop(&mut hub_b);
        }
    }
    out
}

/// Sends `sig` to the process groups of hub A's hooks.
fn signal_held(dir: &Path, sig: rustix::process::Signal) {
    let pids = std::fs::read_to_string(dir.join("held.pids")).expect("read held.pids");
    for pid in pids.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
        if let Some(group) = rustix::process::Pid::from_raw(pid) {
            let _ = rustix::process::kill_process_group(group, sig);
        }
    }
}

/// Rows P8a and P8b.
pub fn failed_rows(t: &Failed) -> Vec<Row> {
    let num = super::super::report::num;
    let lease = hookq::queue::pg::Lease::DEFAULT.as_secs();
    vec![
        Row::new("P8a", "PostgreSQL: takeover after SIGSTOP of the holding hub -> next hook start (slowest)", percentile(&t.frozen, 100.0), "ms")
            .target(Target::value_at_most(30_000.0))
            .note(format!(
                "the slowest of {} rounds (median {} ms): the holder and its hook's group frozen mid-hook, its session kept by the server; the other hub ends it once the holder's {lease} s lease ran out (checked every second) and runs the point again",
                t.frozen.len(),
                num(median(&t.frozen))
            )),
        Row::new("P8b", "PostgreSQL: takeover after the holder's connections go silent -> next hook start (slowest)", percentile(&t.cut, 100.0), "ms")
            .target(Target::value_at_most(30_000.0))
            .note(format!(
                "the slowest of {} rounds (median {} ms): the holder reaches the server through a relay that stops forwarding (no FIN, no RST) mid-hook; the other hub ends the holder's session once its {lease} s lease ran out",
                t.cut.len(),
                num(median(&t.cut))
            )),
    ]
}
