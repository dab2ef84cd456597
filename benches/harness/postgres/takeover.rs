//! Figure P4: takeover after `kill -9` of the hub that holds a PostgreSQL queue's runner lock,
//! timed from the kill to the start of the next hook on the other hub.
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
