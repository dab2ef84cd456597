//! Forgetting a repository that leaves a workspace: only its canonical repository-specific
//! create hook files in the workspace's hooks folder (`pre-create.<repo>.sh`,
//! `post-create.<repo>.sh`) and their `.example` templates are removed, and only when they are
//! plainly the workspace's and that repository's. Everything else about the repository is
//! listed as kept: an inline hook in the config (hookq never edits the user's config), its
//! user-global hooks, the hooks in its own checkout. Shared and workspace-wide hooks and other
//! repositories' hooks are not its own and are neither listed nor touched. A file's content is
//! never read, and an inline hook is named by its key, never by its text.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::point::Lifecycle;
use super::workspace::{Mode, Workspace};

/// What one thing of the repository's is, as [`ForgetItem::kind`] says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ForgetKind {
    /// A repository-specific create hook file in the workspace's hooks folder.
    WorkspaceFile,
    /// Its inert `.example` template.
    WorkspaceExample,
    /// An inline hook at `repos.<repo>.hooks.<lifecycle>` in the config.
    InlineConfig,
    /// A user-global hook in `~/.arashi/hooks/<repo>/`.
    UserGlobalFile,
    /// A remove hook in the repository's own checkout.
    RepositoryFile,
}

/// What became of one thing of the repository's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ForgetStatus {
    /// It was removed.
    Removed,
    /// A dry run: it would be removed.
    WouldRemove,
    /// It stays; the reason says why.
    Kept,
    /// Removing it failed; the reason says why. It stays.
    Failed,
}

impl ForgetStatus {
    /// `removed`, `would-remove`, `kept` or `failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            ForgetStatus::Removed => "removed",
            ForgetStatus::WouldRemove => "would-remove",
            ForgetStatus::Kept => "kept",
            ForgetStatus::Failed => "failed",
        }
    }
}

/// One thing of the repository's: its logical name, where it is, and what became of it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ForgetItem {
    /// The logical hook name: `pre-create.web` for a create file or its template, the
    /// lifecycle for the rest.
    pub hook_name: String,
    /// What it is.
    pub kind: ForgetKind,
    /// The file (`None` for an inline hook).
    pub path: Option<PathBuf>,
    /// The config key of an inline hook: `repos.web.hooks.pre-create`.
    pub config_key: Option<String>,
    /// What became of it.
    pub status: ForgetStatus,
    /// Why it stays or why removing it failed (`None` when removed).
    pub reason: Option<String>,
}

/// The canonical names of `repo`'s repository-specific create files: the hook and its
/// template, for each create lifecycle.
fn canonical(repo: &str) -> Vec<(String, String, ForgetKind)> {
    let mut out = Vec::new();
    for lc in [Lifecycle::PreCreate, Lifecycle::PostCreate] {
        let name = format!("{lc}.{repo}");
        out.push((name.clone(), format!("{name}.sh"), ForgetKind::WorkspaceFile));
        out.push((
            name.clone(),
            format!("{name}.sh.example"),
            ForgetKind::WorkspaceExample,
        ));
    }
    out
}

/// Works out, and unless `dry_run` carries out, the forgetting of `repo` in the configured
/// workspace `ws`. `euid` is the invoking user: a file another user owns is kept.
pub(crate) fn forget(ws: &Workspace, repo: &str, dry_run: bool, euid: u32) -> Vec<ForgetItem> {
    let mut items = Vec::new();
    let Mode::Configured(config) = &ws.mode else {
        return items;
    };
    let dir = ws.workspace_hooks_dir();
    // The other repository names a file in the folder could belong to: every configured one.
    let others: Vec<&str> = config
        .repos
        .iter()
        .map(|r| r.name.as_str())
        .filter(|n| *n != repo)
        .collect();
    let entries: Vec<String> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    for (hook_name, file, kind) in canonical(repo) {
        // Every entry that is this candidate, letter case aside: on a case-insensitive file
        // system it is the file hookq would run.
        let mut found: Vec<&String> = entries
            .iter()
            .filter(|e| e.eq_ignore_ascii_case(&file))
            .collect();
        found.sort();
        for entry in found {
            let path = dir.join(entry);
            let mut claimants: Vec<&str> = others
                .iter()
                .copied()
                .filter(|o| {
                    canonical(o)
                        .iter()
                        .any(|(_, f, _)| f.eq_ignore_ascii_case(entry))
                })
                .collect();
            claimants.sort_unstable();
            let kept = if !claimants.is_empty() {
                Some(format!(
                    "the name is also repository {}'s, letter case aside (one file on a \
                     case-insensitive file system): ownership is ambiguous",
                    claimants.join(", ")
                ))
            } else if *entry != file {
                Some(format!(
                    "not the canonical name {file} (its letter case differs): ownership is \
                     ambiguous"
                ))
            } else {
                refusal(&path, euid)
            };
            let (status, reason) = match kept {
                Some(why) => (ForgetStatus::Kept, Some(why)),
                None if dry_run => (ForgetStatus::WouldRemove, None),
                None => match std::fs::remove_file(&path) {
                    Ok(()) => (ForgetStatus::Removed, None),
                    // Gone meanwhile: what was asked for is done.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        (ForgetStatus::Removed, None)
                    }
                    Err(e) => (
                        ForgetStatus::Failed,
                        Some(format!("cannot remove {}: {e}", path.display())),
                    ),
                },
            };
            items.push(ForgetItem {
                hook_name: hook_name.clone(),
                kind,
                path: Some(path),
                config_key: None,
                status,
                reason,
            });
        }
    }
    if let Some(r) = config.repo(repo) {
        for lc in Lifecycle::ALL {
            if r.hooks.get(lc).is_some() {
                items.push(ForgetItem {
                    hook_name: lc.to_string(),
                    kind: ForgetKind::InlineConfig,
                    path: None,
                    config_key: Some(format!("repos.{repo}.hooks.{lc}")),
                    status: ForgetStatus::Kept,
                    reason: Some(format!(
                        "an inline hook in {}: remove it from the config by hand; hookq never \
                         edits the config",
                        config.path.display()
                    )),
                });
            }
        }
        let local = r.checkout.join(".arashi").join("hooks");
        for lc in [Lifecycle::PreRemove, Lifecycle::PostRemove] {
            kept_file(
                &mut items,
                local.join(format!("{lc}.sh")),
                lc,
                ForgetKind::RepositoryFile,
                "in the repository's own checkout: it goes with the repository",
            );
        }
    }
    if let Some(user) = ws.user_hooks_dir() {
        for lc in Lifecycle::ALL {
            kept_file(
                &mut items,
                user.join(repo).join(format!("{lc}.sh")),
                lc,
                ForgetKind::UserGlobalFile,
                "a user-global hook: yours, not the workspace's",
            );
        }
    }
    items
}

/// Why the canonical file at `path` stays, or `None` when it is plainly the invoking user's
/// own regular file.
fn refusal(path: &Path, euid: u32) -> Option<String> {
    let meta = match path.symlink_metadata() {
        Ok(m) => m,
        Err(e) => return Some(format!("cannot inspect it: {e}")),
    };
    if meta.file_type().is_symlink() {
        return Some("a symbolic link: what it points to may not be this workspace's".into());
    }
    if !meta.is_file() {
        return Some("not a regular file".into());
    }
    if meta.uid() != euid {
        return Some(format!(
            "owned by user {} (you are {euid}): not yours to remove",
            meta.uid()
        ));
    }
    None
}

fn kept_file(
    items: &mut Vec<ForgetItem>,
    path: PathBuf,
    lc: Lifecycle,
    kind: ForgetKind,
    why: &str,
) {
    if path.symlink_metadata().is_ok() {
        items.push(ForgetItem {
            hook_name: lc.to_string(),
            kind,
            path: Some(path),
            config_key: None,
            status: ForgetStatus::Kept,
            reason: Some(why.into()),
        });
    }
}
