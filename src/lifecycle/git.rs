//! The git commands hookq runs itself: real `git`, never a library, so what it does to a
//! repository is exactly what a user's own `git worktree add` would do.
//!
//! Each git process dies with hookq (`PR_SET_PDEATHSIG`): a create killed outright must not
//! leave a git still writing while the next command rolls that create back.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub use crate::exec::env::is_git_local;

/// A git command that failed.
#[derive(Debug, Clone, thiserror::Error)]
#[error("`git {args}` in {}: {why}", dir.display())]
pub struct GitError {
    /// Where it ran.
    pub dir: PathBuf,
    /// Its arguments, joined (branch names and paths only: never hook text).
    pub args: String,
    /// Its stderr's last non-empty line, or how it could not start.
    pub why: String,
}

/// What a git command printed when it succeeded.
fn run(dir: &Path, args: &[&OsStr]) -> Result<Vec<u8>, GitError> {
    let out = output(dir, args)?;
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(failure(dir, args, &out.stderr, out.status.to_string()))
    }
}

fn failure(dir: &Path, args: &[&OsStr], stderr: &[u8], status: String) -> GitError {
    let why = reason(&String::from_utf8_lossy(stderr)).unwrap_or(status);
    GitError {
        dir: dir.to_path_buf(),
        args: args
            .iter()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" "),
        why,
    }
}

/// The line of git's stderr that says why: the last `fatal:` or `error:` line, else the last
/// line that is not one of git's `hint:` lines (advice that follows the reason and would hide
/// it).
fn reason(stderr: &str) -> Option<String> {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines
        .iter()
        .rfind(|l| l.starts_with("fatal:") || l.starts_with("error:"))
        .or_else(|| lines.iter().rfind(|l| !l.starts_with("hint:")))
        .map(|l| (*l).to_owned())
}

fn output(dir: &Path, args: &[&OsStr]) -> Result<std::process::Output, GitError> {
    let mut cmd = Command::new("git");
    cmd.arg("-C").arg(dir).args(args);
    for (name, _) in std::env::vars_os() {
        if is_git_local(&name) {
            cmd.env_remove(name);
        }
    }
    cmd.env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // A git child is killed with hookq rather than left working on alone.
    crate::exec::sys::die_with_parent(&mut cmd);
    cmd.output().map_err(|e| GitError {
        dir: dir.to_path_buf(),
        args: args
            .iter()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" "),
        why: format!("cannot run git: {e}"),
    })
}

fn os<'a>(args: &'a [&'a str]) -> Vec<&'a OsStr> {
    args.iter().map(OsStr::new).collect()
}

/// One entry of `git worktree list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorktreeEntry {
    /// Its path.
    pub path: PathBuf,
    /// The branch checked out (`feature/x`, without `refs/heads/`), if any.
    pub branch: Option<String>,
    /// Whether it is the bare main entry.
    pub bare: bool,
    /// Whether it is locked.
    pub locked: bool,
}

/// The worktrees of the repository at `dir`, the main one first.
pub fn worktrees(dir: &Path) -> Result<Vec<WorktreeEntry>, GitError> {
    let out = run(dir, &os(&["worktree", "list", "--porcelain", "-z"]))?;
    let mut list = Vec::new();
    let mut cur: Option<WorktreeEntry> = None;
    for field in out.split(|&b| b == 0) {
        if field.is_empty() {
            list.extend(cur.take());
            continue;
        }
        if let Some(p) = field.strip_prefix(b"worktree ") {
            list.extend(cur.take());
            cur = Some(WorktreeEntry {
                path: PathBuf::from(OsStr::from_bytes(p)),
                branch: None,
                bare: false,
                locked: false,
            });
        } else if let Some(e) = cur.as_mut() {
            if let Some(b) = field.strip_prefix(b"branch refs/heads/") {
                e.branch = Some(String::from_utf8_lossy(b).into_owned());
            } else if field == b"bare" {
                e.bare = true;
            } else if field == b"locked" || field.starts_with(b"locked ") {
                e.locked = true;
            }
        }
    }
    list.extend(cur);
    Ok(list)
}

/// The commit `rev` names in the repository at `dir`, or `None` when it names none.
pub fn resolve_commit(dir: &Path, rev: &str) -> Result<Option<String>, GitError> {
    let spec = format!("{rev}^{{commit}}");
    let argv = [
        "rev-parse",
        "--verify",
        "--quiet",
        "--end-of-options",
        &spec,
    ];
    let args = os(&argv);
    let out = output(dir, &args)?;
    match out.status.code() {
        Some(0) => Ok(Some(String::from_utf8_lossy(&out.stdout).trim().to_owned())),
        Some(1) => Ok(None),
        _ => Err(failure(dir, &args, &out.stderr, out.status.to_string())),
    }
}

/// Whether branch `name` exists in the repository at `dir`.
pub fn branch_exists(dir: &Path, name: &str) -> Result<bool, GitError> {
    let r = format!("refs/heads/{name}");
    let argv = ["show-ref", "--verify", "--quiet", &r];
    let args = os(&argv);
    let out = output(dir, &args)?;
    match out.status.code() {
        Some(0) => Ok(true),
        Some(1) => Ok(false),
        _ => Err(failure(dir, &args, &out.stderr, out.status.to_string())),
    }
}

/// Whether git accepts `name` as a branch name (`git check-ref-format --branch`), run in `dir`.
pub fn branch_name_ok(dir: &Path, name: &str) -> Result<bool, GitError> {
    let argv = ["check-ref-format", "--branch", name];
    let args = os(&argv);
    let out = output(dir, &args)?;
    match out.status.code() {
        Some(0) => Ok(true),
        Some(128) | Some(1) => Ok(false),
        _ => Err(failure(dir, &args, &out.stderr, out.status.to_string())),
    }
}

/// What git knows of a directory: its main worktree's root and its common git dir.
#[derive(Debug, Clone)]
pub struct RepoDirs {
    /// The top of the worktree the directory is in.
    pub toplevel: PathBuf,
    /// The shared git dir (`<main>/.git`).
    pub common_dir: PathBuf,
}

/// Where the repository holding `dir` keeps its files, or `None` when `dir` is in no work
/// tree.
pub fn repo_dirs(dir: &Path) -> Result<Option<RepoDirs>, GitError> {
    let argv = [
        "rev-parse",
        "--path-format=absolute",
        "--show-toplevel",
        "--git-common-dir",
    ];
    let args = os(&argv);
    let out = output(dir, &args)?;
    if !out.status.success() {
        return Ok(None);
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    match (lines.next(), lines.next()) {
        (Some(top), Some(common)) if !top.is_empty() => Ok(Some(RepoDirs {
            toplevel: PathBuf::from(top),
            common_dir: PathBuf::from(common),
        })),
        _ => Ok(None),
    }
}

/// `git worktree add`: a new branch `branch` at `base` (`Some`), or the existing branch.
pub fn add_worktree(
    dir: &Path,
    path: &Path,
    branch: &str,
    new_at: Option<&str>,
) -> Result<(), GitError> {
    let mut args: Vec<&OsStr> = os(&["worktree", "add", "--quiet"]);
    match new_at {
        Some(base) => {
            args.extend([
                OsStr::new("--no-track"),
                OsStr::new("-b"),
                OsStr::new(branch),
            ]);
            args.push(path.as_os_str());
            args.push(OsStr::new(base));
        }
        None => {
            args.push(path.as_os_str());
            args.push(OsStr::new(branch));
        }
    }
    run(dir, &args).map(drop)
}

/// `git worktree remove [--force] path`. `force_locked` removes a locked one too (a worktree
/// git left locked "initializing" when it was killed midway).
pub fn remove_worktree(
    dir: &Path,
    path: &Path,
    force: bool,
    force_locked: bool,
) -> Result<(), GitError> {
    let mut args: Vec<&OsStr> = os(&["worktree", "remove"]);
    if force {
        args.push(OsStr::new("--force"));
    }
    if force_locked {
        args.push(OsStr::new("--force"));
    }
    args.push(path.as_os_str());
    run(dir, &args).map(drop)
}

/// What `git worktree remove` without `--force` would find in a worktree and refuse it for:
/// tracked files changed (in the index or the work tree) and untracked files, as
/// `git status --porcelain` lists them (ignored files do not count). Empty when clean.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// Tracked paths with changes, staged or not (a rename by its new path).
    pub modified: Vec<String>,
    /// Untracked paths (a folder holding only untracked files as `dir/`).
    pub untracked: Vec<String>,
}

impl Changes {
    /// Whether there is nothing git would refuse the removal for.
    pub fn is_clean(&self) -> bool {
        self.modified.is_empty() && self.untracked.is_empty()
    }
}

/// The changes in the worktree at `dir`, found as `git worktree remove` finds them
/// (`git status --porcelain --ignore-submodules=none`), without taking the index's lock.
pub fn changes(dir: &Path) -> Result<Changes, GitError> {
    let out = run(
        dir,
        &os(&[
            "--no-optional-locks",
            "status",
            "--porcelain",
            "-z",
            "--ignore-submodules=none",
        ]),
    )?;
    Ok(parse_status(&out))
}

/// `git status --porcelain -z`: `XY path` records, a rename or copy followed by a record
/// holding its old path.
fn parse_status(out: &[u8]) -> Changes {
    let mut changes = Changes::default();
    let mut records = out.split(|&b| b == 0).filter(|r| !r.is_empty());
    while let Some(r) = records.next() {
        if r.len() < 4 {
            continue;
        }
        let path = String::from_utf8_lossy(&r[3..]).into_owned();
        match &r[..2] {
            b"??" => changes.untracked.push(path),
            xy => {
                if xy[0] == b'R' || xy[0] == b'C' {
                    records.next();
                }
                changes.modified.push(path);
            }
        }
    }
    changes
}

/// `git branch -D name`.
pub fn delete_branch(dir: &Path, name: &str) -> Result<(), GitError> {
    run(dir, &os(&["branch", "-D", "--", name])).map(drop)
}

/// `git worktree prune`: forgets worktrees whose directory is gone.
pub fn prune(dir: &Path) -> Result<(), GitError> {
    run(dir, &os(&["worktree", "prune"])).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reason_is_the_fatal_line_not_the_advice_after_it() {
        let stderr = "Preparing worktree (new branch 'HEAD')\nfatal: 'HEAD' is not a valid branch name\nhint: See `man git check-ref-format`\nhint: Disable this message with \"git config advice.refSyntax false\"\n";
        assert_eq!(
            reason(stderr).as_deref(),
            Some("fatal: 'HEAD' is not a valid branch name")
        );
        assert_eq!(
            reason("warning: x\nsomething broke\n").as_deref(),
            Some("something broke")
        );
        assert_eq!(reason("hint: only advice\n"), None);
        assert_eq!(reason(""), None);
    }

    #[test]
    fn status_records_are_told_apart() {
        let out = b" M a.txt\0?? new dir/\0R  b2.txt\0b.txt\0D  gone.txt\0AM c.txt\0";
        assert_eq!(
            parse_status(out),
            Changes {
                modified: vec![
                    "a.txt".into(),
                    "b2.txt".into(),
                    "gone.txt".into(),
                    "c.txt".into()
                ],
                untracked: vec!["new dir/".into()],
            }
        );
        assert!(parse_status(b"").is_clean());
    }

    #[test]
    fn git_overrides_are_recognised() {
        for n in [
            "GIT_DIR",
            "GIT_WORK_TREE",
            "GIT_CONFIG_KEY_0",
            "GIT_INDEX_FILE",
        ] {
            assert!(is_git_local(OsStr::new(n)), "{n}");
        }
        for n in ["GIT_AUTHOR_NAME", "PATH", "GIT_SSH_COMMAND"] {
            assert!(!is_git_local(OsStr::new(n)), "{n}");
        }
    }
}
