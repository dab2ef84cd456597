//! Undoing what a create owned, newest first: its worktrees removed (forced: hooks may have
//! left files in them), the branches it made deleted, the directories it made removed when
//! empty. Nothing else is touched: an existing branch, worktree or path is never in the
//! journal. A step that fails is reported as a rollback warning and the others still run.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::git;
use super::journal::Record;

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

/// Undoes `records`, newest first. `settle`: wait for processes still running inside a new
/// worktree first (a dead create's).
pub fn undo(records: &[Record], settle: bool) -> RollbackReport {
    let mut report = RollbackReport::default();
    for r in records.iter().rev() {
        match r {
            Record::Begin { .. } => {}
            Record::Worktree { checkout, path } => {
                if settle {
                    wait_for_processes_in(path);
                }
                remove_worktree(checkout, path, &mut report);
            }
            Record::Branch { checkout, name } => delete_branch(checkout, name, &mut report),
            Record::Dir { path } => match std::fs::remove_dir(path) {
                Ok(()) => report.done.push(format!("removed directory {}", path.display())),
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
    if path.symlink_metadata().is_ok() {
        if let Err(e) = remove_tree(path) {
            report.warnings.push(format!(
                "cannot remove worktree {}: {}{e}",
                path.display(),
                failure.map(|f| format!("{f}; ")).unwrap_or_default()
            ));
            return;
        }
    }
    if let Err(e) = git::prune(checkout) {
        report.warnings.push(e.to_string());
    }
    report.done.push(format!("removed worktree {}", path.display()));
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

/// Waits, at most [`SETTLE`], until no process has its working directory in `dir`: the
/// children a killed `git worktree add` started, or a killed create's hook, outlive it.
fn wait_for_processes_in(dir: &Path) {
    let deadline = Instant::now() + SETTLE;
    while Instant::now() < deadline && any_process_in(dir) {
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn any_process_in(dir: &Path) -> bool {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return false;
    };
    let me = std::process::id().to_string();
    procs.flatten().any(|p| {
        let name = p.file_name();
        let name = name.to_string_lossy();
        name.bytes().all(|b| b.is_ascii_digit())
            && name != me
            && std::fs::read_link(p.path().join("cwd")).is_ok_and(|cwd| cwd.starts_with(dir))
    })
}
