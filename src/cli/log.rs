//! `hookq queue log`: a task's hook logs printed, or followed as a hub writes them (as
//! `pueue log` and `pueue follow` do). Reads files only: no lock, no write.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::time::Duration;

use crate::cli::error::Error;
use hookq::queue::ids::TaskId;
use hookq::queue::logs::{self, LogFile};
use hookq::queue::phase::Point;
use hookq::queue::workspace::Workspace;

use super::app::stop_on_signals;
use super::output;

/// How often `--follow` looks for new output: often enough to read as live, rarely enough to
/// cost nothing (a `stat` of each log file).
const POLL: Duration = Duration::from_millis(200);

/// What `queue log` was asked for.
pub(super) struct Options {
    /// Only this point's logs.
    pub(super) point: Option<Point>,
    /// Only the last N lines of each file (before following).
    pub(super) tail: Option<usize>,
    /// Keep printing until a signal.
    pub(super) follow: bool,
    /// The files' paths and sizes as JSON.
    pub(super) json: bool,
}

impl Options {
    /// The task and options of `queue log` as given on the command line, checked.
    pub(super) fn parse(
        task: String,
        point: Option<String>,
        tail: Option<usize>,
        follow: bool,
        json: bool,
    ) -> Result<(TaskId, Options), Error> {
        let task = TaskId::new(task).map_err(|e| Error::Usage(e.to_string()))?;
        let point = point
            .map(|p| p.parse::<Point>())
            .transpose()
            .map_err(|e| Error::Usage(e.to_string()))?;
        Ok((
            task,
            Options {
                point,
                tail,
                follow,
                json,
            },
        ))
    }
}

/// Prints the logs of `task`. `known` says whether the queue (`place`, as the user sees it) has
/// the task, asked only when no log is found: a queue's logs stay on the host that ran its hooks,
/// whichever database holds the queue. `shared_logs`, for a queue other hosts drain too, says
/// where the logs of hooks this host did not run are. `pruned` are the logs the task's history
/// rows name that are gone, each shown as `pruned`.
pub(super) fn run(
    ws: &Workspace,
    place: &str,
    shared_logs: Option<&str>,
    known: impl FnOnce() -> Result<bool, Error>,
    pruned: Vec<PathBuf>,
    task: &TaskId,
    opts: Options,
) -> Result<(), Error> {
    let list = || {
        logs::task_logs(ws, task, opts.point).map_err(|source| Error::Io {
            what: "cannot read",
            path: ws.hook_log_dir(task),
            source,
        })
    };
    let found = list()?;
    let pruned: Vec<String> = pruned
        .iter()
        .filter_map(|p| p.file_name()?.to_str())
        .filter(|name| {
            logs::is_log_name(name, opts.point) && !found.iter().any(|l| l.name() == *name)
        })
        .map(str::to_owned)
        .collect();
    if found.is_empty() && pruned.is_empty() && !known()? {
        return Err(Error::NotFound(format!(
            "no task {task} in {place}, and no hook logs for it"
        )));
    }
    if opts.json {
        return output::json(&found);
    }
    if found.is_empty() && pruned.is_empty() && !opts.follow {
        let of = opts.point.map(|p| format!(" of {p}")).unwrap_or_default();
        match shared_logs {
            Some(where_) => outln!("no hook logs{of} for task {task} on this host: {where_}"),
            None => outln!("no hook logs{of} for task {task} yet"),
        }
        return Ok(());
    }
    // Before anything is printed: a follower that printed is one Ctrl-C ends cleanly.
    let stop = opts.follow.then(stop_on_signals);
    let mut out = Printer::default();
    // Older than any log still there: the pruned first.
    for name in &pruned {
        if !out.pruned(name) {
            return Ok(());
        }
    }
    for log in &found {
        let from = match opts.tail {
            Some(n) => match logs::tail_offset(&log.path, n) {
                Ok(from) => from,
                // Pruned since it was listed: `print` says so.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
                Err(source) => {
                    return Err(Error::Io {
                        what: "cannot read",
                        path: log.path.clone(),
                        source,
                    });
                }
            },
            None => 0,
        };
        if !out.print(log, from)? {
            return Ok(());
        }
    }
    let Some(stop) = stop else {
        return Ok(());
    };
    while !stop.graceful() {
        if !out.flush() {
            return Ok(());
        }
        let mut slept = Duration::ZERO;
        while slept < POLL && !stop.graceful() {
            std::thread::sleep(Duration::from_millis(20));
            slept += Duration::from_millis(20);
        }
        let listed = list()?;
        // A log followed so far and gone now was pruned by a pass meanwhile.
        let gone: Vec<LogFile> = out
            .followed
            .iter()
            .filter(|l| !listed.iter().any(|now| now.path == l.path))
            .cloned()
            .collect();
        for log in gone {
            out.offsets.remove(&log.path);
            out.followed.retain(|l| l.path != log.path);
            if !out.pruned(&log.name()) {
                return Ok(());
            }
        }
        for log in listed {
            let from = out.offsets.get(&log.path).copied().unwrap_or(0);
            // Shorter than what was printed: the file was replaced; print it from the start.
            let from = if log.size < from { 0 } else { from };
            if log.size > from && !out.print(&log, from)? {
                return Ok(());
            }
        }
    }
    out.flush();
    Ok(())
}

/// Prints log files under `==> name <==` headers, remembering how far each was printed.
#[derive(Default)]
struct Printer {
    offsets: HashMap<PathBuf, u64>,
    /// The logs printed, to tell when one goes.
    followed: Vec<LogFile>,
    /// The file printed last, whose header need not be repeated.
    current: Option<PathBuf>,
    /// Whether the last byte printed ended a line.
    mid_line: bool,
    /// Whether anything was printed.
    started: bool,
}

impl Printer {
    /// Prints `log` from byte `from` to its end; false when stdout's reader is gone.
    fn print(&mut self, log: &LogFile, from: u64) -> Result<bool, Error> {
        let read_err = |source| Error::Io {
            what: "cannot read",
            path: log.path.clone(),
            source,
        };
        let mut file = match std::fs::File::open(&log.path) {
            Ok(f) => f,
            // Removed since it was listed: pruned by a pass, or by a hook cleaning up `runs/`.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(self.pruned(&log.name()));
            }
            Err(e) => return Err(read_err(e)),
        };
        if !self.followed.iter().any(|l| l.path == log.path) {
            self.followed.push(log.clone());
        }
        file.seek(SeekFrom::Start(from)).map_err(read_err)?;
        if self.current.as_deref() != Some(log.path.as_path()) {
            let mut header = String::new();
            if self.mid_line {
                header.push('\n');
            }
            if self.started {
                header.push('\n');
            }
            header.push_str(&format!("==> {} <==\n", log.name()));
            if !self.emit(header.as_bytes()) {
                return Ok(false);
            }
            self.current = Some(log.path.clone());
            self.started = true;
        }
        let mut at = from;
        let mut buf = vec![0; 64 * 1024];
        loop {
            let n = file.read(&mut buf).map_err(read_err)?;
            if n == 0 {
                break;
            }
            at += n as u64;
            if !self.emit(&buf[..n]) {
                return Ok(false);
            }
            self.mid_line = buf[n - 1] != b'\n';
        }
        self.offsets.insert(log.path.clone(), at);
        Ok(true)
    }

    /// Says that the log named `name` is gone, under its header; false when stdout's reader is
    /// gone.
    fn pruned(&mut self, name: &str) -> bool {
        let mut text = String::new();
        if self.mid_line {
            text.push('\n');
        }
        if self.started {
            text.push('\n');
        }
        text.push_str(&format!(
            "==> {name} <==\npruned: the log of these runs is gone\n"
        ));
        self.current = None;
        self.mid_line = false;
        self.started = true;
        self.emit(text.as_bytes())
    }

    /// Writes to stdout; false when that failed: its reader is gone (`hookq queue log -f t1 |
    /// head`), or it cannot be written, which the exit status then says.
    fn emit(&self, bytes: &[u8]) -> bool {
        Self::wrote(std::io::stdout().lock().write_all(bytes))
    }

    /// Flushes stdout, so a follower sees each line as it comes; false when that failed.
    fn flush(&self) -> bool {
        Self::wrote(std::io::stdout().flush())
    }

    fn wrote(r: std::io::Result<()>) -> bool {
        let ok = r.is_ok();
        output::stdout_wrote(r);
        ok
    }
}
