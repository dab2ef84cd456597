//! Reading a task's hook logs, `runs/<task>/hooks/<point>-NN.log`: which there are, oldest
//! first, and the last lines of one. Read-only: no lock, no database.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::queue::ids::TaskId;
use crate::queue::phase::Point;
use crate::queue::workspace::Workspace;

/// One log file of a task's hook runs: every run of the point's NN-th command appends to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogFile {
    /// The file.
    pub path: PathBuf,
    /// The point whose command it logs.
    pub point: Point,
    /// The command's 1-based index in the point's array.
    pub index: u32,
    /// Its size in bytes.
    pub size: u64,
    /// When it was last written, unix ms.
    pub modified_ms: i64,
    /// The occurrence its last run was of, read from that run's `--- hookq` header; `None` for
    /// a file with no such header (written by something else, or cut before it).
    pub occurrence: Option<i64>,
}

impl LogFile {
    /// The file's name, `<point>-NN.log`.
    pub fn name(&self) -> String {
        format!("{}-{:02}.log", self.point, self.index)
    }
}

/// The hook logs of `task` (only `point`'s when given), least recently written first, so the
/// newest is last. A task with no log folder has none.
///
/// "Written" is the order the runs happened in: a task's points run in the order of their
/// occurrences, so the files are ordered by the occurrence of their last run, and a point's
/// commands (which run one after another) by their index. The modification time only orders
/// files that name no occurrence: it is too coarse to order runs a few milliseconds apart.
pub fn task_logs(
    ws: &Workspace,
    task: &TaskId,
    point: Option<Point>,
) -> std::io::Result<Vec<LogFile>> {
    let dir = ws.hook_log_dir(task);
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut logs = Vec::new();
    for entry in entries {
        let entry = entry?;
        let Some((p, index)) = entry.file_name().to_str().and_then(parse_name) else {
            continue;
        };
        if point.is_some_and(|want| want != p) {
            continue;
        }
        // A file removed since the listing (a hook cleaning up `runs/`) is skipped.
        let Ok(meta) = std::fs::metadata(entry.path()) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let modified_ms = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        // A file that cannot be read now (removed or replaced since) is ordered by its time.
        let occurrence = last_occurrence(&entry.path()).ok().flatten();
        logs.push(LogFile {
            path: entry.path(),
            point: p,
            index,
            size: meta.len(),
            modified_ms,
            occurrence,
        });
    }
    let key = |l: &LogFile| {
        (
            l.occurrence.is_some(),
            l.occurrence,
            l.modified_ms,
            Point::ALL.iter().position(|p| *p == l.point),
            l.index,
        )
    };
    logs.sort_by_key(key);
    Ok(logs)
}

/// The occurrence named by the last `--- hookq <time> occurrence <id> …` header line of the file
/// at `path`, each run's first line. Reads backwards from the end, a block at a time, so only
/// the last run's output is read.
pub fn last_occurrence(path: &Path) -> std::io::Result<Option<i64>> {
    const BLOCK: u64 = 64 * 1024;
    let mut file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    let mut end = len;
    // The bytes after the last newline seen, still to be joined to what comes before them.
    let mut carry: Vec<u8> = Vec::new();
    while end > 0 {
        let start = end.saturating_sub(BLOCK);
        let mut chunk = vec![0; (end - start) as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut chunk)?;
        chunk.extend_from_slice(&carry);
        // Every complete line in the chunk, last first; the first piece may begin before it.
        let mut rest = &chunk[..];
        while let Some(nl) = rest.iter().rposition(|&b| b == b'\n') {
            if let Some(id) = header_occurrence(&rest[nl + 1..]) {
                return Ok(Some(id));
            }
            rest = &rest[..nl];
        }
        if start == 0 {
            return Ok(header_occurrence(rest));
        }
        // Only a line's beginning tells a header, so an overlong line is carried cut short: a
        // log of one endless line is read once, not copied over and over.
        carry = rest[..rest.len().min(4096)].to_vec();
        end = start;
    }
    Ok(None)
}

/// The occurrence a run's header line names: `--- hookq <time> occurrence <id> ARC_STATE=…`.
fn header_occurrence(line: &[u8]) -> Option<i64> {
    let line = std::str::from_utf8(line.strip_prefix(b"--- hookq ")?).ok()?;
    let (_time, rest) = line.split_once(' ')?;
    let (id, rest) = rest.strip_prefix("occurrence ")?.split_once(' ')?;
    if !rest.starts_with("ARC_STATE=") {
        return None;
    }
    id.parse().ok()
}

/// `<point>-NN.log` read back: the point and NN (two digits, from 01).
fn parse_name(name: &str) -> Option<(Point, u32)> {
    let (point, nn) = name.strip_suffix(".log")?.rsplit_once('-')?;
    if nn.len() != 2 || !nn.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let index: u32 = nn.parse().ok().filter(|&i| i >= 1)?;
    Some((point.parse().ok()?, index))
}

/// The offset in the file at `path` where its last `lines` lines begin (a last line without a
/// newline counts as one). Reads backwards from the end, a block at a time.
pub fn tail_offset(path: &Path, lines: usize) -> std::io::Result<u64> {
    const BLOCK: u64 = 64 * 1024;
    let mut file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    if lines == 0 {
        return Ok(len);
    }
    let mut end = len;
    // A trailing newline ends the last line; it does not start another.
    let mut skip_last = true;
    let mut seen = 0;
    let mut buf = vec![0; BLOCK as usize];
    while end > 0 {
        let start = end.saturating_sub(BLOCK);
        let chunk = &mut buf[..(end - start) as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(chunk)?;
        for (i, &b) in chunk.iter().enumerate().rev() {
            if b != b'\n' {
                skip_last = false;
                continue;
            }
            if skip_last {
                skip_last = false;
                continue;
            }
            seen += 1;
            if seen == lines {
                return Ok(start + i as u64 + 1);
            }
        }
        end = start;
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(
            parse_name("after_merge-01.log"),
            Some((Point::AfterMerge, 1))
        );
        assert_eq!(
            parse_name("after_awaiting_human-99.log"),
            Some((Point::AfterAwaitingHuman, 99))
        );
        for bad in [
            "after_merge-1.log",
            "after_merge-00.log",
            "after_merge-001.log",
            "after_mrge-01.log",
            "after_merge-01.log.tmp",
            "after_merge.log",
        ] {
            assert_eq!(parse_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn last_occurrences() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l");
        let at = |text: &[u8]| {
            std::fs::write(&path, text).unwrap();
            last_occurrence(&path).unwrap()
        };
        let run = |id: i64, out: &str| {
            format!(
                "--- hookq 2026-01-02T03:04:05.678Z occurrence {id} ARC_STATE=review.rework_pending pass 1: echo\n{out}--- hookq exit 0 after 3 ms\n"
            )
        };
        assert_eq!(at(run(3, "x\n").as_bytes()), Some(3));
        assert_eq!(at(format!("{}{}", run(3, ""), run(12, "y\n")).as_bytes()), Some(12));
        // A run's output that only looks like a header further up does not count.
        assert_eq!(at(format!("{}--- hookq occurrence 99\n", run(4, "")).as_bytes()), Some(4));
        // A last run whose output spans many blocks, with no newline at the end.
        let long = format!("{}{}", run(7, ""), "z".repeat(300_000));
        assert_eq!(at(long.as_bytes()), Some(7));
        let lines = format!("{}{}", run(8, ""), "line\n".repeat(40_000));
        assert_eq!(at(lines.as_bytes()), Some(8));
        assert_eq!(at(b""), None);
        assert_eq!(at(b"no header\n\xff\xfe\n"), None);
    }

    #[test]
    fn tail_offsets() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l");
        let at = |text: &str, n: usize| {
            std::fs::write(&path, text).unwrap();
            let off = tail_offset(&path, n).unwrap() as usize;
            text[off..].to_owned()
        };
        assert_eq!(at("a\nb\nc\n", 2), "b\nc\n");
        assert_eq!(at("a\nb\nc", 2), "b\nc");
        assert_eq!(at("a\nb\nc\n", 5), "a\nb\nc\n");
        assert_eq!(at("a\nb\nc\n", 0), "");
        assert_eq!(at("", 3), "");
        assert_eq!(at("\n\n\n", 2), "\n\n");
        let long = format!("{}\nlast\n", "x".repeat(200_000));
        assert_eq!(at(&long, 1), "last\n");
        assert_eq!(at(&long, 2), long);
    }
}
