//! The environment a lifecycle hook gets: hookq's own, minus git's repository overrides and any
//! inherited `ARASHI_*`, plus the executor-owned `ARASHI_*` fields for this hook. Inherited or
//! operation data never overrides those fields: they are added last, each once, after every
//! inherited `ARASHI_*` was dropped.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::input::InputPolicy;
use super::names::normalize;
use super::point::{ModeKind, Scope};
use crate::exec::Environ;

/// One remove target as `ARASHI_REMOVE_TARGETS_JSON` lists it (its keys in this order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RemoveTarget {
    /// The repository.
    pub repository: String,
    /// The branch checked out in the worktree, if one.
    pub branch_name: Option<String>,
    /// The worktree, absolute, normalized, `/`-separated.
    pub worktree_path: Option<String>,
}

/// What every remove hook of one command gets about all of its targets: the structured list
/// and arashi's comma-joined aggregates, worked out once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoveContext {
    /// `ARASHI_REMOVE_TARGETS_JSON`.
    pub json: String,
    /// The distinct repository names, sorted.
    pub repositories: Vec<String>,
    /// The distinct branch names (none empty), sorted.
    pub branches: Vec<String>,
    /// The distinct normalized worktree paths, sorted.
    pub worktrees: Vec<String>,
}

impl RemoveContext {
    /// The context of a remove of `targets`: their paths normalized, exact duplicates removed,
    /// the records sorted by repository, then worktree path, then branch (an absent value
    /// first; strings by Unicode scalar value, which is the byte order of UTF-8, never a
    /// locale's), and each aggregate the sorted distinct values of its field.
    pub fn of(targets: &[RemoveTarget]) -> RemoveContext {
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
        list.sort_by(|a, b| {
            (&a.repository, &a.worktree_path, &a.branch_name).cmp(&(
                &b.repository,
                &b.worktree_path,
                &b.branch_name,
            ))
        });
        list.dedup();
        let distinct = |values: Vec<&String>| -> Vec<String> {
            let set: BTreeSet<&String> = values.into_iter().filter(|v| !v.is_empty()).collect();
            set.into_iter().cloned().collect()
        };
        RemoveContext {
            json: serde_json::to_string(&list).unwrap_or_else(|_| "[]".into()),
            repositories: distinct(list.iter().map(|t| &t.repository).collect()),
            branches: distinct(list.iter().filter_map(|t| t.branch_name.as_ref()).collect()),
            worktrees: distinct(list.iter().filter_map(|t| t.worktree_path.as_ref()).collect()),
        }
    }
}

/// arashi's historical aliases for one hook run: `ARASHI_REPO_NAME`, `ARASHI_REPO_PATH`,
/// `ARASHI_WORKTREE_PATH`. Their meaning shifts with the mode and scope (the create of a child
/// repository calls its new worktree the repository path), so each caller says what they are.
#[derive(Debug, Clone, Copy, Default)]
pub struct Aliases<'a> {
    /// `ARASHI_REPO_NAME`.
    pub repo_name: Option<&'a str>,
    /// `ARASHI_REPO_PATH`.
    pub repo_path: Option<&'a Path>,
    /// `ARASHI_WORKTREE_PATH`.
    pub worktree_path: Option<&'a Path>,
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
    /// arashi's historical aliases.
    pub aliases: Aliases<'a>,
    /// Remove hooks only: `ARASHI_OPERATION`, `ARASHI_REMOVE_TARGETS_JSON` and the
    /// comma-joined aggregates.
    pub remove: Option<&'a RemoveContext>,
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
    if let Some(n) = f.aliases.repo_name {
        env.push("ARASHI_REPO_NAME", n);
    }
    if let Some(p) = f.aliases.repo_path {
        env.push("ARASHI_REPO_PATH", path(p));
    }
    if let Some(p) = f.aliases.worktree_path {
        env.push("ARASHI_WORKTREE_PATH", path(p));
    }
    if let Some(r) = f.remove {
        env.push("ARASHI_OPERATION", "remove");
        env.push("ARASHI_REMOVE_TARGETS_JSON", r.json.as_str());
        for (what, values) in [
            ("REPOSITORIES", &r.repositories),
            ("BRANCHES", &r.branches),
            ("WORKTREES", &r.worktrees),
        ] {
            env.push(format!("ARASHI_REMOVE_TARGET_{what}"), values.join(","));
            env.push(
                format!("ARASHI_REMOVE_TOTAL_{what}"),
                values.len().to_string(),
            );
        }
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
            aliases: Aliases {
                repo_path: Some(Path::new("/ws")),
                ..Aliases::default()
            },
            remove: None,
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
        assert_eq!(env.get("ARASHI_REPO_PATH").unwrap(), "/ws");
        assert_eq!(env.get("ARASHI_REPO_NAME"), None);
        assert_eq!(env.get("ARASHI_OPERATION"), None);
    }

    #[test]
    fn remove_targets_are_normalized_deduplicated_and_ordered() {
        let t = |r: &str, b: Option<&str>, p: Option<&str>| RemoveTarget {
            repository: r.into(),
            branch_name: b.map(Into::into),
            worktree_path: p.map(Into::into),
        };
        let ctx = RemoveContext::of(&[
            t("web", Some("x"), Some("/w/./worktrees/web/x")),
            t("api", None, None),
            t("web", Some("x"), Some("/w/worktrees/web/x")),
            t("api", Some("x"), Some("/w/worktrees/api/../api/x")),
            // The path orders before the branch: b's path sorts first, a null path first of
            // all, a null branch before a named one.
            t("web", Some("a"), Some("/w/z")),
            t("web", Some("b"), Some("/w/b")),
            t("web", Some("c"), None),
            t("web", None, Some("/w/b")),
        ]);
        assert_eq!(
            ctx.json,
            r#"[{"repository":"api","branchName":null,"worktreePath":null},{"repository":"api","branchName":"x","worktreePath":"/w/worktrees/api/x"},{"repository":"web","branchName":"c","worktreePath":null},{"repository":"web","branchName":null,"worktreePath":"/w/b"},{"repository":"web","branchName":"b","worktreePath":"/w/b"},{"repository":"web","branchName":"x","worktreePath":"/w/worktrees/web/x"},{"repository":"web","branchName":"a","worktreePath":"/w/z"}]"#
        );
        assert_eq!(ctx.repositories, ["api", "web"]);
        assert_eq!(ctx.branches, ["a", "b", "c", "x"]);
        assert_eq!(
            ctx.worktrees,
            ["/w/b", "/w/worktrees/api/x", "/w/worktrees/web/x", "/w/z"]
        );
    }

    #[test]
    fn aggregates_sort_by_scalar_value_and_count_distinct_values() {
        let t = |r: &str, b: &str, p: &str| RemoveTarget {
            repository: r.into(),
            branch_name: Some(b.into()),
            worktree_path: Some(p.into()),
        };
        // Uppercase before lowercase, ASCII before the rest, whatever the locale; commas kept.
        let ctx = RemoveContext::of(&[
            t("web", "é,x", "/ws, v2/worktrees/web/é,x"),
            t("Zed", "feat", "/ws, v2/worktrees/Zed/feat"),
            t("api", "feat", "/ws, v2/worktrees/api/feat"),
        ]);
        let b = base([("PATH".into(), "/bin".into())]);
        let facts = HookFacts {
            name: "pre-remove",
            scope: Scope::Workspace,
            source_path: None,
            execution_path: Path::new("/ws, v2"),
            mode: ModeKind::Configured,
            main_repo: Path::new("/ws, v2"),
            branch: Some("feat"),
            target_repository: Some("api"),
            target_repo_path: Some(Path::new("/ws, v2/repos/api")),
            target_worktree: Some(Path::new("/ws, v2/worktrees/api/feat")),
            parent_repo: None,
            input: InputPolicy::Unavailable,
            aliases: Aliases::default(),
            remove: Some(&ctx),
        };
        let env = build(&b, &facts);
        let get = |n: &str| env.get(n).unwrap().to_str().unwrap().to_owned();
        assert_eq!(get("ARASHI_OPERATION"), "remove");
        assert_eq!(get("ARASHI_REMOVE_TARGET_REPOSITORIES"), "Zed,api,web");
        assert_eq!(get("ARASHI_REMOVE_TARGET_BRANCHES"), "feat,é,x");
        assert_eq!(
            get("ARASHI_REMOVE_TARGET_WORKTREES"),
            "/ws, v2/worktrees/Zed/feat,/ws, v2/worktrees/api/feat,/ws, v2/worktrees/web/é,x"
        );
        assert_eq!(get("ARASHI_REMOVE_TOTAL_REPOSITORIES"), "3");
        assert_eq!(get("ARASHI_REMOVE_TOTAL_BRANCHES"), "2");
        assert_eq!(get("ARASHI_REMOVE_TOTAL_WORKTREES"), "3");
    }

    /// docs/lifecycle.md names every variable a hook can get, so none is set unannounced.
    #[test]
    fn every_variable_a_hook_can_get_is_documented() {
        let doc = include_str!("../../docs/lifecycle.md");
        let ctx = RemoveContext::of(&[]);
        let p = Path::new("/p");
        let facts = HookFacts {
            name: "pre-remove",
            scope: Scope::Repository,
            source_path: Some(p),
            execution_path: p,
            mode: ModeKind::Configured,
            main_repo: p,
            branch: Some("b"),
            target_repository: Some("r"),
            target_repo_path: Some(p),
            target_worktree: Some(p),
            parent_repo: Some(p),
            input: InputPolicy::Tty,
            aliases: Aliases {
                repo_name: Some("r"),
                repo_path: Some(p),
                worktree_path: Some(p),
            },
            remove: Some(&ctx),
        };
        let env = build(&base([]), &facts);
        assert_eq!(env.iter().count(), 23);
        for (name, value) in env.iter() {
            let name = name.to_str().unwrap();
            assert!(doc.contains(&format!("`{name}`")), "{name} is not in docs/lifecycle.md");
            // No targets: empty lists, totals of zero.
            if name.starts_with("ARASHI_REMOVE_T") && !name.ends_with("_JSON") {
                let empty = if name.contains("TOTAL") { "0" } else { "" };
                assert_eq!(value, empty, "{name} of no targets");
            }
        }
    }
}
