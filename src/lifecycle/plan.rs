//! Plan, then act: a create or remove is first worked out in full (which repositories, which
//! worktree paths, which branches are new and from where, which hooks run in which order with
//! which interpreter) and refused before any change when any part of it cannot be done.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::config::{ConfigError, DEFAULT_TIMEOUT_MS};
use super::discovery::{self, Problem, Source, SourcedCommand};
use super::error::Error;
use super::git;
use super::interpreter::{self, SyntaxCheck};
use super::names;
use super::point::Lifecycle;
use super::workspace::{FindError, Mode, RepoRef, Workspace};

/// What a create was asked for.
#[derive(Debug, Clone, Default)]
pub struct CreateRequest {
    /// The branch.
    pub branch: String,
    /// `--repo`: the repositories, in the order given (empty: all, in config order).
    pub repos: Vec<String>,
    /// `--base`: where new branches start (default: each repository's HEAD).
    pub base: Option<String>,
    /// `--no-hooks`.
    pub no_hooks: bool,
    /// `--dry-run`: no hook discovery, no change.
    pub dry_run: bool,
}

/// One repository's part of a create.
#[derive(Debug, Clone)]
pub struct CreateTarget {
    /// The repository's name.
    pub repo: String,
    /// Its source checkout (canonical).
    pub checkout: PathBuf,
    /// The new worktree's path.
    pub worktree: PathBuf,
    /// `Some(commit)`: the branch is new, made at this commit; `None`: it exists.
    pub new_at: Option<String>,
    /// The directories to make before `git worktree add`, outermost first.
    pub make_dirs: Vec<PathBuf>,
}

/// One step of a create, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateStep {
    /// Run `hooks[i]`.
    Hook(usize),
    /// `git worktree add` for `targets[i]`.
    Add(usize),
}

/// A create, worked out and checked.
#[derive(Debug, Clone)]
pub struct CreatePlan {
    /// The branch.
    pub branch: String,
    /// The repositories, in order.
    pub targets: Vec<CreateTarget>,
    /// The hooks, indexed by [`CreateStep::Hook`].
    pub hooks: Vec<SourcedCommand>,
    /// The steps, in order.
    pub steps: Vec<CreateStep>,
    /// The Bash that runs the hooks (`None` when there are none).
    pub bash: Option<PathBuf>,
    /// Each hook's timeout.
    pub timeout: Duration,
}

/// The repositories a command acts on: the named ones (each must exist), else all.
pub(crate) fn select(ws: &Workspace, names: &[String]) -> Result<Vec<RepoRef>, Error> {
    let all = ws.repos();
    if names.is_empty() {
        if all.is_empty() {
            return Err(Error::Usage(format!(
                "no repositories are configured in {}",
                ws.config()
                    .map_or_else(String::new, |c| c.path.display().to_string())
            )));
        }
        return Ok(all);
    }
    if let Mode::Standalone { name } = &ws.mode {
        return Err(Error::Usage(format!(
            "--repo needs a configured workspace (.arashi/config.json); here the one repository is {name}"
        )));
    }
    let mut picked: Vec<RepoRef> = Vec::new();
    for n in names {
        let Some(r) = all.iter().find(|r| &r.name == n) else {
            return Err(Error::Usage(format!(
                "unknown repository {n}: the config lists {}",
                all.iter()
                    .map(|r| r.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        };
        if !picked.iter().any(|p| p.name == r.name) {
            picked.push(r.clone());
        }
    }
    Ok(picked)
}

fn check_branch(ws: &Workspace, branch: &str) -> Result<(), Error> {
    if let Some(why) = names::branch_name_problem(branch) {
        return Err(Error::Usage(format!(
            "invalid branch name {branch:?}: it {why}"
        )));
    }
    if !git::branch_name_ok(&ws.root, branch)? {
        return Err(Error::Usage(format!(
            "invalid branch name {branch:?}: git refuses it (`git check-ref-format --branch`)"
        )));
    }
    Ok(())
}

/// Each hook's timeout.
pub fn timeout(ws: &Workspace) -> Duration {
    ws.config()
        .map_or(Duration::from_millis(DEFAULT_TIMEOUT_MS), |c| c.timeout)
}

/// The Bash for `hooks`, or a problem.
pub fn bash_for(ws: &Workspace, any_hooks: bool, problems: &mut Vec<Problem>) -> Option<PathBuf> {
    if !any_hooks {
        return None;
    }
    let configured = ws.config().and_then(|c| c.bash.as_deref());
    match interpreter::find_bash(configured, std::env::var_os("PATH").as_deref()) {
        Ok(b) => Some(b),
        Err(e) => {
            problems.push(Problem {
                code: "interpreter_unavailable",
                message: e.message(),
            });
            None
        }
    }
}

/// Where a repository's checkout is configured, for messages: ` (repos.web.path in
/// /ws/.arashi/config.json)`; nothing in standalone mode, where it is the start's own
/// repository.
fn configured_at(ws: &Workspace, repo: &RepoRef) -> String {
    ws.config().map_or_else(String::new, |c| {
        format!(" (repos.{}.path in {})", repo.name, c.path.display())
    })
}

/// Refuses a config whose repositories name one checkout twice: each would get a worktree of
/// the same branch from the same repository, which git cannot make.
pub(crate) fn check_distinct(ws: &Workspace) -> Result<(), Error> {
    let Some(config) = ws.config() else {
        return Ok(());
    };
    let mut seen: Vec<(&str, PathBuf)> = Vec::new();
    for r in &config.repos {
        let Ok(canonical) = r.checkout.canonicalize() else {
            continue;
        };
        if let Some((first, _)) = seen.iter().find(|(_, p)| *p == canonical) {
            return Err(Error::Find(FindError::Config(ConfigError::Invalid {
                path: config.path.clone(),
                key: format!("repos.{}.path", r.name),
                why: format!(
                    "{} is the checkout repos.{first}.path names already",
                    canonical.display()
                ),
            })));
        }
        seen.push((&r.name, canonical));
    }
    Ok(())
}

/// Adds a `hook_invalid` problem for each inline hook among `hooks` that `bash` cannot parse
/// (each config key once: a workspace remove hook is evaluated once per target).
pub(crate) fn check_snippets<'a>(
    bash: Option<&Path>,
    hooks: impl IntoIterator<Item = &'a SourcedCommand>,
    problems: &mut Vec<Problem>,
) {
    let checks = start_snippet_checks(bash, hooks);
    finish_snippet_checks(checks, problems);
}

/// The syntax checks of the inline hooks among `hooks`, started side by side.
fn start_snippet_checks<'a>(
    bash: Option<&Path>,
    hooks: impl IntoIterator<Item = &'a SourcedCommand>,
) -> Vec<(String, SyntaxCheck)> {
    let Some(bash) = bash else {
        return Vec::new();
    };
    let mut checks: Vec<(String, SyntaxCheck)> = Vec::new();
    let mut keys: Vec<&str> = Vec::new();
    for h in hooks {
        let Source::Inline { key, snippet, .. } = &h.source else {
            continue;
        };
        if keys.contains(&key.as_str()) {
            continue;
        }
        keys.push(key);
        if let Some(c) = SyntaxCheck::start(bash, snippet) {
            checks.push((h.source.describe(), c));
        }
    }
    checks
}

fn finish_snippet_checks(checks: Vec<(String, SyntaxCheck)>, problems: &mut Vec<Problem>) {
    for (what, check) in checks {
        if let Some(why) = check.problem() {
            problems.push(Problem {
                code: "hook_invalid",
                message: format!("{what}: {why}"),
            });
        }
    }
}

/// The checkout of `repo`, canonical, if it is the top of a git work tree.
pub(crate) fn checkout_of(
    ws: &Workspace,
    repo: &RepoRef,
    problems: &mut Vec<Problem>,
) -> Result<Option<PathBuf>, Error> {
    let Ok(canonical) = repo.checkout.canonicalize() else {
        problems.push(Problem {
            code: "not_a_repository",
            message: format!(
                "repository {}: {} does not exist{}",
                repo.name,
                repo.checkout.display(),
                configured_at(ws, repo)
            ),
        });
        return Ok(None);
    };
    match git::repo_dirs(&canonical)? {
        Some(d) if d.toplevel.canonicalize().ok().as_deref() == Some(canonical.as_path()) => {
            Ok(Some(canonical))
        }
        _ => {
            problems.push(Problem {
                code: "not_a_repository",
                message: format!(
                    "repository {}: {} is not the top of a git work tree{}",
                    repo.name,
                    canonical.display(),
                    configured_at(ws, repo)
                ),
            });
            Ok(None)
        }
    }
}

impl CreatePlan {
    /// Works out `req` in `ws`, refusing it before any change when any part cannot be done.
    pub fn build(ws: &Workspace, req: &CreateRequest) -> Result<CreatePlan, Error> {
        check_branch(ws, &req.branch)?;
        check_distinct(ws)?;
        let repos = select(ws, &req.repos)?;
        // The hooks and steps are worked out for every selected repository: one that cannot
        // have a worktree is a problem below, and then the plan is refused anyway.
        let mut hook_problems = Vec::new();
        let mut hooks = Vec::new();
        let mut steps = Vec::new();
        let discover = !req.no_hooks && !req.dry_run;
        let mut add_hook = |h: SourcedCommand, steps: &mut Vec<CreateStep>| {
            steps.push(CreateStep::Hook(hooks.len()));
            hooks.push(h);
        };
        let p = &mut hook_problems;
        match &ws.mode {
            Mode::Configured(_) => {
                if discover
                    && let Some(h) = discovery::configured_create(ws, Lifecycle::PreCreate, None, p)
                {
                    add_hook(h, &mut steps);
                }
                for (i, r) in repos.iter().enumerate() {
                    steps.push(CreateStep::Add(i));
                    for lc in [Lifecycle::PreCreate, Lifecycle::PostCreate] {
                        if discover
                            && let Some(h) = discovery::configured_create(ws, lc, Some(&r.name), p)
                        {
                            add_hook(h, &mut steps);
                        }
                    }
                }
                if discover
                    && let Some(h) =
                        discovery::configured_create(ws, Lifecycle::PostCreate, None, p)
                {
                    add_hook(h, &mut steps);
                }
            }
            Mode::Standalone { .. } => {
                if discover {
                    for h in discovery::standalone_create(ws, Lifecycle::PreCreate, p) {
                        add_hook(h, &mut steps);
                    }
                }
                steps.extend((0..repos.len()).map(CreateStep::Add));
                if discover {
                    for h in discovery::standalone_create(ws, Lifecycle::PostCreate, p) {
                        add_hook(h, &mut steps);
                    }
                }
            }
        }
        let bash = bash_for(ws, !hooks.is_empty(), &mut hook_problems);
        // The inline hooks' syntax checks run while the repositories are looked at.
        let checks = start_snippet_checks(bash.as_deref(), &hooks);
        // The repositories are looked at side by side: each costs a few git processes.
        let looked: Vec<Result<Looked, Error>> = std::thread::scope(|s| {
            let handles: Vec<_> = repos
                .iter()
                .map(|r| s.spawn(|| look_at(ws, r, req)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(Error::Usage("a planning thread panicked".into())))
                })
                .collect()
        });
        finish_snippet_checks(checks, &mut hook_problems);
        let mut problems = Vec::new();
        let mut targets: Vec<CreateTarget> = Vec::new();
        for l in looked {
            let (t, p) = l?;
            if let Some(mut t) = t {
                // A folder two repositories share (`worktrees/`) is made, and owned, once.
                t.make_dirs
                    .retain(|d| !targets.iter().any(|o| o.make_dirs.contains(d)));
                targets.push(t);
            }
            problems.extend(p);
        }
        problems.extend(hook_problems);
        // A repository without a target always brought a problem; the steps name targets by
        // the repositories' indices.
        if !problems.is_empty() || targets.len() != repos.len() {
            return Err(Error::Refused(problems));
        }
        Ok(CreatePlan {
            branch: req.branch.clone(),
            targets,
            hooks,
            steps,
            bash,
            timeout: timeout(ws),
        })
    }
}

/// One repository looked at: its part of the create, if it can have one, and its problems.
type Looked = (Option<CreateTarget>, Vec<Problem>);

fn look_at(ws: &Workspace, repo: &RepoRef, req: &CreateRequest) -> Result<Looked, Error> {
    let mut problems = Vec::new();
    let Some(checkout) = checkout_of(ws, repo, &mut problems)? else {
        return Ok((None, problems));
    };
    let worktree = names::normalize(&ws.worktree_path(&repo.name, &req.branch));
    if worktree.symlink_metadata().is_ok() {
        problems.push(Problem {
            code: "path_exists",
            message: format!(
                "repository {}: {} exists already; hookq never touches an existing path",
                repo.name,
                worktree.display()
            ),
        });
    }
    let new_at = if git::branch_exists(&checkout, &req.branch)? {
        if let Some(w) = git::worktrees(&checkout)?
            .into_iter()
            .find(|w| w.branch.as_deref() == Some(req.branch.as_str()))
        {
            problems.push(Problem {
                code: "branch_checked_out",
                message: format!(
                    "repository {}: branch {} is checked out at {} already",
                    repo.name,
                    req.branch,
                    w.path.display()
                ),
            });
        }
        None
    } else {
        let base = req.base.as_deref().unwrap_or("HEAD");
        match git::resolve_commit(&checkout, base)? {
            Some(sha) => Some(sha),
            None => {
                problems.push(Problem {
                    code: "bad_base",
                    message: format!(
                        "repository {}: {base} names no commit to start branch {} from",
                        repo.name, req.branch
                    ),
                });
                None
            }
        }
    };
    let mut make_dirs = Vec::new();
    let mut dir = worktree.parent();
    while let Some(d) = dir {
        if d.symlink_metadata().is_ok() {
            break;
        }
        make_dirs.push(d.to_path_buf());
        dir = d.parent();
    }
    make_dirs.reverse();
    Ok((
        Some(CreateTarget {
            repo: repo.name.clone(),
            checkout,
            worktree,
            new_at,
            make_dirs,
        }),
        problems,
    ))
}

/// One repository's part of a remove.
#[derive(Debug, Clone)]
pub struct RemoveTarget {
    /// The repository's name.
    pub repo: String,
    /// Its source checkout (canonical).
    pub checkout: PathBuf,
    /// The worktree to remove.
    pub worktree: PathBuf,
    /// The branch checked out there (`None`: detached).
    pub branch: Option<String>,
}

/// A remove, worked out and checked.
#[derive(Debug, Clone)]
pub struct RemovePlan {
    /// The branch asked for.
    pub branch: String,
    /// The worktrees, in repository order.
    pub targets: Vec<RemoveTarget>,
    /// Per target, its pre-remove hooks in scope order.
    pub pre: Vec<Vec<SourcedCommand>>,
    /// Per target, its post-remove hooks in scope order.
    pub post: Vec<Vec<SourcedCommand>>,
    /// The Bash (`None` when there are no hooks).
    pub bash: Option<PathBuf>,
    /// Each hook's timeout.
    pub timeout: Duration,
    /// `--force`.
    pub force: bool,
}

impl RemovePlan {
    /// Works out the removal of `branch`'s worktree in `repos` (empty: all).
    pub fn build(
        ws: &Workspace,
        branch: &str,
        repos: &[String],
        force: bool,
    ) -> Result<RemovePlan, Error> {
        check_branch(ws, branch)?;
        check_distinct(ws)?;
        let selected = select(ws, repos)?;
        let mut problems = Vec::new();
        let mut targets = Vec::new();
        for r in &selected {
            let Some(checkout) = checkout_of(ws, r, &mut problems)? else {
                continue;
            };
            let layout = names::normalize(&ws.worktree_path(&r.name, branch));
            let list = git::worktrees(&checkout)?;
            // The worktree that has the branch checked out, else the one at hookq's own
            // layout path (its branch switched or detached since); never the main worktree.
            let found = list
                .iter()
                .skip(1)
                .find(|w| w.branch.as_deref() == Some(branch))
                .or_else(|| list.iter().skip(1).find(|w| same(&w.path, &layout)));
            match found {
                Some(w) => {
                    refusal(&r.name, w, force, &mut problems)?;
                    targets.push(RemoveTarget {
                        repo: r.name.clone(),
                        checkout,
                        worktree: w.path.clone(),
                        branch: w.branch.clone(),
                    });
                }
                None if !repos.is_empty() => {
                    return Err(Error::NotFound(format!(
                        "repository {} has no worktree of branch {branch}",
                        r.name
                    )));
                }
                None => {}
            }
        }
        if targets.is_empty() && problems.is_empty() {
            return Err(Error::NotFound(format!(
                "no worktree of branch {branch} in {}",
                selected
                    .iter()
                    .map(|r| r.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let mut pre = Vec::new();
        let mut post = Vec::new();
        for t in &targets {
            pre.push(discovery::remove_hooks(
                ws,
                Lifecycle::PreRemove,
                &t.repo,
                &t.checkout,
                &mut problems,
            ));
            post.push(discovery::remove_hooks(
                ws,
                Lifecycle::PostRemove,
                &t.repo,
                &t.checkout,
                &mut problems,
            ));
        }
        let any = pre.iter().chain(&post).any(|h| !h.is_empty());
        let bash = bash_for(ws, any, &mut problems);
        check_snippets(
            bash.as_deref(),
            pre.iter().flatten().chain(post.iter().flatten()),
            &mut problems,
        );
        if !problems.is_empty() {
            return Err(Error::Refused(problems));
        }
        Ok(RemovePlan {
            branch: branch.into(),
            targets,
            pre,
            post,
            bash,
            timeout: timeout(ws),
            force,
        })
    }
}

/// What `git worktree remove` would refuse the worktree `w` of repository `repo` for, found
/// before any hook runs: a locked worktree always (hookq never unlocks one), modified or
/// untracked files unless `force`. A worktree whose folder is gone has nothing to refuse.
fn refusal(
    repo: &str,
    w: &git::WorktreeEntry,
    force: bool,
    problems: &mut Vec<Problem>,
) -> Result<(), Error> {
    if w.locked {
        problems.push(Problem {
            code: "worktree_locked",
            message: format!(
                "repository {repo}: worktree {} is locked; `git worktree unlock {}` first",
                w.path.display(),
                w.path.display()
            ),
        });
    }
    if force || !w.path.is_dir() {
        return Ok(());
    }
    let changes = git::changes(&w.path)?;
    if changes.is_clean() {
        return Ok(());
    }
    let mut what = Vec::new();
    for (kind, paths) in [
        ("modified", &changes.modified),
        ("untracked", &changes.untracked),
    ] {
        if !paths.is_empty() {
            what.push(format!("{kind}: {}", some_of(paths)));
        }
    }
    problems.push(Problem {
        code: "worktree_dirty",
        message: format!(
            "repository {repo}: worktree {} has modified or untracked files ({}); commit, \
             stash or delete them, or pass --force to remove it with them",
            w.path.display(),
            what.join("; ")
        ),
    });
    Ok(())
}

/// The first few of `paths`, and how many more there are.
fn some_of(paths: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut s = paths
        .iter()
        .take(SHOWN)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if paths.len() > SHOWN {
        s += &format!(" and {} more", paths.len() - SHOWN);
    }
    s
}

fn same(a: &Path, b: &Path) -> bool {
    a == b || a.canonicalize().is_ok_and(|c| c == b)
}
