//! Hostile hook commands: each is followed by a well-behaved command that must still
//! run, the runner must finish within timeout + grace + slack, and the log must say what
//! happened. The slack is generous: it only tells "bounded by the timeout" from "hung".

use crate::support::queue as common;

use std::time::Duration;

use common::{Config, Ws};

/// The timeout of the commands that must reach it: room on a loaded machine for the shell to
/// print and set its trap first.
const TIMEOUT_SECS: u64 = 5;
/// The timeout of every other command: it only catches a hang.
const GENEROUS_SECS: u64 = 120;
const GRACE_SECS: u64 = 1;
/// Room for a loaded 2-core machine; a hang would blow far past it.
const SLACK: Duration = Duration::from_secs(20);

struct Case {
    ws: Ws,
    out: common::Out,
}

/// Runs `line` as the first `after_fail` command, then `echo next`, in one pass, each with
/// [`GENEROUS_SECS`].
fn hostile(line: &str, max_log_bytes: Option<u64>) -> Case {
    hostile_within(line, max_log_bytes, GENEROUS_SECS)
}

/// [`hostile`] with a timeout of `timeout_secs`.
fn hostile_within(line: &str, max_log_bytes: Option<u64>, timeout_secs: u64) -> Case {
    let ws = Ws::init();
    let next = ws.base().join("next.txt");
    ws.write(&Config {
        timeout_secs,
        grace_secs: GRACE_SECS,
        max_log_bytes,
        hooks: format!(
            "after_fail = [{}, 'echo next >> {}']\n",
            toml_literal(line),
            next.display()
        ),
        ..Config::default()
    });
    ws.hookq(&["task", "add", "t1", "--plan", "p"]).ok();
    ws.hookq(&["task", "move", "t1", "failed.x", "--no-run"])
        .ok();
    let limit = Duration::from_secs(timeout_secs + GRACE_SECS) + SLACK;
    let out = ws.hookq_within(&["run"], &[], limit);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    assert_eq!(
        std::fs::read_to_string(&next).unwrap(),
        "next\n",
        "the next command did not run"
    );
    assert!(ws.pending().is_empty(), "the point was not cleared");
    Case { ws, out }
}

/// A TOML multi-line literal string: the line as it is, whatever quotes it holds.
fn toml_literal(line: &str) -> String {
    assert!(!line.contains("'''"));
    format!("'''{line}'''")
}

impl Case {
    fn first(&self) -> common::History {
        self.ws
            .history()
            .into_iter()
            .find(|h| h.command_index == Some(1))
            .unwrap()
    }

    fn duration(&self) -> Duration {
        let ms: i64 = self
            .ws
            .db()
            .query_row(
                "SELECT duration_ms FROM hook_history WHERE command_index = 1",
                [],
                |r| r.get(0),
            )
            .unwrap();
        Duration::from_millis(ms as u64)
    }

    fn log(&self) -> Vec<u8> {
        std::fs::read(self.ws.log_path("t1", "after_fail", 1)).unwrap()
    }

    /// The command's output: the bytes between the header line and the footer line.
    fn output(&self) -> Vec<u8> {
        let log = self.log();
        let start = log.iter().position(|&b| b == b'\n').unwrap() + 1;
        let footer = log[..log.len() - 1]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1);
        log[start..footer].to_vec()
    }

    fn footer(&self) -> String {
        let text = String::from_utf8_lossy(&self.log()).into_owned();
        text.lines().last().unwrap().to_owned()
    }

    fn assert_bounded(&self) {
        let d = self.duration();
        assert!(
            d <= Duration::from_secs(TIMEOUT_SECS + GRACE_SECS) + SLACK,
            "took {d:?}"
        );
    }
}

fn pid_alive(pid: i32) -> bool {
    rustix::process::Pid::from_raw(pid)
        .is_some_and(|p| rustix::process::test_kill_process(p).is_ok())
}

fn wait_gone(pid: i32) {
    crate::support::eventually(&format!("process {pid} to end after its timeout"), || {
        !pid_alive(pid)
            || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| s.contains(") Z "))
    });
}

#[test]
fn sleeps_forever_with_a_grandchild_holding_stdout() {
    let ws_pid = tempfile::NamedTempFile::new().unwrap();
    let pidfile = ws_pid.path().display().to_string();
    let c = hostile_within(
        &format!("sleep 1000 & echo $! > {pidfile}; echo started; sleep 1000"),
        None,
        TIMEOUT_SECS,
    );
    let h = c.first();
    assert_eq!(h.outcome, "timed_out");
    c.assert_bounded();
    assert_eq!(c.out.warnings().len(), 1, "{}", c.out.describe());
    assert!(
        c.out.warnings()[0].contains("after_fail-01")
            && c.out.warnings()[0].contains("): timed out (SIGTERM")
    );
    assert_eq!(c.output(), b"started\n");
    assert!(c.footer().contains("timed out"), "{}", c.footer());
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    wait_gone(pid);
}

#[test]
fn ignores_sigterm() {
    let c = hostile_within(
        "trap '' TERM; echo stubborn; sleep 1000",
        None,
        TIMEOUT_SECS,
    );
    assert_eq!(c.first().outcome, "timed_out");
    c.assert_bounded();
    assert!(c.footer().contains("SIGKILL"), "{}", c.footer());
    assert_eq!(c.output(), b"stubborn\n");
}

#[test]
fn daemonizes_and_keeps_the_log_open() {
    let pidfile = tempfile::NamedTempFile::new().unwrap();
    let p = pidfile.path().display().to_string();
    let c = hostile(
        &format!("setsid sh -c 'echo $$ > {p}; while :; do sleep 1; done' & echo detached"),
        None,
    );
    let h = c.first();
    assert_eq!(h.outcome, "ok");
    // It returned as soon as the command itself exited, not at the timeout.
    assert!(
        c.duration() < Duration::from_secs(GENEROUS_SECS),
        "waited for the daemon: {:?}",
        c.duration()
    );
    assert!(c.output().starts_with(b"detached\n"));
    let mut pid = None;
    crate::support::eventually("the daemon's pid", || {
        pid = std::fs::read_to_string(&p)
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok());
        pid.is_some()
    });
    let pid = pid.unwrap();
    // The daemon left hookq's process group on purpose; hookq leaves it alone. Clean up.
    let _ = rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid).unwrap(),
        rustix::process::Signal::KILL,
    );
}

#[test]
fn prints_a_gibibyte() {
    let cap = 1 << 20;
    let c = hostile("head -c 1073741824 /dev/zero", Some(cap));
    assert_eq!(c.first().outcome, "ok");
    let out = c.output();
    assert!(out.starts_with(&vec![0u8; cap as usize]));
    let marker = &out[cap as usize..];
    // The output did not end a line, so the marker starts on a new one.
    assert!(
        marker.starts_with(b"\n--- hookq output cut here: more than 1048576 bytes"),
        "{:?}",
        String::from_utf8_lossy(&marker[..marker.len().min(200)])
    );
    assert!(
        c.log().len() < cap as usize + 4096,
        "log is {} bytes",
        c.log().len()
    );
}

#[test]
fn prints_invalid_utf8_and_nul_bytes() {
    let c = hostile(r"printf 'a\000b\377\376\n\300\000'", None);
    assert_eq!(c.first().outcome, "ok");
    let out = c.output();
    // The bytes as they were; hookq adds one newline before its footer since the output did not
    // end with one.
    assert_eq!(out, b"a\0b\xff\xfe\n\xc0\0\n");
}

#[test]
fn closes_its_output_at_once() {
    let c = hostile("exec >&- 2>&-; sleep 1; true", None);
    assert_eq!(c.first().outcome, "ok");
    assert_eq!(c.output(), b"");
    assert!(c.footer().starts_with("--- hookq exit 0"), "{}", c.footer());
}

#[test]
fn exits_by_a_signal() {
    let c = hostile("echo dying; kill -SEGV $$", None);
    let h = c.first();
    assert_eq!(h.outcome, "signalled");
    assert_eq!(h.signal, Some(11));
    assert_eq!(c.out.warnings().len(), 1, "{}", c.out.describe());
    assert!(c.footer().contains("signal 11"), "{}", c.footer());
}

#[test]
fn reads_stdin() {
    let c = hostile("cat; read x; echo \"read:[$x] status:$?\"", None);
    assert_eq!(c.first().outcome, "ok");
    assert_eq!(c.output(), b"read:[] status:1\n");
}
