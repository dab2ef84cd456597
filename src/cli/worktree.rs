//! `hookq worktree create|remove|hooks|forget|init`: git worktrees across a workspace's repositories,
//! with lifecycle hooks. Human output by default, `--json` for programs (one JSON document on
//! stdout; hook output never goes there).

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use clap::{Args, Subcommand};
use serde::Serialize;
use serde_json::json;

use super::app::{Ctx, stop_on_signals};
use super::{output, pick};
use crate::cli::error::Error;
use hookq::lifecycle::ledger::{PreviewJson, label};
use hookq::lifecycle::workspace::Mode;
use hookq::lifecycle::{
    self, CreateRequest, ForgetRequest, ForgetStatus, Forgotten, InputPolicy, Ledger, NewWorktree,
    Notice, Removal, RemoveRequest, RollbackReport, RunOptions, Status, Worktrees,
};
use hookq::{Failure as _, Stop};

/// The `worktree` subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Make BRANCH's worktree in each selected repository, running the create hooks.
    Create(CreateArgs),
    /// Remove BRANCH's worktree in each selected repository, running the remove hooks.
    Remove(RemoveArgs),
    /// Show what each lifecycle would run, by scope and source, without running anything.
    Hooks(HooksArgs),
    /// Remove a repository's own create hook files from the workspace's hooks folder.
    Forget(ForgetArgs),
    /// Write an `.arashi/config.json` skeleton (when there is none) and inert example hooks.
    Init(InitArgs),
}

/// `hookq worktree create`.
#[derive(Debug, Args)]
pub struct CreateArgs {
    /// The branch: made from --base when it does not exist, else checked out as it is.
    pub branch: String,
    /// Only this repository (repeatable; default: every configured one, in config order).
    #[arg(long = "repo", value_name = "NAME")]
    pub repos: Vec<String>,
    /// Where a new branch starts (default: each repository's HEAD).
    #[arg(long, value_name = "REF")]
    pub base: Option<String>,
    /// Choose the repositories on the terminal (all chosen at first).
    #[arg(long)]
    pub interactive: bool,
    /// Skip the create hooks.
    #[arg(long)]
    pub no_hooks: bool,
    /// Give hooks immediate end-of-file on stdin instead of the terminal.
    #[arg(long)]
    pub no_hook_input: bool,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
    /// Show the plan; discover no hooks, change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// `hookq worktree remove`.
#[derive(Debug, Args)]
pub struct RemoveArgs {
    /// The branch whose worktrees go (the branch itself stays).
    pub branch: String,
    /// Only this repository (repeatable; default: every configured one that has the worktree).
    #[arg(long = "repo", value_name = "NAME")]
    pub repos: Vec<String>,
    /// Remove a worktree with changes too (git refuses otherwise).
    #[arg(long)]
    pub force: bool,
    /// Give hooks immediate end-of-file on stdin instead of the terminal.
    #[arg(long)]
    pub no_hook_input: bool,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
    /// Preview the targets and the hooks that would run; run and change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// `hookq worktree hooks`.
#[derive(Debug, Args)]
pub struct HooksArgs {
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `hookq worktree forget`.
#[derive(Debug, Args)]
pub struct ForgetArgs {
    /// The repository leaving the workspace.
    #[arg(value_name = "REPO")]
    pub repository: String,
    /// List what would be removed and kept; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `hookq worktree init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Runs a `worktree` subcommand.
pub(super) fn run(ctx: &Ctx, cmd: Command) -> Result<(), Error> {
    let json = match &cmd {
        Command::Create(a) => a.json,
        Command::Remove(a) => a.json,
        Command::Hooks(a) => a.json,
        Command::Forget(a) => a.json,
        Command::Init(a) => a.json,
    };
    let name = match &cmd {
        Command::Create(_) => "worktree create",
        Command::Remove(_) => "worktree remove",
        Command::Hooks(_) => "worktree hooks",
        Command::Forget(_) => "worktree forget",
        Command::Init(_) => "worktree init",
    };
    let warned = Warned::default();
    let result = match cmd {
        Command::Create(a) => create(ctx, a, &warned),
        Command::Remove(a) => remove(ctx, a, &warned),
        Command::Hooks(a) => hooks(ctx, a, &warned),
        Command::Forget(a) => forget(ctx, a, &warned),
        Command::Init(a) => init(ctx, a),
    };
    match result {
        // With --json the failure is the JSON document on stdout, and only there.
        Err(Error::Lifecycle(e)) if json => {
            let mut details = e.details();
            details.warnings = warned.take();
            output::json(&json!({
                "ok": false,
                "command": name,
                "error": { "code": e.code(), "message": e.message(), "details": details },
            }))?;
            Err(Error::Reported(e.exit_code()))
        }
        result => result,
    }
}

/// The warnings a command printed as it worked, for its JSON error's details.
#[derive(Default, Clone)]
struct Warned(Arc<Mutex<Vec<String>>>);

impl Warned {
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// The workspace's lifecycle, printing each warning as it comes. `HOOKQ_WORKTREE_LOCK_WAIT_MS`
/// bounds how long a create or remove waits for another one to finish.
fn open(ctx: &Ctx, warned: &Warned) -> Result<Worktrees, lifecycle::Error> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let wait = match std::env::var_os("HOOKQ_WORKTREE_LOCK_WAIT_MS") {
        None => lifecycle::worktrees::DEFAULT_LOCK_WAIT,
        Some(v) => v
            .to_str()
            .and_then(|s| s.parse().ok())
            .filter(|ms| *ms <= 86_400_000)
            .map(Duration::from_millis)
            .ok_or_else(|| {
                lifecycle::Error::Usage(format!(
                    "HOOKQ_WORKTREE_LOCK_WAIT_MS={v:?}: expected milliseconds from 0 to 86400000"
                ))
            })?,
    };
    let warned = warned.clone();
    let wt = Worktrees::discover(ctx.start(), home)?
        .lock_wait(wait)
        .on_notice(move |n| match n {
            Notice::Warning(w) => {
                errln!("warning: {w}");
                warned
                    .0
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(w.to_string());
            }
            Notice::Waiting {
                holder,
                lock,
                bound,
            } => errln!(
                "hookq: waiting for another `hookq worktree` command in this workspace to finish{} (lock {}; at most {} s)",
                holder.map(|h| format!(": {h}")).unwrap_or_default(),
                lock.display(),
                bound.as_secs()
            ),
            _ => {}
        });
    Ok(wt)
}

/// Prints `{"ok": true, "command": …, "data": …}`.
fn json_ok(command: &str, data: &impl Serialize) -> Result<(), Error> {
    output::json(&json!({ "ok": true, "command": command, "data": data }))
}

fn warn_all(warnings: &[String]) {
    for w in warnings {
        errln!("warning: {w}");
    }
}

fn input_policy(json: bool, no_hook_input: bool) -> InputPolicy {
    InputPolicy::decide(
        json,
        no_hook_input,
        std::io::stdin().is_terminal(),
        std::env::var("CI").ok().as_deref(),
    )
}

/// Why `--interactive` cannot ask here, if it cannot.
fn interactive_refusal(a: &CreateArgs) -> Option<&'static str> {
    if !a.repos.is_empty() {
        Some("--interactive chooses the repositories itself: give it or --repo, not both")
    } else if a.json {
        Some(
            "--interactive asks on the terminal and --json never asks: name the repositories with --repo",
        )
    } else if !std::io::stdin().is_terminal() {
        Some(
            "--interactive needs a terminal on stdin to ask which repositories to use: name them with --repo",
        )
    } else {
        None
    }
}

/// The repositories a person at the terminal chooses for the create of `branch`.
fn chosen_repos(wt: &Worktrees, branch: &str) -> Result<Vec<String>, Error> {
    if let Mode::Standalone { name } = &wt.workspace().mode {
        return Err(lifecycle::Error::Usage(format!(
            "--interactive needs a configured workspace (.arashi/config.json); here the one repository is {name}"
        ))
        .into());
    }
    let names: Vec<String> = wt.workspace().repos().into_iter().map(|r| r.name).collect();
    if names.is_empty() {
        // The create itself says that the config lists none.
        return Ok(Vec::new());
    }
    match pick::choose(&names, branch, stop_on_signals()) {
        Ok(chosen) if chosen.is_empty() => Err(lifecycle::Error::Usage(
            "no repository chosen: a create needs at least one; nothing was changed".into(),
        )
        .into()),
        Ok(chosen) => Ok(chosen),
        Err(how) => Err(Error::Cancelled(format!(
            "create of branch {branch} cancelled at the repository question ({}); nothing was changed",
            match how {
                pick::Cancel::Interrupted => "Ctrl-C",
                pick::Cancel::EndOfInput => "end of input",
            }
        ))),
    }
}

fn create(ctx: &Ctx, a: CreateArgs, warned: &Warned) -> Result<(), Error> {
    if a.interactive
        && let Some(why) = interactive_refusal(&a)
    {
        return Err(lifecycle::Error::Usage(why.into()).into());
    }
    let wt = open(ctx, warned)?;
    let repos = if a.interactive {
        chosen_repos(&wt, &a.branch)?
    } else {
        a.repos.clone()
    };
    let req = CreateRequest {
        branch: a.branch.clone(),
        repos,
        base: a.base.clone(),
        no_hooks: a.no_hooks,
        dry_run: a.dry_run,
    };
    let idle = Stop::new();
    let opts = RunOptions {
        input: input_policy(a.json, a.no_hook_input),
        json: a.json,
        stop: if a.dry_run { &idle } else { stop_on_signals() },
    };
    let created = match wt.create(&req, opts) {
        Ok(c) => c,
        Err(lifecycle::Error::Create(f)) => {
            if a.json {
                warn_all(&prefixed(&f.rollback.warnings));
            } else {
                summary(&f.ledger);
                failure_blocks(&f.ledger);
                rollback_lines(&f.rollback);
            }
            return Err(lifecycle::Error::Create(f).into());
        }
        Err(e) => return Err(e.into()),
    };
    if a.json {
        return json_ok("worktree create", &created);
    }
    let ws = wt.workspace();
    if created.dry_run {
        outln!(
            "dry run: would create worktrees of branch {} ({} workspace {}):",
            created.branch_name,
            ws.kind().as_str(),
            ws.root.display()
        );
        for t in &created.worktrees {
            outln!(
                "  {}  {}  {}",
                t.repository,
                t.worktree_path.display(),
                branch_note(t)
            );
        }
        outln!("hooks: not discovered in a dry run; nothing was changed");
        return Ok(());
    }
    warn_all(&created.cleanup_warnings);
    outln!("created worktrees of branch {}:", created.branch_name);
    for t in &created.worktrees {
        outln!(
            "  {}  {}  {}",
            t.repository,
            t.worktree_path.display(),
            branch_note(t)
        );
    }
    summary(&created.hook_outcomes);
    Ok(())
}

fn prefixed(w: &[String]) -> Vec<String> {
    w.iter().map(|w| format!("rollback: {w}")).collect()
}

fn branch_note(t: &NewWorktree) -> String {
    match &t.new_branch_at {
        Some(sha) => format!("new branch at {}", &sha[..sha.len().min(12)]),
        None => "existing branch".into(),
    }
}

/// `hooks: 3 succeeded, 1 skipped, 1 failed`: routine rows are not listed one by one.
fn summary(ledger: &Ledger) {
    let c = ledger.counts();
    outln!(
        "hooks: {} succeeded, {} skipped, {} failed",
        c.succeeded,
        c.skipped,
        c.failed
    );
}

/// A block per failed hook. Its own output was already shown on its own streams.
fn failure_blocks(ledger: &Ledger) {
    for o in ledger.outcomes.iter().filter(|o| o.status.failed()) {
        outln!("hook failed: {} {}", o.hook.lifecycle, label(&o.hook));
        outln!(
            "  source: {} ({})",
            o.hook.source.describe(),
            o.hook.source.kind()
        );
        // "timed-out" says all that "timed out" would.
        let how = match &o.status {
            Status::TimedOut => o.status.as_str().to_string(),
            s => format!("{} ({})", s.as_str(), s.describe()),
        };
        outln!("  status: {how} after {} ms", o.duration.as_millis());
        if let Some(cwd) = &o.cwd {
            outln!("  ran in: {}", cwd.display());
        }
    }
}

fn rollback_lines(r: &RollbackReport) {
    for d in &r.done {
        outln!("rolled back: {d}");
    }
    warn_all(&prefixed(&r.warnings));
}

fn remove(ctx: &Ctx, a: RemoveArgs, warned: &Warned) -> Result<(), Error> {
    let wt = open(ctx, warned)?;
    let req = RemoveRequest {
        branch: a.branch.clone(),
        repos: a.repos.clone(),
        force: a.force,
        dry_run: a.dry_run,
    };
    let idle = Stop::new();
    let opts = RunOptions {
        input: input_policy(a.json, a.no_hook_input),
        json: a.json,
        stop: if a.dry_run { &idle } else { stop_on_signals() },
    };
    let removed = match wt.remove(&req, opts) {
        Ok(r) => r,
        Err(lifecycle::Error::Remove(f)) => {
            if !a.json {
                removal_lines(&f.removals);
                summary(&f.ledger);
                failure_blocks(&f.ledger);
            }
            return Err(lifecycle::Error::Remove(f).into());
        }
        Err(e) => return Err(e.into()),
    };
    if a.json {
        return json_ok("worktree remove", &removed);
    }
    if let Some(targets) = &removed.targets {
        outln!(
            "dry run: would remove worktrees of branch {}:",
            removed.branch_name
        );
        for t in targets {
            outln!("  {}  {}", t.repository, t.worktree_path.display());
        }
        outln!("hooks that would run, in order (none is run in a dry run):");
        let preview = removed.hook_preview.as_deref().unwrap_or_default();
        for p in preview.iter().map(PreviewJson::of) {
            outln!(
                "  {} {} ({}, {})  source: {} owned by {}{}",
                p.lifecycle,
                p.hook_name,
                p.scope,
                p.target_repository.as_deref().unwrap_or("-"),
                p.source_kind,
                p.source_owner_kind,
                match (&p.source_owner_name, &p.source_script_path) {
                    (_, Some(path)) => format!(" at {path}"),
                    (Some(n), None) => format!(" {n}"),
                    (None, None) => String::new(),
                }
            );
        }
        if preview.is_empty() {
            outln!("  (none)");
        }
        return Ok(());
    }
    removal_lines(removed.removals.as_deref().unwrap_or_default());
    summary(&removed.hook_outcomes);
    Ok(())
}

fn removal_lines(removals: &[Removal]) {
    for r in removals {
        outln!(
            "  {}  {}  {}{}",
            r.repository,
            r.worktree_path.display(),
            r.status,
            r.reason
                .as_deref()
                .map(|w| format!(": {w}"))
                .unwrap_or_default()
        );
    }
}

fn hooks(ctx: &Ctx, a: HooksArgs, warned: &Warned) -> Result<(), Error> {
    // The inspector is the config checker: its failures' hints do not send the user to it.
    let wt = open(ctx, warned).map_err(lifecycle::Error::inspecting)?;
    let listing = wt.hooks().map_err(lifecycle::Error::inspecting)?;
    let refusal = listing.refusal();
    if a.json {
        if refusal.is_none() {
            json_ok("worktree hooks", &listing)?;
        }
    } else {
        let ws = wt.workspace();
        outln!("{} workspace {}", ws.kind().as_str(), ws.root.display());
        if let Some(path) = &listing.config {
            outln!("config: {}", path.display());
        }
        outln!(
            "bash: {}",
            listing
                .bash
                .as_ref()
                .map_or_else(|| "-".to_string(), |b| b.display().to_string())
        );
        outln!("timeout: {} ms", listing.timeout_ms);
        let rows: Vec<Vec<String>> = listing
            .hooks
            .iter()
            .map(|l| {
                let h = &l.hook;
                vec![
                    h.lifecycle.to_string(),
                    h.scope.to_string(),
                    h.target.clone().unwrap_or_else(|| "-".into()),
                    h.name.clone(),
                    if l.ambiguous {
                        format!("{} (ambiguous: neither runs)", h.source.describe())
                    } else {
                        h.source.describe()
                    },
                ]
            })
            .collect();
        if rows.is_empty() {
            outln!("no hooks");
        } else {
            output::table(&["LIFECYCLE", "SCOPE", "TARGET", "HOOK", "SOURCE"], &rows);
        }
    }
    match refusal {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

fn forget(ctx: &Ctx, a: ForgetArgs, warned: &Warned) -> Result<(), Error> {
    let wt = open(ctx, warned)?;
    let req = ForgetRequest {
        repository: a.repository,
        dry_run: a.dry_run,
    };
    let idle = Stop::new();
    let stop = if a.dry_run { &idle } else { stop_on_signals() };
    let done = match wt.forget(&req, stop) {
        Ok(d) => d,
        Err(lifecycle::Error::Forget(f)) => {
            if !a.json {
                forget_lines(&f);
            }
            return Err(lifecycle::Error::Forget(f).into());
        }
        Err(e) => return Err(e.into()),
    };
    if a.json {
        return json_ok("worktree forget", &done);
    }
    forget_lines(&done);
    Ok(())
}

/// One line per item: status, logical name, where, and why it stays.
fn forget_lines(f: &Forgotten) {
    let ws = &f.workspace;
    outln!(
        "{}repository {} in workspace {}:",
        if f.dry_run {
            "dry run: forgetting "
        } else {
            "forgetting "
        },
        f.repository,
        ws.root.display()
    );
    for i in &f.items {
        let place = match (&i.path, &i.config_key) {
            (Some(p), _) => p.display().to_string(),
            (None, Some(k)) => format!("inline {k}"),
            (None, None) => "-".into(),
        };
        outln!(
            "  {:<12} {}  {}{}",
            i.status.as_str(),
            i.hook_name,
            place,
            i.reason
                .as_deref()
                .map(|r| format!("  ({r})"))
                .unwrap_or_default()
        );
    }
    if !f.items.iter().any(|i| i.status != ForgetStatus::Kept) {
        outln!("  no hook file of {} to remove", f.repository);
    }
    if f.still_configured {
        outln!(
            "note: the config still lists repos.{}; hookq never edits the config",
            f.repository
        );
    }
}

fn init(ctx: &Ctx, a: InitArgs) -> Result<(), Error> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let done = Worktrees::init(ctx.start(), home)?;
    warn_all(&done.warnings);
    if a.json {
        return json_ok("worktree init", &done);
    }
    for f in &done.files {
        outln!(
            "{} {}",
            if f.written { "wrote" } else { "kept " },
            f.path.display()
        );
    }
    outln!("examples are inert: activate one with `install -m 755 X.sh.example X.sh`");
    Ok(())
}
