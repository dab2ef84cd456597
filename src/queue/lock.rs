//! `runner.lock`: only its holder runs hooks.
//!
//! An exclusive advisory lock (`flock`) on a file that is never deleted. The holder writes its
//! pid and start time into the file so `queue` can name it; reading that never takes the lock.
//!
//! While a hook command runs, the file also names its process group (`group <pgid> <start>`).
//! A command has a group of its own, so a runner killed with SIGKILL (which it cannot catch)
//! leaves it running, and the lock goes with the runner: the next holder would run the same
//! point again beside it. So the next holder, as it takes the lock, ends every group the file
//! still names (SIGTERM and SIGCONT to all of them, then SIGKILL to those left after one
//! [`LEFT_BEHIND_GRACE`]) before it runs anything. A group is named with the time its command
//! started, so a pid since given to a process started at another time, or a line older than
//! the machine's boot, is left alone; a group whose leader has exited is ended only while a
//! member still carries a hook's environment.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use fs2::FileExt;

use crate::exec::GroupTracker;
use crate::exec::group::end_left_behind;
#[cfg(test)]
use crate::exec::group::{boot_ms, has_live_member, live_members, started_ms};

/// What every process an arc hook starts carries in its environment, unless it clears it: how
/// the next holder knows a group whose leader exited as one of ours.
const HOOK_MARK: &[u8] = b"ARC_HOOK=";
use serde::Serialize;

/// A lock file problem.
#[derive(Debug, thiserror::Error)]
#[error("{message} {}: {source}", path.display())]
pub struct LockError {
    message: &'static str,
    path: PathBuf,
    #[source]
    source: std::io::Error,
}

/// How long to wait for the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Take it only if it is free right now.
    No,
    /// Wait at most this long.
    For(Duration),
    /// Wait as long as it takes.
    Forever,
}

/// How long a command a killed runner left running gets between SIGTERM and SIGKILL when the
/// next holder takes the lock (the default `gate.kill_grace_secs`).
pub const LEFT_BEHIND_GRACE: Duration = Duration::from_secs(5);

/// Proof of holding `runner.lock`. Running hooks takes a `&RunnerLock`.
#[derive(Debug)]
pub struct RunnerLock {
    file: File,
    path: PathBuf,
    /// The holder's lines, as written when the lock was taken.
    holder: String,
    /// The process groups of the hook commands running now, as the file names them.
    running: Mutex<Running>,
    /// What taking the lock found of an earlier holder's commands, and ended.
    left_behind: Vec<LeftBehind>,
}

/// The groups the lock file names, and the longest text written to it while held.
#[derive(Debug, Default)]
struct Running {
    groups: Vec<Group>,
    longest: usize,
}

pub use crate::exec::group::Group;

/// A hook command an earlier holder of the lock left running, ended when the lock was taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftBehind {
    /// The earlier holder's pid, as its line said.
    pub holder: Option<u32>,
    /// The command's process group.
    pub group: Group,
    /// Whether SIGTERM was not enough and SIGKILL went too.
    pub killed: bool,
}

impl RunnerLock {
    /// Takes the lock at `path`, creating the file when absent. `Ok(None)` when `wait` ran out
    /// with the lock still held elsewhere. `keep_waiting` is asked between tries, so a waiting
    /// hub can still be stopped.
    pub fn acquire(
        path: &Path,
        wait: Wait,
        keep_waiting: &dyn Fn() -> bool,
    ) -> Result<Option<Self>, LockError> {
        use std::os::unix::fs::OpenOptionsExt;
        let err = |message, source| LockError {
            message,
            path: path.to_path_buf(),
            source,
        };
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)
            .map_err(|e| err("cannot open lock file", e))?;
        let deadline = match wait {
            Wait::No => Some(Instant::now()),
            // Beyond what the clock can count: as long as it takes.
            Wait::For(d) => Instant::now().checked_add(d),
            Wait::Forever => None,
        };
        let mut nap = Duration::from_millis(1);
        loop {
            match file.try_lock_exclusive() {
                Ok(()) => break,
                // std reports EWOULDBLOCK (EAGAIN) as WouldBlock.
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(err("cannot lock", e)),
            }
            if deadline.is_some_and(|d| Instant::now() >= d) || !keep_waiting() {
                return Ok(None);
            }
            std::thread::sleep(nap);
            nap = (nap * 2).min(Duration::from_millis(25));
        }
        // Commands an earlier holder left running go before anything runs under this lock.
        let mut earlier = String::new();
        let _ = (&file).read_to_string(&mut earlier);
        let earlier = Lines::parse(&earlier);
        let left_behind = end_left_behind(earlier.groups, LEFT_BEHIND_GRACE, HOOK_MARK)
            .into_iter()
            .map(|(group, killed)| LeftBehind {
                holder: earlier.pid,
                group,
                killed,
            })
            .collect();
        let started = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let lock = Self {
            file,
            path: path.to_path_buf(),
            holder: format!("pid {}\nstarted {started}\n", std::process::id()),
            running: Mutex::new(Running::default()),
            left_behind,
        };
        lock.write_out(&mut lock.running())
            .map_err(|e| err("cannot write holder into", e))?;
        Ok(Some(lock))
    }

    /// Commands an earlier holder left running (it was killed), ended as the lock was taken.
    pub fn left_behind(&self) -> &[LeftBehind] {
        &self.left_behind
    }

    fn running(&self) -> std::sync::MutexGuard<'_, Running> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes the holder's lines and a line per running group over the file's content, in one
    /// `pwrite`. The first write (as the lock is taken) cuts the file to its text; later text
    /// shorter than the longest written is padded with empty lines instead, as truncating costs
    /// more than the write (a command starts and ends with one each). Cut short, a write can
    /// leave an earlier line behind: a group line that outlived its command names a group that
    /// is gone or led by another process, and is passed over.
    fn write_out(&self, running: &mut Running) -> std::io::Result<()> {
        let mut text = self.holder.clone();
        for g in &running.groups {
            text.push_str(&format!("group {} {}\n", g.pgid, g.started_ms));
        }
        let len = text.len();
        text.extend(std::iter::repeat_n(
            '\n',
            running.longest.saturating_sub(len),
        ));
        self.file.write_all_at(text.as_bytes(), 0)?;
        if running.longest == 0 {
            self.file.set_len(len as u64)?;
        }
        running.longest = running.longest.max(len);
        Ok(())
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for RunnerLock {
    fn drop(&mut self) {
        // Blank the file first so a reader never names a holder that has gone; the lock itself
        // goes with the descriptor. Empty lines over the text, not an empty file: the file keeps
        // its block, so the next holder's write needs none, on a full disk too (where a hub
        // taking the lock for its next pass would otherwise end).
        let longest = self.running().longest;
        if self.file.write_all_at(&vec![b'\n'; longest], 0).is_err() {
            let _ = self.file.set_len(0);
        }
        let _ = FileExt::unlock(&self.file);
    }
}

/// Who holds (or last held) the lock, as its file says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Holder {
    /// The holder's pid.
    pub pid: u32,
    /// When it took the lock (RFC 3339).
    pub started: String,
    /// Whether a process with that pid is alive now. A holder killed with SIGKILL leaves its
    /// line behind; the lock itself went with it.
    pub alive: bool,
}

impl std::fmt::Display for Holder {
    /// `pid 42 since <time>`, or `pid 42 (no holder line)` for one that wrote none.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.started.is_empty() {
            write!(f, "pid {} (no holder line)", self.pid)
        } else {
            write!(f, "pid {} since {}", self.pid, self.started)
        }
    }
}

/// What a lock file's text says: the holder's `pid` and `started` lines and a `group` line per
/// command it was running. Lines it does not know (and the empty padding) are skipped.
#[derive(Debug, Default)]
struct Lines {
    pid: Option<u32>,
    started: Option<String>,
    groups: Vec<Group>,
}

impl Lines {
    fn parse(text: &str) -> Self {
        let mut lines = Self::default();
        for line in text.lines() {
            match line.split_once(' ') {
                Some(("pid", v)) => lines.pid = v.trim().parse::<u32>().ok(),
                Some(("started", v)) => lines.started = Some(v.trim().to_owned()),
                Some(("group", v)) => {
                    let mut f = v.split_whitespace().map(str::parse::<i64>);
                    if let (Some(Ok(pgid)), Some(Ok(started_ms))) = (f.next(), f.next())
                        && let Ok(pgid) = i32::try_from(pgid)
                        && pgid > 1
                    {
                        lines.groups.push(Group { pgid, started_ms });
                    }
                }
                _ => {}
            }
        }
        lines
    }
}

/// Names a command's group in the file while it runs; a file that cannot be written only loses
/// the naming.
impl GroupTracker for RunnerLock {
    fn track(&self, pgid: i32, started_ms: i64) {
        let mut running = self.running();
        running.groups.push(Group { pgid, started_ms });
        let _ = self.write_out(&mut running);
    }

    fn untrack(&self, pgid: i32) {
        let mut running = self.running();
        running.groups.retain(|g| g.pgid != pgid);
        let _ = self.write_out(&mut running);
    }
}

/// Who holds the lock at `path`, or last held it: the file's holder line, checked against
/// `/proc/locks`. A process holding the lock without a holder line of its own (one that could
/// not write it, or another program's `flock`) is named from `/proc/locks`, with `started`
/// empty. `None` when the file names no one and no one holds it.
pub fn holder(path: &Path) -> Option<Holder> {
    let mut text = String::new();
    File::open(path).ok()?.read_to_string(&mut text).ok()?;
    let Lines { pid, started, .. } = Lines::parse(&text);
    let started = started.unwrap_or_default();
    match (pid, flock_holders(path)) {
        (Some(pid), Some(pids)) if pids.contains(&pid) => Some(Holder {
            pid,
            started,
            alive: true,
        }),
        (_, Some(pids)) if !pids.is_empty() => Some(Holder {
            pid: pids[0],
            started: String::new(),
            alive: true,
        }),
        (Some(pid), Some(_)) => Some(Holder {
            pid,
            started,
            alive: false,
        }),
        (Some(pid), None) => Some(Holder {
            pid,
            started,
            alive: rustix::process::Pid::from_raw(pid as i32)
                .is_some_and(|p| rustix::process::test_kill_process(p).is_ok()),
        }),
        (None, _) => None,
    }
}

/// The pids holding an exclusive `flock` on the file at `path`, from `/proc/locks`: exact even
/// when the named holder died and its pid was reused. `None` where `/proc/locks` cannot be read.
fn flock_holders(path: &Path) -> Option<Vec<u32>> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    let (ino, major, minor) = (
        meta.ino(),
        rustix::fs::major(meta.dev()),
        rustix::fs::minor(meta.dev()),
    );
    let text = std::fs::read_to_string("/proc/locks").ok()?;
    // "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF" (a blocked waiter's line has "->").
    let holders = text
        .lines()
        .filter(|l| !l.contains("->"))
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (kind, mode, pid, id) =
                (*f.get(1)?, *f.get(3)?, f.get(4)?.parse().ok()?, *f.get(5)?);
            let mut parts = id.split(':');
            let (maj, min, i) = (parts.next()?, parts.next()?, parts.next()?);
            let same = u32::from_str_radix(maj, 16).ok()? == major
                && u32::from_str_radix(min, 16).ok()? == minor
                && i.parse::<u64>().ok()? == ino;
            (kind == "FLOCK" && mode == "WRITE" && same).then_some(pid)
        })
        .collect();
    Some(holders)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exclusive_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runner.lock");
        let yes = || true;
        let held = RunnerLock::acquire(&path, Wait::No, &yes).unwrap().unwrap();
        assert!(
            RunnerLock::acquire(&path, Wait::No, &yes)
                .unwrap()
                .is_none()
        );
        assert!(
            RunnerLock::acquire(&path, Wait::For(Duration::from_millis(30)), &yes)
                .unwrap()
                .is_none()
        );
        let h = holder(&path).unwrap();
        assert_eq!(h.pid, std::process::id());
        assert!(h.alive);
        drop(held);
        assert!(holder(&path).is_none());
        assert!(path.exists(), "the lock file is never deleted");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            !text.is_empty() && text.bytes().all(|b| b == b'\n'),
            "blanked, keeping its length (and block): {text:?}"
        );
        assert!(
            RunnerLock::acquire(&path, Wait::No, &yes)
                .unwrap()
                .is_some()
        );
    }

    /// Starts `sh -c script` with `env` as the leader of a new session and process group, its
    /// starter exiting at once (as a killed runner's command is orphaned); its pid, once the
    /// group has a live process (the leader may already have exited and been collected).
    fn orphan_script(script: &str, env: &[(&str, &str)]) -> i32 {
        let out = std::process::Command::new("/bin/sh")
            .args([
                "-c",
                r#"setsid /bin/sh -c "$1" >/dev/null 2>&1 & echo $!"#,
                "sh",
                script,
            ])
            .envs(env.iter().copied())
            .output()
            .unwrap();
        let pid: i32 = String::from_utf8(out.stdout)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while live_members(pid).is_none_or(|mut m| m.next().is_none()) {
            assert!(Instant::now() < deadline, "the group did not start");
            std::thread::sleep(Duration::from_millis(10));
        }
        pid
    }

    /// Waits until process `pid` is gone from `/proc` (collected, not a zombie).
    fn wait_collected(pid: i32) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Path::new(&format!("/proc/{pid}")).exists() {
            assert!(Instant::now() < deadline, "{pid} was not collected");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn groups_left_behind_are_ended_together_under_one_grace() {
        // `stubborn` ignores SIGTERM; `quick` records, as SIGTERM reaches it, whether
        // `stubborn` still runs. One after the other, `stubborn` would have been killed by then.
        let dir = tempfile::tempdir().unwrap();
        let seen = dir.path().join("seen");
        // Each script says when its trap is set: SIGTERM before that would end it untrapped.
        let ready = |name: &str| dir.path().join(name);
        let stubborn = orphan_script(
            &format!(
                "trap '' TERM; : > {}; while :; do sleep 0.1; done",
                ready("stubborn").display()
            ),
            &[],
        );
        let quick = orphan_script(
            &format!(
                "trap 'cut -d\" \" -f3 /proc/{stubborn}/stat > {}; exit 0' TERM; : > {}; while :; do sleep 0.1; done",
                seen.display(),
                ready("quick").display()
            ),
            &[],
        );
        let deadline = Instant::now() + Duration::from_secs(30);
        while !(ready("stubborn").exists() && ready("quick").exists()) {
            assert!(Instant::now() < deadline, "the scripts did not start");
            std::thread::sleep(Duration::from_millis(10));
        }
        let [stubborn, quick] = [stubborn, quick].map(|pid| Group {
            pgid: pid,
            started_ms: started_ms(pid).unwrap(),
        });
        let ended = end_left_behind(vec![stubborn, quick], Duration::from_secs(2), HOOK_MARK);
        assert_eq!(ended, [(stubborn, true), (quick, false)]);
        let state = std::fs::read_to_string(&seen).unwrap();
        assert!(
            matches!(state.trim(), "S" | "R"),
            "stubborn was {state:?} when quick got SIGTERM"
        );
    }

    #[test]
    fn a_group_whose_leader_exited_is_ended_only_while_it_runs_a_hook() {
        // The leader exits at once, leaving `sleep` in its group: what a hook that starts a
        // daemon leaves, or any daemon that forked away from its starter.
        let daemon = orphan_script("sleep 60 & exit 0", &[]);
        let hook = orphan_script("sleep 60 & exit 0", &[("ARC_HOOK", "after_merge")]);
        let now = chrono::Utc::now().timestamp_millis();
        let named = |pgid| Group {
            pgid,
            started_ms: now,
        };
        for pid in [daemon, hook] {
            wait_collected(pid);
            assert!(has_live_member(pid));
        }
        // Named as started before this machine booted: a line that outlived a reboot.
        let before_boot = Group {
            pgid: hook,
            started_ms: boot_ms().unwrap() - 86_400_000,
        };
        let ended = end_left_behind(
            vec![named(daemon), before_boot, named(hook)],
            Duration::from_secs(5),
            HOOK_MARK,
        );
        assert_eq!(ended, [(named(hook), false)]);
        assert!(!has_live_member(hook), "the hook's group is ended");
        assert!(has_live_member(daemon), "the daemon's is left alone");
        let _ = rustix::process::kill_process_group(
            rustix::process::Pid::from_raw(daemon).unwrap(),
            rustix::process::Signal::KILL,
        );
    }

    #[test]
    fn a_command_an_earlier_holder_left_running_is_ended() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runner.lock");
        let left = orphan_script("exec sleep 60", &[]);
        let other = orphan_script("exec sleep 60", &[]);
        let group = Group {
            pgid: left,
            started_ms: started_ms(left).unwrap(),
        };
        // `other` is named with another start time: a pid since given to another process.
        let stale = Group {
            pgid: other,
            started_ms: started_ms(other).unwrap() - 60_000,
        };
        std::fs::write(
            &path,
            format!(
                "pid 4194000\nstarted 2026-01-01T00:00:00Z\ngroup {} {}\ngroup {} {}\n",
                group.pgid, group.started_ms, stale.pgid, stale.started_ms
            ),
        )
        .unwrap();
        let lock = RunnerLock::acquire(&path, Wait::No, &|| true)
            .unwrap()
            .unwrap();
        assert_eq!(
            lock.left_behind(),
            [LeftBehind {
                holder: Some(4194000),
                group,
                killed: false
            }]
        );
        assert!(!has_live_member(left), "ended");
        assert!(
            has_live_member(other),
            "another process's group is left alone"
        );
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("group"), "{text}");

        // While a command runs, the file names its group; once it ended, not any more.
        let g = Group {
            pgid: other,
            started_ms: 1,
        };
        lock.track(g.pgid, g.started_ms);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains(&format!("\ngroup {} {}\n", g.pgid, g.started_ms)),
            "{text}"
        );
        assert_eq!(holder(&path).unwrap().pid, std::process::id());
        lock.untrack(g.pgid);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("group"), "{text}");
        assert_eq!(holder(&path).unwrap().pid, std::process::id());
        let _ = rustix::process::kill_process_group(
            rustix::process::Pid::from_raw(other).unwrap(),
            rustix::process::Signal::KILL,
        );
    }

    #[test]
    fn a_holder_without_a_holder_line_is_named_from_proc_locks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runner.lock");
        // A stale line of a holder that is gone, and the lock held by a plain flock that wrote
        // nothing (another program, or a holder whose write failed).
        std::fs::write(&path, "pid 4194001\nstarted 2026-01-01T00:00:00Z\n").unwrap();
        let file = File::open(&path).unwrap();
        file.try_lock_exclusive().unwrap();
        let h = holder(&path).unwrap();
        assert_eq!((h.pid, h.alive), (std::process::id(), true));
        assert_eq!(h.to_string(), format!("pid {} (no holder line)", h.pid));
        std::fs::write(&path, "").unwrap();
        assert_eq!(holder(&path).unwrap().pid, std::process::id());
        FileExt::unlock(&file).unwrap();
        assert!(holder(&path).is_none());
    }

    #[test]
    fn a_live_pid_that_does_not_hold_the_lock_is_not_the_holder() {
        // A holder killed with SIGKILL leaves its line; its pid may since belong to another live
        // process (here: this one, which does not hold the lock).
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runner.lock");
        let line = format!("pid {}\nstarted 2026-01-01T00:00:00Z\n", std::process::id());
        std::fs::write(&path, line).unwrap();
        let h = holder(&path).unwrap();
        assert_eq!(h.pid, std::process::id());
        assert!(!h.alive, "named a holder from a stale line");
    }
}
