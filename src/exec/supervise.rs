//! Watching a started command to its end: read its output pipes as they fill, enforce the
//! timeout (SIGTERM, then SIGKILL after a grace, always to the whole process group) and stop
//! requests, and reap it. Every run mode shares this loop; they differ only in where the bytes
//! read go.

use std::fs::File;
use std::io::{self, ErrorKind, Read};
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::process::{Signal, kill_process_group, pidfd_open};

use super::spawn::Shell;
use super::types::{Ending, Stop};

/// How often a running command checks for a stop request when nothing else wakes it.
const TICK: Duration = Duration::from_millis(50);

/// How long a command may run and how long its group has after SIGTERM.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    /// SIGTERM to the group after this long.
    pub timeout: Duration,
    /// SIGKILL to the group this long after SIGTERM.
    pub kill_grace: Duration,
    /// Whether a first stop request ends the command as its timeout would (SIGTERM, the grace,
    /// SIGKILL) instead of letting it run to its end.
    pub first_stop_ends: bool,
}

/// Why SIGTERM went to a command's group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cause {
    /// It ran past its timeout.
    Timeout,
    /// A first stop request ended it.
    Stop,
}

/// Where the bytes read from an output pipe go.
pub(crate) type Sink<'s> = &'s mut dyn FnMut(&[u8]);

/// An output pipe's read end and its sink.
pub(crate) type Stream<'s> = (OwnedFd, Sink<'s>);

/// Reads `streams` and waits for `child`, enforcing `bounds` and stop requests, calling
/// `meanwhile` before each wait. A stream stops being read at its end of file, or once the
/// child has exited: what is in the pipe then is taken, but descendants that keep it open are
/// not waited for (they may live forever).
pub(crate) fn supervise(
    child: &Shell,
    streams: Vec<Stream<'_>>,
    bounds: Bounds,
    (stop, meanwhile): (&Stop, &mut dyn FnMut()),
    start: Instant,
) -> io::Result<Ending> {
    let mut open: Vec<(File, Sink<'_>)> = Vec::with_capacity(streams.len());
    for (fd, sink) in streams {
        rustix::io::ioctl_fionbio(&fd, true)?;
        open.push((File::from(fd), sink));
    }
    // A pidfd wakes the poll the moment the child exits, even while a grandchild keeps a pipe
    // open. Without one (old kernels), the tick bounds how late the exit is noticed.
    let pidfd = pidfd_open(child.pid(), rustix::process::PidfdFlags::empty()).ok();
    let mut buf = [0u8; 16 * 1024];
    // Without a pidfd, every wake-up looks; with one, only when it says the child exited.
    let mut may_have_exited = pidfd.is_none();
    let deadline = start + bounds.timeout;
    let mut termed: Option<(Instant, Cause)> = None;
    let mut interrupted = false;
    loop {
        meanwhile();
        if may_have_exited && let Some(status) = child.try_wait()? {
            for (file, sink) in &mut open {
                drain_available(file, &mut buf, *sink)?;
            }
            return Ok(finish_group(
                child,
                status,
                (termed, interrupted),
                bounds.kill_grace,
                stop,
            ));
        }
        let now = Instant::now();
        if stop.immediate() && !interrupted {
            interrupted = true;
            signal_group(child, Signal::KILL);
            continue;
        }
        let cause = match termed {
            None if now >= deadline => Some(Cause::Timeout),
            None if bounds.first_stop_ends && stop.graceful() => Some(Cause::Stop),
            Some((t, _)) if now >= t + bounds.kill_grace => {
                signal_group(child, Signal::KILL);
                None
            }
            _ => None,
        };
        if let Some(cause) = cause {
            termed = Some((now, cause));
            signal_group(child, Signal::TERM);
            // A stopped process (one that read the terminal from the background, or stopped
            // itself) only acts on SIGTERM once continued, as `timeout(1)` knows.
            signal_group(child, Signal::CONT);
            continue;
        }
        let next = match termed {
            None => deadline,
            Some((t, _)) => (t + bounds.kill_grace).max(now + Duration::from_millis(10)),
        };
        let wait = next.saturating_duration_since(now).min(TICK);
        let mut fds: Vec<PollFd<'_>> = open
            .iter()
            .map(|(f, _)| PollFd::new(f, PollFlags::IN))
            .collect();
        if let Some(p) = pidfd.as_ref() {
            fds.push(PollFd::new(p, PollFlags::IN));
        }
        if fds.is_empty() {
            std::thread::sleep(wait.min(Duration::from_millis(5)));
            continue;
        }
        let ts = Timespec {
            tv_sec: wait.as_secs() as i64,
            tv_nsec: i64::from(wait.subsec_nanos()),
        };
        match poll(&mut fds, Some(&ts)) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
        let ready: Vec<bool> = fds[..open.len()]
            .iter()
            .map(|f| !f.revents().is_empty())
            .collect();
        may_have_exited = pidfd.is_none() || fds.last().is_some_and(|p| !p.revents().is_empty());
        drop(fds);
        for i in (0..open.len()).rev() {
            let (file, sink) = &mut open[i];
            if ready[i] && drain_available(file, &mut buf, *sink)? {
                // End of file: every writer closed it.
                open.remove(i);
            }
        }
    }
}

/// Reads what is in the pipe now into `sink`. Returns true at end of file (every writer closed
/// it).
fn drain_available(r: &mut File, buf: &mut [u8], sink: &mut dyn FnMut(&[u8])) -> io::Result<bool> {
    loop {
        match r.read(buf) {
            Ok(0) => return Ok(true),
            Ok(n) => sink(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// After the leader was reaped: for a command that was sent SIGTERM (its timeout, or a first
/// stop that ends it) or interrupted, make sure the whole group is gone (SIGKILL once the grace
/// period is over, or at once on a stop that cannot wait). A command a first stop ended ends as
/// its leader did when SIGTERM was enough, else as interrupted.
fn finish_group(
    child: &Shell,
    status: ExitStatus,
    (termed, interrupted): (Option<(Instant, Cause)>, bool),
    grace: Duration,
    stop: &Stop,
) -> Ending {
    if interrupted {
        signal_group(child, Signal::KILL);
        return Ending::Interrupted;
    }
    if let Some((t, cause)) = termed {
        let mut killed = false;
        while group_alive(child) {
            if Instant::now() >= t + grace || stop.immediate() {
                signal_group(child, Signal::KILL);
                killed = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // SIGKILL reached the leader itself if it needed it.
        killed |= status.signal() == Some(Signal::KILL.as_raw());
        match cause {
            Cause::Timeout => return Ending::TimedOut { killed },
            Cause::Stop if killed => return Ending::Interrupted,
            Cause::Stop => {}
        }
    }
    match (status.code(), status.signal()) {
        (Some(c), _) => Ending::Exited(c),
        (None, Some(s)) => Ending::Signalled(s),
        (None, None) => Ending::Exited(-1),
    }
}

/// The child leads a process group of its own, whose id is its pid.
pub(crate) fn signal_group(child: &Shell, sig: Signal) {
    let _ = kill_process_group(child.pid(), sig);
}

/// Whether a process of the command's group still runs (zombies, its orphans waiting for init,
/// do not count: waiting for them would SIGKILL a group that SIGTERM already ended).
fn group_alive(child: &Shell) -> bool {
    super::group::group_running(child.pid())
}
