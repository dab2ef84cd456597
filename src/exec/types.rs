//! The executor's shared vocabulary: how a command ended ([`Ending`]), why it could not be run
//! ([`ExecError`]), a request to stop ([`Stop`]) and who is told a running command's process
//! group ([`GroupTracker`]). Every way of running a command (into a log, collected) speaks it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, Ordering};

use rustix::process::Pid;

/// Why a command could not be run as hookq must run it: it could not start for a reason outside
/// the hook (its log, the machine's limits), or its output could not be logged. The point it
/// belongs to stays pending.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// The log file or its folder could not be created or written. A command that had started
    /// runs to its end first, its output discarded from the failed write on: a hook is never
    /// killed halfway for its log.
    #[error("cannot write log {}: {source}", path.display())]
    Log {
        /// The log path.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Setting up the process (pipe, poll) failed.
    #[error("cannot run command: {0}")]
    Os(#[source] std::io::Error),
}

/// A request to stop, shared between a signal handler and the code that runs commands.
#[derive(Debug, Default)]
pub struct Stop(AtomicU8);

impl Stop {
    /// No stop requested.
    pub const fn new() -> Self {
        Self(AtomicU8::new(0))
    }

    /// Asks to stop after the current command (first call) or at once (later calls).
    pub fn request(&self) {
        let _ = self
            .0
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                Some(n.saturating_add(1))
            });
    }

    /// The underlying counter, for a signal handler to bump.
    pub fn counter(&self) -> &AtomicU8 {
        &self.0
    }

    /// Whether a stop after the current command was asked for.
    pub fn graceful(&self) -> bool {
        self.0.load(Ordering::SeqCst) >= 1
    }

    /// Whether an immediate stop was asked for: running commands are killed.
    pub fn immediate(&self) -> bool {
        self.0.load(Ordering::SeqCst) >= 2
    }
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// It exited with this code.
    Exited(i32),
    /// A signal hookq did not send ended it.
    Signalled(i32),
    /// It ran past its timeout; `killed` when SIGTERM was not enough and SIGKILL went too.
    TimedOut {
        /// Whether SIGKILL was needed.
        killed: bool,
    },
    /// A stop killed it: SIGKILL to its group, at once on an immediate stop, or after the grace
    /// when it outlived the SIGTERM of a first stop that ends it.
    Interrupted,
    /// `/bin/sh` could not be started.
    SpawnFailed(i32),
}

impl Ending {
    /// Whether the command succeeded.
    pub fn success(self) -> bool {
        self == Ending::Exited(0)
    }

    /// The code it exited with, if it exited.
    pub fn exit_code(self) -> Option<i32> {
        match self {
            Ending::Exited(c) => Some(c),
            _ => None,
        }
    }

    /// The signal that ended it: one hookq did not send, or the SIGKILL of an immediate stop.
    /// `None` when it exited, could not start, or ran past its timeout (those signals are
    /// hookq's own, and [`Ending::TimedOut`] says so).
    pub fn signal(self) -> Option<i32> {
        match self {
            Ending::Signalled(s) => Some(s),
            Ending::Interrupted => Some(libc::SIGKILL),
            Ending::Exited(_) | Ending::TimedOut { .. } | Ending::SpawnFailed(_) => None,
        }
    }

    /// Its status as a shell's `$?` says it: the exit code, or 128 plus the signal that ended
    /// it ([`Ending::signal`]). `None` when it ran past its timeout or could not start.
    pub fn shell_status(self) -> Option<i32> {
        self.exit_code().or_else(|| self.signal().map(|s| 128 + s))
    }
}

/// A human description of an ending, as the footer and warnings say it.
pub fn describe(ending: Ending) -> String {
    match ending {
        Ending::Exited(c) => format!("exit {c}"),
        Ending::Signalled(s) => format!("killed by signal {s}"),
        Ending::TimedOut { killed: false } => "timed out (SIGTERM to the process group)".into(),
        Ending::TimedOut { killed: true } => {
            "timed out (SIGTERM, then SIGKILL to the process group)".into()
        }
        Ending::Interrupted => "interrupted (SIGKILL to the process group on stop)".into(),
        Ending::SpawnFailed(e) => format!("could not start /bin/sh (os error {e})"),
    }
}

/// Told of a command's process group while it lives: [`GroupTracker::track`] once it started,
/// [`GroupTracker::untrack`] once it was reaped, whichever way the run ends.
pub trait GroupTracker: std::fmt::Debug {
    /// The command leading process group `pgid` started at `started_ms` (unix ms).
    fn track(&self, pgid: i32, started_ms: i64);
    /// The command of group `pgid` was reaped.
    fn untrack(&self, pgid: i32);
}

/// A command's process group, told to its tracker while it lives (see [`super::Spec::owner`]).
pub(crate) struct Tracked<'a> {
    tracker: &'a dyn GroupTracker,
    pgid: i32,
}

impl<'a> Tracked<'a> {
    pub(crate) fn new(tracker: &'a dyn GroupTracker, leader: Pid) -> Self {
        let pgid = leader.as_raw_nonzero().get();
        tracker.track(pgid, chrono::Utc::now().timestamp_millis());
        Self { tracker, pgid }
    }
}

impl Drop for Tracked<'_> {
    fn drop(&mut self) {
        self.tracker.untrack(self.pgid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ending_as_an_exit_code_a_signal_and_a_shell_status() {
        let all = [
            Ending::Exited(0),
            Ending::Exited(3),
            Ending::Signalled(libc::SIGTERM),
            Ending::Interrupted,
            Ending::TimedOut { killed: true },
            Ending::SpawnFailed(libc::ENOENT),
        ];
        let seen: Vec<_> = all
            .iter()
            .map(|e| (e.exit_code(), e.signal(), e.shell_status()))
            .collect();
        assert_eq!(
            seen,
            [
                (Some(0), None, Some(0)),
                (Some(3), None, Some(3)),
                (None, Some(15), Some(143)),
                (None, Some(9), Some(137)),
                (None, None, None),
                (None, None, None),
            ]
        );
    }
}
