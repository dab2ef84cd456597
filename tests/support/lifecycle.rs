//! The worktree lifecycle's workspace: real git repositories in a scratch workspace, `HOME`
//! pointed at its own home for the user-global hooks, and the real `hookq` binary run with a
//! pinned environment. Every run asserts that the secret marker placed in every inline snippet
//! appears nowhere in what hookq printed or left in its state folder.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

pub use super::git::{git, make_repo};
use super::run::bounded;
pub use super::schema;
use super::workspace::Scratch;
pub use super::{HANG, HOOKQ};

/// Placed in every inline snippet; must never be printed by hookq.
pub const MARKER: &str = "hookq-secret-5f3a9c";

/// Every `ARASHI_*` name hookq owns that a hook might still read from arashi 1.x: set in
/// hookq's own environment, none may reach a hook.
pub const FORGEABLE: [&str; 10] = [
    "ARASHI_REPO_NAME",
    "ARASHI_REPO_PATH",
    "ARASHI_WORKTREE_PATH",
    "ARASHI_OPERATION",
    "ARASHI_REMOVE_TARGET_REPOSITORIES",
    "ARASHI_REMOVE_TARGET_BRANCHES",
    "ARASHI_REMOVE_TARGET_WORKTREES",
    "ARASHI_REMOVE_TOTAL_REPOSITORIES",
    "ARASHI_REMOVE_TOTAL_BRANCHES",
    "ARASHI_REMOVE_TOTAL_WORKTREES",
];

/// `fixtures/lifecycle/`.
pub fn fixtures() -> PathBuf {
    super::fixtures().join("lifecycle")
}

/// An inline snippet holding the marker (as a no-op word, never printed by the command).
pub fn inline(cmd: &str) -> String {
    format!(": {MARKER}; {cmd}")
}

/// What one run gave.
#[derive(Debug)]
pub struct Out {
    /// Exit status.
    pub status: ExitStatus,
    /// Stdout.
    pub stdout: String,
    /// Stderr.
    pub stderr: String,
}

impl Out {
    /// The exit code.
    pub fn code(&self) -> i32 {
        self.status.code().unwrap_or(-1)
    }

    /// Stdout parsed as JSON. Every ledger it holds (`data.hookOutcomes`,
    /// `error.details.hookOutcomes`) is checked against `fixtures/lifecycle/ledger.schema.json`
    /// here, so every test that reads a JSON result checks its ledger.
    pub fn json(&self) -> serde_json::Value {
        let j: serde_json::Value = serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        });
        let ledger = if j["ok"] == true {
            // The inspector and init report no ledger.
            let runs = ["worktree create", "worktree remove"];
            runs.iter()
                .any(|c| j["command"] == *c)
                .then(|| &j["data"]["hookOutcomes"])
        } else {
            Some(&j["error"]["details"]["hookOutcomes"])
        };
        if let Some(ledger) = ledger {
            assert!(ledger.is_array(), "no hookOutcomes array in {j:#}");
            schema::assert_valid("ledger.schema.json", ledger);
        }
        j
    }

    /// Panics with both streams unless the exit code is `code`.
    pub fn expect(&self, code: i32) -> &Self {
        assert_eq!(
            self.code(),
            code,
            "stdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        self
    }
}

/// A temp workspace: `<tmp>/ws` (the root), `<tmp>/home`, repositories under `ws/repos/`.
pub struct Ws {
    /// The temp dir (`tmp.path()`), removed at the end.
    pub tmp: Scratch,
    pub root: PathBuf,
    pub home: PathBuf,
    /// Extra variables for hookq's environment.
    pub env: Vec<(String, String)>,
}

impl Ws {
    /// A workspace with configured repositories `repos` (each with a few files), the config
    /// given as JSON text (`None`: a plain config listing the repositories).
    pub fn configured(repos: &[&str], config: Option<&str>) -> Ws {
        let ws = Ws::bare();
        for r in repos {
            make_repo(&ws.root.join("repos").join(r), 3);
        }
        let text = match config {
            Some(c) => c.to_string(),
            None => {
                let map: serde_json::Map<String, serde_json::Value> = repos
                    .iter()
                    .map(|r| {
                        (
                            r.to_string(),
                            serde_json::json!({"path": format!("repos/{r}")}),
                        )
                    })
                    .collect();
                serde_json::json!({"repos": map}).to_string()
            }
        };
        ws.write_config(&text);
        ws
    }

    /// A temp dir with `ws/` and `home/`, nothing in them.
    pub fn bare() -> Ws {
        let tmp = Scratch::new();
        std::fs::create_dir_all(tmp.path().join("envs")).unwrap();
        let root = tmp.root().to_path_buf();
        let home = tmp.home().to_path_buf();
        Ws {
            tmp,
            root,
            home,
            env: Vec::new(),
        }
    }

    /// Writes `.arashi/config.json`.
    pub fn write_config(&self, text: &str) {
        std::fs::create_dir_all(self.root.join(".arashi")).unwrap();
        std::fs::write(self.root.join(".arashi/config.json"), text).unwrap();
    }

    /// A repository's checkout.
    pub fn repo(&self, name: &str) -> PathBuf {
        self.root.join("repos").join(name)
    }

    /// Writes a native hook at `rel` (relative to the root; `~/…` relative to home).
    pub fn native(&self, rel: &str, body: &str) -> PathBuf {
        let path = match rel.strip_prefix("~/") {
            Some(r) => self.home.join(r),
            None => self.root.join(rel),
        };
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, body).unwrap();
        path
    }

    /// Installs the recording fixture at `rel`.
    pub fn recorder(&self, rel: &str) -> PathBuf {
        let body = std::fs::read_to_string(fixtures().join("record.sh")).unwrap();
        self.native(rel, &body)
    }

    /// The order log's lines: `name|scope|target|cwd`.
    pub fn order(&self) -> Vec<String> {
        std::fs::read_to_string(self.order_log())
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// `$ORDER_LOG`.
    pub fn order_log(&self) -> PathBuf {
        self.tmp.path().join("order.log")
    }

    /// The ARASHI_* variables the `n`th recorded run (1-based) saw.
    pub fn env_of(&self, n: usize) -> BTreeMap<String, String> {
        let text = std::fs::read_to_string(self.tmp.path().join(format!("envs/{n}.env")))
            .unwrap_or_else(|e| panic!("no env dump {n}: {e}"));
        text.lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }

    /// The pinned environment of a hookq run.
    pub fn command(&self, dir: &Path, args: &[&str]) -> Command {
        self.command_of(HOOKQ, dir, args)
    }

    /// `program` with the pinned environment of a hookq run (`HOOKQ` names the binary).
    pub fn command_of(&self, program: &str, dir: &Path, args: &[&str]) -> Command {
        let mut c = self.tmp.command(program, dir);
        c.args(args)
            .env("HOOKQ", HOOKQ)
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            // Every log line hookq can write is on stderr too, for the secret check.
            .env("HOOKQ_LOG", "trace")
            .envs(super::git::PINNED)
            .env("ORDER_LOG", self.order_log())
            .env("ENV_DIR", self.tmp.path().join("envs"));
        for (k, v) in &self.env {
            c.env(k, v);
        }
        c
    }

    /// Runs hookq in the root with stdin from /dev/null.
    pub fn run(&self, args: &[&str]) -> Out {
        self.run_in(&self.root, args)
    }

    /// Runs hookq in `dir` with stdin from /dev/null.
    pub fn run_in(&self, dir: &Path, args: &[&str]) -> Out {
        let mut c = self.command(dir, args);
        run_bounded(&mut c, self)
    }

    /// Every file under the state folders hookq may write, for the secret check.
    fn state_files(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![self.root.join(".arashi/hookq-worktree")];
        if let Ok(entries) = std::fs::read_dir(self.root.join("repos")) {
            for e in entries.flatten() {
                stack.push(e.path().join(".git/hookq-worktree"));
            }
        }
        while let Some(d) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in entries.flatten() {
                if e.path().is_dir() {
                    stack.push(e.path());
                } else {
                    out.push(e.path());
                }
            }
        }
        out
    }

    /// Asserts the marker is nowhere in `out` or the state folders.
    pub fn assert_no_secret(&self, out: &Out) {
        assert!(
            !out.stdout.contains(MARKER) && !out.stderr.contains(MARKER),
            "an inline snippet's text was printed:\nstdout:\n{}\nstderr:\n{}",
            out.stdout,
            out.stderr
        );
        for f in self.state_files() {
            let text = std::fs::read(&f).unwrap_or_default();
            assert!(
                !String::from_utf8_lossy(&text).contains(MARKER),
                "{} holds an inline snippet's text",
                f.display()
            );
        }
    }

    /// The state of every repository: worktrees, branches with their commits, and the files
    /// under the root's `worktrees/` (what a create may change).
    pub fn snapshot(&self) -> String {
        let mut s = String::new();
        if let Ok(entries) = std::fs::read_dir(self.root.join("repos")) {
            let mut repos: Vec<_> = entries.flatten().map(|e| e.path()).collect();
            repos.sort();
            for r in repos {
                s += &format!("== {}\n", r.display());
                s += &git(&r, &["worktree", "list", "--porcelain"]);
                s += &git(&r, &["for-each-ref", "--format=%(refname) %(objectname)"]);
            }
        }
        s += &tree(&self.root.join("worktrees"));
        s
    }
}

/// The paths under `dir`, sorted (directories only below depth 4).
pub fn tree(dir: &Path) -> String {
    let mut out = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), 0)];
    while let Some((d, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            out.push(e.path().display().to_string());
            if e.path().is_dir() && depth < 4 && e.file_name() != ".git" {
                stack.push((e.path(), depth + 1));
            }
        }
    }
    out.sort();
    out.join("\n") + "\n"
}

/// Runs `c` to its end with stdin from /dev/null, killing it after [`HANG`], and checks the
/// secret marker.
pub fn run_bounded(c: &mut Command, ws: &Ws) -> Out {
    let out = bounded(c, None, HANG, "hookq");
    let out = Out {
        status: out.status,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    ws.assert_no_secret(&out);
    out
}

/// A hookq run started with stdin from /dev/null and its output read as it comes.
pub struct Running {
    child: std::process::Child,
    stdout: std::thread::JoinHandle<Vec<u8>>,
    stderr: std::thread::JoinHandle<Vec<u8>>,
}

impl Running {
    /// Starts `c`.
    pub fn start(c: &mut Command) -> Running {
        c.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let mut stderr = child.stderr.take().unwrap();
        let stdout = std::thread::spawn(move || {
            let mut b = Vec::new();
            let _ = stdout.read_to_end(&mut b);
            b
        });
        let stderr = std::thread::spawn(move || {
            let mut b = Vec::new();
            let _ = stderr.read_to_end(&mut b);
            b
        });
        Running {
            child,
            stdout,
            stderr,
        }
    }

    /// Waits until `path` exists (a hook wrote it), panicking when hookq ended first or after
    /// [`HANG`].
    #[track_caller]
    pub fn wait_for_file(&mut self, path: &Path) {
        let child = &mut self.child;
        super::poll(
            &format!("{} to be written", path.display()),
            Duration::from_millis(5),
            || {
                if path.exists() {
                    return Some(());
                }
                assert!(
                    child.try_wait().unwrap().is_none(),
                    "hookq ended before {} was written",
                    path.display()
                );
                None
            },
            String::new,
        );
    }

    /// Sends `signal` to hookq alone (not to the process group of a hook it runs).
    pub fn signal(&self, signal: i32) {
        let pid = rustix::process::Pid::from_raw(i32::try_from(self.child.id()).unwrap()).unwrap();
        let signal = rustix::process::Signal::from_named_raw(signal).unwrap();
        rustix::process::kill_process(pid, signal).unwrap();
    }

    /// Waits for the end, killing hookq after [`HANG`], and checks the secret marker.
    pub fn finish(mut self, ws: &Ws) -> Out {
        let Some(status) = super::run::wait_until(&mut self.child, HANG) else {
            let _ = self.child.kill();
            panic!("hookq hung for {HANG:?}");
        };
        let out = Out {
            status,
            stdout: String::from_utf8_lossy(&self.stdout.join().unwrap()).into_owned(),
            stderr: String::from_utf8_lossy(&self.stderr.join().unwrap()).into_owned(),
        };
        ws.assert_no_secret(&out);
        out
    }
}

impl Ws {
    /// Runs hookq with `args` in the root, sends it `signal` once `ready` exists (a hook wrote
    /// it) and runs it to its end. Returns what it gave and how long it ran after the signal.
    pub fn run_signalled(&self, args: &[&str], ready: &Path, signal: i32) -> (Out, Duration) {
        let mut running = Running::start(&mut self.command(&self.root, args));
        running.wait_for_file(ready);
        running.signal(signal);
        let sent = Instant::now();
        let out = running.finish(self);
        (out, sent.elapsed())
    }
}

/// The `status` of each entry of a `hookOutcomes` list, in order.
pub fn statuses(outcomes: &serde_json::Value) -> Vec<&str> {
    outcomes
        .as_array()
        .expect("hookOutcomes is a list")
        .iter()
        .map(|o| o["status"].as_str().expect("a status"))
        .collect()
}

/// Whether process `pid` is alive (a zombie, which has exited, is not).
pub fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rfind(')')
            .is_some_and(|i| !s[i + 1..].trim_start().starts_with('Z'))
    })
}

/// The pids a hook wrote into `path`, whitespace-separated.
pub fn pids_in(path: &Path) -> Vec<i32> {
    std::fs::read_to_string(path)
        .unwrap()
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect()
}
