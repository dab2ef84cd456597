//! `runner.lock`: only its holder runs hooks (SPEC §4).
//!
//! An exclusive advisory lock (`flock`) on a file that is never deleted. The holder writes its
//! pid and start time into the file so `queue` can name it; reading that never takes the lock.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fs2::FileExt;
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

/// Proof of holding `runner.lock`. Running hooks takes a `&RunnerLock`.
#[derive(Debug)]
pub struct RunnerLock {
    file: File,
    path: PathBuf,
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
            Wait::For(d) => Some(Instant::now() + d),
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
        let mut lock = Self {
            file,
            path: path.to_path_buf(),
        };
        lock.write_holder()
            .map_err(|e| err("cannot write holder into", e))?;
        Ok(Some(lock))
    }

    fn write_holder(&mut self) -> std::io::Result<()> {
        let started = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        self.file.set_len(0)?;
        self.file.rewind()?;
        self.file
            .write_all(format!("pid {}\nstarted {started}\n", std::process::id()).as_bytes())
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for RunnerLock {
    fn drop(&mut self) {
        // Empty the file first so a reader never names a holder that has gone; the lock itself
        // goes with the descriptor.
        let _ = self.file.set_len(0);
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

/// Reads the holder line from the lock file at `path`; `None` when nobody holds it.
pub fn holder(path: &Path) -> Option<Holder> {
    let mut text = String::new();
    File::open(path).ok()?.read_to_string(&mut text).ok()?;
    let mut pid = None;
    let mut started = None;
    for line in text.lines() {
        match line.split_once(' ') {
            Some(("pid", v)) => pid = v.trim().parse::<u32>().ok(),
            Some(("started", v)) => started = Some(v.trim().to_owned()),
            _ => {}
        }
    }
    let pid = pid?;
    let alive = match flock_holders(path) {
        Some(pids) => pids.contains(&pid),
        None => rustix::process::Pid::from_raw(pid as i32)
            .is_some_and(|p| rustix::process::test_kill_process(p).is_ok()),
    };
    Some(Holder {
        pid,
        started: started.unwrap_or_default(),
        alive,
    })
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
        assert!(
            RunnerLock::acquire(&path, Wait::No, &yes)
                .unwrap()
                .is_some()
        );
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
