//! `hookq worktree create --interactive`: which configured repositories a create uses, asked on
//! the terminal. A numbered list with `[x]` marks, every repository chosen at first; a line of
//! numbers toggles them, an empty line accepts. The answer is read from the terminal with the
//! stop of Ctrl-C watched, so a cancel (Ctrl-C, end of input) leaves nothing changed: the
//! create has not started.

use std::io::{Read as _, Write as _};

use hookq::Stop;
use rustix::event::{PollFd, PollFlags, Timespec, poll};

/// How often the wait for the answer looks at the stop.
const TICK: Timespec = Timespec {
    tv_sec: 0,
    tv_nsec: 100_000_000,
};

/// How the question ended without a choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cancel {
    /// Ctrl-C (or another stop signal).
    Interrupted,
    /// The terminal gave end of input (Ctrl-D).
    EndOfInput,
}

/// Asks which of `names` to use; returns the chosen ones in their order, possibly none.
pub(super) fn choose(names: &[String], branch: &str, stop: &Stop) -> Result<Vec<String>, Cancel> {
    let mut chosen = vec![true; names.len()];
    let mut note: Option<String> = None;
    loop {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "repositories for branch {branch} (type numbers to toggle, e.g. \"2 3\"; Enter to accept; Ctrl-C to cancel):"
        );
        for (i, (name, on)) in names.iter().zip(&chosen).enumerate() {
            let _ = writeln!(
                err,
                "  {:>2} [{}] {name}",
                i + 1,
                if *on { 'x' } else { ' ' }
            );
        }
        if let Some(n) = note.take() {
            let _ = writeln!(err, "{n}");
        }
        let _ = write!(err, "> ");
        let _ = err.flush();
        drop(err);
        let line = read_line(stop)?;
        let line = line.trim();
        if line.is_empty() {
            return Ok(names
                .iter()
                .zip(&chosen)
                .filter(|(_, on)| **on)
                .map(|(n, _)| n.clone())
                .collect());
        }
        note = toggle(line, &mut chosen).err();
    }
}

/// Toggles each number of `line` (1-based); a word that is not a listed number changes
/// nothing and is said.
fn toggle(line: &str, chosen: &mut [bool]) -> Result<(), String> {
    let mut picks = Vec::new();
    for word in line.split([' ', ',', '\t']).filter(|w| !w.is_empty()) {
        match word.parse::<usize>() {
            Ok(n) if (1..=chosen.len()).contains(&n) => picks.push(n - 1),
            _ => {
                return Err(format!(
                    "not a number from 1 to {}: {word:?}; nothing was toggled",
                    chosen.len()
                ));
            }
        }
    }
    for i in picks {
        chosen[i] = !chosen[i];
    }
    Ok(())
}

/// One line from stdin (a terminal, in its line mode), watching `stop` while it waits.
fn read_line(stop: &Stop) -> Result<String, Cancel> {
    let stdin = std::io::stdin();
    let mut line = Vec::new();
    loop {
        if stop.graceful() {
            eprintln_cancel();
            return Err(Cancel::Interrupted);
        }
        let mut fds = [PollFd::new(&stdin, PollFlags::IN)];
        // EINTR (the signal itself) and a quiet tick both come back to the stop check.
        if !matches!(poll(&mut fds, Some(&TICK)), Ok(n) if n > 0) {
            continue;
        }
        let mut buf = [0u8; 1024];
        match stdin.lock().read(&mut buf) {
            Ok(0) => {
                eprintln_cancel();
                return Err(Cancel::EndOfInput);
            }
            Ok(n) => {
                line.extend_from_slice(&buf[..n]);
                if line.ends_with(b"\n") {
                    return Ok(String::from_utf8_lossy(&line).into_owned());
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => {
                eprintln_cancel();
                return Err(Cancel::EndOfInput);
            }
        }
    }
}

/// Ends the prompt's line, so the error that follows starts on its own.
fn eprintln_cancel() {
    errln!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_toggle_and_anything_else_toggles_nothing() {
        let mut chosen = vec![true; 3];
        toggle("2 3", &mut chosen).unwrap();
        assert_eq!(chosen, [true, false, false]);
        toggle("3,3 1", &mut chosen).unwrap();
        assert_eq!(chosen, [false, false, false]);
        let e = toggle("1 4", &mut chosen).unwrap_err();
        assert_eq!(e, "not a number from 1 to 3: \"4\"; nothing was toggled");
        assert!(toggle("web", &mut chosen).is_err());
        assert_eq!(chosen, [false, false, false]);
    }
}
