//! Running one command and collecting what it printed: stdout and stderr apart, each capped,
//! optionally echoed to hookq's own stdout and stderr as it comes. The hook models that decide
//! (agent tool hooks, worktree lifecycle hooks) run their commands this way.
//!
//! Per run, the caller chooses what runs ([`Program`]: `/bin/sh -c`, or an interpreter with
//! its arguments), what the command reads ([`Input`]: end of file at once, bytes written from a
//! thread and then closed, or the terminal as the foreground job) and whether the output is
//! echoed. The bounds are always the same as for a logged run: a timeout, SIGTERM then SIGKILL
//! to the whole process group after a grace, a grandchild holding a pipe never holds the
//! result, and the child is always reaped.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use super::env::Environ;
use super::run::{Ending, ExecError, Stop};

/// What runs.
#[derive(Debug, Clone, Copy)]
pub enum Program<'a> {
    /// `/bin/sh -c <line>` (never a login shell).
    Shell(&'a str),
    /// `program args…`, `program` an absolute path (an interpreter with a script path, or with
    /// `-c` and a snippet). `argv[0]` is `program`.
    Exec {
        /// The executable, absolute.
        program: &'a Path,
        /// The arguments after `argv[0]`.
        args: &'a [OsString],
    },
}

/// What the command reads on stdin.
#[derive(Debug, Clone, Copy)]
pub enum Input<'a> {
    /// `/dev/null`: end of file at once. The command leads a session of its own, so it has no
    /// controlling terminal either (`/dev/tty` cannot be opened).
    Null,
    /// These bytes, written from a thread of their own and then closed. A command that never
    /// reads them, or exits early, blocks nothing: the writer gives up when the command is gone.
    Bytes(&'a [u8]),
    /// hookq's own stdin, a terminal: the command runs as the terminal's foreground process
    /// group (Ctrl-C reaches it, not hookq) and the terminal is given back to hookq's group,
    /// with its modes as they were, however the command ended.
    Terminal,
}

/// One command to run and collect.
#[derive(Debug, Clone)]
pub struct Job<'a> {
    /// What runs.
    pub program: Program<'a>,
    /// Working directory.
    pub cwd: &'a Path,
    /// The whole environment the command gets (nothing else is inherited), each name once.
    pub env: &'a Environ,
    /// What it reads.
    pub input: Input<'a>,
    /// SIGTERM to the group after this long.
    pub timeout: Duration,
    /// SIGKILL to the group this long after SIGTERM.
    pub kill_grace: Duration,
    /// The most bytes kept of each of stdout and stderr; the rest is read and discarded.
    pub max_output: usize,
    /// Also copy stdout and stderr, as they come and unchanged, to hookq's own stdout and
    /// stderr.
    pub echo: bool,
}

/// What a collected run gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collected {
    /// How it ended. [`Ending::SpawnFailed`] when the program could not be started.
    pub ending: Ending,
    /// Wall time from spawn to reap.
    pub duration: Duration,
    /// What it wrote on stdout, at most [`Job::max_output`] bytes, as they were.
    pub stdout: Vec<u8>,
    /// What it wrote on stderr, likewise.
    pub stderr: Vec<u8>,
    /// Whether stdout went past the cap (the rest was discarded).
    pub stdout_truncated: bool,
    /// Whether stderr went past the cap.
    pub stderr_truncated: bool,
}

/// Runs `job` to its end and returns what it printed. `Err` only for a failure outside the
/// command (no pipe, no poll); a command that fails, times out or cannot start is an `Ok` with
/// its ending.
pub fn collect(job: &Job<'_>, stop: &Stop) -> Result<Collected, ExecError> {
    let _ = (job, stop);
    Err(ExecError::Os(std::io::Error::other("not built yet")))
}
