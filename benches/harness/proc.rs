//! Whole processes: the built `hookq` binary, a child's wall time and peak RSS, and a live
//! process's CPU time and RSS from /proc.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The `hookq` binary cargo built for this run (release under `cargo bench`, debug under
/// `cargo test`).
pub fn hookq_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_hookq"))
}

/// `hookq -C <root> <args>` with output discarded.
pub fn hookq(root: &std::path::Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(hookq_bin());
    cmd.arg("-C")
        .arg(root)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    cmd
}

/// How a measured child ended.
#[derive(Debug, Clone, Copy)]
pub struct Exit {
    /// Wall time from spawn to reap.
    pub wall: Duration,
    /// The highest `VmHWM` sampled from /proc/<pid>/status while it ran, KiB (0 when not sampled).
    pub peak_kib: u64,
}

/// Spawns `cmd` and waits for it; panics with its stderr unless it exits 0: a bench on a
/// failing command measures nothing.
pub fn run_timed(cmd: &mut Command) -> Exit {
    let start = Instant::now();
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot spawn {cmd:?}: {e}"));
    let wall = start.elapsed();
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    Exit { wall, peak_kib: 0 }
}

/// Like [`run_timed`], sampling the child's peak RSS every millisecond while it runs.
///
/// Not `ru_maxrss`: a child started by posix_spawn (vfork) inherits the parent's high-water mark
/// at exec, so `wait4` would report this bench's own peak. `VmHWM` belongs to the child's own
/// address space and only grows, so the last sample before exit misses at most the growth of
/// its final millisecond.
pub fn run_peak_rss(cmd: &mut Command) -> Exit {
    let start = Instant::now();
    let mut child = cmd
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot spawn {cmd:?}: {e}"));
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak_kib = 0;
    let status = loop {
        // A zombie's status has no VmHWM: those reads are skipped.
        if let Some(kib) = std::fs::read_to_string(&status_path)
            .ok()
            .and_then(|t| field_kib(&t, "VmHWM"))
        {
            peak_kib = peak_kib.max(kib);
        }
        if let Some(status) = child.try_wait().expect("wait for the child") {
            break status;
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    assert!(status.success(), "{cmd:?} failed ({status})");
    Exit {
        wall: start.elapsed(),
        peak_kib,
    }
}

/// A live process's CPU time so far, from /proc.
#[derive(Debug, Clone, Copy)]
pub struct Cpu {
    /// utime + stime from /proc/<pid>/stat, in clock ticks.
    pub ticks: u64,
    /// Time on a CPU from /proc/<pid>/schedstat, ns (exact; `None` without schedstats).
    pub sched_ns: Option<u64>,
}

/// Reads `pid`'s CPU time.
pub fn cpu(pid: u32) -> Cpu {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("read /proc/<pid>/stat");
    // The command name may hold spaces: fields are counted after its closing parenthesis.
    let rest = &stat[stat.rfind(')').expect("stat has a comm") + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // Fields 14 and 15 of stat(5); `rest` starts at field 3.
    let ticks = f[11].parse::<u64>().unwrap_or(0) + f[12].parse::<u64>().unwrap_or(0);
    let sched_ns = std::fs::read_to_string(format!("/proc/{pid}/schedstat"))
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()));
    Cpu { ticks, sched_ns }
}

/// CPU time (user and system) of this process and of the children it waited for, from
/// `getrusage`: microseconds, where /proc's clock ticks (10 ms) read 0 for a short drain.
// `getrusage` has no safe binding in the crates hookq uses; a benchmark's own measurement.
#[allow(unsafe_code)]
pub fn own_and_children_cpu() -> std::time::Duration {
    let of = |who| {
        // SAFETY: `getrusage` only writes the struct it is given, which is plain data.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `ru` outlives the call, which only writes it.
        let rc = unsafe { libc::getrusage(who, &mut ru) };
        assert_eq!(rc, 0, "getrusage: {}", std::io::Error::last_os_error());
        let tv =
            |t: libc::timeval| std::time::Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
        tv(ru.ru_utime) + tv(ru.ru_stime)
    };
    of(libc::RUSAGE_SELF) + of(libc::RUSAGE_CHILDREN)
}

/// Clock ticks per second for /proc/<pid>/stat times.
pub fn clock_ticks() -> u64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100)
}

/// A field of /proc/<pid>/status in KiB (`VmRSS`, `VmHWM`).
pub fn status_kib(pid: u32, field: &str) -> u64 {
    let text =
        std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc/<pid>/status");
    field_kib(&text, field).unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

fn field_kib(status: &str, field: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// The CPU time of a process and of every live process below it (a server and its backends),
/// each read from /proc: seconds per pid.
pub fn tree_cpu(root: u32) -> std::collections::HashMap<u32, f64> {
    let mut parents: std::collections::HashMap<u32, u32> = std::collections::HashMap::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        // Field 4 of stat(5), the parent's pid; the text after the name starts at field 3.
        if let Some(ppid) = stat[close + 2..]
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse().ok())
        {
            parents.insert(pid, ppid);
        }
    }
    let below = |mut pid: u32| loop {
        if pid == root {
            return true;
        }
        match parents.get(&pid) {
            Some(&p) if p != 0 && p != pid => pid = p,
            _ => return false,
        }
    };
    let ticks = clock_ticks() as f64;
    parents
        .keys()
        .copied()
        .filter(|&pid| below(pid))
        .filter_map(|pid| {
            // A process that ended since the listing has no CPU to read.
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let rest = &stat[stat.rfind(')')? + 2..];
            let f: Vec<&str> = rest.split_whitespace().collect();
            let secs = match std::fs::read_to_string(format!("/proc/{pid}/schedstat"))
                .ok()
                .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
            {
                Some(ns) => ns as f64 / 1e9,
                None => (f[11].parse::<u64>().ok()? + f[12].parse::<u64>().ok()?) as f64 / ticks,
            };
            Some((pid, secs))
        })
        .collect()
}

/// The CPU seconds a tree of processes spent between two [`tree_cpu`] readings: each process's
/// growth, a process that started between them counted from 0 (one that ended is lost).
pub fn tree_cpu_spent(
    before: &std::collections::HashMap<u32, f64>,
    after: &std::collections::HashMap<u32, f64>,
) -> f64 {
    after
        .iter()
        .map(|(pid, a)| (a - before.get(pid).copied().unwrap_or(0.0)).max(0.0))
        .sum()
}
