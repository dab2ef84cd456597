//! Figure P2: a drain of `true` hooks from a queue on PostgreSQL against the floor loop of bare
//! spawns into new log files (F2's loop), rounds interleaved.

use std::path::Path;

use hookq::queue::Wait;
use hookq::queue::pg::PgQueue;
use hookq::{Drainer, RunnerLock, Stop, TaskId};

use super::super::floors;
use super::super::report::{Row, Target};
use super::super::sizes::Sizes;
use super::super::stats::{median, percentile, timed};
use super::{Server, fixture};

/// Per-point medians over the rounds, ms.
pub struct PgDrain {
    /// The floor loop: spawn `sh -c true` into a newly created log file.
    pub floor: f64,
    /// `Drainer::drain` of a PostgreSQL queue, jobs 1, one `true` per point, the tasks' log
    /// folders there already.
    pub drain: f64,
    /// Points per round, and each round's (floor, drain), per point.
    pub points: usize,
    /// Each round's per-point floor and drain.
    pub rounds: Vec<(f64, f64)>,
}

/// Runs `sizes.drain_rounds` rounds of the floor loop and the drain, the order alternating.
pub fn measure(server: &Server, dir: &Path, sizes: &Sizes) -> PgDrain {
    let n = sizes.drain_points;
    let url = server.database();
    let ws = super::super::fixture::workspace(dir, "pg-drain", &["true"]);
    let store = fixture::open(&url);
    let mut setup = fixture::client(&url);
    let queue_lock = store
        .lock(Wait::No)
        .expect("the queue's runner lock")
        .expect("the queue's runner lock is free");
    let mut queue = PgQueue::new(store, queue_lock).expect("the queue");
    let lock = RunnerLock::acquire(&ws.lock_path(), Wait::No, &|| true)
        .expect("lock file")
        .expect("the runner lock is free");
    let stop = Stop::new();
    let mut rounds = Vec::new();
    for round in 0..sizes.drain_rounds {
        let prefix = format!("r{round}-");
        fixture::add_tasks(&mut setup, &prefix, "review.awaiting_human", n);
        fixture::add_points(&mut setup, &prefix, n, n);
        for i in 0..n {
            let task = TaskId::new(format!("{prefix}{i:07}")).expect("id");
            std::fs::create_dir_all(ws.hook_log_dir(&task)).expect("create a log folder");
        }
        server.checkpoint();
        let floor = || floors::spawn_to_new_logs(&dir.join(format!("pg-floor-{round}")), n);
        let mut drain = || {
            let mut warnings = Vec::new();
            let (report, ms) = {
                let mut drainer =
                    Drainer::with_warnings(ws.clone(), &stop, |w| warnings.push(w.to_owned()));
                timed(|| drainer.drain(&mut queue, &lock))
            };
            let report = report.expect("drain the PostgreSQL queue");
            assert_eq!(
                (report.cleared, report.commands, report.failed),
                (n, n, 0),
                "the drain did not run every point cleanly: {warnings:?}"
            );
            ms
        };
        let (f, d) = if round % 2 == 0 {
            let f = floor();
            (f, drain())
        } else {
            let d = drain();
            (floor(), d)
        };
        assert_eq!(fixture::pending_count(&mut setup), 0);
        rounds.push((f / n as f64, d / n as f64));
    }
    queue.release().expect("release the queue's runner lock");
    let floors: Vec<f64> = rounds.iter().map(|r| r.0).collect();
    let drains: Vec<f64> = rounds.iter().map(|r| r.1).collect();
    PgDrain {
        floor: median(&floors),
        drain: median(&drains),
        points: n,
        rounds,
    }
}

/// Row P2.
pub fn rows(d: &PgDrain) -> Vec<Row> {
    let num = super::super::report::num;
    let ratios: Vec<f64> = d.rounds.iter().map(|(f, x)| x / f).collect();
    vec![
        Row::new("P2", "PostgreSQL: drain, 1 `true` per point, jobs 1 (per point)", d.drain, "ms")
            .vs("spawn -> new log, the same rounds", d.floor)
            .target(Target::ratio_at_most(1.25))
            .note(format!(
                "Drainer::drain over PgQueue, one runner holding the queue's advisory lock; {} points a round, {} rounds; each point's start marked and its clear committed on the lock's connection",
                d.points,
                d.rounds.len()
            ))
            .note(format!(
                "round by round {} to {} (median {})",
                num(percentile(&ratios, 0.0)),
                num(percentile(&ratios, 100.0)),
                num(median(&ratios))
            )),
    ]
}
