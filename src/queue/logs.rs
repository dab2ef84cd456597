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
}

impl LogFile {
    /// The file's name, `<point>-NN.log`.
    pub fn name(&self) -> String {
        format!("{}-{:02}.log", self.point, self.index)
    }
}

/// The hook logs of `task` (only `point`'s when given), least recently written first, so the
/// newest is last. A task with no log folder has none.
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
        logs.push(LogFile {
            path: entry.path(),
            point: p,
            index,
            size: meta.len(),
            modified_ms,
        });
    }
    logs.sort_by(|a, b| {
        (
            a.modified_ms,
            Point::ALL.iter().position(|p| *p == a.point),
            a.index,
        )
            .cmp(&(
                b.modified_ms,
                Point::ALL.iter().position(|p| *p == b.point),
                b.index,
            ))
    });
    Ok(logs)
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
