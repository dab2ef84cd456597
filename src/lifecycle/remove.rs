//! Carrying out a remove plan: every target's pre-remove hooks (the first failure aborts the
//! whole removal, nothing removed), then each worktree's removal (a failure is recorded and
//! the others go on), then every target's post-remove hooks, whatever happened before. A stop
//! ends the running hook and everything not yet started.

use std::path::PathBuf;

use serde::Serialize;

use super::create::RunOptions;
use super::discovery::SourcedCommand;
use super::env::{self, Aliases, HookFacts, RemoveContext, RemoveTarget as TargetRecord};
use super::error::FailureKind;
use super::git;
use super::hook::{Place, Runner};
use super::ledger::{Ledger, label};
use super::plan::{RemovePlan, RemoveTarget};
use super::point::Scope;
use super::policy::FailurePolicy;
use super::workspace::{Mode, Workspace};

/// How one worktree's removal went.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Removal {
    /// The repository.
    pub repository: String,
    /// The worktree.
    pub worktree_path: PathBuf,
    /// The branch checked out there.
    pub branch_name: Option<String>,
    /// How it went.
    pub status: RemovalStatus,
    /// Why it failed or was skipped.
    pub reason: Option<String>,
}

/// How one worktree's removal went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RemovalStatus {
    /// The worktree is gone.
    Removed,
    /// Git could not remove it (the reason says why); it stays.
    Failed,
    /// It was not attempted: a pre-remove hook failed, or a signal stopped the command.
    Skipped,
}

impl RemovalStatus {
    /// `removed`, `failed` or `skipped`.
    pub fn as_str(self) -> &'static str {
        match self {
            RemovalStatus::Removed => "removed",
            RemovalStatus::Failed => "failed",
            RemovalStatus::Skipped => "skipped",
        }
    }
}

impl std::fmt::Display for RemovalStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a remove did.
#[derive(Debug, Clone)]
pub struct RemoveReport {
    /// Every evaluated hook.
    pub ledger: Ledger,
    /// Each target's removal.
    pub removals: Vec<Removal>,
    /// Why it failed, if it did.
    pub failure: Option<(FailureKind, String)>,
}

/// What every remove hook of `plan` gets about all of its targets.
pub fn context(plan: &RemovePlan) -> RemoveContext {
    let records: Vec<TargetRecord> = plan
        .targets
        .iter()
        .map(|t| TargetRecord {
            repository: t.repo.clone(),
            branch_name: t.branch.clone(),
            worktree_path: Some(t.worktree.to_string_lossy().into_owned()),
        })
        .collect();
    RemoveContext::of(&records)
}

/// Why a remove stopped before its gate opened.
const STOPPED_BEFORE: &str = "stopped by a signal before removing anything";

/// Why a hook was not run after the command was aborted or stopped.
fn skip_reason(kind: FailureKind) -> &'static str {
    match kind {
        FailureKind::Stopped => "stopped by a signal",
        _ => "the removal was aborted by a pre-remove hook",
    }
}

/// Runs `plan`; the caller holds the workspace's lock. A stop (SIGINT, SIGTERM) ends the
/// running hook; before any removal it aborts the removal as a failing pre-remove hook does,
/// after one it skips the removals and hooks not yet started.
pub fn remove(ws: &Workspace, plan: &RemovePlan, opts: RunOptions<'_>) -> RemoveReport {
    let base = env::base(std::env::vars_os());
    let context = context(plan);
    let runner = plan
        .bash
        .as_ref()
        .map(|bash| Runner::new(bash, plan.timeout, opts));
    let mut ledger = Ledger::default();
    let run = |hook: &SourcedCommand, t: &RemoveTarget, ledger: &mut Ledger| -> bool {
        let cwd = if hook.scope == Scope::Workspace {
            &ws.root
        } else {
            &t.checkout
        };
        let f = HookFacts {
            name: &hook.name,
            scope: hook.scope,
            source_path: hook.source.script_path(),
            execution_path: cwd,
            mode: ws.kind(),
            main_repo: &ws.root,
            branch: t.branch.as_deref(),
            target_repository: Some(&t.repo),
            target_repo_path: Some(&t.checkout),
            target_worktree: Some(&t.worktree),
            parent_repo: None,
            input: opts.input,
            // Every remove hook runs for one target, one repository's one worktree: arashi's
            // aliases name it, whatever the scope.
            aliases: Aliases {
                repo_name: Some(&t.repo),
                repo_path: Some(&t.checkout),
                worktree_path: Some(&t.worktree),
            },
            remove: Some(&context),
        };
        let env = env::build(&base, &f);
        let place = Place {
            cwd,
            subject: format!("{} worktree {}", t.repo, t.worktree.display()),
            env: &env,
        };
        let Some(runner) = runner.as_ref() else {
            return true;
        };
        let outcome = runner.run(hook, &place, None);
        let ok = !outcome.status.failed();
        ledger.push(outcome);
        ok
    };

    // Pre-remove: a gate. A stop while a hook runs ends that hook and closes the gate too.
    let gate = FailurePolicy::FailFast;
    let mut aborted: Option<(FailureKind, String)> = None;
    for (t, hooks) in plan.targets.iter().zip(&plan.pre) {
        for h in hooks {
            if let Some((kind, _)) = &aborted {
                let why = match kind {
                    FailureKind::Stopped => skip_reason(*kind),
                    _ => "an earlier pre-remove hook failed",
                };
                ledger.skip(h, why);
                continue;
            }
            if opts.stop.graceful() {
                aborted = Some((FailureKind::Stopped, STOPPED_BEFORE.into()));
                ledger.skip(h, skip_reason(FailureKind::Stopped));
                continue;
            }
            let ok = run(h, t, &mut ledger);
            if opts.stop.graceful() {
                aborted = Some((
                    FailureKind::Stopped,
                    format!(
                        "stopped by a signal while hook {} ran; nothing was removed",
                        label(h)
                    ),
                ));
            } else if !ok && gate.stops() {
                let o = ledger.outcomes.last().expect("just pushed");
                aborted = Some((
                    FailureKind::Hook,
                    format!(
                        "hook {} {}; nothing was removed",
                        label(h),
                        o.status.describe()
                    ),
                ));
            }
        }
    }
    // A stop that came after the last pre-remove hook still comes before any removal.
    if aborted.is_none() && opts.stop.graceful() {
        aborted = Some((FailureKind::Stopped, STOPPED_BEFORE.into()));
    }
    if let Some((kind, why)) = aborted {
        for hooks in &plan.post {
            for h in hooks {
                ledger.skip(h, skip_reason(kind));
            }
        }
        let reason = match kind {
            FailureKind::Stopped => "stopped by a signal",
            _ => "a pre-remove hook failed",
        };
        let removals = plan
            .targets
            .iter()
            .map(|t| removal(t, RemovalStatus::Skipped, Some(reason.into())))
            .collect();
        return RemoveReport {
            ledger,
            removals,
            failure: Some((kind, why)),
        };
    }

    // Removal: each target on its own.
    let mut removals = Vec::new();
    for t in &plan.targets {
        if opts.stop.graceful() {
            removals.push(removal(
                t,
                RemovalStatus::Skipped,
                Some("stopped by a signal".into()),
            ));
            continue;
        }
        match git::remove_worktree(&t.checkout, &t.worktree, plan.force, false) {
            Ok(()) => {
                prune_empty_parents(ws, t);
                removals.push(removal(t, RemovalStatus::Removed, None));
            }
            Err(e) => removals.push(removal(t, RemovalStatus::Failed, Some(e.why))),
        }
    }

    // Post-remove: every hook runs, unless a stop ends the command.
    let finish = FailurePolicy::Continue;
    let mut hook_failures = 0;
    for (t, hooks) in plan.targets.iter().zip(&plan.post) {
        for h in hooks {
            if opts.stop.graceful() {
                ledger.skip(h, skip_reason(FailureKind::Stopped));
                continue;
            }
            if !run(h, t, &mut ledger) {
                hook_failures += 1;
                if finish.stops() {
                    break;
                }
            }
        }
    }
    if opts.stop.graceful() {
        let removed = removals.iter().filter(|r| r.status == RemovalStatus::Removed).count();
        return RemoveReport {
            ledger,
            failure: Some((
                FailureKind::Stopped,
                format!(
                    "stopped by a signal after {removed} of {} worktree(s) were removed; the \
                     hooks not yet run were skipped",
                    removals.len()
                ),
            )),
            removals,
        };
    }
    let failed_removals: Vec<&Removal> = removals
        .iter()
        .filter(|r| r.status != RemovalStatus::Removed)
        .collect();
    let failure = if hook_failures > 0 {
        Some((
            FailureKind::Hook,
            format!(
                "{hook_failures} post-remove hook(s) failed{}",
                if failed_removals.is_empty() {
                    String::new()
                } else {
                    format!(
                        ", and {} worktree(s) were not removed",
                        failed_removals.len()
                    )
                }
            ),
        ))
    } else if !failed_removals.is_empty() {
        Some((
            FailureKind::Removal,
            failed_removals
                .iter()
                .map(|r| {
                    format!(
                        "cannot remove {} ({}): {}",
                        r.worktree_path.display(),
                        r.repository,
                        r.reason.as_deref().unwrap_or("failed")
                    )
                })
                .collect::<Vec<_>>()
                .join("; "),
        ))
    } else {
        None
    };
    RemoveReport {
        ledger,
        removals,
        failure,
    }
}

/// Removes the folders hookq's own layout made around a worktree it removed, innermost first,
/// each only when it is empty: those a branch name with `/` left (`worktrees/web/feature/`
/// after `feature/x`), then the layout's own, `worktrees/web/` and `worktrees/` (configured)
/// or `app.worktrees/` (standalone). A folder is hookq's because its path scheme names it;
/// one that still holds anything stays, and nothing above the layout (the workspace root, the
/// folder beside a standalone repository) or outside it (a worktree git lists elsewhere) is
/// ever touched.
fn prune_empty_parents(ws: &Workspace, t: &RemoveTarget) {
    let probe = ws.worktree_path(&t.repo, "x");
    let Some(repo_dir) = probe.parent() else {
        return;
    };
    let top = match ws.mode {
        Mode::Configured(_) => repo_dir.parent().unwrap_or(repo_dir),
        Mode::Standalone { .. } => repo_dir,
    };
    if !t.worktree.starts_with(repo_dir) {
        return;
    }
    for dir in t.worktree.ancestors().skip(1) {
        if !dir.starts_with(top) || std::fs::remove_dir(dir).is_err() || dir == top {
            break;
        }
    }
}

fn removal(t: &RemoveTarget, status: RemovalStatus, reason: Option<String>) -> Removal {
    Removal {
        repository: t.repo.clone(),
        worktree_path: t.worktree.clone(),
        branch_name: t.branch.clone(),
        status,
        reason,
    }
}
