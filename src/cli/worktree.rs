//! `hookq worktree create|remove|hooks|init`: git worktrees across a workspace's repositories,
//! with lifecycle hooks. Human output by default, `--json` for programs (one JSON document on
//! stdout; hook output never goes there).

use std::io::IsTerminal as _;
use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::{Value, json};

use super::app::{Ctx, stop_on_signals};
use super::output;
use crate::cli::error::Error;
use hookq::lifecycle::discovery::Problem;
use hookq::lifecycle::ledger::{Ledger, PreviewJson, label};
use hookq::lifecycle::rollback::RollbackReport;
use hookq::lifecycle::workspace::{FindError, Mode, Workspace};
use hookq::lifecycle::{
    self, CreatePlan, CreateRequest, InputPolicy, RemovePlan, RunOptions, inspect, session,
};

/// The `worktree` subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Make BRANCH's worktree in each selected repository, running the create hooks.
    Create(CreateArgs),
    /// Remove BRANCH's worktree in each selected repository, running the remove hooks.
    Remove(RemoveArgs),
    /// Show what each lifecycle would run, by scope and source, without running anything.
    Hooks(HooksArgs),
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
        Command::Init(a) => a.json,
    };
    let name = match &cmd {
        Command::Create(_) => "worktree create",
        Command::Remove(_) => "worktree remove",
        Command::Hooks(_) => "worktree hooks",
        Command::Init(_) => "worktree init",
    };
    let mut details = Details::default();
    let result = match cmd {
        Command::Create(a) => create(ctx, a, &mut details),
        Command::Remove(a) => remove(ctx, a, &mut details),
        Command::Hooks(a) => hooks(ctx, a, &mut details),
        Command::Init(a) => init(ctx, a),
    };
    if let Err(Error::Lifecycle(e)) = &result
        && json
    {
        let mut d = serde_json::Map::new();
        d.insert("hookOutcomes".into(), Value::Array(details.outcomes));
        d.insert("rollbackWarnings".into(), json!(details.rollback_warnings));
        d.insert("warnings".into(), json!(details.warnings));
        if let lifecycle::Error::Refused(problems) = e {
            d.insert("problems".into(), problems_json(problems));
        }
        for (k, v) in details.extra {
            d.insert(k, v);
        }
        output::json(&json!({
            "ok": false,
            "command": name,
            "error": { "code": e.code(), "message": e.to_string(), "details": d },
        }))?;
    }
    result
}

/// What a failure's JSON error object carries besides its message.
#[derive(Default)]
struct Details {
    outcomes: Vec<Value>,
    rollback_warnings: Vec<String>,
    warnings: Vec<String>,
    extra: Vec<(String, Value)>,
}

fn find(ctx: &Ctx) -> Result<Workspace, Error> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    Workspace::discover(ctx.start(), home).map_err(|e| Error::Lifecycle(e.into()))
}

fn problems_json(problems: &[Problem]) -> Value {
    Value::Array(
        problems
            .iter()
            .map(|p| json!({"code": p.code, "message": p.message}))
            .collect(),
    )
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

fn mode_json(ws: &Workspace) -> Value {
    json!({"mode": ws.kind().as_str(), "root": ws.root})
}

fn create(ctx: &Ctx, a: CreateArgs, details: &mut Details) -> Result<(), Error> {
    let ws = find(ctx)?;
    let req = CreateRequest {
        branch: a.branch.clone(),
        repos: a.repos.clone(),
        base: a.base.clone(),
        no_hooks: a.no_hooks,
        dry_run: a.dry_run,
    };
    if a.dry_run {
        let warnings = session::recover_if_idle(&ws);
        warn_all(&warnings);
        details.warnings = warnings.clone();
        let plan = CreatePlan::build(&ws, &req).map_err(Error::Lifecycle)?;
        let worktrees = worktrees_json(
            &plan,
            &plan.targets.iter().map(|_| true).collect::<Vec<_>>(),
        );
        if a.json {
            output::json(&json!({
                "ok": true,
                "command": "worktree create",
                "data": {
                    "workspace": mode_json(&ws),
                    "branchName": plan.branch,
                    "dryRun": true,
                    "worktrees": worktrees,
                    "hookOutcomes": [],
                    "warnings": warnings,
                },
            }))?;
        } else {
            outln!(
                "dry run: would create worktrees of branch {} ({} workspace {}):",
                plan.branch,
                ws.kind().as_str(),
                ws.root.display()
            );
            for t in &plan.targets {
                outln!("  {}  {}  {}", t.repo, t.worktree.display(), branch_note(t));
            }
            outln!("hooks: not discovered in a dry run; nothing was changed");
        }
        return Ok(());
    }
    let (lock, warnings) = session::acquire(&ws).map_err(Error::Lifecycle)?;
    warn_all(&warnings);
    details.warnings = warnings.clone();
    let plan = CreatePlan::build(&ws, &req).map_err(Error::Lifecycle)?;
    let stop = stop_on_signals();
    let opts = RunOptions {
        input: input_policy(a.json, a.no_hook_input),
        json: a.json,
        stop,
    };
    let report = lifecycle::create(&ws, &plan, &lock, opts).map_err(Error::Lifecycle)?;
    drop(lock);
    let made: Vec<bool> = (0..plan.targets.len())
        .map(|i| report.made.contains(&i))
        .collect();
    if let Some((kind, why)) = &report.failure {
        details.outcomes = outcomes_json(&report.ledger);
        details.rollback_warnings = report.rollback.warnings.clone();
        details
            .extra
            .push(("rolledBack".into(), json!(report.rollback.done)));
        if !a.json {
            summary(&report.ledger);
            failure_blocks(&report.ledger);
            rollback_lines(&report.rollback);
        } else {
            warn_all(&prefixed(&report.rollback.warnings));
        }
        let rolled = if report.rollback.warnings.is_empty() {
            "everything it made was rolled back".to_string()
        } else {
            format!(
                "rolled back with {} warning(s)",
                report.rollback.warnings.len()
            )
        };
        return Err(Error::Lifecycle(lifecycle::Error::Failed {
            kind: *kind,
            message: format!("create of branch {} failed: {why}; {rolled}", plan.branch),
        }));
    }
    if a.json {
        output::json(&json!({
            "ok": true,
            "command": "worktree create",
            "data": {
                "workspace": mode_json(&ws),
                "branchName": plan.branch,
                "dryRun": false,
                "worktrees": worktrees_json(&plan, &made),
                "hookOutcomes": outcomes_json(&report.ledger),
                "warnings": warnings.iter().chain(&report.rollback.warnings).collect::<Vec<_>>(),
            },
        }))?;
    } else {
        warn_all(&report.rollback.warnings);
        outln!("created worktrees of branch {}:", plan.branch);
        for t in &plan.targets {
            outln!("  {}  {}  {}", t.repo, t.worktree.display(), branch_note(t));
        }
        summary(&report.ledger);
    }
    Ok(())
}

fn prefixed(w: &[String]) -> Vec<String> {
    w.iter().map(|w| format!("rollback: {w}")).collect()
}

fn branch_note(t: &lifecycle::plan::CreateTarget) -> String {
    match &t.new_at {
        Some(sha) => format!("new branch at {}", &sha[..sha.len().min(12)]),
        None => "existing branch".into(),
    }
}

fn worktrees_json(plan: &CreatePlan, made: &[bool]) -> Value {
    Value::Array(
        plan.targets
            .iter()
            .zip(made)
            .map(|(t, &m)| {
                json!({
                    "repository": t.repo,
                    "worktreePath": t.worktree,
                    "branchName": plan.branch,
                    "branchCreated": t.new_at.is_some() && m,
                    "newBranchAt": t.new_at,
                })
            })
            .collect(),
    )
}

fn outcomes_json(ledger: &Ledger) -> Vec<Value> {
    ledger
        .to_json()
        .into_iter()
        .map(|o| serde_json::to_value(o).unwrap_or(Value::Null))
        .collect()
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
        outln!(
            "  status: {} ({}) after {} ms",
            o.status.as_str(),
            o.status.describe(),
            o.duration.as_millis()
        );
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

fn remove(ctx: &Ctx, a: RemoveArgs, details: &mut Details) -> Result<(), Error> {
    let ws = find(ctx)?;
    let (lock, warnings) = if a.dry_run {
        (None, session::recover_if_idle(&ws))
    } else {
        let (l, w) = session::acquire(&ws).map_err(Error::Lifecycle)?;
        (Some(l), w)
    };
    warn_all(&warnings);
    details.warnings = warnings.clone();
    let plan = RemovePlan::build(&ws, &a.branch, &a.repos, a.force).map_err(Error::Lifecycle)?;
    let targets: Vec<Value> = plan
        .targets
        .iter()
        .map(|t| json!({"repository": t.repo, "worktreePath": t.worktree, "branchName": t.branch}))
        .collect();
    if a.dry_run {
        let preview: Vec<PreviewJson> = plan
            .pre
            .iter()
            .flatten()
            .chain(plan.post.iter().flatten())
            .map(PreviewJson::of)
            .collect();
        if a.json {
            output::json(&json!({
                "ok": true,
                "command": "worktree remove",
                "data": {
                    "workspace": mode_json(&ws),
                    "branchName": plan.branch,
                    "dryRun": true,
                    "targets": targets,
                    "hookPreview": preview,
                    "hookOutcomes": [],
                    "warnings": warnings,
                },
            }))?;
        } else {
            outln!("dry run: would remove worktrees of branch {}:", plan.branch);
            for t in &plan.targets {
                outln!("  {}  {}", t.repo, t.worktree.display());
            }
            outln!("hooks that would run, in order (none is run in a dry run):");
            for p in &preview {
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
        }
        return Ok(());
    }
    let stop = stop_on_signals();
    let opts = RunOptions {
        input: input_policy(a.json, a.no_hook_input),
        json: a.json,
        stop,
    };
    let report = lifecycle::remove(&ws, &plan, opts);
    drop(lock);
    let removals = serde_json::to_value(&report.removals).unwrap_or(Value::Null);
    if let Some((kind, why)) = report.failure {
        details.outcomes = outcomes_json(&report.ledger);
        details.extra.push(("removals".into(), removals));
        if !a.json {
            removal_lines(&report.removals);
            summary(&report.ledger);
            failure_blocks(&report.ledger);
        }
        return Err(Error::Lifecycle(lifecycle::Error::Failed {
            kind,
            message: format!("remove of branch {} failed: {why}", plan.branch),
        }));
    }
    if a.json {
        output::json(&json!({
            "ok": true,
            "command": "worktree remove",
            "data": {
                "workspace": mode_json(&ws),
                "branchName": plan.branch,
                "dryRun": false,
                "removals": removals,
                "hookOutcomes": outcomes_json(&report.ledger),
                "warnings": warnings,
            },
        }))?;
    } else {
        removal_lines(&report.removals);
        summary(&report.ledger);
    }
    Ok(())
}

fn removal_lines(removals: &[lifecycle::remove::Removal]) {
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

fn hooks(ctx: &Ctx, a: HooksArgs, details: &mut Details) -> Result<(), Error> {
    let ws = find(ctx)?;
    let warnings = session::recover_if_idle(&ws);
    warn_all(&warnings);
    let found = inspect::inspect(&ws);
    let preview: Vec<PreviewJson> = found.hooks.iter().map(PreviewJson::of).collect();
    let timeout_ms = u64::try_from(found.timeout.as_millis()).unwrap_or(u64::MAX);
    if a.json {
        if found.problems.is_empty() {
            output::json(&json!({
                "ok": true,
                "command": "worktree hooks",
                "data": {
                    "workspace": mode_json(&ws),
                    "bash": found.bash,
                    "timeoutMs": timeout_ms,
                    "hooks": preview,
                    "problems": [],
                    "warnings": warnings,
                },
            }))?;
        } else {
            details.extra.push(("hooks".into(), json!(preview)));
        }
    } else {
        outln!("{} workspace {}", ws.kind().as_str(), ws.root.display());
        if let Mode::Configured(c) = &ws.mode {
            outln!("config: {}", c.path.display());
        }
        outln!(
            "bash: {}",
            found
                .bash
                .as_ref()
                .map_or_else(|| "-".to_string(), |b| b.display().to_string())
        );
        outln!("timeout: {timeout_ms} ms");
        let rows: Vec<Vec<String>> = found
            .hooks
            .iter()
            .map(|h| {
                vec![
                    h.lifecycle.to_string(),
                    h.scope.to_string(),
                    h.target.clone().unwrap_or_else(|| "-".into()),
                    h.name.clone(),
                    h.source.describe(),
                ]
            })
            .collect();
        if rows.is_empty() {
            outln!("no hooks");
        } else {
            output::table(&["LIFECYCLE", "SCOPE", "TARGET", "HOOK", "SOURCE"], &rows);
        }
    }
    if found.problems.is_empty() {
        Ok(())
    } else {
        Err(Error::Lifecycle(lifecycle::Error::Refused(found.problems)))
    }
}

fn init(ctx: &Ctx, a: InitArgs) -> Result<(), Error> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let start = || {
        ctx.start().canonicalize().map_err(|source| Error::Io {
            what: "cannot access",
            path: ctx.start().to_path_buf(),
            source,
        })
    };
    let (root, configured) = match Workspace::discover(ctx.start(), home) {
        Ok(ws) if ws.config().is_some() => {
            let names: Vec<String> = ws.repos().into_iter().map(|r| r.name).collect();
            (ws.root, Some(names))
        }
        Ok(ws) => {
            let root = start()?;
            // Inside a repository that works without a config, a config listing no
            // repository would switch it to configured mode, where every command then fails:
            // refuse, unless the folder holds repositories of its own (a workspace that is
            // itself under git).
            if let Mode::Standalone { name } = &ws.mode
                && lifecycle::init::find_repos(&root).is_empty()
            {
                return Err(Error::Lifecycle(lifecycle::Error::Usage(format!(
                    "{} is inside the git repository {}, which works without a config \
                     (standalone mode: its hooks are ~/.arashi/hooks/{name}/<lifecycle>.sh and \
                     ~/.arashi/hooks/<lifecycle>.sh); `hookq worktree init` writes a workspace \
                     config listing repositories, so run it in the folder that holds them; \
                     nothing was written",
                    root.display(),
                    ws.root.display()
                ))));
            }
            (root, None)
        }
        Err(FindError::Missing { .. }) => (start()?, None),
        Err(e) => return Err(Error::Lifecycle(e.into())),
    };
    let files = lifecycle::init::init(&root, configured.as_deref()).map_err(|e| Error::Io {
        what: "cannot write",
        path: e.path,
        source: e.source,
    })?;
    if a.json {
        output::json(&json!({
            "ok": true,
            "command": "worktree init",
            "data": { "root": root, "files": files },
        }))?;
    } else {
        for f in &files {
            outln!(
                "{} {}",
                if f.written { "wrote" } else { "kept " },
                f.path.display()
            );
        }
        outln!("examples are inert: activate one with `install -m 755 X.sh.example X.sh`");
    }
    Ok(())
}
