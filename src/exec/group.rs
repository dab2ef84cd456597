//! Process groups as `/proc` shows them: whether one still runs, which of its members live,
//! whether it is still the one a killed hookq named, and ending those it left behind.

use std::path::Path;
use std::time::{Duration, Instant};

/// A hook command's process group: its leader's pid (the group's id) and when it started
/// (unix ms), which tells the leader from a process given the same pid at another time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Group {
    /// The process group id, the leader's pid.
    pub pgid: i32,
    /// When the leader started, unix ms, as hookq saw it start.
    pub started_ms: i64,
}

/// How far apart the start time a group is named with and the one the kernel gives its leader
/// may be for it to count as the same process: the kernel's is at 10 ms ticks after a boot time
/// known to the second, and the wall clock may have been stepped since boot by a little. A pid
/// given to another process within this long after a command started would need the pid space
/// to wrap in that time.
pub const SAME_START_MS: i64 = 2_000;

/// The fields of `/proc/<pid>/stat` (or of the `stat` file at `path`) after the command name,
/// which is in parentheses and may hold spaces and parentheses: the first is the state (field
/// 3 of proc(5)).
pub fn stat_fields(path: &Path) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(path).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    Some(after.split_whitespace().map(str::to_owned).collect())
}

/// Whether a process of group `pgid` still runs. A group of zombies has ended: a zombie has
/// exited and waits to be collected, an orphan's by init, which some machines (this one's PID 1)
/// do a second or two late. `kill(-pgid, 0)` counts zombies, so the `/proc` scan confirms what
/// it finds; a group `kill` does not find costs no scan. Both ending a timed-out command
/// ([`crate::exec::run`]) and ending what a killed runner left (the queue's runner lock) wait on this.
pub fn group_running(pgid: rustix::process::Pid) -> bool {
    rustix::process::test_kill_process_group(pgid).is_ok()
        && has_live_member(pgid.as_raw_nonzero().get())
}

/// Whether a process of group `pgid` is alive, not a zombie (a scan of `/proc`; `true` when
/// `/proc` cannot be read).
pub fn has_live_member(pgid: i32) -> bool {
    live_members(pgid).is_none_or(|mut m| m.next().is_some())
}

/// The pids of group `pgid`'s processes that are alive, not zombies, as `/proc` lists them;
/// `None` when it cannot be read.
pub fn live_members(pgid: i32) -> Option<impl Iterator<Item = i32>> {
    let dir = std::fs::read_dir("/proc").ok()?;
    Some(dir.flatten().filter_map(move |e| {
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let f = stat_fields(&e.path().join("stat"))?;
        // State (field 3), ppid, pgrp (field 5).
        let pgrp = f.get(2).and_then(|v| v.parse::<i32>().ok());
        (pgrp == Some(pgid) && f.first().is_some_and(|s| s != "Z" && s != "X")).then_some(pid)
    }))
}

/// When this machine booted, unix ms (`btime` in `/proc/stat`, whole seconds).
pub fn boot_ms() -> Option<i64> {
    let boot: i64 = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    Some(boot * 1000)
}

/// When process `pid` started, unix ms: its start in clock ticks after boot (field 22 of
/// `/proc/<pid>/stat`) after the boot time.
pub fn started_ms(pid: i32) -> Option<i64> {
    let ticks: i64 = stat_fields(Path::new(&format!("/proc/{pid}/stat")))?
        .get(19)?
        .parse()
        .ok()?;
    let hz = super::sys::clock_ticks_per_second();
    Some(boot_ms()? + ticks * 1000 / hz)
}

/// Whether the process group `group` names still runs the command it was named for.
///
/// - A group named before this machine booted is not: the line outlived a reboot, and a
///   group of that id now is another process's.
/// - While its leader lives, the leader must have started when the line says
///   ([`SAME_START_MS`]); one that started at another time has been given the same pid.
/// - Once the leader is gone, the group's id stays taken while any member lives, but by then
///   the id may also lead another group whose leader has exited too (a daemon that forked
///   away from its starter). So one of its members must still carry `mark` in its
///   environment (a `NAME=` prefix every process a hook starts inherits unless it clears its
///   environment): a group that cannot be shown to be ours is left alone.
pub fn still_named(group: Group, mark: &[u8]) -> bool {
    let Some(pgid) = rustix::process::Pid::from_raw(group.pgid) else {
        return false;
    };
    if !group_running(pgid) || boot_ms().is_some_and(|boot| group.started_ms < boot - SAME_START_MS)
    {
        return false;
    }
    match started_ms(group.pgid) {
        Some(ms) => (ms - group.started_ms).abs() <= SAME_START_MS,
        None => live_members(group.pgid).is_some_and(|mut m| m.any(|pid| carries(pid, mark))),
    }
}

/// Whether process `pid`'s environment has a variable starting with `mark`.
fn carries(pid: i32, mark: &[u8]) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|env| env.split(|&b| b == 0).any(|v| v.starts_with(mark)))
}

/// Ends every process group of `groups` that is still the one named ([`still_named`] with
/// `mark`): SIGTERM and SIGCONT to each, then SIGKILL to those left once `grace` is over, one
/// grace for all of them. Returns the groups it ended, each with whether SIGKILL went. A hook
/// model calls this for the commands a killed hookq left running.
pub fn end_left_behind(groups: Vec<Group>, grace: Duration, mark: &[u8]) -> Vec<(Group, bool)> {
    use rustix::process::{Pid, Signal, kill_process_group};
    let named: Vec<(Group, Pid)> = groups
        .into_iter()
        .filter(|g| still_named(*g, mark))
        .filter_map(|g| Some((g, Pid::from_raw(g.pgid)?)))
        .collect();
    for (_, pgid) in &named {
        let _ = kill_process_group(*pgid, Signal::TERM);
        let _ = kill_process_group(*pgid, Signal::CONT);
    }
    let deadline = Instant::now() + grace;
    let mut killed = vec![false; named.len()];
    loop {
        let running: Vec<usize> = (0..named.len())
            .filter(|&i| group_running(named[i].1))
            .collect();
        if running.is_empty() {
            break;
        }
        if Instant::now() >= deadline {
            for i in running {
                let _ = kill_process_group(named[i].1, Signal::KILL);
                killed[i] = true;
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    named.into_iter().map(|(g, _)| g).zip(killed).collect()
}
