//! The environment a hook command gets (SPEC §5): the runner's own, minus inherited git
//! repository overrides and `ARC_*`, plus the `ARC_*` table for this point.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::phase::Point;

/// What `git rev-parse --local-env-vars` lists: variables that would point a hook's git at
/// another repository than the workspace's.
pub const GIT_LOCAL_ENV_VARS: &[&str] = &[
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_OBJECT_DIRECTORY",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_GRAFT_FILE",
    "GIT_INDEX_FILE",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_REPLACE_REF_BASE",
    "GIT_PREFIX",
    "GIT_INTERNAL_SUPER_PREFIX",
    "GIT_SHALLOW_FILE",
    "GIT_COMMON_DIR",
];

/// The facts one point's commands see.
#[derive(Debug, Clone)]
pub struct HookVars<'a> {
    /// `ARC_TASK`.
    pub task: &'a str,
    /// `ARC_PLAN`.
    pub plan: &'a str,
    /// The `n` of `ARC_ATTEMPT=<task>-<n>`.
    pub attempt: i64,
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

fn stripped(name: &OsStr) -> bool {
    // By bytes: a name that is not UTF-8 after its prefix (`ARC_\xff`) goes too.
    let name = name.as_bytes();
    name.starts_with(b"ARC_")
        || GIT_LOCAL_ENV_VARS.iter().any(|v| v.as_bytes() == name)
        // Only meaningful with GIT_CONFIG_COUNT, which goes: drop the pairs with it.
        || name.starts_with(b"GIT_CONFIG_KEY_")
        || name.starts_with(b"GIT_CONFIG_VALUE_")
}

/// A command's whole environment, laid out as `execve` takes it: `NAME=value` strings, each
/// ending in a NUL byte, in one buffer. A point's environment is the pass's base copied in one
/// piece plus the `ARC_*` table, and starting a command reads it as it is: no map, and no
/// string per variable (see `spawn`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Environ {
    bytes: Vec<u8>,
    /// Where each variable starts in `bytes`.
    starts: Vec<usize>,
    /// A name or value held a NUL byte, which no environment can carry: starting a command
    /// with it fails, as it does with `std::process::Command`.
    nul: bool,
}

impl Environ {
    /// An empty environment.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `name=value` after the variables already there. Names are expected once each (a
    /// name added twice is passed twice).
    pub fn push(&mut self, name: impl AsRef<OsStr>, value: impl AsRef<OsStr>) {
        let (name, value) = (name.as_ref().as_bytes(), value.as_ref().as_bytes());
        self.nul |= name.contains(&0) || value.contains(&0);
        self.starts.push(self.bytes.len());
        self.bytes.extend_from_slice(name);
        self.bytes.push(b'=');
        self.bytes.extend_from_slice(value);
        self.bytes.push(0);
    }

    /// The value of `name`, if set.
    pub fn get(&self, name: &str) -> Option<&OsStr> {
        self.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    /// The variables in order, as (name, value).
    pub fn iter(&self) -> impl Iterator<Item = (&OsStr, &OsStr)> {
        self.starts.iter().map(|&at| {
            let end = at + self.bytes[at..].iter().position(|&b| b == 0).unwrap_or(0);
            let var = &self.bytes[at..end];
            // Split at the first `=`: a name holds none. A variable with a NUL byte in it reads
            // back cut there; such an environment is never handed to a command (`raw`).
            let eq = var.iter().position(|&b| b == b'=').unwrap_or(var.len());
            let value = var.get(eq + 1..).unwrap_or_default();
            (OsStr::from_bytes(&var[..eq]), OsStr::from_bytes(value))
        })
    }

    /// How many variables there are.
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// The buffer of NUL-terminated `NAME=value` strings, and where each starts; `None` when a
    /// name or value held a NUL byte.
    pub(crate) fn raw(&self) -> Option<(&[u8], &[usize])> {
        (!self.nul).then_some((&self.bytes, &self.starts))
    }
}

impl<K: AsRef<OsStr>, V: AsRef<OsStr>> FromIterator<(K, V)> for Environ {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(vars: I) -> Self {
        let mut env = Environ::new();
        for (k, v) in vars {
            env.push(k, v);
        }
        env
    }
}

/// The runner's environment with the overrides removed; computed once per pass.
pub fn base_env(vars: impl IntoIterator<Item = (OsString, OsString)>) -> Environ {
    vars.into_iter().filter(|(k, _)| !stripped(k)).collect()
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
        use std::os::unix::ffi::OsStringExt;
        let name = |b: &[u8]| OsString::from_vec(b.to_vec());
        let base = base_env([
            (name(b"ARC_\xffEVIL"), OsString::from("leaked")),
            (name(b"GIT_CONFIG_KEY_\xff"), OsString::from("leaked")),
            (name(b"KEPT_\xff"), OsString::from("kept")),
        ]);
        let names: Vec<&[u8]> = base.iter().map(|(k, _)| k.as_bytes()).collect();
        assert_eq!(names, [b"KEPT_\xff".as_slice()]);
    }

    #[test]
    fn an_environ_reads_back_what_was_pushed() {
        let env: Environ = [("A", "1"), ("EMPTY", ""), ("EQ", "x=y"), ("U", "é")]
            .into_iter()
            .collect();
        let read: Vec<(&OsStr, &OsStr)> = env.iter().collect();
        assert_eq!(
            read,
            [("A", "1"), ("EMPTY", ""), ("EQ", "x=y"), ("U", "é")]
                .map(|(k, v)| (OsStr::new(k), OsStr::new(v)))
        );
        assert_eq!(env.len(), 4);
        assert_eq!(env.raw().unwrap().0, b"A=1\0EMPTY=\0EQ=x=y\0U=\xc3\xa9\0");
        let mut bad = env.clone();
        bad.push("B", "x\0y");
        assert!(bad.raw().is_none(), "a NUL byte cannot be passed");
    }
}
