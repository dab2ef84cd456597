//! Running one discovered hook on the shared executor and turning how it ended into a ledger
//! row. Hooks run one at a time, so two never compete for the terminal.

use std::ffi::OsString;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::discovery::{Source, SourcedCommand};
use super::input::InputPolicy;
use super::ledger::{Outcome, Status};
use crate::exec::{self, Ending, Environ, FirstStop, GroupTracker, Input, Job, Program, Stop};

/// How long a hook that ignores SIGTERM at its timeout, or at a stop, has before SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_secs(5);

/// The most bytes of each of a hook's stdout and stderr kept for showing a failure.
pub const MAX_OUTPUT: usize = 1 << 20;

/// How a command runs its hooks.
#[derive(Debug, Clone, Copy)]
pub struct RunOptions<'a> {
    /// The command-wide input mode.
    pub input: InputPolicy,
    /// `--json`: a failed hook's output goes to stderr only.
    pub json: bool,
    /// The stop token.
    pub stop: &'a Stop,
}

/// What every hook of one command runs with.
#[derive(Debug)]
pub struct Runner<'a> {
    /// The Bash that runs every hook.
    pub bash: PathBuf,
    /// Each hook's timeout.
    pub timeout: Duration,
    /// The command-wide input mode.
    pub input: InputPolicy,
    /// Where a failed hook's captured output goes: its own streams (human), or stderr only
    /// (JSON, whose stdout carries the result alone).
    pub json: bool,
    /// The stop token SIGINT and SIGTERM bump.
    pub stop: &'a Stop,
}

/// Where a hook runs and what it is told about it, for the banner.
#[derive(Debug, Clone)]
pub struct Place<'a> {
    /// Its working directory.
    pub cwd: &'a Path,
    /// What it acts on, for the banner: `workspace /ws` or `web worktree /ws/worktrees/web/x`.
    pub subject: String,
    /// Its whole environment.
    pub env: &'a Environ,
}

impl<'a> Runner<'a> {
    /// Runs every hook with `bash`, each bounded by `timeout`, as `opts` say.
    pub fn new(bash: &Path, timeout: Duration, opts: RunOptions<'a>) -> Self {
        Self {
            bash: bash.to_path_buf(),
            timeout,
            input: opts.input,
            json: opts.json,
            stop: opts.stop,
        }
    }

    /// Runs `hook` and returns its ledger row. `owner`, if any, is told the hook's process
    /// group while it runs (a create's journal, so that the rollback of a killed create ends
    /// the hook it left running).
    pub fn run(
        &self,
        hook: &SourcedCommand,
        place: &Place<'_>,
        owner: Option<&dyn GroupTracker>,
    ) -> Outcome {
        let args: Vec<OsString> = match &hook.source {
            // `$0` is the hook's logical name, so Bash's own messages name the hook, not "bash".
            Source::Inline { snippet, .. } => {
                vec!["-c".into(), snippet.to_arg(), hook.name.clone().into()]
            }
            Source::Native { path, .. } => vec![path.clone().into_os_string()],
        };
        let tty = self.input == InputPolicy::Tty;
        if tty {
            // Complete, and flushed, before the hook can read or prompt.
            let mut err = std::io::stderr().lock();
            let _ = writeln!(
                err,
                "hookq: running {} hook {} for {} (source: {})",
                hook.lifecycle,
                label_scope(hook),
                place.subject,
                hook.source.describe()
            );
            let _ = err.flush();
        }
        let job = Job {
            program: Program::Exec {
                program: &self.bash,
                args: &args,
            },
            cwd: place.cwd,
            env: place.env,
            input: if tty { Input::Terminal } else { Input::Null },
            timeout: self.timeout,
            kill_grace: KILL_GRACE,
            max_output: MAX_OUTPUT,
            echo: tty,
            owner,
        };
        // A stop (SIGINT, SIGTERM) ends the running hook as its timeout would: the command it
        // belongs to is not carried on after it, so there is nothing to let it finish for.
        let (status, duration) = match exec::collect_with(&job, self.stop, FirstStop::Ends) {
            Ok(c) => {
                let status = status_of(c.ending);
                if status.failed() && !tty {
                    self.replay(&c.stdout, &c.stderr);
                }
                (status, c.duration)
            }
            Err(e) => (Status::FailedValidation(e.to_string()), Duration::ZERO),
        };
        Outcome {
            hook: hook.clone(),
            status,
            duration,
            cwd: Some(place.cwd.to_path_buf()),
        }
    }

    /// A failed hook's captured output, on its own streams (JSON: both on stderr).
    fn replay(&self, stdout: &[u8], stderr: &[u8]) {
        if self.json {
            let mut e = std::io::stderr().lock();
            let _ = e.write_all(stdout);
            let _ = e.write_all(stderr);
            let _ = e.flush();
        } else {
            let mut o = std::io::stdout().lock();
            let _ = o.write_all(stdout);
            let _ = o.flush();
            let mut e = std::io::stderr().lock();
            let _ = e.write_all(stderr);
            let _ = e.flush();
        }
    }
}

fn label_scope(h: &SourcedCommand) -> String {
    format!("{} ({} scope)", h.name, h.scope)
}

/// The ledger status of an ending.
pub fn status_of(ending: Ending) -> Status {
    match ending {
        Ending::Exited(0) => Status::Succeeded,
        Ending::TimedOut { .. } => Status::TimedOut,
        Ending::Exited(_) | Ending::Signalled(_) | Ending::Interrupted => Status::ExitedNonzero {
            code: ending.shell_status().unwrap_or(-1),
            signal: ending.signal(),
        },
        Ending::SpawnFailed(errno) => Status::FailedValidation(format!(
            "the interpreter could not be started: {}",
            std::io::Error::from_raw_os_error(errno)
        )),
    }
}
