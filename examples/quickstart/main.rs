//! A guided tour of hookq through its library, with no setup:
//!
//! ```sh
//! cargo run --release --example quickstart
//! ```
//!
//! It makes a scratch folder in the system temp dir and walks through hookq's three hook models.
//! The durable hook queue (this file): the folder becomes a workspace; task transitions and
//! their hook points are recorded in one SQLite transaction (and a rolled-back one leaves
//! nothing); the queue is listed; one drain pass runs under the runner lock; the log files and
//! history it left are shown. Agent tool hooks (`agent.rs`): two `PreToolUse` decisions, one
//! denied and one with its input rewritten. Worktree lifecycle hooks (`lifecycle.rs`): a git
//! worktree created with a post-create hook, its outcome ledger, and the worktree removed. The
//! folder is removed at the end unless `KEEP=1` is set, so you can look at it with the `hookq`
//! CLI afterwards.
//!
//! It first builds the `hookq` binary beside it (`cargo build --bin hookq --example quickstart`,
//! same profile and features, so the library is not compiled again; `cargo run --example` alone
//! builds no binary), runs it on the tour's workspace at the end, and says
//! where it is and how to put it on `PATH` (`cargo install --locked --path .`).

mod agent;
mod cli;
mod lifecycle;

use std::error::Error;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use hookq::queue::config::initial_config;
use hookq::queue::model::{HistoryRow, PendingRow};
use hookq::queue::record::{self, MoveFacts};
use hookq::{
    Config, Drainer, Phase, PlanId, Point, RunnerLock, Stop, Store, TaskId, Transition, Wait,
    Workspace,
};

/// The hooks this tour configures: plain shell, so they work without git.
const HOOKS: &[(&str, &[&str])] = &[
    (
        "after_awaiting_human",
        &[
            r#"echo "notify: task $ARC_TASK is now $ARC_STATE (plan $ARC_PLAN, attempt $ARC_ATTEMPT)""#,
        ],
    ),
    (
        "after_merge",
        &[
            r#"echo "clean up: $ARC_BRANCH ($ARC_ATTEMPT) was merged into $ARC_TARGET_BRANCH as $ARC_MERGED_SHA""#,
        ],
    ),
    (
        "after_fail",
        &[r#"echo "this hook fails on purpose for $ARC_TASK ($ARC_STATE)" >&2; exit 1"#],
    ),
];

/// Removes the scratch workspace when dropped (also on a panic), unless `KEEP=1`.
struct Scratch {
    root: PathBuf,
    keep: bool,
    /// The `hookq` binary, to name in the hint.
    hookq: Option<PathBuf>,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if self.keep {
            println!("\nKEEP=1: the workspace stays at {}", self.root.display());
            let hookq = self
                .hookq
                .as_ref()
                .map_or("hookq".into(), |p| p.display().to_string());
            println!("  try: {hookq} -C {} queue history", self.root.display());
        } else if let Err(e) = std::fs::remove_dir_all(&self.root) {
            eprintln!("could not remove {}: {e}", self.root.display());
        }
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let built = cli::build();
    if let Err(why) = &built {
        println!("The hookq command line is not built: {why}; the tour goes on without it.");
    }
    println!();
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH)?.as_nanos();
    let root =
        std::env::temp_dir().join(format!("hookq-quickstart-{}-{nanos}", std::process::id()));
    std::fs::create_dir(&root)?;
    let scratch = Scratch {
        root: root.clone(),
        keep: std::env::var_os("KEEP").is_some_and(|v| v == "1"),
        hookq: built.as_ref().ok().cloned(),
    };
    let ws = Workspace::at(&scratch.root);

    println!("hookq quickstart");
    println!("================");
    println!("A tour of hookq's three hook models, through its library, in a scratch folder:");
    println!("  {}", ws.root().display());
    println!("It is removed at the end; run with KEEP=1 to keep it.");
    println!();
    println!("Durable hook queue (`hookq task`, `hookq run`, docs/queue.md)");
    println!("-------------------------------------------------------------");
    println!(
        "The scratch folder is the queue's workspace: a repository root holding .radian/arc/."
    );

    // 1. The workspace: the database, and config.toml as `hookq init` writes it, with hooks that
    //    need no git repository.
    heading(1, "Create the workspace (what `hookq init` does)");
    let mut store = Store::open(&ws.db_path())?;
    let config = with_hooks(&initial_config("origin", "main"), HOOKS);
    let parsed = Config::parse(&ws.config_path(), config.as_bytes())?;
    std::fs::write(ws.config_path(), &config)?;
    println!("  {}  (SQLite, WAL)", rel(&ws, &ws.db_path()));
    println!("  {}  with these [hooks]:", rel(&ws, &ws.config_path()));
    for point in Point::ALL {
        for (i, line) in parsed.hooks(point).iter().enumerate() {
            println!("    {point}-{:02}: {line}", i + 1);
        }
    }
    println!(
        "  (the other points have no commands: their occurrences are cleared without running)"
    );

    // 2. Record transitions in the caller's transaction. Nothing runs here.
    heading(
        2,
        "Record task transitions in ONE transaction (nothing runs yet)",
    );
    let plan = PlanId::new("demo-plan")?;
    let (t1, t2, t3) = (TaskId::new("t1")?, TaskId::new("t2")?, TaskId::new("t3")?);
    let phase = |s: &str| Phase::new(s);
    let merged = MoveFacts {
        merged_sha: Some("4f2a9c1d".into()),
        attempt: Some(2),
        target_head: None,
    };
    let tx = store.transaction()?;
    let transitions = vec![
        record::add_task(&tx, &t1, &plan, &phase("todo.ready")?)?,
        record::move_task(&tx, &t1, &phase("running.work")?, &MoveFacts::default())?,
        record::move_task(
            &tx,
            &t1,
            &phase("review.awaiting_human")?,
            &MoveFacts::default(),
        )?,
        record::add_task(&tx, &t2, &plan, &phase("review.pending")?)?,
        record::move_task(&tx, &t2, &phase("done.merged")?, &merged)?,
        record::add_task(&tx, &t3, &plan, &phase("running.gate")?)?,
        record::move_task(&tx, &t3, &phase("failed.gate")?, &MoveFacts::default())?,
    ];
    tx.commit()?;
    for t in &transitions {
        print_transition(t);
    }
    println!(
        "  committed: the phase changes and their points landed together, or would not have at all."
    );
    println!(
        "  no hook ran yet: {} does not exist.",
        rel(&ws, &ws.state_dir().join("runs"))
    );

    // A transaction that rolls back records nothing: no phase change, no point.
    let tx = store.transaction()?;
    let undone = record::move_task(
        &tx,
        &t1,
        &phase("review.rework_pending")?,
        &MoveFacts::default(),
    )?;
    tx.rollback()?;
    println!("  a second transaction, rolled back instead of committed:");
    print_transition(&undone);
    let t1_now = store.task(t1.as_str())?.ok_or("t1 vanished")?;
    println!(
        "  rolled back: t1 is still {}, and the after_rework point it recorded is gone with it.",
        t1_now.phase
    );

    // 3. What `hookq queue` lists.
    heading(3, "The queue before the pass (what `hookq queue` lists)");
    print_pending(&store.pending(0, 100, None)?);

    // 4. One pass, as `hookq run` does it: take runner.lock, drain everything pending.
    heading(
        4,
        "One pass: take runner.lock, run every pending point in order (what `hookq run` does)",
    );
    let stop = Stop::new();
    let lock = RunnerLock::acquire(&ws.lock_path(), Wait::No, &|| true)?
        .ok_or("runner.lock is held by another process")?;
    println!("  holding {}", rel(&ws, lock.path()));
    let mut drainer = Drainer::with_warnings(ws.clone(), &stop, |line| {
        println!("  stderr: {line}");
    });
    let report = drainer.drain(&mut store, &lock)?;
    drop(lock);
    println!(
        "  pass done: {} point(s) cleared, {} command(s) run, {} failed, {} parked",
        report.cleared, report.commands, report.failed, report.parked
    );
    println!("  a failing hook is one `warning:` line; it never fails the pass or changes a task.");

    // 5. The logs the commands wrote.
    heading(
        5,
        "The log files the pass wrote (runs/<task>/hooks/<point>-NN.log)",
    );
    let mut logs = Vec::new();
    collect_logs(&ws.state_dir().join("runs"), &mut logs)?;
    logs.sort();
    for log in &logs {
        println!("  == {}", rel(&ws, log));
        for line in String::from_utf8_lossy(&std::fs::read(log)?).lines() {
            println!("  | {line}");
        }
    }

    // 6. The queue is empty; the history says what happened.
    heading(
        6,
        "The queue and history after the pass (`hookq queue`, `hookq queue history`)",
    );
    print_pending(&store.pending(0, 100, None)?);
    let mut history = store.history(None, None, 100)?;
    history.reverse();
    print_history(&ws, &history);

    println!();
    println!("In a repository of your own: `hookq init`, set [hooks] in .radian/arc/config.toml,");
    println!(
        "and run `hookq run` from cron or `hookq hub` as a service. docs/queue.md explains each step."
    );
    agent::tour(&root)?;
    lifecycle::tour(&root)?;
    if let Ok(binary) = &built {
        println!();
        println!("The queue's workspace through the CLI");
        println!("-------------------------------------");
        cli::show(binary, &root, &["task", "list"]);
        cli::show(binary, &root, &["queue", "log", "t3", "--tail", "3"]);
    }
    cli::tell(&built);
    drop(scratch);
    Ok(())
}

fn heading(n: u32, title: &str) {
    println!();
    println!("{n}. {title}");
}

/// `path` relative to the workspace root, for short output.
fn rel(ws: &Workspace, path: &Path) -> String {
    path.strip_prefix(ws.root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// `config` (as `initial_config` writes it) with the arrays of the points in `hooks` replaced.
fn with_hooks(config: &str, hooks: &[(&str, &[&str])]) -> String {
    let mut out = Vec::new();
    let mut lines = config.lines();
    while let Some(line) = lines.next() {
        let Some(&(point, commands)) = hooks
            .iter()
            .find(|(p, _)| line.starts_with(&format!("{p} = [")))
        else {
            out.push(line.to_owned());
            continue;
        };
        if !line.trim_end().ends_with(']') {
            // A multi-line array: skip to its closing bracket.
            for rest in lines.by_ref() {
                if rest.trim() == "]" {
                    break;
                }
            }
        }
        out.push(format!("{point} = ["));
        for c in commands {
            assert!(
                !c.contains('\''),
                "a TOML literal string cannot hold a single quote: {c}"
            );
            out.push(format!("  '{c}',"));
        }
        out.push("]".to_owned());
    }
    out.join("\n") + "\n"
}

fn print_transition(t: &Transition) {
    let from = t.from.as_deref().unwrap_or("(new)");
    match &t.occurrence {
        Some(o) => println!(
            "  {}: {from} -> {}   records {} (occurrence {})",
            t.task, t.to, o.point, o.id
        ),
        None => println!("  {}: {from} -> {}", t.task, t.to),
    }
}

fn print_pending(rows: &[PendingRow]) {
    if rows.is_empty() {
        println!("  nothing pending");
        return;
    }
    println!(
        "  {:<3} {:<5} {:<21} {:<22} PASSES",
        "ID", "TASK", "POINT", "STATE"
    );
    for p in rows {
        println!(
            "  {:<3} {:<5} {:<21} {:<22} {}",
            p.id,
            p.task,
            p.point,
            p.state.as_deref().unwrap_or("-"),
            p.passes
        );
    }
}

fn print_history(ws: &Workspace, rows: &[HistoryRow]) {
    println!("  history, oldest first:");
    println!(
        "  {:<3} {:<4} {:<5} {:<24} {:<7} {:<7} LOG",
        "ID", "OCC", "TASK", "HOOK", "OUTCOME", "STATUS"
    );
    for h in rows {
        let hook = match h.command_index {
            Some(i) => format!("{}-{i:02}", h.point),
            None => h.point.to_string(),
        };
        let status = match (h.exit_code, h.signal) {
            (Some(c), _) => format!("exit {c}"),
            (None, Some(s)) => format!("sig {s}"),
            _ => "-".into(),
        };
        let log = h
            .log_path
            .as_deref()
            .map(|l| rel(ws, Path::new(l)))
            .unwrap_or_else(|| "-".into());
        println!(
            "  {:<3} {:<4} {:<5} {:<24} {:<7} {:<7} {log}",
            h.id, h.occurrence, h.task, hook, h.outcome, status
        );
    }
}

fn collect_logs(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect_logs(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "log") {
            out.push(path);
        }
    }
    Ok(())
}
