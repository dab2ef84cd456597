//! The environment an arc hook command gets: the runner's own, minus inherited git repository
//! overrides and `ARC_*`, plus the `ARC_*` table for this point.

use std::ffi::{OsStr, OsString};
use std::path::Path;

use crate::exec::Environ;
use crate::queue::phase::Point;

pub use crate::exec::env::GIT_LOCAL_ENV_VARS;

/// The facts one point's commands see.
#[derive(Debug, Clone)]
pub struct HookVars<'a> {
    /// `ARC_TASK`.
    pub task: &'a str,
    /// `ARC_PLAN`.
    pub plan: &'a str,
    /// The `n` of `ARC_ATTEMPT=<task>-<n>`.
    pub attempt: u32,
    /// `ARC_WORKTREE`, absolute.
    pub worktree: &'a Path,
    /// `ARC_TARGET_BRANCH`.
    pub target_branch: &'a str,
    /// `ARC_MERGED_SHA`, set for `after_merge` only.
    pub merged_sha: Option<&'a str>,
    /// `ARC_STATE`: the phase recorded with the point.
    pub state: &'a str,
    /// `ARC_HOOK`.
    pub point: Point,
}

/// The runner's environment without inherited `ARC_*` and git's repository overrides;
/// computed once per pass.
pub fn base_env(vars: impl IntoIterator<Item = (OsString, OsString)>) -> Environ {
    crate::exec::env::inherited(vars, "ARC_")
}

/// `base` plus the `ARC_*` table for one point.
pub fn hook_env(base: &Environ, v: &HookVars<'_>) -> Environ {
    let mut env = base.clone();
    let mut set = |k: &str, val: &OsStr| env.push(k, val);
    set("ARC_TASK", v.task.as_ref());
    set("ARC_PLAN", v.plan.as_ref());
    set("ARC_ATTEMPT", format!("{}-{}", v.task, v.attempt).as_ref());
    set("ARC_BRANCH", format!("work/{}", v.task).as_ref());
    set("ARC_WORKTREE", v.worktree.as_os_str());
    set("ARC_TARGET_BRANCH", v.target_branch.as_ref());
    if v.point == Point::AfterMerge
        && let Some(sha) = v.merged_sha
    {
        set("ARC_MERGED_SHA", sha.as_ref());
    }
    set("ARC_STATE", v.state.as_ref());
    set("ARC_HOOK", v.point.as_str().as_ref());
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get<'a>(env: &'a Environ, k: &str) -> Option<&'a str> {
        env.get(k).map(|v| v.to_str().unwrap())
    }

    #[test]
    fn strips_overrides_and_sets_the_table() {
        let base = base_env(
            [
                ("PATH", "/bin"),
                ("GIT_DIR", "/elsewhere"),
                ("GIT_CONFIG_KEY_0", "x"),
                ("GIT_AUTHOR_NAME", "kept"),
                ("ARC_MERGED_SHA", "stale"),
                ("ARC_TASK", "stale"),
            ]
            .map(|(k, v)| (OsString::from(k), OsString::from(v))),
        );
        let mut vars = HookVars {
            task: "t1",
            plan: "p",
            attempt: 2,
            worktree: Path::new("/r/.radian/arc/worktrees/t1"),
            target_branch: "main",
            merged_sha: Some("abc123"),
            state: "review.awaiting_human",
            point: Point::AfterAwaitingHuman,
        };
        let env = hook_env(&base, &vars);
        assert_eq!(get(&env, "PATH"), Some("/bin"));
        assert_eq!(get(&env, "GIT_AUTHOR_NAME"), Some("kept"));
        assert_eq!(get(&env, "GIT_DIR"), None);
        assert_eq!(get(&env, "GIT_CONFIG_KEY_0"), None);
        assert_eq!(get(&env, "ARC_MERGED_SHA"), None);
        assert_eq!(get(&env, "ARC_TASK"), Some("t1"));
        assert_eq!(get(&env, "ARC_ATTEMPT"), Some("t1-2"));
        assert_eq!(get(&env, "ARC_BRANCH"), Some("work/t1"));
        assert_eq!(get(&env, "ARC_HOOK"), Some("after_awaiting_human"));
        assert_eq!(env.iter().filter(|(k, _)| *k == "ARC_TASK").count(), 1);
        vars.point = Point::AfterMerge;
        assert_eq!(
            get(&hook_env(&base, &vars), "ARC_MERGED_SHA"),
            Some("abc123")
        );
    }

    #[test]
    fn overrides_whose_names_are_not_utf8_go_too() {
        use std::os::unix::ffi::{OsStrExt, OsStringExt};
        let name = |b: &[u8]| OsString::from_vec(b.to_vec());
        let base = base_env([
            (name(b"ARC_\xffEVIL"), OsString::from("leaked")),
            (name(b"GIT_CONFIG_KEY_\xff"), OsString::from("leaked")),
            (name(b"KEPT_\xff"), OsString::from("kept")),
        ]);
        let names: Vec<&[u8]> = base.iter().map(|(k, _)| k.as_bytes()).collect();
        assert_eq!(names, [b"KEPT_\xff".as_slice()]);
    }
}
