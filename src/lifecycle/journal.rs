//! What a create owns, written down before it is made. Each lifecycle command holds the
//! workspace's lock file while it works; a create appends a record to the journal, and syncs
//! it, before each directory it makes and each `git worktree add`. A create that completes or
//! rolls back removes its journal. A journal found by the next command that takes the lock
//! belongs to a create that was killed outright (SIGKILL, power loss): that command rolls it
//! back first, so no orphan worktree, branch or directory of a dead create survives.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One thing a create is about to own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum Record {
    /// A create starts (branch and pid, for the warning that names it).
    Begin {
        /// The branch being created.
        branch: String,
        /// The create's process id.
        pid: u32,
    },
    /// A directory hookq is about to make (a missing parent of a new worktree).
    Dir {
        /// Its path.
        path: PathBuf,
    },
    /// A branch `git worktree add -b` is about to make.
    Branch {
        /// The repository's source checkout.
        checkout: PathBuf,
        /// The branch.
        name: String,
    },
    /// A worktree `git worktree add` is about to make.
    Worktree {
        /// The repository's source checkout.
        checkout: PathBuf,
        /// The new worktree's path.
        path: PathBuf,
    },
    /// A hook started, leading process group `pgid` (it outlives a killed hookq, in a session
    /// of its own or the terminal's foreground).
    Hook {
        /// The hook's process group.
        pgid: i32,
        /// When it started, unix ms.
        started_ms: i64,
    },
    /// The hook of group `pgid` ended and was reaped.
    HookEnded {
        /// The hook's process group.
        pgid: i32,
    },
}

/// A state-folder failure, with its path.
#[derive(Debug, thiserror::Error)]
#[error("cannot {what} {}: {source}", path.display())]
pub struct StateError {
    /// What was being done.
    pub what: &'static str,
    /// The path.
    pub path: PathBuf,
    /// The I/O error.
    #[source]
    pub source: std::io::Error,
}

fn state_err(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> StateError {
    let path = path.to_path_buf();
    move |source| StateError { what, path, source }
}

/// The workspace's lifecycle lock, held for a command's whole run.
#[derive(Debug)]
pub struct StateLock {
    dir: PathBuf,
    _file: File,
}

/// Taking the lock found it held.
#[derive(Debug)]
pub enum Locked {
    /// Another command holds it.
    Busy(PathBuf),
    /// The folder or file failed.
    Error(StateError),
}

impl StateLock {
    /// Takes the lock in `dir` (made owner-only if missing) without waiting.
    pub fn acquire(dir: &Path) -> Result<StateLock, Locked> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| Locked::Error(state_err("create", dir)(e)))?;
        let path = dir.join("lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| Locked::Error(state_err("open", &path)(e)))?;
        match lock_process(&file) {
            Ok(true) => Ok(StateLock {
                dir: dir.to_path_buf(),
                _file: file,
            }),
            Ok(false) => Err(Locked::Busy(path)),
            Err(e) => Err(Locked::Error(state_err("lock", &path)(e))),
        }
    }

    /// Writes what the holder is doing into the lock file (`create of branch x (pid 12)`), for
    /// a command that waits for it to say what it waits for. Best effort: the lock itself is
    /// the record lock, not the text.
    pub fn describe(&self, what: &str) {
        use std::os::unix::fs::FileExt as _;
        let text = format!("{what} (pid {})\n", std::process::id());
        // Written over the old text, then cut to length: a reader never sees an empty file.
        let _ = self
            ._file
            .write_all_at(text.as_bytes(), 0)
            .and_then(|()| self._file.set_len(text.len() as u64));
    }

    /// What the holder of the lock in `dir` said it is doing, when it said.
    pub fn holder(dir: &Path) -> Option<String> {
        let text = std::fs::read_to_string(dir.join("lock")).ok()?;
        let line = text.lines().next()?.trim();
        (!line.is_empty()).then(|| line.to_string())
    }

    /// The journal's path.
    pub fn journal_path(&self) -> PathBuf {
        self.dir.join("journal")
    }

    /// The records a dead create left, if any. A last line cut short by a crash is dropped:
    /// the change it announced was never started, since each change waits for its record to
    /// be synced.
    pub fn leftover(&self) -> Result<Option<Vec<Record>>, StateError> {
        let path = self.journal_path();
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(state_err("read", &path)(e)),
        };
        let mut records = Vec::new();
        for line in BufReader::new(file).split(b'\n') {
            let line = line.map_err(state_err("read", &path))?;
            if let Ok(r) = serde_json::from_slice::<Record>(&line) {
                records.push(r);
            }
        }
        Ok(Some(records))
    }

    /// Starts a journal for a create (replacing a leftover already rolled back).
    pub fn begin(&self, branch: &str) -> Result<Journal, StateError> {
        let path = self.journal_path();
        let file = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .mode(0o600)
            .open(&path)
            .map_err(state_err("create", &path))?;
        let mut j = Journal {
            path,
            dir: self.dir.clone(),
            file,
        };
        j.append(&[Record::Begin {
            branch: branch.into(),
            pid: std::process::id(),
        }])?;
        sync_dir(&j.dir)?;
        Ok(j)
    }

    /// Removes the journal (after a rollback of a dead create).
    pub fn clear(&self) -> Result<(), StateError> {
        remove(&self.journal_path(), &self.dir)
    }
}

impl Drop for StateLock {
    /// The lock goes with the file's close; what the holder said goes first.
    fn drop(&mut self) {
        let _ = self._file.set_len(0);
    }
}

/// Takes a POSIX record lock on the whole file, without waiting: `Ok(false)` when another
/// process holds it. Unlike `flock`, a record lock belongs to the process and is not shared
/// with the children it forks: a git child that hookq was forking when it was killed must not
/// keep a dead create's lock for a moment and hide its journal from the next command.
fn lock_process(file: &File) -> std::io::Result<bool> {
    crate::exec::sys::lock_record(file)
}

/// A live create's journal.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    dir: PathBuf,
    file: File,
}

impl Journal {
    /// Appends `records` and syncs them to disk before returning: the change they announce may
    /// start once this returns.
    pub fn append(&mut self, records: &[Record]) -> Result<(), StateError> {
        let mut buf = Vec::new();
        for r in records {
            serde_json::to_writer(&mut buf, r).map_err(|e| StateError {
                what: "write",
                path: self.path.clone(),
                source: e.into(),
            })?;
            buf.push(b'\n');
        }
        self.file
            .write_all(&buf)
            .and_then(|()| self.file.sync_data())
            .map_err(state_err("write", &self.path))
    }

    /// Appends `record` without syncing it: for what only matters while this machine stays
    /// up (a running hook's process group, which power loss ends too).
    pub fn note(&mut self, record: &Record) -> Result<(), StateError> {
        let mut line = serde_json::to_vec(record).map_err(|e| StateError {
            what: "write",
            path: self.path.clone(),
            source: e.into(),
        })?;
        line.push(b'\n');
        self.file
            .write_all(&line)
            .map_err(state_err("write", &self.path))
    }

    /// The create is over (completed, or rolled back): the journal goes.
    pub fn finish(self) -> Result<(), StateError> {
        remove(&self.path, &self.dir)
    }
}

fn remove(path: &Path, dir: &Path) -> Result<(), StateError> {
    match std::fs::remove_file(path) {
        Ok(()) => sync_dir(dir),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(state_err("remove", path)(e)),
    }
}

fn sync_dir(dir: &Path) -> Result<(), StateError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(state_err("sync", dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_journal_reads_back_and_a_torn_last_line_is_dropped() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("state");
        let lock = StateLock::acquire(&dir).unwrap();
        assert!(lock.leftover().unwrap().is_none());
        let mut j = lock.begin("feature/x").unwrap();
        let wt = Record::Worktree {
            checkout: "/r".into(),
            path: "/w".into(),
        };
        j.append(std::slice::from_ref(&wt)).unwrap();
        drop(j);
        std::fs::OpenOptions::new()
            .append(true)
            .open(lock.journal_path())
            .unwrap()
            .write_all(b"{\"op\":\"branch\",\"chec")
            .unwrap();
        let left = lock.leftover().unwrap().unwrap();
        assert_eq!(left.len(), 2);
        assert_eq!(left[1], wt);
        lock.clear().unwrap();
        assert!(lock.leftover().unwrap().is_none());
    }
}
