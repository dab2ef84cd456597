//! The durable hook queue's workspace: `hookq init` in a scratch workspace, the real `hookq`
//! binary run with a pinned environment in the foreground or as a background hub, and direct
//! reads of the database.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, params};

pub use super::run::{Out, Running};
use super::workspace::Scratch;
pub use super::{HANG, HOOKQ, fixtures};

/// A `config.toml` the tests write; `Default` gives a config with short-ish limits and no hooks.
#[derive(Debug, Clone)]
pub struct Config {
    /// `repository.main_branch`.
    pub main_branch: String,
    /// `repository.remote`.
    pub remote: String,
    /// `integration.target_branch`.
    pub target_branch: Option<String>,
    /// `gate.command_timeout_secs`.
    pub timeout_secs: u64,
    /// `gate.kill_grace_secs`.
    pub grace_secs: u64,
    /// `gate.max_log_bytes`.
    pub max_log_bytes: Option<u64>,
    /// `queue.max_interrupted_runs`.
    pub max_interrupted_runs: u32,
    /// The body of `[hooks]`, as TOML.
    pub hooks: String,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            main_branch: "main".into(),
            remote: "origin".into(),
            target_branch: None,
            // Long enough never to cut a healthy test command short on a loaded machine.
            timeout_secs: 120,
            grace_secs: 2,
            max_log_bytes: None,
            max_interrupted_runs: 5,
            hooks: String::new(),
        }
    }
}

impl Config {
    /// The default config with this `[hooks]` body.
    pub fn hooks(hooks: &str) -> Self {
        Self {
            hooks: hooks.into(),
            ..Self::default()
        }
    }

    /// The TOML text.
    pub fn text(&self) -> String {
        let mut s = String::new();
        writeln!(
            s,
            "[repository]\nmain_branch = {:?}\nremote = {:?}\n",
            self.main_branch, self.remote
        )
        .unwrap();
        s.push_str("[integration]\n");
        if let Some(t) = &self.target_branch {
            writeln!(s, "target_branch = {t:?}").unwrap();
        }
        writeln!(
            s,
            "\n[gate]\ncommand_timeout_secs = {}\nkill_grace_secs = {}",
            self.timeout_secs, self.grace_secs
        )
        .unwrap();
        if let Some(m) = self.max_log_bytes {
            writeln!(s, "max_log_bytes = {m}").unwrap();
        }
        writeln!(
            s,
            "\n[queue]\nmax_interrupted_runs = {}\n",
            self.max_interrupted_runs
        )
        .unwrap();
        writeln!(s, "[hooks]\n{}", self.hooks).unwrap();
        s
    }
}

/// A `[hooks]` body giving every point the same single command line (which must not hold `'`).
pub fn every_point(line: &str) -> String {
    every_point_runs(&[line])
}

/// A `[hooks]` body giving every point the same command lines (which must not hold `'`).
pub fn every_point_runs(lines: &[&str]) -> String {
    assert!(lines.iter().all(|l| !l.contains('\'')), "{lines:?}");
    let array = lines
        .iter()
        .map(|l| format!("'{l}'"))
        .collect::<Vec<_>>()
        .join(", ");
    [
        "after_merge",
        "after_fail",
        "after_rework",
        "after_awaiting_human",
        "after_proposed",
    ]
    .iter()
    .map(|p| format!("{p} = [{array}]\n"))
    .collect()
}

/// A pending row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// Occurrence id.
    pub id: i64,
    /// Task.
    pub task: String,
    /// Point.
    pub point: String,
    /// Recorded `<state>.<phase>`.
    pub state: Option<String>,
    /// Passes that started it.
    pub passes: i64,
}

/// A history row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct History {
    /// History id.
    pub id: i64,
    /// Occurrence id.
    pub occurrence: i64,
    /// Task.
    pub task: String,
    /// Point.
    pub point: String,
    /// Recorded state.
    pub state: String,
    /// Passes that had started the point.
    pub passes: i64,
    /// 1-based command index.
    pub command_index: Option<i64>,
    /// Outcome name.
    pub outcome: String,
    /// Exit code.
    pub exit_code: Option<i64>,
    /// Signal.
    pub signal: Option<i64>,
    /// Log path.
    pub log_path: Option<String>,
}

/// A scratch workspace ([`Scratch`]): `hookq` runs in its root with its home as `$HOME`.
pub struct Ws {
    scratch: Scratch,
    env: Vec<(OsString, OsString)>,
    runs: AtomicUsize,
}

impl Default for Ws {
    fn default() -> Self {
        Self::new()
    }
}

impl Ws {
    /// A fresh temp dir with an empty workspace root (no `hookq init` yet).
    pub fn new() -> Self {
        Self {
            scratch: Scratch::new(),
            env: Vec::new(),
            runs: AtomicUsize::new(0),
        }
    }

    /// A fresh workspace after `hookq init`.
    pub fn init() -> Self {
        Self::init_in(Scratch::new())
    }

    /// A workspace after `hookq init` in `scratch` (a [`Scratch::readable`] one, say).
    pub fn init_in(scratch: Scratch) -> Self {
        let ws = Self {
            scratch,
            env: Vec::new(),
            runs: AtomicUsize::new(0),
        };
        ws.hookq(&["init"]).ok();
        assert!(ws.config_path().is_file());
        ws
    }

    /// The workspace root.
    pub fn root(&self) -> &Path {
        self.scratch.root()
    }

    /// Scratch space outside the workspace.
    pub fn base(&self) -> &Path {
        self.scratch.path()
    }

    /// `$HOME` of every process the test starts.
    pub fn home(&self) -> &Path {
        self.scratch.home()
    }

    /// `<root>/.radian/arc`.
    pub fn state_dir(&self) -> PathBuf {
        self.root().join(".radian/arc")
    }

    /// `config.toml`.
    pub fn config_path(&self) -> PathBuf {
        self.state_dir().join("config.toml")
    }

    /// `arc.db`.
    pub fn db_path(&self) -> PathBuf {
        self.state_dir().join("arc.db")
    }

    /// `runner.lock`.
    pub fn lock_path(&self) -> PathBuf {
        self.state_dir().join("runner.lock")
    }

    /// `runs/<task>/hooks/<point>-NN.log`.
    pub fn log_path(&self, task: &str, point: &str, n: usize) -> PathBuf {
        self.state_dir()
            .join(format!("runs/{task}/hooks/{point}-{n:02}.log"))
    }

    /// `worktrees/<task>`.
    pub fn worktree(&self, task: &str) -> PathBuf {
        self.state_dir().join("worktrees").join(task)
    }

    /// Adds a variable to the environment of every later process this workspace starts.
    pub fn set_env(&mut self, key: &str, value: impl Into<OsString>) {
        self.env.push((key.into(), value.into()));
    }

    /// A command with the pinned environment, run in the workspace root.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = self.scratch.command(program, self.root());
        cmd.env("FIXTURES", fixtures())
            .env("HOOKQ", HOOKQ)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null());
        cmd
    }

    /// Runs `hookq ARGS` and waits for it (a hang fails the test).
    pub fn hookq(&self, args: &[&str]) -> Out {
        self.hookq_env(args, &[])
    }

    /// `hookq task add TASK --plan PLAN --phase PHASE`.
    pub fn task_add(&self, task: &str, plan: &str, phase: &str) -> Out {
        self.hookq(&["task", "add", task, "--plan", plan, "--phase", phase])
    }

    /// Runs `hookq ARGS` with extra environment variables.
    pub fn hookq_env(&self, args: &[&str], extra: &[(&str, &str)]) -> Out {
        self.hookq_within(args, extra, HANG)
    }

    /// Runs `hookq ARGS` with extra environment variables; fails the test if it takes longer
    /// than `limit`.
    pub fn hookq_within(&self, args: &[&str], extra: &[(&str, &str)], limit: Duration) -> Out {
        let mut cmd = self.command(HOOKQ);
        cmd.args(args).envs(extra.iter().copied());
        self.spawn_cmd(cmd, args).wait_within(limit)
    }

    /// Starts `hookq ARGS` in the background (a hub); its output goes to files.
    pub fn spawn(&self, args: &[&str]) -> Running {
        self.spawn_env(args, &[])
    }

    /// Starts `hookq ARGS` in the background with extra environment variables.
    pub fn spawn_env(&self, args: &[&str], extra: &[(&str, &str)]) -> Running {
        let mut cmd = self.command(HOOKQ);
        cmd.args(args).envs(extra.iter().copied());
        self.spawn_cmd(cmd, args)
    }

    /// Starts `cmd` (made by [`Ws::command`]) in the background, as [`Ws::spawn`] does;
    /// `args` name it in failures.
    pub fn spawn_cmd(&self, cmd: Command, args: &[&str]) -> Running {
        let n = self.runs.fetch_add(1, Ordering::SeqCst);
        let out_path = self.base().join(format!("run-{n}.stdout"));
        let err_path = self.base().join(format!("run-{n}.stderr"));
        Running::start(cmd, args, out_path, err_path)
    }

    /// Runs a program (git, sh) with the pinned environment in `dir`; asserts success and
    /// returns its stdout, trimmed.
    #[track_caller]
    pub fn sh_in(&self, dir: &Path, program: &str, args: &[&str]) -> String {
        let out = self
            .command(program)
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "`{program} {}` in {} failed: {}\n{}{}",
            args.join(" "),
            dir.display(),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }

    /// Makes the root a git repository with one empty commit on `main`, so that a move into
    /// `done.merged` without `--merged-sha` reads its sha from there (in a root with no
    /// repository, the move prints a `warning:` line).
    pub fn git_init(&self) {
        let root = self.root();
        crate::support::git::git(root, &["init", "-q", "-b", "main"]);
        std::fs::write(root.join(".git/info/exclude"), ".radian/\n").unwrap();
        crate::support::git::git(root, &["commit", "-q", "--allow-empty", "-m", "init"]);
    }

    /// Replaces `config.toml` with the default test config and this `[hooks]` body.
    pub fn write_config(&self, hooks: &str) {
        self.write(&Config::hooks(hooks));
    }

    /// Replaces `config.toml`.
    pub fn write(&self, cfg: &Config) {
        self.write_config_text(cfg.text().as_bytes());
    }

    /// Replaces `config.toml` with these bytes, as they are. Atomically (write, then rename), so
    /// a hub reading it meanwhile never sees it half-written.
    pub fn write_config_text(&self, bytes: &[u8]) {
        let tmp = self.state_dir().join("config.toml.tmp");
        std::fs::write(&tmp, bytes).unwrap();
        std::fs::rename(&tmp, self.config_path()).unwrap();
    }

    /// Sets `config.toml`'s modification time a minute back, as a config written long ago has
    /// it. A pass clears a point without running it (no commands, too many interrupted passes)
    /// only by a config that went unmodified for a few seconds, since one written just now may
    /// be half-written.
    pub fn settle_config(&self) {
        let file = std::fs::File::options()
            .write(true)
            .open(self.config_path())
            .unwrap();
        let then = std::time::SystemTime::now() - Duration::from_secs(60);
        file.set_modified(then).unwrap();
    }

    /// A real writer process: truncates `config.toml`, writes its first `cut` bytes of `text`,
    /// pauses 2 s, then writes the rest (as a script or an editor writing in place might).
    /// Returns once the file holds the first part alone: before then, a pass could still read
    /// the old config.
    pub fn slow_config_writer(&self, text: &str, cut: usize) -> std::process::Child {
        let child = Command::new("/bin/sh")
            .arg("-c")
            .arg(r#"{ printf '%s' "$HEAD"; sleep 2; printf '%s' "$REST"; } > config.toml"#)
            .current_dir(self.state_dir())
            .env("HEAD", &text[..cut])
            .env("REST", &text[cut..])
            .spawn()
            .unwrap();
        self.eventually("the writer to truncate config.toml", || {
            std::fs::read(self.config_path()).is_ok_and(|b| b == text.as_bytes()[..cut])
        });
        child
    }

    /// A file below the root, as bytes (`None` when absent).
    pub fn read_bytes(&self, rel: impl AsRef<Path>) -> Option<Vec<u8>> {
        match std::fs::read(self.root().join(rel)) {
            Ok(b) => Some(b),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => panic!("{e}"),
        }
    }

    /// A file below the root, as text (`""` when absent).
    pub fn read(&self, rel: impl AsRef<Path>) -> String {
        self.read_bytes(rel)
            .map(|b| String::from_utf8(b).unwrap())
            .unwrap_or_default()
    }

    /// The lines of a file below the root (none when absent).
    pub fn lines(&self, rel: impl AsRef<Path>) -> Vec<String> {
        self.read(rel).lines().map(str::to_owned).collect()
    }

    /// Opens the database directly.
    pub fn db(&self) -> Connection {
        let conn =
            Connection::open_with_flags(self.db_path(), OpenFlags::SQLITE_OPEN_READ_WRITE).unwrap();
        conn.busy_timeout(Duration::from_secs(30)).unwrap();
        conn
    }

    /// The workspace's queue through the library, as `hookq queue` opens it: the database its
    /// config names (SQLite's `arc.db` unless it names PostgreSQL's), or the one this
    /// workspace's `HOOKQ_DATABASE_URL` names.
    pub fn queue(&self) -> hookq::queue::Queue {
        let database_url = self
            .env
            .iter()
            .rev()
            .find(|(k, _)| k == "HOOKQ_DATABASE_URL")
            .map(|(_, v)| v.to_string_lossy().into_owned());
        let opts = hookq::queue::Options {
            database_url,
            ..hookq::queue::Options::default()
        };
        hookq::queue::Queue::open_with(&hookq::Workspace::at(self.root()), opts)
            .unwrap_or_else(|e| panic!("open the queue of {}: {e}", self.root().display()))
    }

    /// Pending points in run order, as `hookq queue` reads them (the starts a runner logged but
    /// did not fold into the table yet counted), on either database.
    pub fn pending(&self) -> Vec<Pending> {
        let filter = hookq::queue::model::PendingFilter {
            limit: 1_000_000,
            ..Default::default()
        };
        self.queue()
            .pending(&filter)
            .unwrap()
            .into_iter()
            .map(|r| Pending {
                id: r.id,
                task: r.task.to_string(),
                point: r.point.to_string(),
                state: r.state.map(|s| s.to_string()),
                passes: r.passes,
            })
            .collect()
    }

    /// History, oldest first, as `hookq queue history` reads it, on either database.
    pub fn history(&self) -> Vec<History> {
        let filter = hookq::queue::model::HistoryFilter {
            limit: 1_000_000,
            ..Default::default()
        };
        let mut rows = self.queue().history(&filter).unwrap();
        rows.reverse();
        rows.into_iter()
            .map(|r| History {
                id: r.id,
                occurrence: r.occurrence,
                task: r.task.to_string(),
                point: r.point.to_string(),
                state: r.state.to_string(),
                passes: r.passes,
                command_index: r.command_index,
                outcome: r.outcome.to_string(),
                exit_code: r.exit_code,
                signal: r.signal,
                log_path: r.log_path,
            })
            .collect()
    }

    /// A task's `<state>.<phase>`, `None` when there is no such task.
    pub fn phase(&self, task: &str) -> Option<String> {
        self.db()
            .query_row(
                "SELECT phase FROM tasks WHERE id = ?1",
                params![task],
                |r| r.get(0),
            )
            .ok()
    }

    /// How many tasks exist.
    pub fn task_count(&self) -> i64 {
        self.db()
            .query_row("SELECT COUNT(*) FROM tasks", [], |r| r.get(0))
            .unwrap()
    }

    /// Every row of hookq's tables, as text: equal snapshots mean nothing was written.
    pub fn snapshot(&self) -> String {
        let db = self.db();
        let mut s = String::new();
        for table in [
            "tasks",
            "pending_hooks",
            "pending_hook_states",
            "hook_history",
        ] {
            writeln!(s, "[{table}]").unwrap();
            let mut st = db
                .prepare(&format!("SELECT * FROM {table} ORDER BY 1"))
                .unwrap();
            let n = st.column_count();
            let mut rows = st.query([]).unwrap();
            while let Some(r) = rows.next().unwrap() {
                let cells: Vec<String> = (0..n)
                    .map(|i| format!("{:?}", r.get::<_, rusqlite::types::Value>(i).unwrap()))
                    .collect();
                writeln!(s, "{}", cells.join(" | ")).unwrap();
            }
        }
        s
    }

    /// Polls until `f` holds; fails the test after [`HANG`] ([`super::eventually`]).
    #[track_caller]
    pub fn eventually(&self, what: &str, f: impl FnMut() -> bool) {
        super::eventually(what, f);
    }
}

/// Whether process `pid` is gone: no such process, or a zombie (dead, waiting for a reaper that
/// the test cannot be).
pub fn process_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // `pid (comm) S ...`: the state follows the last `)`.
        Ok(stat) => {
            let state = stat
                .rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().chars().next());
            matches!(state, Some(Some('Z' | 'X')))
        }
    }
}

/// Parses `env -0` output.
pub fn parse_env0(bytes: &[u8]) -> BTreeMap<String, String> {
    bytes
        .split(|&b| b == 0)
        .filter(|e| !e.is_empty())
        .map(|e| {
            let text = String::from_utf8_lossy(e);
            let (k, v) = text.split_once('=').expect("NAME=value");
            (k.to_owned(), v.to_owned())
        })
        .collect()
}

/// One run's record in a hook log: the header line, the output bytes, the footer line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRun {
    /// The header line (no newline).
    pub header: String,
    /// Everything between the header's newline and the footer line.
    pub body: Vec<u8>,
    /// The footer line (no newline), `None` for a run whose runner died.
    pub footer: Option<String>,
}

/// Splits a hook log into its runs. A header is a line `--- hookq <time> occurrence ...`; a
/// footer is a line `--- hookq exit|killed|timed out|...` that ends a run.
pub fn log_runs(log: &[u8]) -> Vec<LogRun> {
    let mut runs: Vec<LogRun> = Vec::new();
    let mut pos = 0;
    while pos < log.len() {
        let end = log[pos..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(log.len(), |i| pos + i + 1);
        let line = &log[pos..end];
        let text = String::from_utf8_lossy(line);
        let trimmed = text.trim_end_matches('\n');
        if is_header(trimmed) {
            runs.push(LogRun {
                header: trimmed.to_owned(),
                body: Vec::new(),
                footer: None,
            });
        } else if let Some(run) = runs.last_mut().filter(|r| r.footer.is_none()) {
            if is_footer(trimmed) {
                run.footer = Some(trimmed.to_owned());
            } else {
                run.body.extend_from_slice(line);
            }
        } else {
            panic!("log bytes outside a run: {text:?}");
        }
        pos = end;
    }
    runs
}

fn is_header(line: &str) -> bool {
    line.strip_prefix("--- hookq ")
        .and_then(|rest| rest.split_once(' '))
        .is_some_and(|(stamp, rest)| stamp.ends_with('Z') && rest.starts_with("occurrence "))
}

fn is_footer(line: &str) -> bool {
    [
        "exit ",
        "killed by signal ",
        "timed out",
        "interrupted",
        "could not start",
    ]
    .iter()
    .any(|p| {
        line.strip_prefix("--- hookq ")
            .is_some_and(|r| r.starts_with(p))
    })
}

/// Whether the guarantee tests run at full size (`HOOKQ_STRESS=1`).
pub fn stress() -> bool {
    std::env::var("HOOKQ_STRESS").is_ok_and(|v| v == "1")
}

/// Prints a guarantee test's figures and writes them to `target/hookq-guarantees/<name>.json`,
/// where the figures in docs/guarantees.md come from.
pub fn figures(name: &str, value: serde_json::Value) {
    println!("figures {name}: {value}");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/hookq-guarantees");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(format!("{name}.json")),
        serde_json::to_vec_pretty(&value).unwrap(),
    )
    .unwrap();
}

/// The one number `sql` (a `SELECT COUNT(*) ...`) gives in `store`.
pub fn count(store: &hookq::Store, sql: &str) -> i64 {
    store
        .conn()
        .query_row(sql, [], |r| r.get(0))
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// Asserts that the outbox holds together: the pending counts `queue stats` reads agree with
/// the pending table, no point's state outlived its point, no point names a missing task
/// (no foreign key keeps them together; the transactions and triggers do) and no cleared
/// occurrence id can be given again.
pub fn assert_outbox_consistent(store: &hookq::Store) {
    let stray = count(
        store,
        "SELECT COUNT(*) FROM pending_hook_states WHERE hook_id NOT IN (SELECT id FROM pending_hooks)",
    );
    assert_eq!(stray, 0, "states without their point");
    let orphaned = count(
        store,
        "SELECT COUNT(*) FROM pending_hooks WHERE task NOT IN (SELECT id FROM tasks)",
    );
    assert_eq!(orphaned, 0, "points without their task");
    // A new point's id is above the highest id ever cleared, so none is given twice.
    let reusable = count(
        store,
        "SELECT COUNT(*) FROM hook_history WHERE occurrence >
             COALESCE((SELECT n FROM queue_counts WHERE kind = 'ids' AND name = 'cleared'), 0)",
    );
    assert_eq!(reusable, 0, "cleared occurrence ids a new point could take");
    let counted = store.stats().unwrap().pending_by_point;
    let actual: Vec<(String, i64)> = store
        .conn()
        .prepare("SELECT point, COUNT(*) FROM pending_hooks GROUP BY point ORDER BY point")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(counted, actual, "queue stats' pending counters");
}
