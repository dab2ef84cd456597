//! A lifecycle command's hold on its workspace: the lock taken for its whole run, and the
//! rollback of a create that died holding it before, done first, with a warning.

use super::error::Error;
use super::journal::{Locked, Record, StateLock};
use super::rollback;
use super::workspace::Workspace;

/// Takes the workspace's lock (refusing when another command holds it), says in it `what`
/// this command does, and rolls back a dead create's journal. Returns the lock and the
/// warnings to print.
pub fn acquire(ws: &Workspace, what: &str) -> Result<(StateLock, Vec<String>), Error> {
    let lock = match StateLock::acquire(&ws.state_dir) {
        Ok(l) => l,
        Err(Locked::Busy(p)) => return Err(Error::Busy(p)),
        Err(Locked::Error(e)) => return Err(Error::State(e)),
    };
    lock.describe(what);
    let warnings = recover(&lock)?;
    Ok((lock, warnings))
}

/// For commands that change nothing of their own (the inspector, dry runs): rolls back a dead
/// create when the lock is free, and otherwise leaves a running command alone.
pub fn recover_if_idle(ws: &Workspace) -> Vec<String> {
    match StateLock::acquire(&ws.state_dir) {
        Ok(lock) => recover(&lock).unwrap_or_else(|e| vec![e.to_string()]),
        Err(_) => Vec::new(),
    }
}

fn recover(lock: &StateLock) -> Result<Vec<String>, Error> {
    let Some(records) = lock.leftover()? else {
        return Ok(Vec::new());
    };
    let mut warnings = Vec::new();
    let owned = records.iter().any(|r| !matches!(r, Record::Begin { .. }));
    if owned {
        let who = records
            .iter()
            .find_map(|r| match r {
                Record::Begin { branch, pid } => Some(format!("of branch {branch} (pid {pid})")),
                _ => None,
            })
            .unwrap_or_default();
        let report = rollback::undo(&records, true);
        let done = if report.done.is_empty() {
            "nothing was left".to_string()
        } else {
            report.done.join(", ")
        };
        warnings.push(format!(
            "rolled back a create {who} that was killed before it finished: {done}"
        ));
        warnings.extend(
            report
                .warnings
                .into_iter()
                .map(|w| format!("rollback: {w}")),
        );
    }
    lock.clear()?;
    Ok(warnings)
}
