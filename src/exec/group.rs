//! Process groups as `/proc` shows them: whether one still runs, and which of its members live.

use std::path::Path;

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
