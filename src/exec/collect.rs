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
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::pipe::{PipeFlags, pipe_with};
use rustix::process::Signal;

use super::env::Environ;
use super::spawn::{Command, Leader, Shell, Stdin, is_transient};
use super::supervise::{Bounds, signal_group, supervise};
use super::sys;
use super::types::{Ending, ExecError, GroupTracker, Stop, Tracked};

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
    /// Who is told the command's process group while it runs, if anyone: a model that must
    /// end what a killed hookq left running records it there.
    pub owner: Option<&'a dyn GroupTracker>,
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

/// What a first stop request does to a running command. A second one always kills its group
/// at once ([`Ending::Interrupted`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FirstStop {
    /// The command runs to its end, or its timeout; the caller starts nothing after it.
    LetsFinish,
    /// The command is ended as at its timeout: SIGTERM (and SIGCONT) to its group, then
    /// SIGKILL if any of it is left after the grace. It ends as its leader did when SIGTERM
    /// was enough, else as [`Ending::Interrupted`].
    Ends,
}

/// Runs `job` to its end and returns what it printed. `Err` only for a failure outside the
/// command: no pipe or poll, the machine out of processes, memory or descriptors, or
/// [`Input::Terminal`] without a terminal on stdin. A command that fails, times out or cannot
/// start is an `Ok` with its ending. A first stop request lets it finish
/// ([`FirstStop::LetsFinish`]).
pub fn collect(job: &Job<'_>, stop: &Stop) -> Result<Collected, ExecError> {
    collect_with(job, stop, FirstStop::LetsFinish)
}

/// [`collect`], with `first` saying what a first stop request does to the command.
pub fn collect_with(job: &Job<'_>, stop: &Stop, first: FirstStop) -> Result<Collected, ExecError> {
    let os = |e: rustix::io::Errno| ExecError::Os(e.into());
    let (out_r, out_w) = pipe_with(PipeFlags::CLOEXEC).map_err(os)?;
    let (err_r, err_w) = pipe_with(PipeFlags::CLOEXEC).map_err(os)?;
    let stdin_pipe = match job.input {
        Input::Bytes(_) => Some(pipe_with(PipeFlags::CLOEXEC).map_err(os)?),
        Input::Null | Input::Terminal => None,
    };
    let terminal = match job.input {
        Input::Terminal => Some(Terminal::take()?),
        Input::Null | Input::Bytes(_) => None,
    };
    let shell_args;
    let exec_args: Vec<&[u8]>;
    let (program, args): (&[u8], &[&[u8]]) = match job.program {
        Program::Shell(line) => {
            shell_args = [b"-c".as_slice(), line.as_bytes()];
            (b"/bin/sh", &shell_args)
        }
        Program::Exec { program, args } => {
            exec_args = args.iter().map(|a| a.as_bytes()).collect();
            (program.as_os_str().as_bytes(), &exec_args)
        }
    };
    let stdin_fd = std::io::stdin();
    let command = Command {
        program,
        args,
        cwd: job.cwd,
        env: job.env,
        stdin: match (&stdin_pipe, &terminal) {
            (Some((read, _)), _) => Stdin::Fd(read.as_fd()),
            (None, Some(_)) => Stdin::Fd(stdin_fd.as_fd()),
            (None, None) => Stdin::Null,
        },
        stdout: out_w.as_fd(),
        stderr: err_w.as_fd(),
        leader: match terminal {
            Some(_) => Leader::Foreground(stdin_fd.as_fd()),
            None => Leader::Session,
        },
        gate: None,
    };
    let start = Instant::now();
    let child = Shell::spawn(&command);
    // Our copies of the pipes' child ends close now, so end of file arrives when the command
    // and everything it started are done with them.
    drop((out_w, err_w));
    let stdin_w = stdin_pipe.map(|(read, write)| {
        drop(read);
        write
    });
    let child = match child {
        Ok(c) => c,
        Err(e) if is_transient(&e) => return Err(ExecError::Os(e)),
        Err(e) => {
            return Ok(Collected {
                ending: Ending::SpawnFailed(e.raw_os_error().unwrap_or(-1)),
                duration: start.elapsed(),
                stdout: Vec::new(),
                stderr: Vec::new(),
                stdout_truncated: false,
                stderr_truncated: false,
            });
        }
    };
    // Named to the owner from now until it is reaped, whichever way this function returns.
    let _tracked = job.owner.map(|owner| Tracked::new(owner, child.pid()));
    let mut stdout = Capped::new(job.max_output, job.echo.then(std::io::stdout));
    let mut stderr = Capped::new(job.max_output, job.echo.then(std::io::stderr));
    let bounds = Bounds {
        timeout: job.timeout,
        kill_grace: job.kill_grace,
        first_stop_ends: first == FirstStop::Ends,
    };
    let done = AtomicBool::new(false);
    let outcome = std::thread::scope(|scope| {
        if let (Some(write), Input::Bytes(bytes)) = (stdin_w, job.input)
            && let Some(rest) = feed_now(&write, bytes)
        {
            let done = &done;
            scope.spawn(move || feed(write, rest, done));
        }
        let outcome = supervise(
            &child,
            vec![
                (out_r, &mut |b: &[u8]| stdout.take(b)),
                (err_r, &mut |b: &[u8]| stderr.take(b)),
            ],
            bounds,
            (stop, &mut || {}),
            start,
        );
        done.store(true, Ordering::Relaxed);
        outcome
    });
    let ending = match outcome {
        Ok(e) => e,
        Err(e) => {
            // Never leave a process behind: whatever failed, the group goes and the child is reaped.
            signal_group(&child, Signal::KILL);
            let _ = child.wait();
            return Err(ExecError::Os(e));
        }
    };
    let duration = start.elapsed();
    drop(terminal);
    Ok(Collected {
        ending,
        duration,
        stdout_truncated: stdout.truncated,
        stdout: stdout.kept,
        stderr_truncated: stderr.truncated,
        stderr: stderr.kept,
    })
}

/// One output stream's bytes, kept up to a cap and echoed as they come.
struct Capped<W> {
    kept: Vec<u8>,
    cap: usize,
    truncated: bool,
    echo: Option<W>,
}

impl<W: Write> Capped<W> {
    fn new(cap: usize, echo: Option<W>) -> Self {
        Self {
            kept: Vec::new(),
            cap,
            truncated: false,
            echo,
        }
    }

    fn take(&mut self, bytes: &[u8]) {
        if let Some(w) = self.echo.as_mut() {
            // The terminal closed or full: echoing is a courtesy, the collected copy is kept.
            let _ = w.write_all(bytes).and_then(|()| w.flush());
        }
        let room = self.cap.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&bytes[..bytes.len().min(room)]);
        self.truncated |= bytes.len() > room;
    }
}

/// Writes what fits into the stdin pipe now, without blocking: most payloads fit in the pipe's
/// buffer, and then no thread is needed. Returns the rest, or `None` when nothing is left to
/// write (all written, or the command closed its stdin). Closing the write end is dropping it.
fn feed_now<'b>(write: &OwnedFd, bytes: &'b [u8]) -> Option<&'b [u8]> {
    if rustix::io::ioctl_fionbio(write, true).is_err() {
        return Some(bytes);
    }
    let mut rest = bytes;
    while !rest.is_empty() {
        match rustix::io::write(write, rest) {
            Ok(n) => rest = &rest[n..],
            Err(rustix::io::Errno::INTR) => {}
            Err(rustix::io::Errno::AGAIN) => return Some(rest),
            // EPIPE: the command is not reading stdin (any more). Nothing else can be done.
            Err(_) => return None,
        }
    }
    None
}

/// Writes the rest of the payload from a thread of its own, then closes the pipe. Waits for
/// room with a short poll, and gives up as soon as `done` says the command's run is over: a
/// command (or a grandchild holding its stdin) that never reads cannot hold the writer.
fn feed(write: OwnedFd, mut rest: &[u8], done: &AtomicBool) {
    while !rest.is_empty() && !done.load(Ordering::Relaxed) {
        match rustix::io::write(&write, rest) {
            Ok(n) => rest = &rest[n..],
            Err(rustix::io::Errno::INTR) => {}
            Err(rustix::io::Errno::AGAIN) => {
                let mut fds = [PollFd::new(&write, PollFlags::OUT)];
                let tick = Timespec {
                    tv_sec: 0,
                    tv_nsec: 20_000_000,
                };
                let _ = poll(&mut fds, Some(&tick));
            }
            Err(_) => return,
        }
    }
}

/// The terminal on hookq's stdin, lent to a command as its foreground job: taking it saves the
/// terminal's modes and foreground process group, dropping it puts both back.
struct Terminal {
    modes: rustix::termios::Termios,
    foreground: rustix::process::Pid,
}

impl Terminal {
    fn take() -> Result<Self, ExecError> {
        let stdin = std::io::stdin();
        let fd = stdin.as_fd();
        if !rustix::termios::isatty(fd) {
            return Err(ExecError::Os(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "stdin is not a terminal, so a hook cannot be given it",
            )));
        }
        let modes = rustix::termios::tcgetattr(fd).map_err(|e| ExecError::Os(e.into()))?;
        let foreground = rustix::termios::tcgetpgrp(fd).map_err(|e| ExecError::Os(e.into()))?;
        Ok(Self { modes, foreground })
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let stdin = std::io::stdin();
        let fd = stdin.as_fd();
        // hookq is in the background now: setting the terminal from there raises SIGTTOU,
        // which would stop it, unless the signal is blocked in the calling thread.
        let blocked = sys::block_signal(libc::SIGTTOU);
        let _ = rustix::termios::tcsetpgrp(fd, self.foreground);
        let _ =
            rustix::termios::tcsetattr(fd, rustix::termios::OptionalActions::Drain, &self.modes);
        drop(blocked);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::testing::ready_in_time;

    fn path_env() -> Environ {
        [("PATH", std::env::var_os("PATH").unwrap_or_default())]
            .into_iter()
            .collect()
    }

    fn job<'a>(line: &'a str, env: &'a Environ, input: Input<'a>) -> Job<'a> {
        Job {
            program: Program::Shell(line),
            cwd: Path::new("/"),
            env,
            input,
            timeout: Duration::from_secs(30),
            kill_grace: Duration::from_secs(1),
            max_output: 1 << 20,
            echo: false,
            owner: None,
        }
    }

    fn run(job: &Job<'_>) -> Collected {
        collect(job, &Stop::new()).unwrap()
    }

    /// Polls for `path` until it exists; panics after a minute.
    fn wait_for(path: &Path) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !path.exists() {
            assert!(Instant::now() < deadline, "{} never came", path.display());
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// A first stop ends a command run with [`FirstStop::Ends`] as its timeout would: SIGTERM
    /// to its group, and SIGKILL after the grace for a member that ignores it. Run with
    /// [`FirstStop::LetsFinish`], the command runs to its end.
    #[test]
    fn a_first_stop_ends_the_command_only_when_asked_to() {
        let env = path_env();
        let stop = Stop::new();
        stop.request();
        let t = Instant::now();
        let c = collect_with(&job("sleep 30", &env, Input::Null), &stop, FirstStop::Ends).unwrap();
        assert_eq!(c.ending, Ending::Signalled(libc::SIGTERM));
        // A stop once the member has set its trap.
        let dir = tempfile::tempdir().unwrap();
        let ready = dir.path().join("ready");
        let line = format!(
            "(trap '' TERM; touch '{}'; exec sleep 30) & sleep 30",
            ready.display()
        );
        let j = job(&line, &env, Input::Null);
        let later = Stop::new();
        let c = std::thread::scope(|scope| {
            scope.spawn(|| {
                wait_for(&ready);
                later.request();
            });
            collect_with(&j, &later, FirstStop::Ends).unwrap()
        });
        assert_eq!(c.ending, Ending::Interrupted);
        assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
        let j = job("sleep 0.2; exit 4", &env, Input::Null);
        assert_eq!(collect(&j, &stop).unwrap().ending, Ending::Exited(4));
    }

    #[test]
    fn stdout_and_stderr_come_back_apart_with_the_exit_code() {
        let env = path_env();
        let c = run(&job(
            "echo out; echo err >&2; printf 'a\\0b\\377'; exit 3",
            &env,
            Input::Null,
        ));
        assert_eq!(c.ending, Ending::Exited(3));
        assert_eq!(c.stdout, b"out\na\0b\xff");
        assert_eq!(c.stderr, b"err\n");
        assert!(!c.stdout_truncated && !c.stderr_truncated);
    }

    #[test]
    fn stdin_null_is_end_of_file_and_there_is_no_terminal() {
        let env = path_env();
        let c = run(&job(
            "cat; echo \"read:$?\"; (exec 3</dev/tty) 2>/dev/null && echo tty || echo no-tty",
            &env,
            Input::Null,
        ));
        assert_eq!(c.stdout, b"read:0\nno-tty\n");
    }

    #[test]
    fn the_payload_reaches_a_command_that_reads_it_all() {
        let env = path_env();
        let payload = vec![b'x'; 8 << 20];
        let c = run(&job("wc -c", &env, Input::Bytes(&payload)));
        assert_eq!(c.ending, Ending::Exited(0));
        assert_eq!(String::from_utf8_lossy(&c.stdout).trim(), "8388608");
        // Small payloads too, and the pipe is closed after them.
        let c = run(&job("cat; echo end", &env, Input::Bytes(b"{\"a\":1}")));
        assert_eq!(c.stdout, b"{\"a\":1}end\n");
    }

    /// 8 MiB no command reads, even with a grandchild that keeps stdin open and never reads:
    /// the run ends when the command does.
    #[test]
    fn a_command_that_never_reads_its_stdin_blocks_nothing() {
        let env = path_env();
        let payload = vec![b'{'; 8 << 20];
        let started = Instant::now();
        let c = run(&job(
            "sleep 300 >/dev/null 2>&1 & echo $!",
            &env,
            Input::Bytes(&payload),
        ));
        let took = started.elapsed();
        assert_eq!(c.ending, Ending::Exited(0));
        let sleeper: i32 = String::from_utf8_lossy(&c.stdout).trim().parse().unwrap();
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_raw(sleeper).unwrap(),
            rustix::process::Signal::KILL,
        );
        // Waiting for the grandchild would take its 300 s.
        assert!(took < Duration::from_secs(120), "{took:?}");
        let c = run(&job("exit 4", &env, Input::Bytes(&payload)));
        assert_eq!(c.ending, Ending::Exited(4));
    }

    /// A grandchild that keeps stdout open past the timeout does not hold the result: the
    /// group is ended (TERM, then KILL after the grace) and the run returns.
    #[test]
    fn a_grandchild_holding_stdout_past_the_timeout_does_not_hold_the_result() {
        let env = path_env();
        let dir = tempfile::tempdir().unwrap();
        let ready = dir.path().join("ready");
        let line = format!(
            "echo before; (trap '' TERM; touch '{}'; exec sleep 120) & sleep 120",
            ready.display()
        );
        let (c, took, timeout) = ready_in_time(&ready, |timeout| {
            let mut j = job(&line, &env, Input::Bytes(b"{}"));
            j.timeout = timeout;
            j.kill_grace = Duration::from_millis(300);
            let started = Instant::now();
            (run(&j), started.elapsed(), timeout)
        });
        assert_eq!(c.ending, Ending::TimedOut { killed: true });
        assert_eq!(c.stdout, b"before\n");
        // The grandchild sleeps 120 s.
        assert!(took < timeout + Duration::from_secs(60), "{took:?}");
        // A leader that exits at once while its grandchild keeps the pipe: no wait at all for
        // the grandchild.
        let started = Instant::now();
        let c = run(&job("sleep 30 & echo quick", &env, Input::Null));
        assert_eq!(
            (c.ending, c.stdout.as_slice()),
            (Ending::Exited(0), b"quick\n".as_slice())
        );
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn output_past_the_cap_is_read_and_discarded() {
        let env = path_env();
        let mut j = job(
            "head -c 3000000 /dev/zero; echo tail; head -c 5000 /dev/zero >&2",
            &env,
            Input::Null,
        );
        j.max_output = 1000;
        let c = run(&j);
        assert_eq!(c.ending, Ending::Exited(0), "the command was never blocked");
        assert_eq!(c.stdout, vec![0; 1000]);
        assert_eq!(c.stderr.len(), 1000);
        assert!(c.stdout_truncated && c.stderr_truncated);
    }

    #[test]
    fn an_interpreter_runs_a_script_or_a_snippet() {
        let env = path_env();
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("hook.sh");
        std::fs::write(&script, "echo \"script $1 in $PWD\"\n").unwrap();
        let args = [script.clone().into_os_string(), "arg".into()];
        let mut j = job("", &env, Input::Null);
        j.program = Program::Exec {
            program: Path::new("/bin/sh"),
            args: &args,
        };
        j.cwd = dir.path();
        let c = run(&j);
        let cwd = dir.path().canonicalize().unwrap();
        assert_eq!(
            String::from_utf8_lossy(&c.stdout),
            format!("script arg in {}\n", cwd.display())
        );
        let args = ["-c".into(), "echo snippet $0".into(), "zero".into()];
        j.program = Program::Exec {
            program: Path::new("/bin/sh"),
            args: &args,
        };
        assert_eq!(run(&j).stdout, b"snippet zero\n");
        // A program that does not exist is an ending, not an error.
        j.program = Program::Exec {
            program: Path::new("/nonexistent/bash"),
            args: &[],
        };
        assert_eq!(run(&j).ending, Ending::SpawnFailed(libc::ENOENT));
    }

    #[test]
    fn a_signal_ending_and_a_terminal_input_without_a_terminal() {
        let env = path_env();
        let c = run(&job("kill -KILL $$", &env, Input::Null));
        assert_eq!(c.ending, Ending::Signalled(libc::SIGKILL));
        if !rustix::termios::isatty(std::io::stdin()) {
            let err = collect(&job("true", &env, Input::Terminal), &Stop::new()).unwrap_err();
            assert!(err.to_string().contains("not a terminal"), "{err}");
        }
    }

    /// The terminal mode, under a real pseudo-terminal: this test runs the test binary again
    /// (`terminal_child` below) as the session leader of a new pty, types an answer into the
    /// pty and reads what the child printed.
    #[test]
    fn a_terminal_job_is_the_foreground_and_the_terminal_comes_back() {
        let report = run_under_pty(
            "exec::collect::tests::terminal_child",
            &[("prompt> ", b"answer\n"), ("ready> ", b"\x03")],
        );
        assert!(report.contains("prompt> "), "{report}");
        assert!(report.contains("fg-is-hook:yes"), "{report}");
        assert!(report.contains("got:answer"), "{report}");
        assert!(report.contains("ctrl-c:hook-interrupted"), "{report}");
        assert!(report.contains("PARENT-OK"), "{report}");
        assert!(!report.contains("PARENT-FAIL"), "{report}");
    }

    /// Run by [`a_terminal_job_is_the_foreground_and_the_terminal_comes_back`] inside a pty;
    /// outside one (`HOOKQ_TEST_PTY_CHILD` unset) it has nothing to check and returns.
    #[test]
    fn terminal_child() {
        if std::env::var_os("HOOKQ_TEST_PTY_CHILD").is_none() {
            return;
        }
        let env = path_env();
        let own = rustix::process::getpgrp();
        let before = rustix::termios::tcgetattr(std::io::stdin()).unwrap();
        // Foreground, a prompt without a newline, the answer read from the terminal.
        let mut j = job(
            "read -r _ _ _ _ pgrp _ _ tpgid _ < /proc/$$/stat; [ \"$pgrp\" = \"$tpgid\" ] && echo fg-is-hook:yes || echo fg-is-hook:no; printf 'prompt> '; read a; echo got:$a",
            &env,
            Input::Terminal,
        );
        j.echo = true;
        let c = run(&j);
        let first_ok = c.ending == Ending::Exited(0)
            && String::from_utf8_lossy(&c.stdout).contains("got:answer");
        // Ctrl-C reaches the hook, the foreground job, and not hookq.
        let mut j = job("printf 'ready> '; sleep 60", &env, Input::Terminal);
        j.echo = true;
        let c = run(&j);
        let interrupted = matches!(
            c.ending,
            Ending::Signalled(libc::SIGINT) | Ending::Exited(130)
        );
        println!(
            "ctrl-c:{}",
            if interrupted {
                "hook-interrupted"
            } else {
                "missed"
            }
        );
        // A hook that changes the modes and is killed at its timeout: both the foreground and
        // the modes come back.
        let mut j = job("stty -echo -icanon; sleep 60", &env, Input::Terminal);
        j.timeout = Duration::from_millis(500);
        j.kill_grace = Duration::from_millis(200);
        let c = run(&j);
        let fg = rustix::termios::tcgetpgrp(std::io::stdin()).unwrap();
        let after = rustix::termios::tcgetattr(std::io::stdin()).unwrap();
        let ok = first_ok
            && interrupted
            && matches!(c.ending, Ending::TimedOut { .. })
            && fg == own
            && after.local_modes == before.local_modes;
        println!("{}", if ok { "PARENT-OK" } else { "PARENT-FAIL" });
        assert!(ok, "{c:?} fg {fg:?} own {own:?}");
    }

    /// Runs the test `name` of this binary as the session leader of a new pseudo-terminal,
    /// types each answer once its prompt shows, and returns everything the pty showed until
    /// the child exited.
    fn run_under_pty(name: &str, answers: &[(&str, &[u8])]) -> String {
        let (master, slave) = sys::open_pty().expect("openpty");
        let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
        cmd.args(["--exact", name, "--nocapture", "--test-threads=1"])
            .env("HOOKQ_TEST_PTY_CHILD", "1")
            .stdin(slave.try_clone().unwrap())
            .stdout(slave.try_clone().unwrap())
            .stderr(slave.try_clone().unwrap());
        sys::on_exec_take_terminal(&mut cmd);
        let mut child = cmd.spawn().unwrap();
        drop(slave);
        rustix::io::ioctl_fionbio(&master, true).unwrap();
        let mut seen = Vec::new();
        let mut answered = 0;
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut buf = [0u8; 4096];
        loop {
            match rustix::io::read(&master, &mut buf) {
                Ok(0) | Err(rustix::io::Errno::IO) => break,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
                Err(rustix::io::Errno::AGAIN) => {
                    if let Some(_status) = child.try_wait().unwrap() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => panic!("reading the pty: {e}"),
            }
            if let Some((prompt, typed)) = answers.get(answered)
                && String::from_utf8_lossy(&seen).contains(prompt)
            {
                rustix::io::write(&master, typed).unwrap();
                answered += 1;
            }
            assert!(
                Instant::now() < deadline,
                "hung: {}",
                String::from_utf8_lossy(&seen)
            );
        }
        let _ = child.kill();
        let _ = child.wait();
        String::from_utf8_lossy(&seen).into_owned()
    }
}
