//! Figures Q3 and Q4: one `hookq hub` (the built binary) serving many SQLite workspaces. Q3,
//! a hundred idle queues: the CPU the hub spends waiting, and commit -> hook start on a queue
//! picked at random. Q4, fairness: nine one-point queues recorded while a queue of a thousand
//! points keeps every job slot busy, each started behind its commit within about one hook's
//! time, since a slot goes to the queue that asked first. Also what the PostgreSQL figures of
//! a hub of many queues (`postgres/fleet.rs`) start their hub with.

use std::collections::HashMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use hookq::queue::record::{MoveFacts, move_task};
use hookq::queue::store::Store;
use hookq::{Phase, TaskId, Workspace};

use super::fixture;
use super::hub::{LOST, Lcg, Seen, early_note, latency_ms, now_ns};
use super::proc::{self, hookq_bin};
use super::report::{Row, Target};
use super::sizes::Sizes;
use super::stats::{median, ms, percentile};

/// How long a hub of many queues may take to say it is ready.
const READY: Duration = Duration::from_secs(600);

/// The hook command that appends `<task> <ns>` to `seen`, reading the clock first: `date` is
/// the coreutils one (`%N`: ns). Every queue of a hub appends to the same file.
pub fn seen_hook(seen: &Path) -> String {
    format!(r#"echo "$ARC_TASK $(date +%s%N)" >> '{}'"#, seen.display())
}

/// `hookq hub --workspaces <listing> <args>`, its stderr into `<dir>/<name>.stderr`, `env`
/// set, once it says every queue is attached (its readiness line on stdout).
pub fn start_fleet(
    dir: &Path,
    name: &str,
    roots: &[PathBuf],
    args: &[&str],
    env: &[(&str, &str)],
) -> Child {
    let listing = dir.join(format!("{name}.list"));
    let text: String = roots.iter().map(|r| format!("{}\n", r.display())).collect();
    std::fs::write(&listing, text).expect("write the listing");
    let err = std::fs::File::create(dir.join(format!("{name}.stderr"))).expect("hub stderr");
    let mut cmd = Command::new(hookq_bin());
    cmd.arg("hub")
        .arg("--workspaces")
        .arg(&listing)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(err);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("start hookq hub");
    let out = child.stdout.take().expect("the hub's stdout");
    let (tx, rx) = mpsc::channel();
    // Read to its end, so that the hub never blocks on a full pipe.
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let until = Instant::now() + READY;
    loop {
        let left = until.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) if line.starts_with("hookq hub: ready") => return child,
            Ok(_) => {}
            Err(e) => panic!(
                "the hub of {} queues did not say it was ready ({e}; see {name}.stderr in the bench dir)",
                roots.len()
            ),
        }
    }
}

/// The CPU a process spent so far: seconds from its threads' schedstat (exact; `None`
/// without schedstats), and from /proc/<pid>/stat utime+stime (10 ms ticks).
pub fn process_cpu(pid: u32) -> (Option<f64>, f64) {
    let ticks = proc::cpu(pid).ticks as f64 / proc::clock_ticks() as f64;
    let sched = std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()
        .map(|tasks| {
            tasks
                .flatten()
                .filter_map(|t| {
                    std::fs::read_to_string(t.path().join("schedstat"))
                        .ok()?
                        .split_whitespace()
                        .next()?
                        .parse::<u64>()
                        .ok()
                })
                .sum::<u64>() as f64
                / 1e9
        })
        .filter(|&s| s > 0.0);
    (sched, ticks)
}

/// SIGTERM, then reaps; the hub must exit 0.
pub fn stop(child: &mut Child) {
    let pid = rustix::process::Pid::from_raw(child.id() as i32).expect("a pid");
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM the hub");
    let status = child.wait().expect("reap the hub");
    assert!(status.success(), "hub exited with {status}");
}

/// What Q3 measured.
pub struct SqliteFleet {
    /// Workspaces the hub served.
    pub queues: usize,
    /// Commit-to-hook-start latencies, ms, each on a queue picked at random.
    pub latencies: Vec<f64>,
    /// Of those, how many never started within [`LOST`].
    pub lost: usize,
    /// The idle hub's CPU, % of one core: from its threads' schedstat, and from its ticks.
    pub idle_cpu_sched: Option<f64>,
    pub idle_cpu_ticks: f64,
    /// The idle window, seconds.
    pub idle_secs: f64,
    /// Whether the hub said it polls for want of an inotify watch.
    pub polling: bool,
}

/// Q3: a hub of `sizes.fleet_sqlite` workspaces, each a queue of its own whose hook notes its
/// start; commits on queues picked at random, each waited for, then a 0-50 ms pause, as
/// figure 4 does; then the hub watched idle.
pub fn measure_sqlite(dir: &Path, sizes: &Sizes) -> SqliteFleet {
    let (n, commits) = (sizes.fleet_sqlite, sizes.fleet_commits);
    let seen_path = dir.join("q3-seen.log");
    std::fs::write(&seen_path, "").expect("create q3-seen.log");
    let hook = seen_hook(&seen_path);
    let mut rng = Lcg(0xf1ee7);
    let picks: Vec<usize> = (0..commits).map(|_| rng.below(n as u64) as usize).collect();
    let mut roots = Vec::with_capacity(n);
    let mut workspaces = Vec::with_capacity(n);
    for q in 0..n {
        let ws = fixture::workspace(dir, &format!("q3-{q}"), &[hook.as_str()]);
        let mut c = fixture::bulk_conn(&ws);
        // Task `q<q>-<j>` is the one commit j moves, on the queue it picked; one more each
        // for the first, untimed commit.
        fixture::add_tasks(&mut c, &format!("q{q}-"), "p1", "running.gate", commits + 1);
        fixture::checkpoint(&c);
        roots.push(ws.root().to_path_buf());
        workspaces.push(ws);
    }
    let mut child = start_fleet(dir, "q3-hub", &roots, &[], &[]);
    let pid = child.id();
    let mut stores: HashMap<usize, Store> = HashMap::new();
    let awaiting = Phase::new("review.awaiting_human").expect("phase");
    let mut commit = |q: usize, j: usize| -> i128 {
        let store = stores.entry(q).or_insert_with(|| {
            Store::open(&workspaces[q].db_path()).expect("open a queue's store")
        });
        let task = TaskId::new(format!("q{q}-{j:07}")).expect("id");
        store
            .write(|tx| move_task(tx, &task, &awaiting, &MoveFacts::default()))
            .expect("commit a transition");
        now_ns()
    };
    let mut seen = Seen::new(&seen_path);
    // A first transition, untimed: the hub runs hooks once it has run this one.
    commit(0, commits);
    seen.wait_for(&format!("q0-{commits:07}"), Duration::from_secs(60))
        .expect("the hub ran its first hook (see q3-hub.stderr in the bench dir)");
    let (mut latencies, mut lost) = (Vec::with_capacity(commits), 0);
    for (j, &q) in picks.iter().enumerate() {
        std::thread::sleep(Duration::from_millis(rng.below(50)));
        let at = commit(q, j);
        match seen.wait_for(&format!("q{q}-{j:07}"), LOST) {
            Some(hook_ns) => latencies.push(latency_ms(hook_ns, at)),
            None => {
                lost += 1;
                latencies.push(ms(LOST));
            }
        }
    }
    drop(stores);
    // Let the last pass end, then watch the hub with nothing to do.
    std::thread::sleep(Duration::from_secs(1));
    let (before, t0) = (process_cpu(pid), Instant::now());
    std::thread::sleep(sizes.fleet_idle);
    let (after, wall) = (process_cpu(pid), t0.elapsed().as_secs_f64());
    stop(&mut child);
    let polling =
        std::fs::read_to_string(dir.join("q3-hub.stderr")).is_ok_and(|t| t.contains("polling"));
    SqliteFleet {
        queues: n,
        latencies,
        lost,
        idle_cpu_sched: before.0.zip(after.0).map(|(a, b)| (b - a) / wall * 100.0),
        idle_cpu_ticks: (after.1 - before.1) / wall * 100.0,
        idle_secs: wall,
        polling,
    }
}

/// What Q4 measured.
pub struct Fairness {
    /// Points of the long queue.
    pub points: usize,
    /// How long each hook sleeps, ms.
    pub hook_ms: f64,
    /// Each one-point queue's start behind its commit, ms.
    pub delays: Vec<f64>,
    /// The long queue's points started when the last of them had.
    pub long_started: usize,
    /// Of the nine, how many never started within [`LOST`].
    pub lost: usize,
}

/// One-point queues recorded after the long one in Q4.
pub const SHORT_QUEUES: usize = 9;
/// Job slots of Q4's hub.
pub const JOBS: usize = 2;

/// Q4: a hub with [`JOBS`] job slots over a queue of `sizes.fleet_points` points (of as many
/// tasks, so that it takes every slot) and [`SHORT_QUEUES`] queues of one task each, every
/// hook noting its start then sleeping `sizes.fleet_hook`. Once the long queue runs, each
/// short queue's point is recorded in turn, at a random moment of the running hooks, and
/// waited for.
pub fn measure_fairness(dir: &Path, sizes: &Sizes) -> Fairness {
    let points = sizes.fleet_points;
    let hook_s = sizes.fleet_hook.as_secs_f64();
    let seen_path = dir.join("q4-seen.log");
    std::fs::write(&seen_path, "").expect("create q4-seen.log");
    let hook = format!("{}; sleep {hook_s}", seen_hook(&seen_path));
    let long = fixture::workspace(dir, "q4-long", &[hook.as_str()]);
    {
        let mut c = fixture::bulk_conn(&long);
        fixture::add_tasks(&mut c, "long-", "p1", "review.awaiting_human", points);
        fixture::add_points(&mut c, "long-", points, points);
        fixture::checkpoint(&c);
    }
    let short: Vec<Workspace> = (0..SHORT_QUEUES)
        .map(|k| {
            let ws = fixture::workspace(dir, &format!("q4-short-{k}"), &[hook.as_str()]);
            let mut c = fixture::bulk_conn(&ws);
            fixture::add_tasks(&mut c, &format!("s{k}-"), "p1", "running.gate", 1);
            ws
        })
        .collect();
    let roots: Vec<PathBuf> = std::iter::once(&long)
        .chain(&short)
        .map(|ws| ws.root().to_path_buf())
        .collect();
    let jobs = JOBS.to_string();
    let mut child = start_fleet(dir, "q4-hub", &roots, &["--jobs", &jobs], &[]);
    let mut seen = Seen::new(&seen_path);
    // Every slot runs the long queue's hooks before the first short queue records.
    for i in 0..JOBS {
        seen.wait_for(&format!("long-{i:07}"), Duration::from_secs(60))
            .expect("the long queue runs (see q4-hub.stderr in the bench dir)");
    }
    let awaiting = Phase::new("review.awaiting_human").expect("phase");
    let mut rng = Lcg(0xfa1e);
    let (mut delays, mut lost) = (Vec::with_capacity(SHORT_QUEUES), 0);
    for (k, ws) in short.iter().enumerate() {
        let mut store = Store::open(&ws.db_path()).expect("open a short queue's store");
        let task = TaskId::new(format!("s{k}-0000000")).expect("id");
        std::thread::sleep(Duration::from_millis(
            rng.below(sizes.fleet_hook.as_millis() as u64),
        ));
        store
            .write(|tx| move_task(tx, &task, &awaiting, &MoveFacts::default()))
            .expect("record the short queue's point");
        let at = now_ns();
        match seen.wait_for(task.as_str(), LOST) {
            Some(hook_ns) => delays.push(latency_ms(hook_ns, at)),
            None => {
                lost += 1;
                delays.push(ms(LOST));
            }
        }
    }
    let long_started = (0..points)
        .take_while(|i| {
            seen.wait_for(&format!("long-{i:07}"), Duration::ZERO)
                .is_some()
        })
        .count();
    // The first stop lets the running hooks end; the long queue's other points stay pending.
    stop(&mut child);
    Fairness {
        points,
        hook_ms: sizes.fleet_hook.as_secs_f64() * 1e3,
        delays,
        long_started,
        lost,
    }
}

/// Rows Q3a, Q3b and Q4.
pub fn rows(q3: &SqliteFleet, q4: &Fairness) -> Vec<Row> {
    let lost = |lost: usize| {
        if lost > 0 {
            format!("; {lost} LOST (counted as {} ms)", ms(LOST))
        } else {
            String::new()
        }
    };
    let (cpu, source) = match q3.idle_cpu_sched {
        Some(v) => (v, "from its threads' /proc schedstat (exact)"),
        None => (q3.idle_cpu_ticks, "from /proc/<pid>/stat utime+stime"),
    };
    let polling = if q3.polling {
        "; the hub said it polls for want of an inotify watch"
    } else {
        ""
    };
    let slowest = q4.delays.iter().copied().fold(0.0, f64::max);
    let finished = if q4.long_started >= q4.points {
        "; the long queue had ended meanwhile: not a measure of fairness"
    } else {
        ""
    };
    vec![
        Row::new(
            "Q3a",
            format!("fleet: idle CPU of one `hookq hub` serving {} SQLite queues", q3.queues),
            cpu,
            "% core",
        )
        .target(Target::value_at_most(1.0))
        .note(format!(
            "over {:.1} s {source}; utime+stime says {:.2} % (10 ms ticks){polling}",
            q3.idle_secs, q3.idle_cpu_ticks
        )),
        Row::new(
            "Q3b",
            format!("fleet: commit -> hook start p50, {} SQLite queues, one hub", q3.queues),
            percentile(&q3.latencies, 50.0),
            "ms",
        )
        .target(Target::value_at_most(10.0))
        .note(format!(
            "{} transitions, each a durable txn from this process on a queue picked at random, timed from the commit's return, waited for, then 0-50 ms random pause; hook start = `date +%s%N` in the hook; p99 {:.1} ms{}{}{polling}",
            q3.latencies.len(),
            percentile(&q3.latencies, 99.0),
            lost(q3.lost),
            early_note(&q3.latencies)
        )),
        Row::new(
            "Q4",
            format!(
                "fleet: a one-point queue's start behind a {}-point queue (jobs {JOBS}), slowest of {SHORT_QUEUES}",
                q4.points
            ),
            slowest,
            "ms",
        )
        .vs("one hook's time", q4.hook_ms)
        .target(Target::ratio_at_most(1.5))
        .note(format!(
            "{SHORT_QUEUES} queues of one point each, recorded one at a time at a random moment of the long queue's running hooks (each `sleep {:.2}` after noting its start), each waited for; median {:.1} ms; the long queue had {} of its {} points started by then{}{finished}",
            q4.hook_ms / 1e3,
            median(&q4.delays),
            q4.long_started,
            q4.points,
            lost(q4.lost)
        )),
    ]
}
