//! The façade a host calls: [`Worktrees::discover`] finds the workspace, then
//! [`Worktrees::create`], [`Worktrees::remove`], [`Worktrees::hooks`], [`Worktrees::forget`]
//! and [`Worktrees::init`] each return a typed result that serializes to the JSON `hookq worktree … --json` prints.
//! The workspace's lock, the rollback of a create that was killed before it finished, and the
//! wording of every failure live here; the command line only prints.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::create::{self, RunOptions};
use super::discovery::{Listed, Problem, SourcedCommand};
use super::error::{CreateFailure, Error, RemoveFailure};
use super::forget::{self, ForgetItem, ForgetStatus};
use super::init::{self, InitFile};
use super::inspect;
use super::names;
use super::journal::StateLock;
use super::ledger::Ledger;
use super::plan::{CreatePlan, CreateRequest, RemovePlan, RemoveTarget};
use super::point::ModeKind;
use super::remove::{self, Removal};
use super::session;
use super::workspace::{FindError, Mode, Workspace};
use crate::exec::Stop;

/// Something a command wants its user to know while it works, before its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Notice<'a> {
    /// A warning: a create that was killed before it finished was rolled back, or a step of
    /// that rollback failed, or the config holds a key hookq ignores.
    Warning(&'a str),
    /// Another command holds the workspace's lock: this one waits for it (told once).
    Waiting {
        /// What the holder said it is doing (`create of branch x (pid 12)`), when it said.
        holder: Option<&'a str>,
        /// The lock file.
        lock: &'a Path,
        /// How long this command waits at most.
        bound: Duration,
    },
}

/// How long a command waits at most for another one to free the workspace's lock, unless
/// [`Worktrees::lock_wait`] says otherwise.
pub const DEFAULT_LOCK_WAIT: Duration = Duration::from_secs(600);

/// How often a waiting command tries the lock again.
const LOCK_POLL: Duration = Duration::from_millis(50);

/// How long a waiting command waits for the holder to say what it does before it says it
/// waits without naming it.
const HOLDER_GRACE: Duration = Duration::from_secs(1);

type NoticeFn = dyn Fn(Notice<'_>) + Send + Sync;

/// A workspace's worktree lifecycle: configured (`.arashi/config.json`) or standalone (one git
/// repository).
pub struct Worktrees {
    ws: Workspace,
    notice: Box<NoticeFn>,
    lock_wait: Duration,
}

impl std::fmt::Debug for Worktrees {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worktrees").field("ws", &self.ws).finish()
    }
}

/// Where a command worked, as the JSON `workspace` object shows it.
#[derive(Debug, Clone, Serialize)]
pub struct Place {
    /// `configured` or `standalone`.
    pub mode: ModeKind,
    /// The workspace root (configured) or main root (standalone).
    pub root: PathBuf,
}

/// One worktree a create made, or would make.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NewWorktree {
    /// The repository.
    pub repository: String,
    /// The worktree's path.
    pub worktree_path: PathBuf,
    /// The branch checked out there.
    pub branch_name: String,
    /// Whether this create made the branch (a dry run: whether it would).
    pub branch_created: bool,
    /// The commit a new branch starts at; `None` when the branch exists.
    pub new_branch_at: Option<String>,
}

/// What a create did (or, for a dry run, would do).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Created {
    /// Where.
    pub workspace: Place,
    /// The branch.
    pub branch_name: String,
    /// Whether this was only a plan.
    pub dry_run: bool,
    /// The worktrees, in repository order.
    pub worktrees: Vec<NewWorktree>,
    /// Every evaluated hook (empty for a dry run, which discovers none).
    pub hook_outcomes: Ledger,
    /// Every warning: a dead create rolled back first, a journal that could not be removed.
    pub warnings: Vec<String>,
    /// Warnings of this create's own clean-up (its journal), also in `warnings`.
    #[serde(skip)]
    pub cleanup_warnings: Vec<String>,
}

/// How one remove target would be, or was, handled.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Target {
    /// The repository.
    pub repository: String,
    /// The worktree.
    pub worktree_path: PathBuf,
    /// The branch checked out there (`None`: detached).
    pub branch_name: Option<String>,
}

/// What a remove did (or, for a dry run, would do).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Removed {
    /// Where.
    pub workspace: Place,
    /// The branch asked for.
    pub branch_name: String,
    /// Whether this was only a preview.
    pub dry_run: bool,
    /// A dry run: the worktrees that would go.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub targets: Option<Vec<Target>>,
    /// A dry run: every hook that would run, in order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hook_preview: Option<Vec<SourcedCommand>>,
    /// Each target's removal (`None` for a dry run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub removals: Option<Vec<Removal>>,
    /// Every evaluated hook (empty for a dry run).
    pub hook_outcomes: Ledger,
    /// Warnings: a dead create rolled back first.
    pub warnings: Vec<String>,
}

/// What each lifecycle would run, without running anything: the inspector.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HookListing {
    /// Where.
    pub workspace: Place,
    /// The config file, in configured mode.
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// The Bash the hooks would run with (`None`: no hooks, or none found).
    pub bash: Option<PathBuf>,
    /// Each hook's timeout, in milliseconds.
    pub timeout_ms: u64,
    /// Create hooks (for every repository), then remove hooks (for every repository), in the
    /// order each command runs them; both candidates of an ambiguous location, marked.
    pub hooks: Vec<Listed>,
    /// What would refuse a command (empty: nothing).
    pub problems: Vec<Problem>,
    /// Warnings: a dead create rolled back first.
    pub warnings: Vec<String>,
}

impl HookListing {
    /// The failure a command would end with: `None` when nothing would be refused.
    pub fn refusal(&self) -> Option<Error> {
        (!self.problems.is_empty()).then(|| Error::Inspected(Box::new(self.clone())))
    }
}

/// What forgetting a repository removed and kept (or, for a dry run, would).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Forgotten {
    /// Where.
    pub workspace: Place,
    /// The repository forgotten.
    pub repository: String,
    /// Whether this was only a preview.
    pub dry_run: bool,
    /// Whether the config still lists the repository (hookq never edits the config).
    pub still_configured: bool,
    /// Its canonical create hook files and templates (removed, or kept and why), then what
    /// else of it stays: inline hooks in the config, hooks in its own checkout, user-global
    /// hooks.
    pub items: Vec<ForgetItem>,
    /// Warnings: a dead create rolled back first.
    pub warnings: Vec<String>,
}

/// What forgetting a repository is asked for.
#[derive(Debug, Clone, Default)]
pub struct ForgetRequest {
    /// The repository leaving the workspace (configured or not any more).
    pub repository: String,
    /// Only list what would be removed and kept: change nothing.
    pub dry_run: bool,
}

/// What `init` wrote and kept.
#[derive(Debug, Clone, Serialize)]
pub struct Initialized {
    /// The folder it worked in.
    pub root: PathBuf,
    /// Every file it looked at.
    pub files: Vec<InitFile>,
    /// Warnings: the keys an existing config holds that hookq ignores.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// What a remove is asked for.
#[derive(Debug, Clone, Default)]
pub struct RemoveRequest {
    /// The branch whose worktrees go (the branch itself stays).
    pub branch: String,
    /// The repositories, in the order given (empty: every one that has such a worktree).
    pub repos: Vec<String>,
    /// Remove a worktree with changes too (git refuses otherwise).
    pub force: bool,
    /// Preview the targets and hooks only: run and change nothing.
    pub dry_run: bool,
}

impl Worktrees {
    /// Finds the workspace from `start` upward: the nearest directory holding
    /// `.arashi/config.json`, else the git repository `start` is in. `home` is the user's home
    /// folder, for `~/.arashi/hooks` (`None`: no user-global hook is looked for).
    pub fn discover(start: &Path, home: Option<PathBuf>) -> Result<Worktrees, Error> {
        Ok(Worktrees::new(Workspace::discover(start, home)?))
    }

    /// The façade of a workspace found already.
    pub fn new(ws: Workspace) -> Worktrees {
        Worktrees {
            ws,
            notice: Box::new(|_| {}),
            lock_wait: DEFAULT_LOCK_WAIT,
        }
    }

    /// How long a create or remove waits for another one working in the same workspace to
    /// finish ([`DEFAULT_LOCK_WAIT`]; zero: not at all) before it fails with [`Error::Busy`].
    #[must_use]
    pub fn lock_wait(mut self, bound: Duration) -> Self {
        self.lock_wait = bound;
        self
    }

    /// Calls `f` with each [`Notice`] as it happens (by default they are only in the results).
    #[must_use]
    pub fn on_notice(mut self, f: impl Fn(Notice<'_>) + Send + Sync + 'static) -> Self {
        self.notice = Box::new(f);
        self
    }

    /// The workspace.
    pub fn workspace(&self) -> &Workspace {
        &self.ws
    }

    fn place(&self) -> Place {
        Place {
            mode: self.ws.kind(),
            root: self.ws.root.clone(),
        }
    }

    fn warn_all(&self, warnings: &[String]) {
        for w in warnings {
            (self.notice)(Notice::Warning(w));
        }
    }

    /// The config's warnings (keys it ignores), told as notices.
    fn config_warnings(&self) -> Vec<String> {
        let warnings = self
            .ws
            .config()
            .map(|c| c.warnings.clone())
            .unwrap_or_default();
        self.warn_all(&warnings);
        warnings
    }

    /// Takes the workspace's lock, waiting for another command that holds it (at most
    /// `lock_wait`, or until `stop` asks to stop), rolls back a dead create first, and says in
    /// the lock file what this command does.
    fn lock(&self, what: &str, stop: &Stop) -> Result<(StateLock, Vec<String>), Error> {
        let mut warnings = self.config_warnings();
        let start = Instant::now();
        let mut told = false;
        let (lock, recovered) = loop {
            match session::acquire(&self.ws, what) {
                Err(Error::Busy(path)) if start.elapsed() < self.lock_wait && !stop.graceful() => {
                    if !told {
                        // The holder says what it does just after it takes the lock: give it
                        // a moment to, so the line can name it.
                        let holder = StateLock::holder(&self.ws.state_dir);
                        if holder.is_some() || start.elapsed() >= HOLDER_GRACE {
                            told = true;
                            (self.notice)(Notice::Waiting {
                                holder: holder.as_deref(),
                                lock: &path,
                                bound: self.lock_wait,
                            });
                        }
                    }
                    std::thread::sleep(LOCK_POLL);
                }
                other => break other?,
            }
        };
        self.warn_all(&recovered);
        warnings.extend(recovered);
        Ok((lock, warnings))
    }

    /// Rolls back a dead create when no command is working (for what changes nothing).
    fn recover_if_idle(&self) -> Vec<String> {
        let mut warnings = self.config_warnings();
        let recovered = session::recover_if_idle(&self.ws);
        self.warn_all(&recovered);
        warnings.extend(recovered);
        warnings
    }

    /// Makes `req.branch`'s worktree in each selected repository, running the create hooks:
    /// fail-fast, and everything this call made undone when any step fails
    /// ([`Error::Create`]). With `req.dry_run`, only plans: discovers no hooks, changes
    /// nothing.
    pub fn create(&self, req: &CreateRequest, opts: RunOptions<'_>) -> Result<Created, Error> {
        if req.dry_run {
            let warnings = self.recover_if_idle();
            let plan = CreatePlan::build(&self.ws, req)?;
            let worktrees = new_worktrees(&plan, |_| true);
            return Ok(Created {
                workspace: self.place(),
                branch_name: plan.branch,
                dry_run: true,
                worktrees,
                hook_outcomes: Ledger::default(),
                warnings,
                cleanup_warnings: Vec::new(),
            });
        }
        let (lock, warnings) = self.lock(&format!("create of branch {}", req.branch), opts.stop)?;
        let plan = CreatePlan::build(&self.ws, req)?;
        let report = create::create(&self.ws, &plan, &lock, opts)?;
        drop(lock);
        if let Some((kind, why)) = report.failure {
            return Err(Error::Create(Box::new(CreateFailure {
                kind,
                why,
                branch: plan.branch,
                ledger: report.ledger,
                rollback: report.rollback,
            })));
        }
        let worktrees = new_worktrees(&plan, |i| report.made.contains(&i));
        let cleanup_warnings = report.rollback.warnings;
        Ok(Created {
            workspace: self.place(),
            branch_name: plan.branch,
            dry_run: false,
            worktrees,
            hook_outcomes: report.ledger,
            warnings: warnings
                .into_iter()
                .chain(cleanup_warnings.clone())
                .collect(),
            cleanup_warnings,
        })
    }

    /// Removes `req.branch`'s worktree in each selected repository that has one, running the
    /// remove hooks: the first pre-remove failure aborts it, a failed removal does not stop
    /// the others, post-remove hooks all run ([`Error::Remove`] when any of it failed). With
    /// `req.dry_run`, previews the targets and hooks: runs and changes nothing.
    pub fn remove(&self, req: &RemoveRequest, opts: RunOptions<'_>) -> Result<Removed, Error> {
        let (lock, warnings) = if req.dry_run {
            (None, self.recover_if_idle())
        } else {
            let (l, w) = self.lock(&format!("remove of branch {}", req.branch), opts.stop)?;
            (Some(l), w)
        };
        let plan = RemovePlan::build(&self.ws, &req.branch, &req.repos, req.force)?;
        if req.dry_run {
            let preview = plan
                .pre
                .iter()
                .flatten()
                .chain(plan.post.iter().flatten())
                .cloned()
                .collect();
            return Ok(Removed {
                workspace: self.place(),
                branch_name: plan.branch,
                dry_run: true,
                targets: Some(plan.targets.iter().map(target).collect()),
                hook_preview: Some(preview),
                removals: None,
                hook_outcomes: Ledger::default(),
                warnings,
            });
        }
        let report = remove::remove(&self.ws, &plan, opts);
        drop(lock);
        if let Some((kind, why)) = report.failure {
            return Err(Error::Remove(Box::new(RemoveFailure {
                kind,
                why,
                branch: plan.branch,
                ledger: report.ledger,
                removals: report.removals,
            })));
        }
        Ok(Removed {
            workspace: self.place(),
            branch_name: plan.branch,
            dry_run: false,
            targets: None,
            hook_preview: None,
            removals: Some(report.removals),
            hook_outcomes: report.ledger,
            warnings,
        })
    }

    /// Every hook each lifecycle would run, by scope and source, the Bash and the timeout,
    /// and every problem that would make a create or remove refuse before any change
    /// ([`HookListing::refusal`]): a repository that is not there, an ambiguous location, no
    /// Bash, a hook path that is not a file, an inline hook Bash cannot parse. Runs nothing.
    /// An invalid config is an error here as it is for every command.
    pub fn hooks(&self) -> Result<HookListing, Error> {
        let warnings = self.recover_if_idle();
        let found = inspect::inspect(&self.ws)?;
        Ok(HookListing {
            workspace: self.place(),
            config: self.ws.config().map(|c| c.path.clone()),
            bash: found.bash,
            timeout_ms: u64::try_from(found.timeout.as_millis()).unwrap_or(u64::MAX),
            hooks: found.hooks,
            problems: found.problems,
            warnings,
        })
    }

    /// Forgets `req.repository`, a repository leaving this configured workspace: removes its
    /// canonical repository-specific create hook files in the workspace's hooks folder
    /// (`pre-create.<repo>.sh`, `post-create.<repo>.sh` and their `.example` templates) when
    /// they are plainly its own: a symbolic link, a file another user owns, or a name another
    /// repository's could be too (letter case aside) is kept. Lists what else of the repository
    /// stays (inline hooks in the config, which hookq never edits; hooks in its checkout;
    /// user-global hooks). Shared, workspace-wide and other repositories' hooks are not
    /// touched. Running it again removes nothing more. A file that cannot be removed is
    /// [`Error::Forget`], after the rest were.
    pub fn forget(&self, req: &ForgetRequest, stop: &Stop) -> Result<Forgotten, Error> {
        if let Mode::Standalone { name } = &self.ws.mode {
            return Err(Error::Usage(format!(
                "forget needs a configured workspace (.arashi/config.json); here the one \
                 repository is {name}, whose hooks are user-global (~/.arashi/hooks/{name}/) \
                 and stay"
            )));
        }
        if let Some(why) = names::repo_name_problem(&req.repository) {
            return Err(Error::Usage(format!(
                "invalid repository name {:?}: it {why}",
                req.repository
            )));
        }
        let (lock, warnings) = if req.dry_run {
            (None, self.recover_if_idle())
        } else {
            let (l, w) = self.lock(&format!("forget of repository {}", req.repository), stop)?;
            (Some(l), w)
        };
        let euid = rustix::process::geteuid().as_raw();
        let items = forget::forget(&self.ws, &req.repository, req.dry_run, euid);
        drop(lock);
        let done = Forgotten {
            workspace: self.place(),
            repository: req.repository.clone(),
            dry_run: req.dry_run,
            still_configured: self
                .ws
                .config()
                .is_some_and(|c| c.repo(&req.repository).is_some()),
            items,
            warnings,
        };
        if done.items.iter().any(|i| i.status == ForgetStatus::Failed) {
            return Err(Error::Forget(Box::new(done)));
        }
        Ok(done)
    }

    /// Writes what is missing in the workspace found from `start`: in a configured workspace,
    /// the inert example hooks for its repositories; elsewhere `.arashi/config.json` in
    /// `start`, listing the git repositories found in it and in its `repos/` folder, and the
    /// examples. Never overwrites a file.
    pub fn init(start: &Path, home: Option<PathBuf>) -> Result<Initialized, Error> {
        let canonical = || {
            start.canonicalize().map_err(|source| Error::Io {
                what: "cannot access",
                path: start.to_path_buf(),
                source,
            })
        };
        let mut warnings = Vec::new();
        let (root, configured) = match Workspace::discover(start, home) {
            Ok(ws) if ws.config().is_some() => {
                warnings = ws.config().map(|c| c.warnings.clone()).unwrap_or_default();
                let names: Vec<String> = ws.repos().into_iter().map(|r| r.name).collect();
                (ws.root, Some(names))
            }
            Ok(ws) => {
                let root = canonical()?;
                // Inside a repository that works without a config, a config listing no
                // repository would switch it to configured mode, where every command then
                // fails: refuse, unless the folder holds repositories of its own (a workspace
                // that is itself under git).
                if let Mode::Standalone { name } = &ws.mode
                    && init::find_repos(&root).is_empty()
                {
                    return Err(Error::InitInRepository {
                        start: root,
                        repository: ws.root,
                        name: name.clone(),
                    });
                }
                (root, None)
            }
            Err(FindError::Missing { .. }) => (canonical()?, None),
            Err(e) => return Err(e.into()),
        };
        // A config listing no repository would leave every command failing.
        if configured.is_none() && init::find_repos(&root).is_empty() {
            return Err(Error::NoRepositories { root });
        }
        let files = init::init(&root, configured.as_deref()).map_err(|e| Error::Io {
            what: "cannot write",
            path: e.path,
            source: e.source,
        })?;
        Ok(Initialized {
            root,
            files,
            warnings,
        })
    }
}

fn new_worktrees(plan: &CreatePlan, made: impl Fn(usize) -> bool) -> Vec<NewWorktree> {
    plan.targets
        .iter()
        .enumerate()
        .map(|(i, t)| NewWorktree {
            repository: t.repo.clone(),
            worktree_path: t.worktree.clone(),
            branch_name: plan.branch.clone(),
            branch_created: t.new_at.is_some() && made(i),
            new_branch_at: t.new_at.clone(),
        })
        .collect()
}

fn target(t: &RemoveTarget) -> Target {
    Target {
        repository: t.repo.clone(),
        worktree_path: t.worktree.clone(),
        branch_name: t.branch.clone(),
    }
}
