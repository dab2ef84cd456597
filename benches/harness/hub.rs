//! Figure 4 and the hub half of figure 5: `hookq hub` (the built binary) timed from a commit in
//! this process to the start of the hook it fires, then watched idle for CPU and memory.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hookq::queue::record::{MoveFacts, move_task};
use hookq::queue::store::Store;
use hookq::{Phase, TaskId};

use super::fixture;
use super::proc::{self, hookq_bin};
use super::report::{Row, Target};
use super::sizes::Sizes;
use super::stats::{ms, percentile};

/// How long one transition may take to reach its hook before it counts as lost.
pub const LOST: Duration = Duration::from_secs(10);

/// What figure 4 measured.
pub struct Hub {
    /// Commit-to-hook-start latencies, ms, one per transition.
    pub latencies: Vec<f64>,
    /// Transitions whose hook never started within `LOST`.
    pub lost: usize,
    /// Idle CPU, percent of one core: from schedstat (exact) when the kernel has it.
    pub idle_cpu_sched: Option<f64>,
    /// Idle CPU, percent of one core, from /proc/<pid>/stat utime + stime (tick-sampled).
    pub idle_cpu_ticks: f64,
    /// The idle window, seconds.
    pub idle_secs: f64,
    /// The idle hub's VmRSS and VmHWM, KiB.
    pub rss_kib: (u64, u64),
    /// The hub's VmRSS after its first pass, KiB.
    pub first_kib: u64,
}

/// A tiny deterministic generator for the gaps between commits.
pub struct Lcg(pub u64);

impl Lcg {
    /// The next number below `n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// The wall clock, ns since the epoch, as `date +%s%N` prints it.
pub fn now_ns() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_nanos() as i128
}

/// The latency from a commit to its hook's start, ms, `committed_ns` read just after the commit
/// returned. Descheduled between the commit and that read, this process can read its clock after
/// the hook started: such a reading counts as 0, the least a latency can be, never below.
pub fn latency_ms(hook_ns: i128, committed_ns: i128) -> f64 {
    (hook_ns - committed_ns).max(0) as f64 / 1e6
}

/// "; N read as 0 ..." for the notes of figures 4 and P3, when any latency was.
pub fn early_note(latencies: &[f64]) -> String {
    match latencies.iter().filter(|&&x| x == 0.0).count() {
        0 => String::new(),
        n => format!("; {n} hooks started before the commit's return was read (counted as 0 ms)"),
    }
}

/// Starts the hub, commits `sizes.hub_transitions` transitions one at a time (each waited for,
/// then a random 0-50 ms pause so commits fall at every moment of the hub's wait), then
/// watches the hub idle.
pub fn measure(dir: &Path, sizes: &Sizes) -> Hub {
    let n = sizes.hub_transitions;
    // The hook's first act is to read the clock; `date` is the coreutils one (`%N`: ns).
    let ws = fixture::workspace(
        dir,
        "hub",
        &[r#"echo "$ARC_TASK $(date +%s%N)" >> seen.log"#],
    );
    {
        let mut c = fixture::bulk_conn(&ws);
        fixture::add_tasks(&mut c, "h", "p1", "running.gate", n + 1);
        fixture::checkpoint(&c);
    }
    let seen_path = ws.root().join("seen.log");
    std::fs::write(&seen_path, "").expect("create seen.log");
    let hub_err = std::fs::File::create(dir.join("hub.stderr")).expect("hub stderr file");
    let mut child = Command::new(hookq_bin())
        .arg("-C")
        .arg(ws.root())
        .arg("hub")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(hub_err)
        .spawn()
        .expect("start hookq hub");
    let pid = child.id();
    let mut store = Store::open(&ws.db_path()).expect("open the store");
    let awaiting = Phase::new("review.awaiting_human").expect("phase");
    let mut seen = Seen::new(&seen_path);
    let mut commit = |i: usize| -> i128 {
        let task = TaskId::new(format!("h{i:07}")).expect("id");
        store
            .write(|tx| move_task(tx, &task, &awaiting, &MoveFacts::default()))
            .expect("commit a transition");
        now_ns()
    };
    // A first transition, untimed: the hub is up once its hook has run.
    commit(n);
    seen.wait_for(&format!("h{n:07}"), Duration::from_secs(60))
        .expect("the hub ran its first hook (see hub.stderr in the bench dir)");
    std::thread::sleep(Duration::from_millis(200));
    let first_kib = proc::status_kib(pid, "VmRSS");
    let mut rng = Lcg(0x5eed);
    let mut latencies = Vec::with_capacity(n);
    let mut lost = 0;
    for i in 0..n {
        std::thread::sleep(Duration::from_millis(rng.below(50)));
        let at = commit(i);
        match seen.wait_for(&format!("h{i:07}"), LOST) {
            Some(hook_ns) => latencies.push(latency_ms(hook_ns, at)),
            None => {
                lost += 1;
                latencies.push(ms(LOST));
            }
        }
    }
    // Let the last pass finish, then watch the hub with nothing to do.
    std::thread::sleep(Duration::from_secs(1));
    let (c0, t0) = (proc::cpu(pid), Instant::now());
    std::thread::sleep(sizes.hub_idle);
    let (c1, wall) = (proc::cpu(pid), t0.elapsed().as_secs_f64());
    let rss_kib = (
        proc::status_kib(pid, "VmRSS"),
        proc::status_kib(pid, "VmHWM"),
    );
    let idle_cpu_ticks = (c1.ticks - c0.ticks) as f64 / proc::clock_ticks() as f64 / wall * 100.0;
    let idle_cpu_sched = match (c0.sched_ns, c1.sched_ns) {
        (Some(a), Some(b)) => Some((b - a) as f64 / 1e9 / wall * 100.0),
        _ => None,
    };
    let pid_t = rustix::process::Pid::from_raw(pid as i32).expect("a pid");
    rustix::process::kill_process(pid_t, rustix::process::Signal::TERM).expect("SIGTERM the hub");
    let status = child.wait().expect("reap the hub");
    assert!(status.success(), "hub exited with {status}");
    Hub {
        latencies,
        lost,
        idle_cpu_sched,
        idle_cpu_ticks,
        idle_secs: wall,
        rss_kib,
        first_kib,
    }
}

/// `seen.log` read as it grows: `<task> <ns>` per hook run.
pub struct Seen {
    file: std::fs::File,
    at: u64,
    partial: String,
    lines: std::collections::HashMap<String, i128>,
}

impl Seen {
    /// Reads `path` from its start.
    pub fn new(path: &Path) -> Self {
        Self {
            file: std::fs::File::open(path).expect("open seen.log"),
            at: 0,
            partial: String::new(),
            lines: Default::default(),
        }
    }

    /// The hook start time of `task`, waiting up to `limit` for it to appear.
    pub fn wait_for(&mut self, task: &str, limit: Duration) -> Option<i128> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(ns) = self.lines.get(task) {
                return Some(*ns);
            }
            if Instant::now() >= deadline {
                return None;
            }
            self.file
                .seek(SeekFrom::Start(self.at))
                .expect("seek seen.log");
            let mut more = String::new();
            let got = self.file.read_to_string(&mut more).expect("read seen.log");
            self.at += got as u64;
            self.partial.push_str(&more);
            while let Some(nl) = self.partial.find('\n') {
                let line: String = self.partial.drain(..=nl).collect();
                if let Some((t, ns)) = line.trim().split_once(' ') {
                    let ns = ns
                        .parse()
                        .unwrap_or_else(|_| panic!("`date +%s%N` gave {ns:?}"));
                    self.lines.insert(t.to_owned(), ns);
                }
            }
            if !self.lines.contains_key(task) {
                std::thread::sleep(Duration::from_micros(500));
            }
        }
    }
}

/// The rows of figure 4 and the hub row of figure 5. `spawn_log` is floor F2.
pub fn rows(h: &Hub, spawn_log: f64) -> Vec<Row> {
    let n = h.latencies.len();
    let lost = if h.lost > 0 {
        format!("; {} LOST (counted as {} ms)", h.lost, ms(LOST))
    } else {
        String::new()
    };
    let (cpu, source) = match h.idle_cpu_sched {
        Some(v) => (v, "from /proc/<pid>/schedstat (exact)"),
        None => (h.idle_cpu_ticks, "from /proc/<pid>/stat utime+stime"),
    };
    let mib = |k: u64| k as f64 / 1024.0;
    vec![
        Row::new("4a", "hub latency p50: commit -> hook start (`hookq hub`, woken by the kernel)", percentile(&h.latencies, 50.0), "ms")
            .vs("spawn -> new log (F2)", spawn_log)
            .target(Target::value_at_most(100.0))
            .note(format!(
                "{n} transitions, each a durable txn from this process, waited for, then 0-50 ms random pause; hook start = `date +%s%N` in the hook{lost}{}",
                early_note(&h.latencies)
            )),
        Row::new("4b", "hub latency p99", percentile(&h.latencies, 99.0), "ms")
            .vs("spawn -> new log (F2)", spawn_log)
            .target(Target::value_at_most(250.0)),
        Row::new("4c", "idle hub CPU", cpu, "% core")
            .vs("one core", 100.0)
            .target(Target::value_below(1.0))
            .note(format!(
                "over {:.1} s {source}; utime+stime from /proc/<pid>/stat says {:.2} % (10 ms ticks)",
                h.idle_secs, h.idle_cpu_ticks
            )),
        Row::new("5b", "idle hub RSS (VmRSS, after the latency run)", mib(h.rss_kib.0), "MiB")
            .vs("hub VmRSS after its first pass", mib(h.first_kib))
            .target(Target::value_below(20.0))
            .note(format!("VmHWM {:.1} MiB", mib(h.rss_kib.1))),
    ]
}
