//! Starting a command (`/bin/sh -c <line>`, or a program with its arguments) with
//! `posix_spawn` and the environment passed as it was prepared ([`Environ`]).
//!
//! `std::process::Command` starts a child the same way (glibc's `posix_spawn`: a `clone` with
//! `CLONE_VM | CLONE_VFORK`, then `execve`), but it first copies a cleared-and-set environment
//! into a `BTreeMap`, one allocation per name and value, and builds a C string of each from that
//! on every spawn. For the drain's many short commands that was the largest part of hookq's own
//! CPU per command. Here the environment is already laid out as `execve` takes it
//! (`docs/design.md` has the figures). The calls into the C library are [`super::sys`]'s.
//!
//! The child gets what `Command` would give it: a process group of its own, an empty signal mask
//! and `SIGPIPE` at its default (the Rust runtime ignores it, and an ignored signal stays ignored
//! across `execve`), the given stdin (`/dev/null` unless told otherwise), working directory,
//! stdout and stderr. Its process group leads a session of its own, too, so it has no
//! controlling terminal, unless it is started as a terminal's foreground job. Every other descriptor hookq holds is close-on-exec
//! (Rust's, rustix's and SQLite's alike), so the child inherits nothing else. A failure to start
//! (no `/bin/sh`, a missing working directory) is the `posix_spawn` error, as with `Command`.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;

use rustix::process::{Pid, WaitOptions, waitpid};

use super::env::Environ;
use super::sys;

/// Where a started command's stdin comes from.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Stdin<'a> {
    /// `/dev/null`.
    Null,
    /// This descriptor (a pipe's read end, or the terminal).
    Fd(BorrowedFd<'a>),
}

/// Which process group and session a started command leads.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Leader<'a> {
    /// A session of its own, and so a process group of its own and no controlling terminal: a
    /// command that would prompt on the terminal (git asking for credentials, ssh for a host
    /// key) fails at once instead of being stopped in the background (SIGTTIN) until its
    /// timeout.
    Session,
    /// A process group of its own in hookq's session, made the foreground group of this
    /// terminal before the command runs (the child does it itself, with every signal blocked,
    /// so it is never stopped for it and never runs a moment in the background).
    Foreground(BorrowedFd<'a>),
}

/// What to start: the program, its arguments and everything around it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Command<'a> {
    /// The executable's path, also `argv[0]`.
    pub program: &'a [u8],
    /// The arguments after `argv[0]`.
    pub args: &'a [&'a [u8]],
    /// Working directory.
    pub cwd: &'a Path,
    /// The whole environment, each name once.
    pub env: &'a Environ,
    /// Its stdin.
    pub stdin: Stdin<'a>,
    /// Its stdout.
    pub stdout: BorrowedFd<'a>,
    /// Its stderr.
    pub stderr: BorrowedFd<'a>,
    /// Its process group and session.
    pub leader: Leader<'a>,
    /// A descriptor the child gets as its fd 3 (see [`Shell::start`]'s gate), if any.
    pub gate: Option<BorrowedFd<'a>>,
}

/// A started command: wait for it with [`Shell::try_wait`] or [`Shell::wait`]. Like
/// `std::process::Child`, dropping it neither kills nor reaps it.
#[derive(Debug)]
pub(crate) struct Shell {
    pid: Pid,
}

impl Shell {
    /// Starts `/bin/sh -c line` in `cwd` with exactly `env` (each name given once), `out` as its
    /// stdout and stderr, `/dev/null` as stdin, as the leader of a new session and process group.
    ///
    /// With a `gate` (a pipe's read end), the shell starts but runs nothing of `line` until a
    /// line can be read from the gate: the caller writes one once the command may run (its
    /// process group is known to whoever must end it, its start is counted), and closes the
    /// pipe instead when it must not, or dies, and then the shell exits 125 having run nothing.
    /// Meanwhile the shell's own start (`execve`, the loader, its setup), most of what starting
    /// a command costs, overlaps the caller's work. The gate is the shell's fd 3, closed before
    /// `line` runs, which sees the descriptors it would see without one; `line` follows on the
    /// same script line, so the shell's messages name the lines they name without a gate.
    pub(crate) fn start(
        line: &str,
        cwd: &Path,
        env: &Environ,
        out: BorrowedFd<'_>,
        gate: Option<BorrowedFd<'_>>,
    ) -> io::Result<Shell> {
        let gated;
        let script = match gate {
            Some(_) => {
                gated = [GATE.as_bytes(), line.as_bytes()].concat();
                &gated[..]
            }
            None => line.as_bytes(),
        };
        Self::spawn(&Command {
            program: b"/bin/sh",
            args: &[b"-c", script],
            cwd,
            env,
            stdin: Stdin::Null,
            stdout: out,
            stderr: out,
            leader: Leader::Session,
            gate,
        })
    }

    /// Starts `command` with `posix_spawn`.
    pub(crate) fn spawn(command: &Command<'_>) -> io::Result<Shell> {
        let env = command.env;
        debug_assert!(
            {
                let mut seen = std::collections::HashSet::new();
                env.iter().all(|(name, _)| seen.insert(name))
            },
            "a name given twice is passed twice"
        );
        let program = c_string(command.program.to_vec())?;
        let args = command
            .args
            .iter()
            .map(|a| c_string(a.to_vec()))
            .collect::<io::Result<Vec<_>>>()?;
        let cwd = c_string(command.cwd.as_os_str().as_bytes().to_vec())?;
        if env.raw().is_none() {
            return Err(nul_byte());
        }
        // `dup2` onto 0, 1 and 2 clears close-on-exec on the copies. Whether a `dup2` action
        // onto itself does was left open by POSIX until 2024 (glibc's does), so a descriptor
        // that already is 0, 1 or 2 is moved above them first and the question does not come up.
        let mut moved = Vec::new();
        let mut above_2 = |fd: BorrowedFd<'_>| -> io::Result<i32> {
            if fd.as_raw_fd() > 2 {
                return Ok(fd.as_raw_fd());
            }
            let copy = rustix::io::fcntl_dupfd_cloexec(fd, 3)?;
            let raw = copy.as_raw_fd();
            moved.push(copy);
            Ok(raw)
        };
        let stdin = match command.stdin {
            Stdin::Null => None,
            Stdin::Fd(fd) => Some(above_2(fd)?),
        };
        let stdout = above_2(command.stdout)?;
        let stderr = if command.stderr.as_raw_fd() == command.stdout.as_raw_fd() {
            stdout
        } else {
            above_2(command.stderr)?
        };
        // The gate goes onto 3 after 0-2 are set, from a number other than 3 (see above).
        let gate = match command.gate {
            Some(fd) if fd.as_raw_fd() <= 3 => {
                let copy = rustix::io::fcntl_dupfd_cloexec(fd, 4)?;
                let raw = copy.as_raw_fd();
                moved.push(copy);
                Some(raw)
            }
            Some(fd) => Some(fd.as_raw_fd()),
            None => None,
        };
        let tty = match command.leader {
            Leader::Session => None,
            Leader::Foreground(fd) => Some(fd.as_raw_fd()),
        };
        let mut actions = sys::FileActions::new()?;
        match stdin {
            None => actions.open_dev_null(0)?,
            Some(fd) => actions.dup2(fd, 0)?,
        }
        actions.dup2(stdout, 1)?;
        actions.dup2(stderr, 2)?;
        if let Some(gate) = gate {
            actions.dup2(gate, 3)?;
        }
        actions.chdir(&cwd)?;
        if let Some(tty) = tty {
            actions.tcsetpgrp(tty)?;
        }
        let mut attrs = sys::SpawnAttrs::new()?;
        attrs.set_empty_sigmask()?;
        // SIGPIPE, which the Rust runtime ignores, back at its default. A foreground job's
        // terminal signals act as they do under a shell, whatever hookq's own dispositions are.
        let reset: &[libc::c_int] = match tty {
            None => &[libc::SIGPIPE],
            Some(_) => &[
                libc::SIGPIPE,
                libc::SIGINT,
                libc::SIGQUIT,
                libc::SIGTSTP,
                libc::SIGTTIN,
                libc::SIGTTOU,
            ],
        };
        attrs.set_sigdefault(reset)?;
        let group = match tty {
            None => libc::c_int::from(libc::POSIX_SPAWN_SETSID),
            Some(_) => {
                attrs.set_pgroup(0)?;
                libc::c_int::from(libc::POSIX_SPAWN_SETPGROUP)
            }
        };
        attrs.set_flags(
            group | libc::c_int::from(libc::POSIX_SPAWN_SETSIGMASK | libc::POSIX_SPAWN_SETSIGDEF),
        )?;
        let argv: Vec<&CStr> = [program.as_c_str()]
            .into_iter()
            .chain(args.iter().map(CString::as_c_str))
            .collect();
        let pid = sys::spawn(&program, &argv, env, &actions, &attrs);
        drop(moved);
        Ok(Shell {
            pid: Pid::from_raw(pid?).ok_or_else(|| io::Error::other("posix_spawn gave pid 0"))?,
        })
    }

    /// The child's pid, which is also its process group's id.
    pub(crate) fn pid(&self) -> Pid {
        self.pid
    }

    /// Reaps the child if it has exited.
    pub(crate) fn try_wait(&self) -> io::Result<Option<ExitStatus>> {
        self.reap(WaitOptions::NOHANG)
    }

    /// Waits for the child to exit and reaps it.
    pub(crate) fn wait(&self) -> io::Result<ExitStatus> {
        loop {
            if let Some(status) = self.reap(WaitOptions::empty())? {
                return Ok(status);
            }
        }
    }

    fn reap(&self, options: WaitOptions) -> io::Result<Option<ExitStatus>> {
        loop {
            match waitpid(Some(self.pid), options) {
                Ok(got) => return Ok(got.map(|(_, s)| ExitStatus::from_raw(s.as_raw()))),
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// What a gated shell runs before the command line: wait for the gate's line, or exit 125 at
/// its end without one; then close it. One script line, so the line numbers in the shell's
/// messages are the command's own.
const GATE: &str = "read -r _ <&3 || exit 125; exec 3<&-; ";

/// Whether a failure to start a command is the machine's state rather than the command's: no
/// process, memory or descriptor to spare right now.
pub(crate) fn is_transient(e: &std::io::Error) -> bool {
    [
        libc::EAGAIN,
        libc::ENOMEM,
        libc::EMFILE,
        libc::ENFILE,
        libc::EINTR,
    ]
    .contains(&e.raw_os_error().unwrap_or(0))
}

fn c_string(bytes: Vec<u8>) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| nul_byte())
}

/// `InvalidInput`, as `Command` reports the same input.
fn nul_byte() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "a command line, working directory or environment variable holds a NUL byte",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    /// Runs `line` through `Shell::start` into a temp file and returns what it wrote.
    fn output(line: &str, cwd: &Path, env: &Environ) -> (ExitStatus, String) {
        let out = tempfile::tempfile().unwrap();
        let shell = Shell::start(line, cwd, env, out.as_fd(), None).unwrap();
        let status = shell.wait().unwrap();
        let text = std::fs::read_to_string(format!("/proc/self/fd/{}", out.as_raw_fd())).unwrap();
        (status, text)
    }

    fn vars(pairs: &[(&str, &str)]) -> Environ {
        pairs.iter().copied().collect()
    }

    /// The `Sig*` mask of `field` in a `/proc/<pid>/status` text.
    fn mask(status: &str, field: &str) -> u64 {
        let line = status.lines().find(|l| l.starts_with(field)).unwrap();
        u64::from_str_radix(line.split_whitespace().nth(1).unwrap(), 16).unwrap()
    }

    #[test]
    fn the_child_gets_exactly_what_it_is_given() {
        let dir = tempfile::tempdir().unwrap();
        // Held open here, as hookq holds its database and logs: the child must not get it.
        let _held = std::fs::File::create(dir.path().join("held-by-hookq")).unwrap();
        let env = vars(&[("PATH", "/usr/bin:/bin"), ("HOOKQ_A", "one two"), ("E", "")]);
        let (status, text) = output(
            "env | sort; pwd; readlink /proc/$$/fd/0; cut -d' ' -f1,5,6,7 /proc/$$/stat; readlink /proc/$$/fd/* | tr '\\n' ' '; echo; exec cat /proc/self/status",
            dir.path(),
            &env,
        );
        assert!(status.success(), "{text}");
        let mut lines = text.lines();
        // Exactly the environment given (sh adds PWD to what `env` prints).
        let mut printed: Vec<&str> = lines.by_ref().take(4).collect();
        printed.retain(|l| !l.starts_with("PWD="));
        assert_eq!(printed, ["E=", "HOOKQ_A=one two", "PATH=/usr/bin:/bin"]);
        assert_eq!(
            lines.next().unwrap(),
            dir.path().canonicalize().unwrap().to_str().unwrap()
        );
        assert_eq!(lines.next().unwrap(), "/dev/null");
        // Leader of a session and a process group of its own (pid, pgrp, session), with no
        // controlling terminal (tty_nr 0).
        let ids: Vec<&str> = lines.next().unwrap().split(' ').collect();
        assert_eq!(ids[1..], [ids[0], ids[0], "0"]);
        // What hookq holds open (close-on-exec) stays behind.
        let open = lines.next().unwrap();
        assert!(
            open.contains("/dev/null") && !open.contains("held-by-hookq"),
            "{open}"
        );
        let status = lines.collect::<Vec<_>>().join("\n");
        // SIGPIPE, which the Rust runtime ignores, is back at its default; nothing is blocked.
        // (Read by the shell's own process once `exec` made it `cat`: a child reading the
        // shell's status could catch the shell blocking signals around its `fork`.)
        assert_eq!(mask(&status, "SigIgn:") & (1 << (libc::SIGPIPE - 1)), 0);
        assert_eq!(mask(&status, "SigBlk:"), 0);
    }

    #[test]
    fn exit_codes_and_signals_come_back() {
        let env = vars(&[("PATH", "/usr/bin:/bin")]);
        let (status, _) = output("exit 3", Path::new("/"), &env);
        assert_eq!(status.code(), Some(3));
        let (status, _) = output("kill -TERM $$", Path::new("/"), &env);
        assert_eq!(status.signal(), Some(libc::SIGTERM));
        // Not reaped twice: `try_wait` after the exit says so once, then the child is gone.
        let out = tempfile::tempfile().unwrap();
        let shell = Shell::start("true", Path::new("/"), &env, out.as_fd(), None).unwrap();
        let status = loop {
            if let Some(s) = shell.try_wait().unwrap() {
                break s;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        };
        assert!(status.success());
        assert!(shell.try_wait().is_err(), "reaped already: ECHILD");
    }

    #[test]
    fn an_output_descriptor_below_3_still_reaches_the_child() {
        // Our stderr as the child's output: `dup2(2, 2)` would have kept it close-on-exec.
        let env = vars(&[("PATH", "/usr/bin:/bin")]);
        let ours = std::fs::read_link("/proc/self/fd/2").unwrap();
        let probe = tempfile::NamedTempFile::new().unwrap();
        let line = format!("readlink /proc/$$/fd/2 > {}", probe.path().display());
        let stderr = std::io::stderr();
        let shell = Shell::start(&line, Path::new("/"), &env, stderr.as_fd(), None).unwrap();
        assert!(shell.wait().unwrap().success());
        let theirs = std::fs::read_to_string(probe.path()).unwrap();
        assert_eq!(theirs.trim_end(), ours.to_str().unwrap());
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "a name given twice")]
    fn a_name_given_twice_is_caught_in_debug_builds() {
        let out = tempfile::tempfile().unwrap();
        let env = vars(&[("A", "1"), ("PATH", "/bin"), ("A", "2")]);
        let _ = Shell::start("true", Path::new("/"), &env, out.as_fd(), None);
    }

    #[test]
    fn what_cannot_start_is_an_error() {
        let out = tempfile::tempfile().unwrap();
        let env = vars(&[("PATH", "/usr/bin:/bin")]);
        let missing = Path::new("/nonexistent/hookq-spawn-test");
        let err = Shell::start("true", missing, &env, out.as_fd(), None).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT), "{err}");
        for (line, env) in [("tr\0ue", env.clone()), ("true", vars(&[("A", "x\0y")]))] {
            let err = Shell::start(line, Path::new("/"), &env, out.as_fd(), None).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
        }
    }
}
