//! Carrying out a create plan: fail-fast, each change written to the journal before it is
//! made, and everything this invocation made undone when any step fails.

use super::discovery::SourcedCommand;
use super::env::{self, Aliases, HookFacts};
use super::error::{Error, FailureKind};
use super::hook::{Place, Runner};
use super::input::InputPolicy;
use super::journal::{Journal, Record, StateLock};
use super::ledger::{Ledger, label};
use super::plan::{CreatePlan, CreateStep};
use super::point::Scope;
use super::policy::FailurePolicy;
use super::rollback::{self, RollbackReport};
use super::workspace::{Mode, Workspace};
use crate::exec::GroupTracker;

pub use super::hook::RunOptions;
/// What a create did.
#[derive(Debug, Clone)]
pub struct CreateReport {
    /// Every evaluated hook.
    pub ledger: Ledger,
    /// The targets whose worktree was made (and stays, unless `failure`).
    pub made: Vec<usize>,
    /// Why it failed, if it did.
    pub failure: Option<(FailureKind, String)>,
    /// What the rollback did, after a failure.
    pub rollback: RollbackReport,
}

/// The facts of a create hook: workspace-scope hooks get no child target, repository hooks
/// their repository, checkout and new worktree, standalone hooks the main root's. arashi's
/// historical aliases follow its own mapping: the workspace root is a workspace hook's
/// repository path, a child's new worktree a repository hook's, the main root a standalone
/// hook's.
fn facts<'a>(
    ws: &'a Workspace,
    plan: &'a CreatePlan,
    hook: &'a SourcedCommand,
    input: InputPolicy,
) -> (HookFacts<'a>, String) {
    let target = hook
        .target
        .as_deref()
        .and_then(|r| plan.targets.iter().find(|t| t.repo == r));
    let mut f = HookFacts {
        name: &hook.name,
        scope: hook.scope,
        source_path: hook.source.script_path(),
        execution_path: &ws.root,
        mode: ws.kind(),
        main_repo: &ws.root,
        branch: Some(&plan.branch),
        target_repository: None,
        target_repo_path: None,
        target_worktree: None,
        parent_repo: None,
        input,
        aliases: Aliases {
            repo_path: Some(&ws.root),
            ..Aliases::default()
        },
        remove: None,
    };
    let subject;
    match (&ws.mode, hook.scope, target) {
        (Mode::Configured(_), Scope::Repository, Some(t)) => {
            f.execution_path = &t.worktree;
            f.target_repository = Some(&t.repo);
            f.target_repo_path = Some(&t.checkout);
            f.target_worktree = Some(&t.worktree);
            f.parent_repo = Some(&ws.root);
            f.aliases = Aliases {
                repo_name: Some(&t.repo),
                repo_path: Some(&t.worktree),
                worktree_path: Some(&t.worktree),
            };
            subject = format!("{} worktree {}", t.repo, t.worktree.display());
        }
        (Mode::Standalone { .. }, _, Some(t)) => {
            f.target_repository = Some(&t.repo);
            f.target_repo_path = Some(&ws.root);
            f.target_worktree = Some(&t.worktree);
            f.aliases = Aliases {
                repo_name: Some(&t.repo),
                repo_path: Some(&ws.root),
                worktree_path: Some(&t.worktree),
            };
            subject = format!("{} worktree {}", t.repo, t.worktree.display());
        }
        _ => subject = format!("workspace {}", ws.root.display()),
    }
    (f, subject)
}

/// Runs `plan`. `lock` is the workspace's lock, held by the caller. A stop (`opts.stop`) ends
/// the running hook and rolls the create back as a failure does.
pub fn create(
    ws: &Workspace,
    plan: &CreatePlan,
    lock: &StateLock,
    opts: RunOptions<'_>,
) -> Result<CreateReport, Error> {
    let base = env::base(std::env::vars_os());
    let runner = plan
        .bash
        .as_ref()
        .map(|bash| Runner::new(bash, plan.timeout, opts));
    let policy = FailurePolicy::FailFast;
    let mut ledger = Ledger::default();
    let mut made = Vec::new();
    let mut owned: Vec<Record> = Vec::new();
    let mut journal = None;
    let mut failure: Option<(FailureKind, String)> = None;
    let mut next = 0;
    while next < plan.steps.len() {
        if opts.stop.graceful() {
            break;
        }
        let step = plan.steps[next];
        next += 1;
        match step {
            CreateStep::Hook(i) => {
                let hook = &plan.hooks[i];
                let (f, subject) = facts(ws, plan, hook, opts.input);
                let env = env::build(&base, &f);
                let place = Place {
                    cwd: f.execution_path,
                    subject,
                    env: &env,
                };
                let Some(runner) = runner.as_ref() else {
                    continue;
                };
                let groups = HookGroups::new(&mut journal);
                let outcome = runner.run(hook, &place, Some(&groups));
                // A stop while it ran ended it: the create is stopped, whatever the hook did.
                if opts.stop.graceful() {
                    failure = Some((
                        FailureKind::Stopped,
                        format!("stopped by a signal while hook {} ran", label(hook)),
                    ));
                    ledger.push(outcome);
                    break;
                }
                let failed = outcome.status.failed();
                if failed {
                    failure = Some((
                        FailureKind::Hook,
                        format!("hook {} {}", label(hook), outcome.status.describe()),
                    ));
                }
                ledger.push(outcome);
                if failed && policy.stops() {
                    break;
                }
            }
            CreateStep::Add(i) => {
                let t = &plan.targets[i];
                if journal.is_none() {
                    match lock.begin(&plan.branch) {
                        Ok(j) => journal = Some(j),
                        Err(e) => {
                            failure = Some((FailureKind::Git, e.to_string()));
                            break;
                        }
                    }
                }
                let Some(j) = journal.as_mut() else { break };
                let mut records: Vec<Record> = t
                    .make_dirs
                    .iter()
                    .map(|d| Record::Dir { path: d.clone() })
                    .collect();
                if t.new_at.is_some() {
                    records.push(Record::Branch {
                        checkout: t.checkout.clone(),
                        name: plan.branch.clone(),
                    });
                }
                records.push(Record::Worktree {
                    checkout: t.checkout.clone(),
                    path: t.worktree.clone(),
                });
                // Nothing is made until its record is on disk.
                if let Err(e) = j.append(&records) {
                    failure = Some((FailureKind::Git, e.to_string()));
                    break;
                }
                owned.extend(records);
                if let Err(e) = make_dirs(&t.make_dirs) {
                    failure = Some((FailureKind::Git, e));
                    break;
                }
                match super::git::add_worktree(
                    &t.checkout,
                    &t.worktree,
                    &plan.branch,
                    t.new_at.as_deref(),
                ) {
                    Ok(()) => made.push(i),
                    Err(e) => {
                        failure = Some((FailureKind::Git, e.to_string()));
                        break;
                    }
                }
            }
        }
    }
    // A stop is the create's end, also one that came with or after its last step (a git
    // step a terminal's Ctrl-C ended too): a create is done only when this returns.
    if opts.stop.graceful() && !matches!(failure, Some((FailureKind::Stopped, _))) {
        failure = Some((
            FailureKind::Stopped,
            "stopped by a signal before it finished".into(),
        ));
    }
    let mut rollback = RollbackReport::default();
    if let Some((kind, _)) = &failure {
        let why = match kind {
            FailureKind::Stopped => "the create was stopped by a signal",
            _ => "an earlier step of this create failed",
        };
        for step in &plan.steps[next..] {
            if let CreateStep::Hook(i) = step {
                ledger.skip(&plan.hooks[*i], why);
            }
        }
        rollback = rollback::undo(&owned, false);
        made.clear();
    }
    if let Some(j) = journal
        && let Err(e) = j.finish()
    {
        // The next command would roll back a completed create: say so loudly.
        rollback.warnings.push(format!(
            "{e}; remove it by hand, or the next `hookq worktree` command rolls this create back"
        ));
    }
    Ok(CreateReport {
        ledger,
        made,
        failure,
        rollback,
    })
}

/// Tells the create's journal, once it has one, which process group each hook leads while it
/// runs: a hook outlives a hookq killed meanwhile, and the next command's rollback ends it
/// before it removes the worktree the hook works in. A journal that cannot be written only
/// loses the naming; the rollback still waits for processes inside the worktree.
#[derive(Debug)]
struct HookGroups<'j>(std::cell::RefCell<&'j mut Option<Journal>>);

impl<'j> HookGroups<'j> {
    fn new(journal: &'j mut Option<Journal>) -> Self {
        Self(std::cell::RefCell::new(journal))
    }

    fn note(&self, record: &Record) {
        if let Some(j) = self.0.borrow_mut().as_mut() {
            let _ = j.note(record);
        }
    }
}

impl GroupTracker for HookGroups<'_> {
    fn track(&self, pgid: i32, started_ms: i64) {
        self.note(&Record::Hook { pgid, started_ms });
    }

    fn untrack(&self, pgid: i32) {
        self.note(&Record::HookEnded { pgid });
    }
}

fn make_dirs(dirs: &[std::path::PathBuf]) -> Result<(), String> {
    for d in dirs {
        if let Err(e) = std::fs::create_dir(d) {
            return Err(format!("cannot create {}: {e}", d.display()));
        }
    }
    Ok(())
}
