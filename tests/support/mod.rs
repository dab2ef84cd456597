//! What the integration-test binaries share: the binary under test, a scratch workspace with a
//! home of its own (`workspace`), running a command with a bounded wait (`run`), real git
//! repositories (`git`), a pseudo-terminal (`pty`), the JSON Schema checker (`schema`), the one
//! WebDriver client for headless Chromium (`browser`), the one `hookq ui` launcher (`ui`), the
//! one bounded wait ([`eventually`]) and hang bound ([`HANG`]), the rule for a test this machine
//! lacks the programs for ([`skipped`]); and on top of them each model's own workspace (`queue`, `agent`, `lifecycle`), which runs the real
//! `hookq` binary with a pinned environment and reads what that model leaves behind.

pub mod agent;
mod bound;
pub mod browser;
pub mod git;
pub mod lifecycle;
pub mod logs;
pub mod merged;
pub mod pty;
pub mod queue;
pub mod run;
pub mod schema;
pub mod ui;
pub mod workspace;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use bound::{HANG, within};

/// The binary under test.
pub const HOOKQ: &str = env!("CARGO_BIN_EXE_hookq");

/// Polls `f` every few milliseconds until it holds; fails the test, naming `what`, once
/// [`HANG`] has passed. The one way a test waits for something it can observe (a line, a
/// file, a row) rather than sleeping.
#[track_caller]
pub fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    poll(what, POLL, || f().then_some(()), String::new);
}

/// How often [`eventually`] looks again: often enough that a test does not idle, rarely enough
/// that the polling does not compete with what it waits for.
pub const POLL: Duration = Duration::from_millis(20);

/// The one bounded wait under [`eventually`]: calls `f` every `every` until it gives `Some`, and
/// fails the test naming `what` once [`HANG`] has passed, followed by what `state` says then (a
/// process's stderr, the text a terminal showed), so a hang explains itself.
#[track_caller]
pub fn poll<T>(
    what: &str,
    every: Duration,
    f: impl FnMut() -> Option<T>,
    state: impl FnOnce() -> String,
) -> T {
    within(HANG, every, f).unwrap_or_else(|| {
        let state = state();
        if state.is_empty() {
            panic!("gave up after {HANG:?} waiting for {what}");
        }
        panic!("gave up after {HANG:?} waiting for {what}; then:\n{state}");
    })
}

/// `fixtures/` in the repository.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// The name the test harness gives test `name` of the module whose `module_path!()` is `module`:
/// the module path without the binary's crate name. What `--exact` selects when a test runs its
/// own binary again as a child.
pub fn test_path(module: &str, name: &str) -> String {
    let within = module.split_once("::").map_or("", |(_, rest)| rest);
    if within.is_empty() {
        name.to_owned()
    } else {
        format!("{within}::{name}")
    }
}

/// Whether this run is CI's (`CI` set to anything but empty, `0` or `false`), which installs
/// every program the tests need.
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !matches!(v.as_str(), "" | "0" | "false"))
}

/// Says that `test` did not run, as this machine lacks a program it needs (`why`: what is
/// missing and how to install it): one `SKIPPED` line, and the test passes. Under CI, which
/// installs everything, that is a failure. The line goes to the test run's own stderr, which
/// the harness does not capture, so the run shows it (an `eprintln!` would vanish with a
/// passing test's captured output).
pub fn skipped(test: &str, why: &str) {
    assert!(!under_ci(), "{test} cannot run: {why}; under CI it must");
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
}
