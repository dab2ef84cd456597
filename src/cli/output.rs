//! Printing: aligned tables for people, JSON for programs, times as ages or RFC 3339.

use std::io::Write as _;
use std::sync::{Mutex, PoisonError};

use serde::Serialize;

use crate::cli::error::Error;

/// The first failure writing stdout other than a closed pipe.
static STDOUT_FAILED: Mutex<Option<std::io::Error>> = Mutex::new(None);

/// Keeps a failed write to stdout for [`stdout_written`]. A closed pipe is not a failure: the
/// reader had what it wanted (`hookq queue | head -1`).
pub(crate) fn stdout_wrote(r: std::io::Result<()>) {
    if let Err(e) = r
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        let mut failed = STDOUT_FAILED.lock().unwrap_or_else(PoisonError::into_inner);
        failed.get_or_insert(e);
    }
}

/// Flushes stdout; an error if anything the command printed could not be written
/// (`hookq queue --json > /dev/full`), so the exit status says the output was lost.
pub(super) fn stdout_written() -> Result<(), Error> {
    stdout_wrote(std::io::stdout().flush());
    let failed = STDOUT_FAILED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    match failed {
        Some(source) => Err(Error::Io {
            what: "cannot write to",
            path: "stdout".into(),
            source,
        }),
        None => Ok(()),
    }
}

/// Writes `bytes` to stdout as they are (a generated script or page), keeping a failure for
/// [`stdout_written`].
pub(super) fn raw(bytes: &[u8]) {
    stdout_wrote(std::io::stdout().lock().write_all(bytes));
}

/// Prints `value` as pretty JSON on stdout.
pub(super) fn json<T: Serialize + ?Sized>(value: &T) -> Result<(), Error> {
    let text = serde_json::to_string_pretty(value).map_err(|e| Error::Io {
        what: "cannot write JSON to",
        path: "stdout".into(),
        source: e.into(),
    })?;
    outln!("{text}");
    Ok(())
}

/// The line a pass that did something ends with: `ran 3 point(s): 2 command(s), 1 failed,
/// 1 parked`. `None` when the pass found nothing to do.
pub(super) fn ran(r: &hookq::queue::drain::PassReport) -> Option<String> {
    (r.cleared + r.parked > 0 || r.stopped).then(|| {
        format!(
            "ran {} point(s): {} command(s), {} failed, {} parked{}",
            r.cleared + r.parked,
            r.commands,
            r.failed,
            r.parked,
            if r.stopped { "; stopped early" } else { "" }
        )
    })
}

/// Says what a pass left pending for a settled config, on stderr: `note: left 2 point(s)
/// pending: ...`. Nothing when it left none.
pub(super) fn held(r: &hookq::queue::drain::PassReport) {
    if r.held > 0 {
        errln!(
            "note: left {} point(s) pending: config.toml was written less than {}s ago and may be half-written, too recently to clear a point without running it; a later pass decides",
            r.held,
            hookq::queue::config::QUIET.as_secs()
        );
    }
}

/// Says that a pass found the queue paused, on stdout: `queue paused; 3 point(s) left
/// pending`, counted by `left` (`None`: the count could not be read). Nothing when it was not.
pub(super) fn paused(r: &hookq::queue::drain::PassReport, left: impl FnOnce() -> Option<i64>) {
    if !r.paused {
        return;
    }
    let left = left().map_or_else(|| "its".to_owned(), |n| n.to_string());
    outln!("queue paused; {left} point(s) left pending until `hookq queue resume`");
}

/// Prints rows under a header, each column as wide as its widest cell.
pub(super) fn table(header: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut out = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if i + 1 == cells.len() {
                out.push_str(cell);
            } else {
                out.push_str(&format!("{cell:<w$}  "));
            }
        }
        outln!("{}", out.trim_end());
    };
    line(header.to_vec());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
}

pub(super) use hookq::queue::times::{age, rfc3339 as time};

/// An optional value, or `-`.
pub(super) fn or_dash<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "-".into())
}
