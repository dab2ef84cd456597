//! Which hook runs at each lifecycle location, and where it came from. An inline config entry
//! and a native `.sh` file are alternatives for one location, never two hooks: when both exist
//! the location is ambiguous and nothing runs. Only `.sh` files are looked for (`.ps1`, `.cmd`
//! and `.bat` are Windows' and ignored here).

use std::path::{Path, PathBuf};

use super::config::InlineHooks;
use super::point::{Lifecycle, Scope};
use super::snippet::Snippet;
use super::workspace::{Mode, Workspace};

/// Who owns a hook's source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnerKind {
    /// The workspace (`hooks.scripts`, `<root>/.arashi/hooks/`).
    Workspace,
    /// A repository (`repos.<name>.hooks`, `<checkout>/.arashi/hooks/`).
    Repository,
    /// The user (`~/.arashi/hooks/`).
    User,
}

impl OwnerKind {
    /// `workspace`, `repository` or `user`, as `sourceOwnerKind` says it.
    pub fn as_str(self) -> &'static str {
        match self {
            OwnerKind::Workspace => "workspace",
            OwnerKind::Repository => "repository",
            OwnerKind::User => "user",
        }
    }
}

/// Who owns a hook's source, by kind and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// The kind.
    pub kind: OwnerKind,
    /// The workspace root's directory name, the repository's name, or `None` for the user.
    pub name: Option<String>,
}

/// Where a hook's command comes from.
#[derive(Debug, Clone)]
pub enum Source {
    /// An inline config entry's Bash variant.
    Inline {
        /// Its owner.
        owner: Owner,
        /// The config key it sits at (`repos.web.hooks.post-create`).
        key: String,
        /// The text, never shown.
        snippet: Snippet,
    },
    /// A native `.sh` file, run with Bash.
    Native {
        /// Its owner.
        owner: Owner,
        /// Its absolute path.
        path: PathBuf,
    },
}

impl Source {
    /// `inline-config` or `native-file`.
    pub fn kind(&self) -> &'static str {
        match self {
            Source::Inline { .. } => "inline-config",
            Source::Native { .. } => "native-file",
        }
    }

    /// Its owner.
    pub fn owner(&self) -> &Owner {
        match self {
            Source::Inline { owner, .. } | Source::Native { owner, .. } => owner,
        }
    }

    /// The script path, for a native file.
    pub fn script_path(&self) -> Option<&Path> {
        match self {
            Source::Native { path, .. } => Some(path),
            Source::Inline { .. } => None,
        }
    }

    /// Where it comes from, for messages: the config key, or the file's path.
    pub fn describe(&self) -> String {
        match self {
            Source::Inline { owner, key, .. } => match &owner.name {
                Some(n) => format!("inline {key} (owned by {} {n})", owner.kind.as_str()),
                None => format!("inline {key}"),
            },
            Source::Native { path, .. } => path.display().to_string(),
        }
    }
}

/// A hook to run: which lifecycle location, for which target, and from where.
#[derive(Debug, Clone)]
pub struct SourcedCommand {
    /// The lifecycle point.
    pub lifecycle: Lifecycle,
    /// The scope it was found in.
    pub scope: Scope,
    /// Its logical name (`pre-create`, or `pre-create.web` for a repository-specific create).
    pub name: String,
    /// The target repository it runs for (`None`: a workspace create hook).
    pub target: Option<String>,
    /// Where its command comes from.
    pub source: Source,
}

/// A hook serializes as a preview shows it: its identity and source, never its text.
impl serde::Serialize for SourcedCommand {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        super::ledger::PreviewJson::of(self).serialize(s)
    }
}

/// A location whose hook cannot run; the plan is refused before any change.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Problem {
    /// A stable code: `inline_file_ambiguity`, `interpreter_unavailable`, `hook_invalid`,
    /// `path_exists`, `branch_checked_out`, `bad_base`, `not_a_repository`, `worktree_dirty`,
    /// `worktree_locked`.
    pub code: &'static str,
    /// What is wrong, naming the location (never a snippet's text).
    pub message: String,
}

impl Problem {
    /// Whether it is about a hook (its location, source or interpreter), which the hook
    /// listing shows, rather than a repository, path or branch.
    pub fn is_about_hooks(&self) -> bool {
        matches!(
            self.code,
            "inline_file_ambiguity" | "interpreter_unavailable" | "hook_invalid"
        )
    }
}

/// A hook location: its logical identity and the candidates that may fill it.
struct Location<'a> {
    lifecycle: Lifecycle,
    scope: Scope,
    name: String,
    target: Option<String>,
    inline: Option<(Owner, String, &'a InlineHooks)>,
    file: Option<(Owner, PathBuf)>,
}

/// A location as the inspector lists it: its hook, or each candidate of an ambiguous one.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Listed {
    /// The hook (for an ambiguous location, one of the candidates that claim it).
    #[serde(flatten)]
    pub hook: SourcedCommand,
    /// Whether another candidate claims the same location, so that neither runs.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub ambiguous: bool,
}

/// What a location holds: nothing, one hook, or a problem.
fn resolve(loc: Location<'_>, problems: &mut Vec<Problem>) -> Option<SourcedCommand> {
    resolve_listing(loc, problems, &mut Vec::new())
}

/// [`resolve`], adding both candidates of an ambiguous location to `ambiguous`.
fn resolve_listing(
    loc: Location<'_>,
    problems: &mut Vec<Problem>,
    ambiguous: &mut Vec<SourcedCommand>,
) -> Option<SourcedCommand> {
    let what = match &loc.target {
        Some(t) => format!("{} hook {} for {t}", loc.scope, loc.name),
        None => format!("{} hook {}", loc.scope, loc.name),
    };
    let inline = loc
        .inline
        .and_then(|(owner, key, hooks)| hooks.get(loc.lifecycle).map(|h| (owner, key, h)));
    let file = match loc.file {
        Some((owner, path)) => match native(&path) {
            Native::Absent => None,
            Native::File => Some((owner, path)),
            Native::Invalid(why) => {
                problems.push(Problem {
                    code: "hook_invalid",
                    message: format!("{what}: {}: {why}", path.display()),
                });
                return None;
            }
        },
        None => None,
    };
    let source = match (inline, file) {
        (None, None) => return None,
        (Some((inline_owner, key, hook)), Some((file_owner, path))) => {
            let claim = |source| SourcedCommand {
                lifecycle: loc.lifecycle,
                scope: loc.scope,
                name: loc.name.clone(),
                target: loc.target.clone(),
                source,
            };
            if let Some(snippet) = &hook.bash {
                ambiguous.push(claim(Source::Inline {
                    owner: inline_owner,
                    key: key.clone(),
                    snippet: snippet.clone(),
                }));
            }
            ambiguous.push(claim(Source::Native {
                owner: file_owner,
                path: path.clone(),
            }));
            problems.push(Problem {
                code: "inline_file_ambiguity",
                message: format!(
                    "{what}: inline/file ambiguity: both {key} and {} claim it; neither runs (remove one)",
                    path.display()
                ),
            });
            return None;
        }
        (Some((owner, key, hook)), None) => match &hook.bash {
            Some(snippet) => Source::Inline {
                owner,
                key,
                snippet: snippet.clone(),
            },
            None => {
                problems.push(Problem {
                    code: "interpreter_unavailable",
                    message: format!(
                        "{what}: {key} has no bash variant, and only bash runs here (its powershell/cmd variants are not portable to this platform)"
                    ),
                });
                return None;
            }
        },
        (None, Some((owner, path))) => Source::Native { owner, path },
    };
    Some(SourcedCommand {
        lifecycle: loc.lifecycle,
        scope: loc.scope,
        name: loc.name,
        target: loc.target,
        source,
    })
}

enum Native {
    Absent,
    File,
    Invalid(String),
}

fn native(path: &Path) -> Native {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Native::File,
        Ok(_) => Native::Invalid("not a regular file".into()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if std::fs::symlink_metadata(path).is_ok() {
                Native::Invalid("a symbolic link to nothing".into())
            } else {
                Native::Absent
            }
        }
        Err(e) => Native::Invalid(format!("cannot be read: {e}")),
    }
}

fn workspace_owner(ws: &Workspace) -> Owner {
    Owner {
        kind: OwnerKind::Workspace,
        name: ws
            .root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned()),
    }
}

fn user() -> Owner {
    Owner {
        kind: OwnerKind::User,
        name: None,
    }
}

/// The create hooks of a configured workspace: the workspace's at `lifecycle` (`repo: None`),
/// or repository `repo`'s.
pub fn configured_create(
    ws: &Workspace,
    lifecycle: Lifecycle,
    repo: Option<&str>,
    problems: &mut Vec<Problem>,
) -> Option<SourcedCommand> {
    resolve(configured_create_location(ws, lifecycle, repo)?, problems)
}

fn configured_create_location<'a>(
    ws: &'a Workspace,
    lifecycle: Lifecycle,
    repo: Option<&str>,
) -> Option<Location<'a>> {
    let Mode::Configured(config) = &ws.mode else {
        return None;
    };
    let dir = ws.workspace_hooks_dir();
    let loc = match repo {
        None => Location {
            lifecycle,
            scope: Scope::Workspace,
            name: lifecycle.as_str().into(),
            target: None,
            inline: Some((
                workspace_owner(ws),
                format!("hooks.scripts.{lifecycle}"),
                &config.scripts,
            )),
            file: Some((workspace_owner(ws), dir.join(format!("{lifecycle}.sh")))),
        },
        Some(r) => Location {
            lifecycle,
            scope: Scope::Repository,
            name: format!("{lifecycle}.{r}"),
            target: Some(r.into()),
            inline: config.repo(r).map(|c| {
                (
                    Owner {
                        kind: OwnerKind::Repository,
                        name: Some(r.into()),
                    },
                    format!("repos.{r}.hooks.{lifecycle}"),
                    &c.hooks,
                )
            }),
            file: Some((workspace_owner(ws), dir.join(format!("{lifecycle}.{r}.sh")))),
        },
    };
    Some(loc)
}

/// The remove hooks for one target repository, in the order they run: repository, workspace,
/// global-repository, global-shared (configured); global-repository, global-shared
/// (standalone).
pub fn remove_hooks(
    ws: &Workspace,
    lifecycle: Lifecycle,
    repo: &str,
    checkout: &Path,
    problems: &mut Vec<Problem>,
) -> Vec<SourcedCommand> {
    remove_locations(ws, lifecycle, repo, checkout)
        .into_iter()
        .filter_map(|l| resolve(l, problems))
        .collect()
}

fn remove_locations<'a>(
    ws: &'a Workspace,
    lifecycle: Lifecycle,
    repo: &str,
    checkout: &Path,
) -> Vec<Location<'a>> {
    let mut locs = Vec::new();
    if let Mode::Configured(config) = &ws.mode {
        let repo_owner = Owner {
            kind: OwnerKind::Repository,
            name: Some(repo.into()),
        };
        locs.push(Location {
            lifecycle,
            scope: Scope::Repository,
            name: lifecycle.as_str().into(),
            target: Some(repo.into()),
            inline: config.repo(repo).map(|c| {
                (
                    repo_owner.clone(),
                    format!("repos.{repo}.hooks.{lifecycle}"),
                    &c.hooks,
                )
            }),
            file: Some((
                repo_owner.clone(),
                checkout
                    .join(".arashi")
                    .join("hooks")
                    .join(format!("{lifecycle}.sh")),
            )),
        });
        locs.push(Location {
            lifecycle,
            scope: Scope::Workspace,
            name: lifecycle.as_str().into(),
            target: Some(repo.into()),
            inline: Some((
                workspace_owner(ws),
                format!("hooks.scripts.{lifecycle}"),
                &config.scripts,
            )),
            file: Some((
                workspace_owner(ws),
                ws.workspace_hooks_dir().join(format!("{lifecycle}.sh")),
            )),
        });
    }
    locs.extend(user_locations(ws, lifecycle, repo));
    locs
}

/// The standalone create hooks at `lifecycle`: the user's targeted, then shared.
pub fn standalone_create(
    ws: &Workspace,
    lifecycle: Lifecycle,
    problems: &mut Vec<Problem>,
) -> Vec<SourcedCommand> {
    standalone_locations(ws, lifecycle)
        .into_iter()
        .filter_map(|l| resolve(l, problems))
        .collect()
}

fn standalone_locations<'a>(ws: &Workspace, lifecycle: Lifecycle) -> Vec<Location<'a>> {
    match &ws.mode {
        Mode::Standalone { name } => user_locations(ws, lifecycle, name),
        Mode::Configured(_) => Vec::new(),
    }
}

/// Every hook location of `ws` as the inspector lists it, in the order each command runs
/// them: the create hooks (for every repository), then the remove hooks (for every
/// repository), an ambiguous location as both its candidates, marked. Problems go to
/// `problems`.
pub(crate) fn listing(ws: &Workspace, problems: &mut Vec<Problem>) -> Vec<Listed> {
    let mut locs = Vec::new();
    let repos = ws.repos();
    match &ws.mode {
        Mode::Configured(_) => {
            locs.extend(configured_create_location(ws, Lifecycle::PreCreate, None));
            for r in &repos {
                for lc in [Lifecycle::PreCreate, Lifecycle::PostCreate] {
                    locs.extend(configured_create_location(ws, lc, Some(&r.name)));
                }
            }
            locs.extend(configured_create_location(ws, Lifecycle::PostCreate, None));
        }
        Mode::Standalone { .. } => {
            for lc in [Lifecycle::PreCreate, Lifecycle::PostCreate] {
                locs.extend(standalone_locations(ws, lc));
            }
        }
    }
    for lc in [Lifecycle::PreRemove, Lifecycle::PostRemove] {
        for r in &repos {
            locs.extend(remove_locations(ws, lc, &r.name, &r.checkout));
        }
    }
    let mut listed = Vec::new();
    for loc in locs {
        let mut ambiguous = Vec::new();
        if let Some(hook) = resolve_listing(loc, problems, &mut ambiguous) {
            listed.push(Listed {
                hook,
                ambiguous: false,
            });
        }
        listed.extend(ambiguous.into_iter().map(|hook| Listed {
            hook,
            ambiguous: true,
        }));
    }
    listed
}

fn user_locations<'a>(ws: &Workspace, lifecycle: Lifecycle, repo: &str) -> Vec<Location<'a>> {
    let Some(dir) = ws.user_hooks_dir() else {
        return Vec::new();
    };
    vec![
        Location {
            lifecycle,
            scope: Scope::GlobalRepository,
            name: lifecycle.as_str().into(),
            target: Some(repo.into()),
            inline: None,
            file: Some((user(), dir.join(repo).join(format!("{lifecycle}.sh")))),
        },
        Location {
            lifecycle,
            scope: Scope::GlobalShared,
            name: lifecycle.as_str().into(),
            target: Some(repo.into()),
            inline: None,
            file: Some((user(), dir.join(format!("{lifecycle}.sh")))),
        },
    ]
}
