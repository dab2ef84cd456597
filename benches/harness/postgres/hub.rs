//! Figure P3: `hookq hub` (the built binary) on a PostgreSQL queue, timed from a commit in this
//! process to the start of the hook it fires. The hub waits on `LISTEN`, woken by the `NOTIFY`
//! that `PgStore::write` sends after its commit (P3a, P3b); and for a host that commits without
//! notifying, found by the hub's poll (P3c).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use hookq::queue::MoveFacts;
use hookq::queue::pg::record::move_task;
use hookq::queue::pg::{DATABASE_ENV, PgStore};
use hookq::{Phase, TaskId, Workspace};

use super::super::hub::{LOST, Lcg, Seen, early_note, latency_ms, now_ns};
use super::super::proc::hookq_bin;
use super::super::report::{Row, Target};
use super::super::sizes::Sizes;
use super::super::stats::{ms, percentile};
use super::{Server, fixture};

/// What figure P3 measured.
pub struct PgHub {
    /// Commit-to-hook-start latencies, ms, one per transition.
    pub latencies: Vec<f64>,
    /// Transitions whose hook never started within [`LOST`].
    pub lost: usize,
    /// The same for transitions committed without a notification (P3c).
    pub unnotified: Vec<f64>,
    /// Of those, how many never started within [`LOST`].
    pub unnotified_lost: usize,
}

/// A workspace at `dir/name` on queue [`fixture::QUEUE`] whose `after_awaiting_human` point
/// runs `command`.
pub fn workspace(dir: &Path, name: &str, command: &str) -> Workspace {
    let ws = super::super::fixture::workspace(dir, name, &[]);
    let text = format!(
        "[queue]\nname = {:?}\n\n[hooks]\nafter_awaiting_human = [{}]\n",
        fixture::QUEUE,
        hookq::queue::config::toml_quote(command)
    );
    std::fs::write(ws.config_path(), text).expect("write config.toml");
    ws
}

/// `hookq -C <ws> hub` on the database at `url`, its stderr into `<dir>/<name>.stderr`.
pub fn start_hub(ws: &Workspace, url: &str, dir: &Path, name: &str) -> Child {
    let err = std::fs::File::create(dir.join(format!("{name}.stderr"))).expect("hub stderr");
    Command::new(hookq_bin())
        .arg("-C")
        .arg(ws.root())
        .arg("hub")
        .env(DATABASE_ENV, url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err)
        .spawn()
        .expect("start hookq hub")
}

/// Moves task `<prefix>NNNNNNN` into `review.awaiting_human` in one transaction; the time just
/// after the commit returned, ns.
pub fn commit(store: &mut PgStore, prefix: &str, i: usize) -> i128 {
    let task = TaskId::new(format!("{prefix}{i:07}")).expect("id");
    let awaiting = Phase::new("review.awaiting_human").expect("phase");
    store
        .write(|tx, q| move_task(tx, q, &task, &awaiting, &MoveFacts::default()))
        .expect("commit a transition");
    now_ns()
}

/// [`commit`] as a host that never calls `notify_hubs` makes it: its own transaction, committed,
/// and nothing after.
pub fn commit_unnotified(store: &mut PgStore, prefix: &str, i: usize) -> i128 {
    let task = TaskId::new(format!("{prefix}{i:07}")).expect("id");
    let awaiting = Phase::new("review.awaiting_human").expect("phase");
    let queue = store.queue().clone();
    let mut tx = store.client().transaction().expect("begin");
    move_task(&mut tx, &queue, &task, &awaiting, &MoveFacts::default())
        .expect("record a transition");
    tx.commit().expect("commit");
    now_ns()
}

/// Starts the hub, commits `sizes.hub_transitions` transitions one at a time, each waited for,
/// then a random 0-50 ms pause, as figure 4 does on SQLite.
pub fn measure(server: &Server, dir: &Path, sizes: &Sizes) -> PgHub {
    let n = sizes.hub_transitions;
    let url = server.database();
    let ws = workspace(
        dir,
        "pg-hub",
        r#"echo "$ARC_TASK $(date +%s%N)" >> seen.log"#,
    );
    let mut store = fixture::open(&url);
    fixture::add_tasks(
        store.client(),
        "h",
        "running.gate",
        n + 1 + unnotified_count(n),
    );
    let seen_path = ws.root().join("seen.log");
    std::fs::write(&seen_path, "").expect("create seen.log");
    let mut child = start_hub(&ws, &url, dir, "pg-hub");
    let mut seen = Seen::new(&seen_path);
    // A first transition, untimed: the hub is up once its hook has run.
    commit(&mut store, "h", n);
    seen.wait_for(&format!("h{n:07}"), Duration::from_secs(60))
        .expect("the hub ran its first hook (see pg-hub.stderr in the bench dir)");
    let mut rng = Lcg(0x5eed);
    let mut timed_run = |commit: fn(&mut PgStore, &str, usize) -> i128,
                         tasks: std::ops::Range<usize>| {
        let mut latencies = Vec::with_capacity(tasks.len());
        let mut lost = 0;
        for i in tasks {
            std::thread::sleep(Duration::from_millis(rng.below(50)));
            let at = commit(&mut store, "h", i);
            match seen.wait_for(&format!("h{i:07}"), LOST) {
                Some(hook_ns) => latencies.push(latency_ms(hook_ns, at)),
                None => {
                    lost += 1;
                    latencies.push(ms(LOST));
                }
            }
        }
        (latencies, lost)
    };
    let (latencies, lost) = timed_run(commit, 0..n);
    // Each of these waits for the poll, up to a second: a tenth as many.
    let (unnotified, unnotified_lost) =
        timed_run(commit_unnotified, n + 1..n + 1 + unnotified_count(n));
    stop(&mut child);
    PgHub {
        latencies,
        lost,
        unnotified,
        unnotified_lost,
    }
}

/// How many transitions P3c times when P3a times `n`.
pub fn unnotified_count(n: usize) -> usize {
    (n / 10).max(2)
}

/// SIGTERM, then reaps; the hub must exit 0.
pub fn stop(child: &mut Child) {
    let pid = rustix::process::Pid::from_raw(child.id() as i32).expect("a pid");
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM the hub");
    let status = child.wait().expect("reap the hub");
    assert!(status.success(), "hub exited with {status}");
}

/// Rows P3a, P3b and P3c.
pub fn rows(h: &PgHub) -> Vec<Row> {
    let n = h.latencies.len();
    let lost = |lost: usize| {
        if lost > 0 {
            format!("; {lost} LOST (counted as {} ms)", ms(LOST))
        } else {
            String::new()
        }
    };
    let poll = hookq::queue::hub::PG_HUB_POLL.as_secs_f64() * 1000.0;
    vec![
        Row::new("P3a", "PostgreSQL: hub latency p50, commit -> hook start (notified after the commit)", percentile(&h.latencies, 50.0), "ms")
            .target(Target::value_at_most(10.0))
            .note(format!(
                "{n} transitions, each a durable txn from this process by PgStore::write (commit, then notify_hubs) timed from its return (the committing side's own time excluded), waited for, then 0-50 ms random pause; hook start = `date +%s%N` in the hook{}{}",
                lost(h.lost),
                early_note(&h.latencies)
            )),
        Row::new("P3b", "PostgreSQL: hub latency p99", percentile(&h.latencies, 99.0), "ms")
            .target(Target::value_at_most(50.0)),
        Row::new("P3c", "PostgreSQL: hub latency p99, a host that does not notify", percentile(&h.unnotified, 99.0), "ms")
            .target(Target::value_at_most(poll + 50.0))
            .note(format!(
                "{} transitions committed in the host's own transaction with no notify_hubs after it, found by the hub's poll ({poll:.0} ms, hookq hub's default): bounded by the poll interval and one pass; p50 {:.0} ms{}",
                h.unnotified.len(),
                percentile(&h.unnotified, 50.0),
                lost(h.unnotified_lost)
            )),
    ]
}
