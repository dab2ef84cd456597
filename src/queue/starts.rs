//! The start log: points a pass started that the database does not count as started yet.
//!
//! Each pending point counts the passes that started it without clearing it, so
//! that a point whose command kills its runner is parked after `queue.max_interrupted_runs`.
//! Committing that count before every point's first command would cost the drain a SQLite commit
//! a point, on the critical path between two commands (docs/design.md has the figure). Instead the
//! runner appends one line, `<occurrence id> <start time, unix ms>\n`, to `arc.db-starts`
//! before any of the command runs (at its gate, see [`crate::exec::run_gated`]): one `write`
//! into the page cache, which outlives a killed runner just as the drain's relaxed commits do
//! (power loss can undo either; at worst a point is then counted once less). The lines are folded into `pending_hooks` (`passes + 1`,
//! `last_started_ms`) with the drain's next batch of clears, or by the next pass when the runner
//! died first, and the file is emptied after each fold (a parallel pass's workers wait for the
//! fold to finish before they append). Only the holder of the runner lock writes it, from any of
//! its threads.
//!
//! Folding is idempotent: a line counts only when its time is later than the point's
//! `last_started_ms`, and a pass always starts a point later than the last start recorded for
//! it. A line folded twice (the runner killed between the commit and emptying the file) counts
//! once. Readers apply the same rule to the rows they read, reading the file before the
//! database, so `queue` shows a running or interrupted point as started.

use std::collections::HashMap;
use std::fs::File;
use std::io::{ErrorKind, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// One start: occurrence `id` started at `ms` (unix ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Start {
    /// The occurrence id.
    pub id: i64,
    /// When its first command was about to start, unix ms.
    pub ms: i64,
}

/// Where the start log of the database at `db` lives: beside it, as SQLite's `-wal` does.
pub fn path_for(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push("-starts");
    PathBuf::from(name)
}

/// Reads the starts in the file at `path`; none when it does not exist. A line that is not two
/// numbers (the tail of a write cut short by a full disk) is skipped: that start is not counted.
pub fn read(path: &Path) -> std::io::Result<Vec<Start>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    Ok(parse(&bytes))
}

fn parse(bytes: &[u8]) -> Vec<Start> {
    let complete = bytes
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(&bytes[..0], |end| &bytes[..end]);
    complete
        .split(|&b| b == b'\n')
        .filter_map(|line| {
            let line = std::str::from_utf8(line).ok()?;
            let (id, ms) = line.split_once(' ')?;
            Some(Start {
                id: id.parse().ok()?,
                ms: ms.parse().ok()?,
            })
        })
        .collect()
}

/// The starts grouped by occurrence, each group in the order written.
pub fn by_id(starts: &[Start]) -> HashMap<i64, Vec<Start>> {
    let mut map: HashMap<i64, Vec<Start>> = HashMap::new();
    for s in starts {
        map.entry(s.id).or_default().push(*s);
    }
    map
}

/// Applies the starts of occurrence `id` to its counted `passes` and `last_started_ms`, as a fold
/// would: each start later than the last one counted adds a pass.
pub fn apply(starts: &[Start], id: i64, passes: &mut i64, last_started_ms: &mut Option<i64>) {
    for s in starts.iter().filter(|s| s.id == id) {
        if last_started_ms.is_none_or(|last| s.ms > last) {
            *passes += 1;
            *last_started_ms = Some(s.ms);
        }
    }
}

/// The runner's handle on the file: appends starts, empties it once they are folded. The file
/// is opened again by its path after each emptying, so a file removed or replaced from outside
/// is not written to after it went.
#[derive(Debug)]
pub struct StartLog {
    path: PathBuf,
    file: Option<File>,
    /// Starts appended through this handle and not folded yet.
    unfolded: Vec<Start>,
    /// An append failed, perhaps after writing part of its line (a full disk): the next one
    /// begins with a newline, so that part cannot join the next line into another id.
    torn: bool,
}

impl StartLog {
    /// The start log at `path`; nothing is opened until the first append.
    pub fn new(path: PathBuf) -> Self {
        Self {
            path,
            file: None,
            unfolded: Vec::new(),
            torn: false,
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `start` in one `write` (creating the file, owner-only, when absent). An empty
    /// line before it, after a failed append, is skipped by readers.
    pub fn append(&mut self, start: Start) -> std::io::Result<()> {
        let file = match &mut self.file {
            Some(f) => f,
            None => self.file.insert(
                std::fs::OpenOptions::new()
                    .append(true)
                    .create(true)
                    .mode(0o600)
                    .open(&self.path)?,
            ),
        };
        let line = format!(
            "{}{} {}\n",
            if self.torn { "\n" } else { "" },
            start.id,
            start.ms
        );
        if let Err(e) = file.write_all(line.as_bytes()) {
            self.torn = true;
            return Err(e);
        }
        self.torn = false;
        self.unfolded.push(start);
        Ok(())
    }

    /// Starts appended through this handle and not folded yet.
    pub fn unfolded(&self) -> &[Start] {
        &self.unfolded
    }

    /// Empties the file once everything in it is folded into the database. Until that
    /// succeeds the starts stay unfolded here too (folding them again counts nothing twice).
    pub fn truncate(&mut self) -> std::io::Result<()> {
        self.file = None;
        match std::fs::OpenOptions::new().write(true).open(&self.path) {
            Ok(f) => f.set_len(0)?,
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        self.unfolded.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torn_or_foreign_line_is_skipped() {
        assert_eq!(
            parse(b"1 100\nx y\n2 200\n3 3"),
            [Start { id: 1, ms: 100 }, Start { id: 2, ms: 200 }]
        );
        assert!(parse(b"").is_empty());
        assert!(
            parse(b"7 70").is_empty(),
            "no newline: the write was cut short"
        );
    }

    #[test]
    fn a_line_cut_short_by_a_failed_append_never_joins_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("arc.db-starts");
        let mut log = StartLog::new(path.clone());
        log.append(Start { id: 5, ms: 50 }).unwrap();
        // The disk fills: the write fails after the first byte of `1 100\n` reached the file.
        log.file = Some(
            std::fs::OpenOptions::new()
                .append(true)
                .open("/dev/full")
                .unwrap(),
        );
        assert!(log.append(Start { id: 1, ms: 100 }).is_err());
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"1")
            .unwrap();
        log.file = None;
        log.append(Start { id: 2, ms: 200 }).unwrap();
        log.append(Start { id: 3, ms: 300 }).unwrap();
        assert_eq!(
            read(&path).unwrap(),
            [
                Start { id: 5, ms: 50 },
                Start { id: 2, ms: 200 },
                Start { id: 3, ms: 300 }
            ],
            "not occurrence 12"
        );
    }

    #[test]
    fn applying_a_start_twice_counts_it_once() {
        let starts = [
            Start { id: 1, ms: 100 },
            Start { id: 2, ms: 150 },
            Start { id: 1, ms: 200 },
        ];
        let (mut passes, mut last) = (0, None);
        apply(&starts, 1, &mut passes, &mut last);
        assert_eq!((passes, last), (2, Some(200)));
        // Already folded: the same lines change nothing.
        apply(&starts, 1, &mut passes, &mut last);
        assert_eq!((passes, last), (2, Some(200)));
        // Folded up to the first: only the second counts.
        let (mut passes, mut last) = (1, Some(100));
        apply(&starts, 1, &mut passes, &mut last);
        assert_eq!((passes, last), (2, Some(200)));
    }

    #[test]
    fn appends_and_truncates() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_for(&dir.path().join("arc.db"));
        assert!(path.ends_with("arc.db-starts"));
        assert!(read(&path).unwrap().is_empty(), "absent: no starts");
        let mut log = StartLog::new(path.clone());
        log.append(Start { id: 4, ms: 40 }).unwrap();
        log.append(Start { id: 5, ms: 50 }).unwrap();
        assert_eq!(read(&path).unwrap(), log.unfolded());
        log.truncate().unwrap();
        assert!(read(&path).unwrap().is_empty() && log.unfolded().is_empty());
        log.append(Start { id: 6, ms: 60 }).unwrap();
        assert_eq!(read(&path).unwrap(), [Start { id: 6, ms: 60 }]);
        // A handle that never appended empties what another left.
        StartLog::new(path.clone()).truncate().unwrap();
        assert!(read(&path).unwrap().is_empty());
        // Removed from outside: once emptied, the handle writes to the file at the path again.
        log.append(Start { id: 7, ms: 70 }).unwrap();
        std::fs::remove_file(&path).unwrap();
        log.truncate().unwrap();
        log.append(Start { id: 8, ms: 80 }).unwrap();
        assert_eq!(read(&path).unwrap(), [Start { id: 8, ms: 80 }]);
    }
}
