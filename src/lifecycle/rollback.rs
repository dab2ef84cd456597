//! Undoing what a create owned, newest first: its worktrees removed (forced: hooks may have
//! left files in them), the branches it made deleted, the directories it made removed when
//! empty. Nothing else is touched: an existing branch, worktree or path is never in the
//! journal. A step that fails is reported as a rollback warning and the others still run.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::env::HOOK_MARK;
use super::git;
use super::hook::KILL_GRACE;
use super::journal::Record;
use crate::exec::group::{Group, end_left_behind};

/// What a rollback did and what it could not do.
#[derive(Debug, Clone, Default)]
pub struct RollbackReport {
    /// Steps done, for people: `removed worktree /w/…`, `deleted branch x in web`.
    pub done: Vec<String>,
    /// Steps that failed, each a rollback warning.
    pub warnings: Vec<String>,
}

/// How long a rollback of a dead create waits for processes still working in its new
/// worktree (a git checkout's child, a hook) before removing it anyway.
const SETTLE: Duration = Duration::from_secs(10);

/// Undoes `records`, newest first. `settle`: a dead create's records; end the hook it left
/// running, and wait for other processes still working inside a new worktree, first.
pub fn undo(records: &[Record], settle: bool) -> RollbackReport {
    let mut report = RollbackReport::default();
    if settle {
        end_left_hooks(records, &mut report);
        wait_for_leftovers(records);
    }
    for r in records.iter().rev() {
        match r {
            Record::Begin { .. } | Record::Hook { .. } | Record::HookEnded { .. } => {}
            Record::Worktree { checkout, path } => {
                remove_worktree(checkout, path, &mut report);
                sweep_admin_dirs(checkout, path, &mut report);
                if let Err(e) = git::prune(checkout) {
                    report.warnings.push(e.to_string());
                }
            }
            Record::Branch { checkout, name } => delete_branch(checkout, name, &mut report),
            Record::Dir { path } => match std::fs::remove_dir(path) {
                Ok(()) => report
                    .done
                    .push(format!("removed directory {}", path.display())),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => report.warnings.push(format!(
                    "cannot remove directory {} that this create made: {e}",
                    path.display()
                )),
            },
        }
    }
    report
}

fn remove_worktree(checkout: &Path, path: &Path, report: &mut RollbackReport) {
    let registered = git::worktrees(checkout)
        .map(|l| l.iter().any(|w| same_path(&w.path, path)))
        .unwrap_or(false);
    let existed = path.symlink_metadata().is_ok();
    if !registered && !existed {
        return;
    }
    let mut failure = None;
    if registered && let Err(e) = git::remove_worktree(checkout, path, true, true) {
        failure = Some(e.to_string());
    }
    // git refused or never registered it (killed midway): the directory is this create's
    // own, made where nothing was.
    if path.symlink_metadata().is_ok()
        && let Err(e) = remove_tree(path)
    {
        report.warnings.push(format!(
            "cannot remove worktree {}: {}{e}",
            path.display(),
            failure.map(|f| format!("{f}; ")).unwrap_or_default()
        ));
        return;
    }
    report
        .done
        .push(format!("removed worktree {}", path.display()));
}

fn delete_branch(checkout: &Path, name: &str, report: &mut RollbackReport) {
    match git::branch_exists(checkout, name) {
        Ok(false) => {}
        Ok(true) => match git::delete_branch(checkout, name) {
            Ok(()) => report
                .done
                .push(format!("deleted branch {name} in {}", checkout.display())),
            Err(e) => report.warnings.push(format!(
                "cannot delete branch {name} that this create made: {e}"
            )),
        },
        Err(e) => report.warnings.push(e.to_string()),
    }
}

/// Removes a directory tree, trying again briefly when something still writing into it makes
/// a directory non-empty again.
fn remove_tree(path: &Path) -> std::io::Result<()> {
    let mut tries = 0;
    loop {
        match std::fs::remove_dir_all(path) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) if tries < 20 => {
                let _ = e;
                tries += 1;
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => return Err(e),
        }
    }
}

fn same_path(a: &Path, b: &Path) -> bool {
    a == b || a.canonicalize().ok() == Some(b.to_path_buf()) || canonical(a) == canonical(b)
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

/// Git's own record of a worktree being made (`<common dir>/worktrees/<name>/`) that a killed
/// `git worktree add` left half-written: `git worktree list` and `prune` fail on it, or keep
/// it as locked "initializing". Removed when it points at `path`, or when it is incomplete and
/// named after `path` (git names it after the path's last component, adding digits when taken).
fn sweep_admin_dirs(checkout: &Path, path: &Path, report: &mut RollbackReport) {
    let Ok(Some(dirs)) = git::repo_dirs(checkout) else {
        return;
    };
    let Some(base) = path.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(dirs.common_dir.join("worktrees")) else {
        return;
    };
    let ours = path.join(".git");
    for e in entries.flatten() {
        let admin = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        let gitdir = std::fs::read_to_string(admin.join("gitdir")).ok();
        let points_here = gitdir
            .as_deref()
            .is_some_and(|g| Path::new(g.trim()) == ours);
        let named_here = name
            .strip_prefix(base.as_str())
            .is_some_and(|rest| rest.bytes().all(|b| b.is_ascii_digit()));
        let incomplete =
            gitdir.is_none() || !admin.join("commondir").exists() || !admin.join("HEAD").exists();
        if points_here || (named_here && incomplete) {
            match std::fs::remove_dir_all(&admin) {
                Ok(()) => report.done.push(format!(
                    "removed git's half-made record {}",
                    admin.display()
                )),
                Err(e) => report
                    .warnings
                    .push(format!("cannot remove {}: {e}", admin.display())),
            }
        }
    }
}

/// Waits, at most [`SETTLE`], for what a killed create left running: processes working in one
/// of its new worktrees (a checkout's child, a hook), and git processes in one of its
/// repositories (a `git branch` that `git worktree add -b` started).
/// Ends the hooks a killed create left running: their process groups, as the journal named
/// them, that are still those groups (a pid reused since is left alone), SIGTERM and then,
/// after the hooks' own grace, SIGKILL.
fn end_left_hooks(records: &[Record], report: &mut RollbackReport) {
    let mut running: Vec<Group> = Vec::new();
    for r in records {
        match *r {
            Record::Hook { pgid, started_ms } => running.push(Group { pgid, started_ms }),
            Record::HookEnded { pgid } => running.retain(|g| g.pgid != pgid),
            _ => {}
        }
    }
    for (group, killed) in end_left_behind(running, KILL_GRACE, HOOK_MARK) {
        let how = if killed { "SIGKILL" } else { "SIGTERM" };
        report.done.push(format!(
            "ended the hook it left running (process group {}, {how})",
            group.pgid
        ));
    }
}

fn wait_for_leftovers(records: &[Record]) {
    let mut inside = Vec::new();
    let mut checkouts = Vec::new();
    for r in records {
        match r {
            Record::Worktree { checkout, path } => {
                inside.push(path.clone());
                checkouts.push(checkout.clone());
            }
            Record::Branch { checkout, .. } => checkouts.push(checkout.clone()),
            _ => {}
        }
    }
    let deadline = Instant::now() + SETTLE;
    while Instant::now() < deadline && any_leftover(&inside, &checkouts) {
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn any_leftover(inside: &[PathBuf], checkouts: &[PathBuf]) -> bool {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return false;
    };
    let me = std::process::id().to_string();
    procs.flatten().any(|p| {
        let pid = p.file_name();
        let pid = pid.to_string_lossy();
        if !pid.bytes().all(|b| b.is_ascii_digit()) || pid == me {
            return false;
        }
        let Ok(cwd) = std::fs::read_link(p.path().join("cwd")) else {
            return false;
        };
        if inside.iter().any(|d| cwd.starts_with(d)) {
            return true;
        }
        checkouts.iter().any(|c| &cwd == c)
            && std::fs::read_to_string(p.path().join("comm")).is_ok_and(|c| c.trim() == "git")
    })
}
