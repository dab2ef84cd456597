//! Running a command to its end with a bounded wait: a hang fails the test instead of stalling the
//! whole run. In the foreground with its output on pipes ([`bounded`]), or in the background with
//! its output in files ([`Running`]).

use std::io::{Read, Write as _};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Runs `cmd` with `stdin` (`None`: `/dev/null`) and its stdout and stderr on pipes, and waits
/// for it to exit and for both pipes to reach end of file, which a process that inherited them
/// can hold off. Kills the command and fails the test (naming it `what`) after `limit`.
#[track_caller]
pub fn bounded(cmd: &mut Command, stdin: Option<&[u8]>, limit: Duration, what: &str) -> Output {
    let started = Instant::now();
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let writer = stdin.map(|bytes| {
        let mut input = child.stdin.take().unwrap();
        let bytes = bytes.to_vec();
        std::thread::spawn(move || {
            // A command that exits without reading all of it closes the pipe: not a failure.
            let _ = input.write_all(&bytes);
        })
    });
    let stdout = read_to_end_in_background(child.stdout.take().unwrap());
    let stderr = read_to_end_in_background(child.stderr.take().unwrap());
    let status = wait_until(&mut child, limit).unwrap_or_else(|| {
        let _ = child.kill();
        let _ = child.wait();
        panic!("{what} hung for {limit:?} (killed)");
    });
    let collect = |rx: mpsc::Receiver<Vec<u8>>| {
        let left = limit.saturating_sub(started.elapsed());
        rx.recv_timeout(left).unwrap_or_else(|_| {
            panic!("{what} exited, but its output was still open after {limit:?}")
        })
    };
    let out = Output {
        status,
        stdout: collect(stdout),
        stderr: collect(stderr),
    };
    if let Some(w) = writer {
        w.join().unwrap();
    }
    out
}

/// All of `pipe`, read on a thread of its own and sent when it reaches end of file.
fn read_to_end_in_background(mut pipe: impl Read + Send + 'static) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        let _ = tx.send(bytes);
    });
    rx
}

/// Waits for `child` to exit (reaping it); `None` once `limit` has passed, leaving the caller to
/// kill it and say what it showed. [`super::within`], looking every few milliseconds.
pub fn wait_until(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    super::within(limit, Duration::from_millis(5), || {
        child.try_wait().unwrap()
    })
}

/// A command started in the background with its stdout and stderr in files; killed (SIGKILL) and
/// reaped if the test ends while it still runs.
pub struct Running {
    child: Child,
    out_path: PathBuf,
    err_path: PathBuf,
    /// The command line, for messages.
    args: Vec<String>,
}

/// What one `hookq` run in the background gave (see [`Running`]).
pub struct Out {
    /// The exit status.
    pub status: ExitStatus,
    /// Raw stdout.
    pub stdout: Vec<u8>,
    /// Raw stderr.
    pub stderr: Vec<u8>,
    /// The command line, for messages.
    pub args: Vec<String>,
}

impl Out {
    /// The exit code (`None` when a signal ended the process).
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// The signal that ended the process, if any.
    pub fn signal(&self) -> Option<i32> {
        self.status.signal()
    }

    /// Stdout as text.
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// Stderr as text.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }

    /// Stderr lines beginning `warning:`.
    pub fn warnings(&self) -> Vec<String> {
        self.stderr()
            .lines()
            .filter(|l| l.starts_with("warning:"))
            .map(str::to_owned)
            .collect()
    }

    /// Stderr lines beginning `error:`.
    pub fn errors(&self) -> Vec<String> {
        self.stderr()
            .lines()
            .filter(|l| l.starts_with("error:"))
            .map(str::to_owned)
            .collect()
    }

    /// Everything about this run, for an assertion message.
    pub fn describe(&self) -> String {
        format!(
            "`hookq {}` ended with {}\n--- stdout\n{}--- stderr\n{}---",
            self.args.join(" "),
            self.status,
            self.stdout(),
            self.stderr()
        )
    }

    /// Asserts exit code `code`; returns self.
    #[track_caller]
    pub fn expect_code(self, code: i32) -> Self {
        assert_eq!(self.code(), Some(code), "{}", self.describe());
        self
    }

    /// Asserts success (exit 0) with nothing on stderr; returns self.
    #[track_caller]
    pub fn ok(self) -> Self {
        assert_eq!(self.code(), Some(0), "{}", self.describe());
        assert!(
            self.stderr.is_empty(),
            "unexpected stderr: {}",
            self.describe()
        );
        self
    }
}

impl Running {
    /// Starts `cmd` with its stdout and stderr in `out_path` and `err_path`; `args` name it in
    /// failures.
    pub fn start(mut cmd: Command, args: &[&str], out_path: PathBuf, err_path: PathBuf) -> Self {
        cmd.stdout(std::fs::File::create(&out_path).unwrap())
            .stderr(std::fs::File::create(&err_path).unwrap());
        let child = cmd.spawn().unwrap();
        Self {
            child,
            out_path,
            err_path,
            args: args.iter().map(|a| a.to_string()).collect(),
        }
    }

    /// Its pid.
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Sends `sig` to this process only.
    pub fn signal(&self, sig: rustix::process::Signal) {
        let pid = rustix::process::Pid::from_raw(self.pid()).unwrap();
        rustix::process::kill_process(pid, sig).unwrap();
    }

    /// Whether it has exited (reaping it if so).
    pub fn exited(&mut self) -> bool {
        self.child.try_wait().unwrap().is_some()
    }

    /// Its stdout so far.
    pub fn stdout_so_far(&self) -> String {
        String::from_utf8_lossy(&std::fs::read(&self.out_path).unwrap()).into_owned()
    }

    /// Its stderr so far.
    pub fn stderr_so_far(&self) -> String {
        String::from_utf8_lossy(&std::fs::read(&self.err_path).unwrap()).into_owned()
    }

    /// Waits for it to exit; kills it and fails the test after `limit`.
    #[track_caller]
    pub fn wait_within(mut self, limit: Duration) -> Out {
        let Some(status) = wait_until(&mut self.child, limit) else {
            let _ = self.child.kill();
            let _ = self.child.wait();
            panic!(
                "`hookq {}` still running after {limit:?} (killed)\n--- stdout\n{}--- stderr\n{}",
                self.args.join(" "),
                String::from_utf8_lossy(&std::fs::read(&self.out_path).unwrap()),
                String::from_utf8_lossy(&std::fs::read(&self.err_path).unwrap()),
            );
        };
        Out {
            status,
            stdout: std::fs::read(&self.out_path).unwrap(),
            stderr: std::fs::read(&self.err_path).unwrap(),
            args: std::mem::take(&mut self.args),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
