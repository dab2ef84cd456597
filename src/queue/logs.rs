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
/// The line's first [`HEADER_PREFIX`] bytes are enough.
fn header_occurrence(line: &[u8]) -> Option<i64> {
    let word = |s: &[u8]| -> Option<(usize, usize)> {
        let end = s.iter().position(|&b| b == b' ')?;
        Some((end, end + 1))
    };
    let rest = line.strip_prefix(b"--- hookq ")?;
    let (_, next) = word(rest)?;
    let rest = rest[next..].strip_prefix(b"occurrence ")?;
    let (end, next) = word(rest)?;
    if !rest[next..].starts_with(b"ARC_STATE=") {
        return None;
    }
    std::str::from_utf8(&rest[..end]).ok()?.parse().ok()
}

/// How much of a line's beginning tells whether it is a run's header: the time stamp, the
/// occurrence id and `ARC_STATE=` fit, whatever the command line after them.
const HEADER_PREFIX: u64 = 128;

/// Drops the oldest runs of the log at `path` when it holds more than `max` bytes: what is
/// left begins at a run's header line and holds at most `max` bytes, so every run kept is
/// whole, the newest among them; a newest run bigger than `max` alone goes too. Whether it cut
/// anything.
///
/// Called only by the runner before a command appends to the file, never while one writes to
/// it. The rest is written to `<name>.trim` beside it (owner-only), synced, and renamed over
/// the log: a crash leaves either the log as it was or as trimmed, never a part of it. A log
/// opened ahead of its command ([`crate::exec::OpenedLog`]) sees the file replaced and is
/// opened again.
pub fn trim(path: &Path, max: u64) -> std::io::Result<bool> {
    use std::io::{BufRead, BufReader};
    use std::os::unix::fs::OpenOptionsExt;
    // One `stat` on the path between two commands; the file is read only when it is over.
    match std::fs::metadata(path) {
        Ok(meta) if meta.len() > max => {}
        Ok(_) => return Ok(false),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    }
    let mut file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    if len <= max {
        return Ok(false);
    }
    // The first header line that starts at `len - max` or later; the byte before it tells
    // whether a line starts right there.
    let from = len - max;
    file.seek(SeekFrom::Start(from - 1))?;
    let mut reader = BufReader::new(&mut file);
    let mut at = from - 1;
    let mut cut = len;
    let mut line = Vec::new();
    at += reader.skip_until(b'\n')? as u64;
    while at < len {
        line.clear();
        let n = reader
            .by_ref()
            .take(HEADER_PREFIX)
            .read_until(b'\n', &mut line)? as u64;
        if n == 0 {
            break;
        }
        if header_occurrence(&line).is_some() {
            cut = at;
            break;
        }
        at += n;
        if line.last() != Some(&b'\n') {
            at += reader.skip_until(b'\n')? as u64;
        }
    }
    drop(reader);
    let mut name = path.file_name().unwrap_or_default().to_owned();
    name.push(TRIM_SUFFIX);
    let tmp = path.with_file_name(name);
    match std::fs::remove_file(&tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)?;
    file.seek(SeekFrom::Start(cut))?;
    std::io::copy(&mut file.take(len - cut), &mut out)?;
    out.sync_all()?;
    std::fs::rename(&tmp, path)?;
    Ok(true)
}

/// What [`trim`] adds to a log's name for the file it writes the kept runs to.
const TRIM_SUFFIX: &str = ".trim";

/// Removes the hook logs of `task` (and a trim's leftover file) from `runs/<task>/hooks/`, then
/// that folder and `runs/<task>/` if nothing else is left in them; anything else there stays.
/// How many files went. A task with no logs has nothing to remove.
pub fn remove_task_logs(ws: &Workspace, task: &TaskId) -> std::io::Result<usize> {
    let dir = ws.hook_log_dir(task);
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut removed = 0;
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let ours = name.to_str().is_some_and(|n| {
            parse_name(n.strip_suffix(TRIM_SUFFIX).unwrap_or(n)).is_some()
        });
        if !ours || !entry.file_type()?.is_file() {
            continue;
        }
        match std::fs::remove_file(entry.path()) {
            Ok(()) => removed += 1,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    for d in [Some(dir.as_path()), dir.parent()].into_iter().flatten() {
        match std::fs::remove_dir(d) {
            Err(e)
                if !matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::DirectoryNotEmpty
                ) =>
            {
                return Err(e);
            }
            _ => {}
        }
    }
    Ok(removed)
}

/// Whether `name` is a hook log's (`<point>-NN.log`), and `point`'s when one is given.
pub fn is_log_name(name: &str, point: Option<Point>) -> bool {
    parse_name(name).is_some_and(|(p, _)| point.is_none_or(|want| want == p))
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

    /// A run as the executor writes it, `out` its output.
    fn run(id: i64, out: &str) -> String {
        format!(
            "--- hookq 2026-01-02T03:04:05.678Z occurrence {id} ARC_STATE=failed.x pass 1: echo {}\n{out}--- hookq exit 0 after 3 ms\n",
            "é".repeat(100)
        )
    }

    #[test]
    fn trimming_keeps_whole_newest_runs() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("after_fail-01.log");
        let runs: Vec<String> = (1..=5)
            .map(|i| run(i, &format!("line {i}\n").repeat(20)))
            .collect();
        let all = runs.concat();
        std::fs::write(&path, &all).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let len = all.len() as u64;
        assert!(!trim(&path, len).unwrap(), "not over: untouched");
        // Room for two runs and a half: the two newest stay, whole.
        let room = (runs[3].len() + runs[4].len() + runs[2].len() / 2) as u64;
        assert!(trim(&path, room).unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), runs[3..].concat());
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(!dir.path().join("after_fail-01.log.trim").exists());
        // Exactly the newest run's size: it stays.
        assert!(trim(&path, runs[4].len() as u64).unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), runs[4]);
        // Output that only looks like a header, or a newest run bigger than the cap alone.
        let forged = format!("{}{}", run(6, "x\n--- hookq occurrence 99\n"), "z".repeat(300));
        std::fs::write(&path, format!("{}{forged}", runs[0])).unwrap();
        assert!(trim(&path, forged.len() as u64).unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), forged);
        assert!(trim(&path, 100).unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "");
        assert!(!trim(&dir.path().join("absent.log"), 10).unwrap());
    }

    #[test]
    fn removing_a_tasks_logs_leaves_everything_else() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::at(dir.path());
        let (t1, t2) = (TaskId::new("t1").unwrap(), TaskId::new("t2").unwrap());
        for t in [&t1, &t2] {
            let hooks = ws.hook_log_dir(t);
            std::fs::create_dir_all(&hooks).unwrap();
            for name in ["after_fail-01.log", "after_merge-02.log", "after_merge-02.log.trim"] {
                std::fs::write(hooks.join(name), "x").unwrap();
            }
        }
        let runs = ws.hook_log_dir(&t1).parent().unwrap().parent().unwrap().to_owned();
        assert_eq!(remove_task_logs(&ws, &t1).unwrap(), 3);
        assert!(!runs.join("t1").exists(), "its empty folders went");
        assert_eq!(task_logs(&ws, &t2, None).unwrap().len(), 2, "another task's stay");
        // Something else in the folder: it and the folders stay.
        std::fs::write(ws.hook_log_dir(&t2).join("notes.txt"), "mine").unwrap();
        std::fs::write(runs.join("t2").join("other"), "mine").unwrap();
        assert_eq!(remove_task_logs(&ws, &t2).unwrap(), 3);
        assert!(ws.hook_log_dir(&t2).join("notes.txt").exists());
        assert!(runs.join("t2").join("other").exists());
        assert_eq!(remove_task_logs(&ws, &t1).unwrap(), 0);
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
