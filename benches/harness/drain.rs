//! Figures 2 and 6: a drain of `true` hooks against the floor loop of bare spawns into new log
//! files, where the rest goes (exec only, bookkeeping only), and `jobs(2)` against `jobs(1)`.

use std::path::Path;

use hookq::exec::{self, Ending};
use hookq::queue::env::{HookVars, base_env, hook_env};
use hookq::queue::store::Store;
use hookq::{Drainer, Point, RunnerLock, Stop, TaskId, Wait, Workspace};

use super::fixture;
use super::floors;
use super::proc;
use super::report::{Row, Target};
use super::sizes::Sizes;
use super::stats::{median, percentile, timed};

/// Per-point medians over the rounds, ms.
pub struct DrainFigures {
    /// The floor loop: spawn `sh -c true` into a newly created log file.
    pub floor: f64,
    /// `Drainer::drain`, jobs 1, one `true` per point, the tasks' log folders already there: a
    /// new log file per point, as in the floor loop.
    pub drain_j1: f64,
    /// The same, every point on a new task: its log folders are created too.
    pub drain_j1_new_tasks: f64,
    /// As `drain_j1_new_tasks` with jobs 2.
    pub drain_j2_new_tasks: f64,
    /// `exec::run` alone into a new log file in folders that exist already.
    pub exec_existing_dirs: f64,
    /// `exec::run` alone for a new task (new log folders and file).
    pub exec_new_tasks: f64,
    /// `Drainer::drain` of points with no commands configured.
    pub bookkeeping: f64,
    /// CPU time (this process and its commands) over wall time during the jobs 1 and the jobs 2
    /// drains of new tasks: how many cores each kept busy, medians.
    pub cores_busy: (f64, f64),
    /// The floor loop with hookq's log layout for new tasks: each log's two folders are new too, made
    /// while the command before runs (the floor of 2b's ratio).
    pub floor_new_tasks: f64,
    /// Each variant's per-point time in every round, in the order above.
    pub rounds: Vec<Vec<f64>>,
}

/// A workspace with its store, a drain target.
struct Drained {
    ws: Workspace,
    store: Store,
}

impl Drained {
    fn new(dir: &Path, name: &str, commands: &[&str]) -> Self {
        let ws = fixture::workspace(dir, name, commands);
        fixture::steady_wal(&ws.db_path());
        let store = Store::open(&ws.db_path()).expect("open the store");
        Self { ws, store }
    }

    /// Records `n` points, each on a task of its own named `<prefix>NNNNNNN`, and with
    /// `dirs_exist` creates the tasks' log folders as an earlier point would have. Not timed.
    fn record(&mut self, prefix: &str, n: usize, dirs_exist: bool) {
        let mut c = fixture::bulk_conn(&self.ws);
        fixture::add_tasks(&mut c, prefix, "p1", "review.awaiting_human", n);
        fixture::add_points(&mut c, prefix, n, n);
        if dirs_exist {
            for i in 0..n {
                let task = TaskId::new(format!("{prefix}{i:07}")).expect("id");
                std::fs::create_dir_all(self.ws.hook_log_dir(&task)).expect("create a log folder");
            }
        }
    }

    /// One pass with the runner lock held; ms, and the cores it kept busy (CPU time of this
    /// process and the commands it ran, over wall time). Checks every point was cleared.
    fn drain(&mut self, jobs: usize, n: usize, commands: usize) -> (f64, f64) {
        let lock = RunnerLock::acquire(&self.ws.lock_path(), Wait::No, &|| true)
            .expect("lock file")
            .expect("the runner lock is free");
        let stop = Stop::new();
        let mut warnings = Vec::new();
        let cpu = proc::own_and_children_cpu();
        let (report, ms) = {
            let mut drainer =
                Drainer::with_warnings(self.ws.clone(), &stop, |w| warnings.push(w.to_owned()))
                    .jobs(jobs);
            timed(|| drainer.drain(&mut self.store, &lock))
        };
        let cpu_ms = (proc::own_and_children_cpu() - cpu).as_secs_f64() * 1e3;
        let report = report.expect("drain");
        assert_eq!(
            (report.cleared, report.commands, report.failed),
            (n, n * commands, 0),
            "drain did not run every point cleanly: {warnings:?}"
        );
        (ms, cpu_ms / ms)
    }
}

/// Runs `sizes.drain_rounds` rounds of the eight variants, the order rotated each round.
pub fn measure(dir: &Path, sizes: &Sizes) -> DrainFigures {
    const VARIANTS: usize = 8;
    let n = sizes.drain_points;
    let mut with_true = Drained::new(dir, "drain", &["true"]);
    let mut empty = Drained::new(dir, "drain-empty", &[]);
    let stop = Stop::new();
    let base = base_env(std::env::vars_os());
    let mut per: [Vec<f64>; VARIANTS] = Default::default();
    let (mut busy_j1, mut busy_j2) = (Vec::new(), Vec::new());
    for round in 0..sizes.drain_rounds {
        for k in 0..VARIANTS {
            let which = (round + k) % VARIANTS;
            let prefix = format!("r{round}v{which}-");
            let ms = match which {
                0 => floors::spawn_to_new_logs(&dir.join(format!("floor-logs-{round}")), n),
                1 => {
                    with_true.record(&prefix, n, true);
                    with_true.drain(1, n, 1).0
                }
                2 => {
                    with_true.record(&prefix, n, false);
                    let (ms, busy) = with_true.drain(1, n, 1);
                    busy_j1.push(busy);
                    ms
                }
                3 => {
                    with_true.record(&prefix, n, false);
                    let (ms, busy) = with_true.drain(2, n, 1);
                    busy_j2.push(busy);
                    ms
                }
                4 => exec_only(&with_true.ws, &base, &stop, &prefix, n, true),
                5 => exec_only(&with_true.ws, &base, &stop, &prefix, n, false),
                6 => {
                    empty.record(&prefix, n, false);
                    empty.drain(1, n, 0).0
                }
                _ => floors::spawn_to_new_task_logs(&dir.join(format!("floor-new-{round}")), n),
            };
            per[which].push(ms / n as f64);
        }
    }
    DrainFigures {
        floor: median(&per[0]),
        drain_j1: median(&per[1]),
        drain_j1_new_tasks: median(&per[2]),
        drain_j2_new_tasks: median(&per[3]),
        exec_existing_dirs: median(&per[4]),
        exec_new_tasks: median(&per[5]),
        bookkeeping: median(&per[6]),
        cores_busy: (median(&busy_j1), median(&busy_j2)),
        floor_new_tasks: median(&per[7]),
        rounds: per.to_vec(),
    }
}

/// `exec::run` of `true` `n` times exactly as the drain calls it (one new task and log each, the
/// hook environment), without the database; total ms. With `dirs_exist` the tasks' log folders
/// are created beforehand, untimed, so only the log file is new, as in the floor loop.
fn exec_only(
    ws: &Workspace,
    base: &hookq::exec::Environ,
    stop: &Stop,
    prefix: &str,
    n: usize,
    dirs_exist: bool,
) -> f64 {
    let cfg = hookq::Config::default();
    let tasks: Vec<TaskId> = (0..n)
        .map(|i| TaskId::new(format!("{prefix}{i:07}")).expect("id"))
        .collect();
    if dirs_exist {
        for task in &tasks {
            std::fs::create_dir_all(ws.hook_log_dir(task)).expect("create a log folder");
        }
    }
    timed(|| {
        for task in &tasks {
            let worktree = ws.worktree(task);
            let env = hook_env(
                base,
                &HookVars {
                    task: task.as_str(),
                    plan: "p1",
                    attempt: 1,
                    worktree: &worktree,
                    target_branch: cfg.target_branch(),
                    merged_sha: None,
                    state: "review.awaiting_human",
                    point: Point::AfterAwaitingHuman,
                },
            );
            let log = ws.hook_log_path(task, Point::AfterAwaitingHuman, 1);
            let header = format!(
                "occurrence 1 ARC_STATE=review.awaiting_human pass 1: {}",
                "true"
            );
            let spec = exec::Spec {
                line: "true",
                cwd: ws.root(),
                env: &env,
                timeout: cfg.gate.command_timeout,
                kill_grace: cfg.gate.kill_grace,
                max_log_bytes: cfg.gate.max_log_bytes,
                log: &log,
                opened: None,
                header: &header,
                owner: None,
            };
            let done = exec::run(&spec, stop).expect("exec::run");
            assert_eq!(done.ending, Ending::Exited(0));
        }
    })
    .1
}

/// The floor row F2 and the rows of figures 2 and 6.
pub fn rows(d: &DrainFigures) -> Vec<Row> {
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let floor = "spawn sh -c true -> new log";
    let num = super::report::num;
    let spread = |i: usize| {
        let r = &d.rounds[i];
        let (lo, hi) = (percentile(r, 0.0), percentile(r, 100.0));
        format!("{} rounds from {} to {} ms", r.len(), num(lo), num(hi))
    };
    // Each round's ratio to the same round's baseline: how far one run's ratio can move with
    // nothing changed, beside the ratio of the medians the verdict is on.
    let paired = |i: usize, base: usize| {
        let ratios: Vec<f64> = d.rounds[i]
            .iter()
            .zip(&d.rounds[base])
            .map(|(x, b)| x / b)
            .collect();
        format!(
            "round by round {} to {} (median {})",
            num(percentile(&ratios, 0.0)),
            num(percentile(&ratios, 100.0)),
            num(median(&ratios))
        )
    };
    vec![
        Row::floor("F2", "spawn /bin/sh -c true, output to a newly created log file", d.floor, "ms", Some(1.7))
            .note("the drain's floor loop; median over rounds of the loop's mean")
            .note(spread(0)),
        Row::new("2a", "drain, 1 `true` per point, jobs 1, task log folders exist (per point)", d.drain_j1, "ms")
            .vs(floor, d.floor)
            .target(Target::ratio_at_most(1.15))
            .note("Drainer::drain, one pass, RunnerLock held; one new log file per point, as in the floor loop (the tasks had an earlier point)")
            .note(format!("2a - 2c = {} ms/point: the drain's own work around a command", num(d.drain_j1 - d.exec_existing_dirs)))
            .note(spread(1))
            .note(paired(1, 0)),
        Row::new("2b", "drain as 2a, every point a new task (per point)", d.drain_j1_new_tasks, "ms")
            .vs(floor, d.floor)
            .target(Target::ratio_at_most(1.15))
            .note("each point also creates runs/<task>/ and runs/<task>/hooks/: 3 new inodes per point against the floor's 1")
            .note(format!("2b / 2f = {}: what hookq adds to the floor loop laid out as hookq lays out a new task's log", num(d.drain_j1_new_tasks / d.floor_new_tasks)))
            .note(spread(2))
            .note(paired(2, 0)),
        Row::new("2c", "  of which exec::run alone, folders exist (no SQLite)", d.exec_existing_dirs, "ms")
            .vs(floor, d.floor)
            .note("exec::run as the drain calls it, outside any drain: exec's own overhead over the floor (pipe, poll, pidfd, hook env, header/footer)")
            .note(spread(4)),
        Row::new("2d", "  of which exec::run alone, new task (no SQLite)", d.exec_new_tasks, "ms")
            .vs(floor, d.floor)
            .note(format!("2d - 2c = {} ms/point: the two new folders", num(d.exec_new_tasks - d.exec_existing_dirs)))
            .note(spread(5)),
        Row::new("2e", "  bookkeeping only: same drain, no commands configured", d.bookkeeping, "ms")
            .vs(floor, d.floor)
            .note("read per point, clears committed in batches of 64, no spawn, no mark_started")
            .note(spread(6)),
        Row::new("2f", "  floor of 2b's ratio: the floor loop, each log in 2 new folders", d.floor_new_tasks, "ms")
            .vs(floor, d.floor)
            .note("F2's loop with hookq's layout for a task's first point: <task>/ and <task>/hooks/ made with the file, while the command before runs (the drain makes them as the command starts)")
            .note(spread(7)),
        Row::new("6", "parallel drain: jobs 2, new tasks (per point)", d.drain_j2_new_tasks, "ms")
            .throughput_vs("jobs 1, new tasks (2b)", d.drain_j1_new_tasks)
            .target(Target::ratio_at_least(1.6))
            .note("throughput ratio: jobs 1 time / jobs 2 time; points of distinct tasks, 1 `true` each")
            .note(spread(3)),
        Row::new("6b", "  cores busy during the jobs 1 drain of 2b (hookq and its commands)", d.cores_busy.0, "cores")
            .vs("the machine's CPUs", cpus as f64)
            .note(format!(
                "CPU time (getrusage: the bench and the commands it reaped) / wall time; jobs 2 kept {} busy. Figure 6 cannot exceed {} / {} = {} unless a point costs less CPU with two at once",
                num(d.cores_busy.1), cpus, num(d.cores_busy.0), num(cpus as f64 / d.cores_busy.0)
            )),
    ]
}
