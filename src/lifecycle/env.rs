//! The environment a lifecycle hook gets: hookq's own, minus git's repository overrides and any
//! inherited `ARASHI_*`, plus the executor-owned `ARASHI_*` fields for this hook. Inherited or
//! operation data never overrides those fields: they are added last, each once, after every
//! inherited `ARASHI_*` was dropped.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::input::InputPolicy;
use super::names::normalize;
use super::point::{ModeKind, Scope};
use crate::exec::Environ;

/// One remove target as `ARASHI_REMOVE_TARGETS_JSON` lists it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RemoveTarget {
    /// The repository.
    pub repository: String,
    /// The branch checked out in the worktree, if one.
    pub branch_name: Option<String>,
    /// The worktree, absolute, normalized, `/`-separated.
    pub worktree_path: Option<String>,
}

/// `ARASHI_REMOVE_TARGETS_JSON`: the targets with their paths normalized, exact duplicates
/// removed, sorted by repository, branch and path.
pub fn remove_targets_json(targets: &[RemoveTarget]) -> String {
    let mut list: Vec<RemoveTarget> = targets
        .iter()
        .map(|t| RemoveTarget {
            worktree_path: t
                .worktree_path
                .as_ref()
                .map(|p| normalize(Path::new(p)).to_string_lossy().replace('\\', "/")),
            ..t.clone()
        })
        .collect();
    list.sort();
    list.dedup();
    serde_json::to_string(&list).unwrap_or_else(|_| "[]".into())
}

/// The facts one hook run is given.
#[derive(Debug, Clone)]
pub struct HookFacts<'a> {
    /// `ARASHI_HOOK_NAME`.
    pub name: &'a str,
    /// `ARASHI_HOOK_SCOPE`.
    pub scope: Scope,
    /// `ARASHI_HOOK_SOURCE_PATH`, native files only.
    pub source_path: Option<&'a Path>,
    /// `ARASHI_HOOK_EXECUTION_PATH`: the hook's working directory.
    pub execution_path: &'a Path,
    /// `ARASHI_HOOK_WORKSPACE_MODE`.
    pub mode: ModeKind,
    /// `ARASHI_MAIN_REPO_PATH`.
    pub main_repo: &'a Path,
    /// `ARASHI_BRANCH_NAME`, when one is known.
    pub branch: Option<&'a str>,
    /// `ARASHI_HOOK_TARGET_REPOSITORY`.
    pub target_repository: Option<&'a str>,
    /// `ARASHI_HOOK_TARGET_REPO_PATH`.
    pub target_repo_path: Option<&'a Path>,
    /// `ARASHI_HOOK_TARGET_WORKTREE_PATH`.
    pub target_worktree: Option<&'a Path>,
    /// `ARASHI_PARENT_REPO_PATH`, repository-specific create only.
    pub parent_repo: Option<&'a Path>,
    /// `ARASHI_HOOK_INPUT`.
    pub input: InputPolicy,
    /// `ARASHI_REMOVE_TARGETS_JSON`, remove hooks only.
    pub remove_targets: Option<&'a str>,
}

/// The inherited part of every hook's environment: `vars` (hookq's own) without git's
/// repository overrides and without any `ARASHI_*`.
pub fn base(vars: impl IntoIterator<Item = (OsString, OsString)>) -> Environ {
    crate::exec::env::inherited(vars, "ARASHI_")
}

/// What every process a hook starts carries in its environment, unless it clears it: how the
/// rollback of a killed create knows a group whose leader exited as one of its hooks.
pub const HOOK_MARK: &[u8] = b"ARASHI_HOOK_NAME=";

/// The whole environment of one hook.
pub fn build(base: &Environ, f: &HookFacts<'_>) -> Environ {
    let mut env = base.clone();
    let path = |p: &Path| -> PathBuf { p.to_path_buf() };
    env.push("ARASHI_HOOK_NAME", f.name);
    env.push("ARASHI_HOOK_SCOPE", f.scope.as_str());
    if let Some(p) = f.source_path {
        env.push("ARASHI_HOOK_SOURCE_PATH", path(p));
    }
    env.push("ARASHI_HOOK_EXECUTION_PATH", path(f.execution_path));
    env.push("ARASHI_HOOK_WORKSPACE_MODE", f.mode.as_str());
    env.push("ARASHI_MAIN_REPO_PATH", path(f.main_repo));
    if let Some(b) = f.branch {
        env.push("ARASHI_BRANCH_NAME", b);
    }
    if let Some(r) = f.target_repository {
        env.push("ARASHI_HOOK_TARGET_REPOSITORY", r);
    }
    if let Some(p) = f.target_repo_path {
        env.push("ARASHI_HOOK_TARGET_REPO_PATH", path(p));
    }
    if let Some(p) = f.target_worktree {
        env.push("ARASHI_HOOK_TARGET_WORKTREE_PATH", path(p));
    }
    if let Some(p) = f.parent_repo {
        env.push("ARASHI_PARENT_REPO_PATH", path(p));
    }
    env.push("ARASHI_HOOK_INPUT", f.input.as_str());
    if let Some(j) = f.remove_targets {
        env.push("ARASHI_REMOVE_TARGETS_JSON", j);
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inherited_arashi_and_git_overrides_never_reach_a_hook() {
        let b = base([
            ("PATH".into(), "/bin".into()),
            ("ARASHI_HOOK_SCOPE".into(), "forged".into()),
            ("ARASHI_HOOK_SOURCE_PATH".into(), "/forged".into()),
            ("GIT_DIR".into(), "/elsewhere".into()),
            ("GIT_AUTHOR_NAME".into(), "kept".into()),
        ]);
        let facts = HookFacts {
            name: "pre-create",
            scope: Scope::Workspace,
            source_path: None,
            execution_path: Path::new("/ws"),
            mode: ModeKind::Configured,
            main_repo: Path::new("/ws"),
            branch: Some("feature/x"),
            target_repository: None,
            target_repo_path: None,
            target_worktree: None,
            parent_repo: None,
            input: InputPolicy::Unavailable,
            remove_targets: None,
        };
        let env = build(&b, &facts);
        assert_eq!(env.get("ARASHI_HOOK_SCOPE").unwrap(), "workspace");
        assert_eq!(env.get("ARASHI_HOOK_SOURCE_PATH"), None);
        assert_eq!(env.get("GIT_DIR"), None);
        assert_eq!(env.get("GIT_AUTHOR_NAME").unwrap(), "kept");
        assert_eq!(env.get("ARASHI_HOOK_INPUT").unwrap(), "unavailable");
        let names: Vec<_> = env.iter().map(|(n, _)| n.to_owned()).collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(names.len(), unique.len(), "each name once");
        assert_eq!(env.get("ARASHI_HOOK_TARGET_REPOSITORY"), None);
    }

    #[test]
    fn remove_targets_are_normalized_deduplicated_and_ordered() {
        let t = |r: &str, b: Option<&str>, p: Option<&str>| RemoveTarget {
            repository: r.into(),
            branch_name: b.map(Into::into),
            worktree_path: p.map(Into::into),
        };
        let json = remove_targets_json(&[
            t("web", Some("x"), Some("/w/./worktrees/web/x")),
            t("api", None, None),
            t("web", Some("x"), Some("/w/worktrees/web/x")),
            t("api", Some("x"), Some("/w/worktrees/api/../api/x")),
        ]);
        assert_eq!(
            json,
            r#"[{"repository":"api","branchName":null,"worktreePath":null},{"repository":"api","branchName":"x","worktreePath":"/w/worktrees/api/x"},{"repository":"web","branchName":"x","worktreePath":"/w/worktrees/web/x"}]"#
        );
    }
}
