//! The whole run: floors first, then every figure, into one report.

use std::time::Instant;

use super::report::{self, Machine, Report, Row};
use super::sizes::Sizes;
use super::{agent, drain, fixture, fleet, floors, hub, lifecycle, memory, scale, transitions, ui};

/// Runs every measurement at `sizes`, printing progress on stderr, and returns the report.
pub fn run(sizes: Sizes) -> Report {
    let start = Instant::now();
    let load_start = report::loadavg();
    let root = fixture::bench_root();
    let dir = root.path();
    let step = |what: &str| {
        eprintln!(
            "hookq-bench [{:>5.1} s] {what}",
            start.elapsed().as_secs_f64()
        )
    };

    step("floors: spawn, fdatasync");
    let spawn = floors::spawn(sizes.spawn_samples);
    let fsync = floors::fdatasync(dir, sizes.fsync_samples);
    step("1: transitions (with point, without, bare commit)");
    let t = transitions::measure(dir, &sizes);
    step("2, 6: drains against the spawn floor");
    let d = drain::measure(dir, &sizes);
    step("3: flat at scale");
    let s = scale::measure(dir, &sizes);
    step("4: hub latency and idle");
    let h = hub::measure(dir, &sizes);
    step("5: memory of hookq run");
    let (large, small) = memory::measure(dir, &sizes);
    step("U: the web view");
    let u = ui::measure(dir, &sizes);
    step("7: agent tool hooks");
    let a = agent::measure(dir, &sizes);
    step("Q3, Q4: one hub of many SQLite queues");
    let q3 = fleet::measure_sqlite(dir, &sizes);
    let q4 = fleet::measure_fairness(dir, &sizes);
    // Last: its repositories are the run's most files, which would slow file creation after.
    step("L: worktree lifecycle");
    let l = lifecycle::measure(dir, &sizes);
    #[cfg(feature = "postgres")]
    let pg = super::postgres::measure(dir, &sizes, &step);
    step("done");

    let mut drain_rows = drain::rows(&d);
    let mut scale_rows = scale::rows(&s, &sizes);
    let mut rows = vec![
        Row::floor(
            "F1",
            "spawn /bin/sh -c true (fork/exec/wait)",
            spawn,
            "ms",
            Some(0.7),
        )
        .note(format!("median of {}", sizes.spawn_samples)),
        drain_rows.remove(0),
        Row::floor(
            "F3",
            "durable SQLite commit, 1 row (WAL, synchronous=FULL)",
            t.bare_commit,
            "ms",
            Some(0.19),
        )
        .note(format!(
            "median, interleaved with figure 1; SQLite's default {}-byte pages",
            floors::SQLITE_PAGE_SIZE
        )),
        Row::floor(
            "F4",
            "fdatasync of a 4 KiB overwrite",
            fsync,
            "ms",
            Some(0.15),
        )
        .note(format!("median of {}", sizes.fsync_samples)),
        scale_rows.remove(0),
    ];
    rows.extend(transitions::rows(&t));
    let parallel_cores = drain_rows.pop().expect("figure 6b row");
    let parallel = drain_rows.pop().expect("figure 6 row");
    rows.extend(drain_rows);
    rows.extend(scale_rows);
    let mut hub_rows = hub::rows(&h, d.floor);
    let hub_rss = hub_rows.pop().expect("hub rss row");
    rows.extend(hub_rows);
    rows.extend(memory::rows(large, small, &sizes));
    rows.push(hub_rss);
    rows.push(parallel);
    rows.push(parallel_cores);
    rows.extend(ui::rows(&u, &sizes));
    rows.extend(agent::rows(&a));
    rows.extend(lifecycle::rows(&l));
    #[cfg(feature = "postgres")]
    rows.extend(super::postgres::rows(&pg, &sizes));
    rows.extend(fleet::rows(&q3, &q4));
    Report {
        machine: Machine::detect(dir),
        sizes,
        elapsed_secs: start.elapsed().as_secs_f64(),
        loadavg: (load_start, report::loadavg()),
        after_last_run_secs: None,
        rows,
    }
}
