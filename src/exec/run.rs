//! Running one command into a log: `/bin/sh -c`, its own process group, a timeout that signals
//! the whole group, output appended to a log with a header, a footer and a cap.

use std::fs::File;
use std::io::{ErrorKind, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::process::Signal;

use super::env::Environ;
use super::spawn::{Shell, is_transient};
use super::supervise::{Bounds, signal_group, supervise};
use super::types::{Ending, ExecError, GroupTracker, Stop, Tracked, describe};

/// One command to run.
#[derive(Debug, Clone)]
pub struct Spec<'a> {
    /// The shell command line.
    pub line: &'a str,
    /// Working directory.
    pub cwd: &'a Path,
    /// The whole environment the command gets (nothing else is inherited), each name once.
    pub env: &'a Environ,
    /// SIGTERM to the group after this long.
    pub timeout: Duration,
    /// SIGKILL to the group this long after SIGTERM.
    pub kill_grace: Duration,
    /// The most output bytes appended to the log for this run.
    pub max_log_bytes: u64,
    /// The log to append to.
    pub log: &'a Path,
    /// The log, already opened by [`OpenedLog::open`] while the command before this one ran
    /// (`None`: opened, and created if absent, just before the command starts).
    pub opened: Option<&'a OpenedLog>,
    /// The header line's text after the time stamp (no newline).
    pub header: &'a str,
    /// Who is told the command's process group while it runs, if anyone (the queue's runner
    /// lock names it in its file, so that if hookq is killed meanwhile, the next holder ends the
    /// command before it runs the point again).
    pub owner: Option<&'a dyn GroupTracker>,
}

/// What running a command gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// How it ended.
    pub ending: Ending,
    /// Wall time from spawn to reap.
    pub duration: Duration,
    /// Output bytes appended to the log (not counting hookq's own lines).
    pub logged: u64,
    /// Whether output was cut at `max_log_bytes`.
    pub truncated: bool,
}

/// Runs `spec` to its end. `Err` only when the command could not be run for a reason outside
/// the hook (the log could not be written); a command that fails is an `Ok` with its ending.
pub fn run(spec: &Spec<'_>, stop: &Stop) -> Result<Finished, ExecError> {
    run_while(spec, stop, || {})
}

/// [`run`], calling `meanwhile` while the command runs: once it started, and again each time the
/// wait for it wakes (output, or at least every 50 ms). Work the caller can do meanwhile, kept
/// short: the command's output and timeout wait for it (the drain commits the clears of points
/// that finished earlier there). `meanwhile` is not called when the command could not be
/// started.
pub fn run_while(
    spec: &Spec<'_>,
    stop: &Stop,
    meanwhile: impl FnMut(),
) -> Result<Finished, ExecError> {
    let ran = run_inner(spec, stop, None::<fn() -> bool>, meanwhile)?;
    Ok(ran.expect("a command without a gate always runs"))
}

/// [`run_while`], with the command held at a gate: its shell is started with a pipe as its fd 3,
/// its process group named to [`Spec::owner`], and then `ready` is asked whether it may run,
/// while the shell starts. The shell reads one line from the pipe before it runs any of the
/// command line, and closes it first, so the command sees the descriptors it would see without
/// a gate; the command follows on the same script line, so the shell's messages name the lines
/// they name without one. Nothing of the command runs before `ready` says yes, nor ever if it
/// says no (then `Ok(None)`: the shell is ended and reaped, and a log made for it removed while
/// empty) or if this process dies first (the shell reads the pipe's end and exits 125). The
/// queue counts a point's start in `ready`, so a command that kills its runner is counted, and
/// its process group known, before it can.
pub fn run_gated(
    spec: &Spec<'_>,
    stop: &Stop,
    ready: impl FnOnce() -> bool,
    meanwhile: impl FnMut(),
) -> Result<Option<Finished>, ExecError> {
    run_inner(spec, stop, Some(ready), meanwhile)
}

fn run_inner(
    spec: &Spec<'_>,
    stop: &Stop,
    ready: Option<impl FnOnce() -> bool>,
    mut meanwhile: impl FnMut(),
) -> Result<Option<Finished>, ExecError> {
    let log_err = |source| ExecError::Log {
        path: spec.log.to_path_buf(),
        source,
    };
    let owned;
    let mut log: &File = match spec.opened.filter(|o| o.path == spec.log && o.is_linked()) {
        Some(o) => &o.file,
        None => {
            owned = open_log(spec.log).map_err(log_err)?;
            &owned
        }
    };
    let os = |e: rustix::io::Errno| ExecError::Os(e.into());
    let (reader, writer) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(os)?;
    let gate = match ready {
        Some(_) => Some(rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(os)?),
        None => None,
    };
    let mut start = Instant::now();
    // Our copy of the write end closes once the child has its own, so end-of-file arrives when
    // the command and everything it started are done with it.
    let child = Shell::start(
        spec.line,
        spec.cwd,
        spec.env,
        writer.as_fd(),
        gate.as_ref().map(|(read, _)| read.as_fd()),
    );
    drop(writer);
    let gate = gate.map(|(_, open)| open);
    let header = |mut log: &File| {
        let stamp = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        log.write_all(format!("--- hookq {stamp} {}\n", spec.header).as_bytes())
            .map_err(log_err)
    };
    let child = match child {
        Ok(c) => c,
        // Out of processes, memory or descriptors: the machine's state, not the hook's. The
        // point stays pending and runs when there is room again.
        Err(e) if is_transient(&e) => return Err(ExecError::Os(e)),
        Err(e) => {
            let code = e.raw_os_error().unwrap_or(-1);
            header(log)?;
            writeln!(log, "--- hookq cannot start /bin/sh: {e}").map_err(log_err)?;
            return Ok(Some(Finished {
                ending: Ending::SpawnFailed(code),
                duration: start.elapsed(),
                logged: 0,
                truncated: false,
            }));
        }
    };
    // Named in the lock file from now until it is reaped, whichever way this function returns.
    let _tracked = spec.owner.map(|lock| Tracked::new(lock, child.pid()));
    if let (Some(ready), Some(gate)) = (ready, gate) {
        if !ready() {
            // The gate closes unopened: the shell exits without running the command, and a log
            // made for it goes again, as a point that did not run leaves none.
            drop(gate);
            signal_group(&child, Signal::KILL);
            let _ = child.wait();
            remove_if_empty(log, spec.log);
            return Ok(None);
        }
        if let Err(e) = header(log) {
            drop(gate);
            let _ = child.wait();
            return Err(e);
        }
        // A shell that died meanwhile (a signal from outside) is reaped below as it ended.
        let _ = rustix::io::write(&gate, b"\n");
        start = Instant::now();
    } else {
        header(log)?;
    }
    let mut copier = Copier {
        log,
        left: spec.max_log_bytes,
        logged: 0,
        truncated: false,
        last: b'\n',
        cap: spec.max_log_bytes,
        failed: None,
    };
    let bounds = Bounds {
        timeout: spec.timeout,
        kill_grace: spec.kill_grace,
        first_stop_ends: false,
    };
    let outcome = supervise(
        &child,
        vec![(reader, &mut |bytes: &[u8]| copier.take(bytes))],
        bounds,
        (stop, &mut meanwhile),
        start,
    )
    .map_err(ExecError::Os);
    let ending = match outcome {
        Ok(e) => e,
        Err(e) => {
            // Never leave a process behind: whatever failed, the group goes and the child is reaped.
            signal_group(&child, Signal::KILL);
            let _ = child.wait();
            return Err(e);
        }
    };
    let duration = start.elapsed();
    if let Some(source) = copier.failed {
        return Err(log_err(source));
    }
    let (logged, truncated, last) = (copier.logged, copier.truncated, copier.last);
    let mut footer = Vec::new();
    if last != b'\n' {
        footer.push(b'\n');
    }
    footer.extend_from_slice(
        format!(
            "--- hookq {} after {} ms\n",
            describe(ending),
            duration.as_millis()
        )
        .as_bytes(),
    );
    log.write_all(&footer).map_err(log_err)?;
    Ok(Some(Finished {
        ending,
        duration,
        logged,
        truncated,
    }))
}

/// Opens `path` for appending, creating it and its folders (owner-only) as needed.
fn open_log(path: &Path) -> std::io::Result<File> {
    match open_file(path, false) {
        Err(e) if e.kind() == ErrorKind::NotFound => {
            if let Some(dir) = path.parent() {
                create_log_dir(dir)?;
            }
            open_file(path, false)
        }
        other => other,
    }
}

/// Opens `path` for appending, creating it (owner-only) in its folder, which must exist; with
/// `new`, only if it does not exist yet.
fn open_file(path: &Path, new: bool) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.append(true).mode(0o600);
    if new {
        options.create_new(true);
    } else {
        options.create(true);
    }
    options.open(path)
}

/// Creates a log folder and its parents, owner-only, as running a command there would.
fn create_log_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Removes the log at `path` if it is still `file` and empty.
fn remove_if_empty(file: &File, path: &Path) {
    let same = |at: std::fs::Metadata, open: std::fs::Metadata| {
        (at.dev(), at.ino()) == (open.dev(), open.ino()) && open.len() == 0
    };
    if let (Ok(at), Ok(open)) = (std::fs::metadata(path), file.metadata())
        && same(at, open)
    {
        let _ = std::fs::remove_file(path);
    }
}

/// A log opened ahead of its command. Creating a file is the dearest step of running a command
/// into a new log, so the drain opens the next command's log while the current command runs,
/// and hands it over in [`Spec::opened`]. A log removed or replaced meanwhile (a hook cleaning
/// up `runs/`) is not used: the command opens its log again at its path.
///
/// Only a log whose folder exists is opened ahead: a task's first log, and its two new folders,
/// are made as its command starts. Making folders ahead, while the command before runs, costs
/// more than it saves: the directory writes compete with the running command for the same CPU
/// (`docs/design.md` has the figures).
#[derive(Debug)]
pub struct OpenedLog {
    path: PathBuf,
    file: File,
    /// The open file's device and inode, taken when it was opened.
    id: (u64, u64),
    /// Whether opening it created it.
    created: bool,
}

impl OpenedLog {
    /// Opens `path` for appending, creating it (owner-only), if its folder exists: `None` when
    /// it does not, and the command makes it as it starts.
    pub fn open(path: &Path) -> std::io::Result<Option<Self>> {
        let (file, created) = match open_file(path, true) {
            Ok(f) => (f, true),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => (open_file(path, false)?, false),
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let meta = file.metadata()?;
        Ok(Some(Self {
            path: path.to_path_buf(),
            id: (meta.dev(), meta.ino()),
            file,
            created,
        }))
    }

    /// The path it was opened at.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the open file is still the one at its path: one `stat`, on the path, since the
    /// open file's identity cannot change.
    fn is_linked(&self) -> bool {
        std::fs::metadata(&self.path).is_ok_and(|at| (at.dev(), at.ino()) == self.id)
    }

    /// Gives up a log no command ran into: removed again if opening it created it and it is
    /// still empty, so a point that did not run leaves no log behind (a runner killed before it
    /// gets here leaves it, empty).
    pub fn discard(self) {
        if self.created {
            remove_if_empty(&self.file, &self.path);
        }
    }
}

struct Copier<'a> {
    log: &'a File,
    left: u64,
    logged: u64,
    truncated: bool,
    last: u8,
    cap: u64,
    /// The first failed write (a full disk): everything after it is read and discarded, so the
    /// command is not blocked on a full pipe and runs to its end.
    failed: Option<std::io::Error>,
}

impl Copier<'_> {
    fn take(&mut self, bytes: &[u8]) {
        if self.failed.is_none()
            && let Err(e) = self.copy(bytes)
        {
            self.failed = Some(e);
        }
    }

    fn copy(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let keep = bytes.len().min(self.left as usize);
        if keep > 0 {
            self.log.write_all(&bytes[..keep])?;
            self.left -= keep as u64;
            self.logged += keep as u64;
            self.last = bytes[keep - 1];
        }
        if keep < bytes.len() && !self.truncated {
            self.truncated = true;
            let nl = if self.last == b'\n' { "" } else { "\n" };
            writeln!(
                self.log,
                "{nl}--- hookq output cut here: more than {} bytes (gate.max_log_bytes); the rest was discarded",
                self.cap
            )?;
            self.last = b'\n';
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::testing::ready_in_time;

    fn spec<'a>(line: &'a str, log: &'a Path, env: &'a Environ) -> Spec<'a> {
        Spec {
            line,
            cwd: Path::new("/"),
            env,
            timeout: Duration::from_secs(30),
            kill_grace: Duration::from_secs(1),
            max_log_bytes: 1 << 20,
            log,
            opened: None,
            header: "test",
            owner: None,
        }
    }

    fn path_env() -> Environ {
        [("PATH", std::env::var_os("PATH").unwrap_or_default())]
            .into_iter()
            .collect()
    }

    #[test]
    fn a_log_opened_ahead_is_used_only_while_it_is_still_at_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("runs/t/hooks/after_fail-01.log");
        let env = path_env();
        // A task's first log is not opened ahead: its folders are made as the command starts.
        assert!(OpenedLog::open(&log).unwrap().is_none());
        assert!(!dir.path().join("runs").exists(), "no folder made ahead");
        std::fs::create_dir_all(log.parent().unwrap()).unwrap();
        let ahead = OpenedLog::open(&log).unwrap().unwrap();
        assert!(ahead.created && log.exists(), "file made ahead");
        let mut s = spec("echo one", &log, &env);
        s.opened = Some(&ahead);
        run(&s, &Stop::new()).unwrap();
        assert!(std::fs::read_to_string(&log).unwrap().contains("\none\n"));

        // Removed meanwhile (a hook cleaning up runs/): the command writes a log at the path,
        // not into the unlinked file.
        let ahead = OpenedLog::open(&log).unwrap().unwrap();
        assert!(!ahead.created, "it was there already");
        std::fs::remove_dir_all(dir.path().join("runs")).unwrap();
        let mut s = spec("echo two", &log, &env);
        s.opened = Some(&ahead);
        run(&s, &Stop::new()).unwrap();
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.contains("\ntwo\n") && !text.contains("one"), "{text}");

        // Not used: removed again when opening it created it, kept when it held a log already.
        let other = dir.path().join("runs/u/hooks/after_fail-01.log");
        std::fs::create_dir_all(other.parent().unwrap()).unwrap();
        OpenedLog::open(&other).unwrap().unwrap().discard();
        assert!(!other.exists());
        OpenedLog::open(&log).unwrap().unwrap().discard();
        assert!(log.exists());
    }

    #[test]
    fn exit_codes_and_output() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("a/b.log");
        let env = path_env();
        let f = run(
            &spec("echo out; echo err >&2; exit 3", &log, &env),
            &Stop::new(),
        )
        .unwrap();
        assert_eq!(f.ending, Ending::Exited(3));
        let text = std::fs::read_to_string(&log).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("--- hookq ") && lines[0].ends_with(" test"),
            "{text}"
        );
        assert_eq!(&lines[1..3], ["out", "err"]);
        assert!(lines[3].starts_with("--- hookq exit 3 after "), "{text}");
    }

    #[test]
    fn signal_ending() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("s.log");
        let env = path_env();
        let f = run(&spec("kill -USR1 $$", &log, &env), &Stop::new()).unwrap();
        assert_eq!(f.ending, Ending::Signalled(Signal::USR1.as_raw()));
    }

    #[test]
    fn cap_cuts_with_a_marker() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("c.log");
        let env = path_env();
        let mut s = spec(
            "head -c 300000 /dev/zero | tr '\\0' x; echo; echo after",
            &log,
            &env,
        );
        s.max_log_bytes = 1000;
        let f = run(&s, &Stop::new()).unwrap();
        assert_eq!(f.ending, Ending::Exited(0));
        assert!(f.truncated);
        assert_eq!(f.logged, 1000);
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.contains(&format!("{}\n--- hookq output cut here", "x".repeat(1000))));
        assert!(!text.contains("\nafter\n"));
    }

    #[test]
    fn timeout_kills_the_group_without_waiting_for_the_pipe() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("t.log");
        let env = path_env();
        let ready = dir.path().join("ready");
        let line = format!(
            "trap '' TERM; sleep 60 & touch '{}'; sleep 60",
            ready.display()
        );
        let (f, took, timeout) = ready_in_time(&ready, |timeout| {
            let mut s = spec(&line, &log, &env);
            s.timeout = timeout;
            s.kill_grace = Duration::from_millis(200);
            let t = Instant::now();
            (run(&s, &Stop::new()).unwrap(), t.elapsed(), timeout)
        });
        assert_eq!(f.ending, Ending::TimedOut { killed: true });
        assert!(
            took < timeout + Duration::from_secs(20),
            "hung: {took:?}"
        );
    }

    /// Running out of processes, memory or descriptors keeps a point pending (an `ExecError`);
    /// a command that cannot start for good is a failed command.
    #[test]
    fn transient_spawn_failures_are_told_apart() {
        let errno = |e| std::io::Error::from_raw_os_error(e);
        for e in [libc::EAGAIN, libc::ENOMEM, libc::EMFILE, libc::ENFILE] {
            assert!(is_transient(&errno(e)), "{e}");
        }
        for e in [libc::ENOENT, libc::EACCES, libc::ENOEXEC, libc::E2BIG] {
            assert!(!is_transient(&errno(e)), "{e}");
        }
        // A missing working directory is the command's, and reported like any failure.
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("t.log");
        let env = path_env();
        let gone = dir.path().join("gone");
        let mut s = spec("true", &log, &env);
        s.cwd = &gone;
        let f = run(&s, &Stop::new()).unwrap();
        assert_eq!(f.ending, Ending::SpawnFailed(libc::ENOENT));
    }

    /// A stopped command acts on the timeout's SIGTERM (its trap runs), not only on the SIGKILL
    /// after the grace period: SIGCONT follows the SIGTERM.
    #[test]
    fn a_stopped_command_gets_its_sigterm() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("t.log");
        let env = path_env();
        let ready = dir.path().join("ready");
        let line = format!(
            "trap 'echo got-term; exit 7' TERM; touch '{}'; kill -STOP $$",
            ready.display()
        );
        let f = ready_in_time(&ready, |timeout| {
            let mut s = spec(&line, &log, &env);
            s.timeout = timeout;
            s.kill_grace = Duration::from_secs(60);
            run(&s, &Stop::new()).unwrap()
        });
        assert_eq!(f.ending, Ending::TimedOut { killed: false });
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.contains("\ngot-term\n"), "{text}");
    }

    /// After a timeout, a leader that exited leaves the rest of its group to the grace period;
    /// a stop that cannot wait (a second SIGINT or SIGTERM) ends that wait with SIGKILL.
    #[test]
    fn an_immediate_stop_cuts_the_grace_period_short() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("t.log");
        let env = path_env();
        // The background member outlives the leader: its trap notes the timeout's SIGTERM and
        // it carries on. The stop comes once that SIGTERM has (the grace period has begun).
        let (ready, termed) = (dir.path().join("ready"), dir.path().join("termed"));
        let line = format!(
            "(trap \"touch '{}'\" TERM; touch '{}'; while :; do sleep 1; done) & sleep 120",
            termed.display(),
            ready.display()
        );
        let (f, took) = ready_in_time(&ready, |timeout| {
            let _ = std::fs::remove_file(&termed);
            let mut s = spec(&line, &log, &env);
            s.timeout = timeout;
            s.kill_grace = Duration::from_secs(120);
            let stop = Stop::new();
            let ended = std::sync::atomic::AtomicBool::new(false);
            let t = Instant::now();
            let f = std::thread::scope(|scope| {
                scope.spawn(|| {
                    while !termed.exists() && !ended.load(std::sync::atomic::Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    stop.request();
                    stop.request();
                });
                let f = run(&s, &stop).unwrap();
                ended.store(true, std::sync::atomic::Ordering::SeqCst);
                f
            });
            (f, t.elapsed())
        });
        assert_eq!(f.ending, Ending::TimedOut { killed: true });
        // The grace period is 120 s; a hang catcher well inside it.
        assert!(
            took < Duration::from_secs(90),
            "waited out the grace period: {took:?}"
        );
    }
}
