//! Exclusion and concurrent writers.
//!
//! 1. Two hubs and twenty `hookq run` passes drain one workspace: a hook that takes a non-blocking
//!    lock of its own proves no two hook commands ever overlap.
//! 2. Four processes record transitions while a hub drains: no `database is locked` reaches a
//!    writer, no point is lost, none runs twice.
//!
//! `HOOKQ_STRESS=1` runs the full sizes (4 × 10,000 transitions).

use crate::support::queue as common;

use std::collections::HashMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{count, figures, stress};
use hookq::queue::record::{self, MoveFacts};
use hookq::queue::store::Store;
use hookq::{Phase, PlanId, TaskId, Workspace};

const WRITER_DB: &str = "HOOKQ_WRITER_DB";
const WRITER_ID: &str = "HOOKQ_WRITER_ID";
const WRITER_COUNT: &str = "HOOKQ_WRITER_COUNT";

fn hookq(root: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hookq"));
    c.arg("-C").arg(root).stdin(Stdio::null());
    c
}

/// Starts `n` concurrent `hookq run` passes.
fn cron_passes(root: &Path, n: usize) -> Vec<Child> {
    (0..n)
        .map(|_| {
            hookq(root)
                .arg("run")
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect()
}

fn terminate(child: &mut Child) -> std::process::ExitStatus {
    let pid = rustix::process::Pid::from_child(child);
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let mut status = None;
    crate::support::eventually("the hub to exit after SIGTERM", || {
        status = child.try_wait().unwrap();
        status.is_some()
    });
    status.unwrap()
}

fn workspace(root: &Path, hooks: &str) -> Workspace {
    let ws = Workspace::at(root);
    std::fs::create_dir_all(ws.state_dir()).unwrap();
    std::fs::write(ws.config_path(), format!("[hooks]\n{hooks}\n")).unwrap();
    Store::open(&ws.db_path()).unwrap();
    ws
}

/// Waits until no point is pending and `expect_history` have ended, at most `limit`: a bound of
/// its own (over [`crate::support::HANG`]) because thousands of points drain behind one lock on
/// a machine the other tests load too.
fn wait_drained(db: &Path, expect_history: i64, limit: Duration) {
    let store = Store::open(db).unwrap();
    let drained = crate::support::within(limit, Duration::from_millis(50), || {
        let s = store.stats().unwrap();
        let done: i64 = s.history_by_outcome.iter().map(|(_, n)| n).sum();
        (s.pending == 0 && done >= expect_history).then_some(())
    });
    assert!(
        drained.is_some(),
        "not drained in time: {:?}",
        store.stats().unwrap()
    );
}

#[test]
fn no_two_hook_commands_overlap() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let lock = root.join("hook.lock");
    let runs = root.join("runs.txt");
    let overlaps = root.join("overlaps.txt");
    let ws = workspace(
        root,
        &format!(
            "after_fail = ['flock -n {l} -c \"echo $ARC_TASK $ARC_STATE >> {r}; sleep 0.01\" || echo \"$ARC_TASK $ARC_STATE\" >> {o}']",
            l = lock.display(),
            r = runs.display(),
            o = overlaps.display()
        ),
    );
    let points = if stress() { 600 } else { 80 };
    let mut hubs: Vec<Child> = (0..2)
        .map(|_| {
            hookq(root)
                .arg("hub")
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut store = Store::open(&ws.db_path()).unwrap();
    let plan = PlanId::new("p").unwrap();
    for i in 0..points {
        store
            .write(|tx| {
                let t = TaskId::new(format!("t{}", i % 9)).unwrap();
                if i < 9 {
                    record::add_task(tx, &t, &plan, &Phase::new("todo.ready").unwrap())?;
                }
                record::move_task(
                    tx,
                    &t,
                    &Phase::new(&format!("failed.s{i}")).unwrap(),
                    &MoveFacts::default(),
                )
            })
            .unwrap();
        if i == points / 4 {
            // Ten cron passes join the two hubs while points keep coming.
            let passes = cron_passes(root, 10);
            std::thread::spawn(move || {
                for mut p in passes {
                    assert!(p.wait().unwrap().success());
                }
            });
        }
    }
    // Ten more passes once everything is recorded, racing the hubs for the tail.
    let tail = cron_passes(root, 10);
    wait_drained(&ws.db_path(), points, Duration::from_secs(300));
    for mut p in tail {
        assert!(p.wait().unwrap().success());
    }
    for hub in &mut hubs {
        assert!(terminate(hub).success());
    }
    let overlapped = std::fs::read_to_string(&overlaps).unwrap_or_default();
    assert_eq!(overlapped, "", "hook commands overlapped");
    let ran = std::fs::read_to_string(&runs).unwrap();
    let mut count: HashMap<&str, usize> = HashMap::new();
    for line in ran.lines() {
        *count.entry(line).or_default() += 1;
    }
    assert_eq!(count.len(), points as usize, "every point ran");
    assert!(
        count.values().all(|n| *n == 1),
        "a point ran twice without any kill"
    );
    figures(
        "exclusion",
        serde_json::json!({ "hubs": 2, "run_passes": 20, "points": points, "overlaps": 0 }),
    );
}

/// A writer process for `concurrent_writers`; a no-op unless started by it.
#[test]
fn writer_child_entry() {
    let (Some(db), Some(id), Some(count)) = (
        std::env::var_os(WRITER_DB),
        std::env::var(WRITER_ID).ok(),
        std::env::var(WRITER_COUNT).ok(),
    ) else {
        return;
    };
    let count: usize = count.parse().unwrap();
    // At full size (`HOOKQ_STRESS=1`, a run made on purpose on a quiet machine) the writers
    // keep the default busy timeout: a writer starved of the lock (as SQLite's own busy handler
    // starved one) runs out of it while the others still write. At the default size the others
    // are done within seconds, so no starvation lasts 10 s, and the default would only catch a
    // loaded machine: there a writer waits as long as it must.
    let opts = hookq::queue::store::StoreOptions {
        busy_timeout: if stress() {
            hookq::queue::store::DEFAULT_BUSY_TIMEOUT
        } else {
            Duration::from_secs(300)
        },
        ..Default::default()
    };
    let mut store = match Store::open_with(Path::new(&db), opts) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("writer {id}: open: {e}");
            std::process::exit(3);
        }
    };
    let plan = PlanId::new(format!("w{id}")).unwrap();
    for i in 0..count {
        let task = TaskId::new(format!("w{id}-{}", i % 50)).unwrap();
        let phase = Phase::new(&format!("failed.s{i}")).unwrap();
        let result = store.write(|tx| {
            if i < 50 {
                record::add_task(tx, &task, &plan, &Phase::new("todo.ready").unwrap())?;
            }
            record::move_task(tx, &task, &phase, &MoveFacts::default())
        });
        if let Err(e) = result {
            eprintln!("writer {id}: transition {i}: {e}");
            std::process::exit(3);
        }
    }
}

#[test]
fn concurrent_writers_while_a_hub_drains() {
    let per_writer: usize = if stress() { 10_000 } else { 400 };
    let writers = 4;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let out = root.join("ran.txt");
    let ws = workspace(
        root,
        &format!(
            "after_fail = ['echo \"$ARC_TASK $ARC_STATE\" >> {}']",
            out.display()
        ),
    );
    let mut hub = hookq(root)
        .arg("hub")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let children: Vec<Child> = (0..writers)
        .map(|w| {
            Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    &crate::support::test_path(module_path!(), "writer_child_entry"),
                    "--test-threads=1",
                    "--nocapture",
                ])
                .env(WRITER_DB, ws.db_path())
                .env(WRITER_ID, w.to_string())
                .env(WRITER_COUNT, per_writer.to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(
            c.wait().unwrap().success(),
            "a writer got an error (see its stderr)"
        );
    }
    let recorded_in = started.elapsed();
    let total = (writers * per_writer) as i64;
    wait_drained(
        &ws.db_path(),
        total,
        Duration::from_secs(if stress() { 1800 } else { 300 }),
    );
    assert!(terminate(&mut hub).success());

    let store = Store::open(&ws.db_path()).unwrap();
    let transitions = count(
        &store,
        "SELECT COUNT(*) FROM hook_history WHERE outcome = 'ok'",
    );
    assert_eq!(
        transitions, total,
        "every recorded point ran and was cleared"
    );
    let ran = std::fs::read_to_string(&out).unwrap();
    let mut count: HashMap<&str, usize> = HashMap::new();
    for line in ran.lines() {
        *count.entry(line).or_default() += 1;
    }
    assert_eq!(count.len() as i64, total, "a point was lost");
    assert!(count.values().all(|n| *n == 1), "a point ran twice");
    figures(
        "concurrent_writers",
        serde_json::json!({
            "writers": writers,
            "transitions_per_writer": per_writer,
            "transitions": total,
            "points_lost": 0,
            "points_run_twice": 0,
            "busy_errors": 0,
            "record_seconds": recorded_in.as_secs_f64(),
            "seconds": started.elapsed().as_secs_f64(),
        }),
    );
}
