//! Hostile hooks never hang hookq and never widen a permission: each fails closed on
//! PreToolUse (the call denied, the turn ended), through the real binary.

use crate::support::agent as agent_support;

use std::os::unix::process::CommandExt as _;
use std::time::{Duration, Instant};

use agent_support::{Fired, Ws, pre_entries};
use serde_json::json;

/// SIGKILL to `pid`, a process the test's own hook started.
fn kill(pid: i32) {
    use rustix::process::{Pid, Signal, kill_process};
    let _ = kill_process(Pid::from_raw(pid).unwrap(), Signal::KILL);
}

/// A decision that fails closed: the call does not run.
fn fails_closed(d: &Fired) {
    let verdict = d.verdict();
    assert!(
        verdict == "error" || verdict == "deny",
        "{:?}",
        d.decision()
    );
    assert_eq!(d.out.status.code(), Some(0), "a decision was printed");
}

fn project_with_timeout(ws: &Ws, command: &str, timeout: u64) {
    ws.project(
        &json!({"PreToolUse": [{"hooks": [{"type": "command", "command": command, "timeout": timeout}]}]})
            .to_string(),
    );
}

#[test]
fn a_hook_that_never_reads_a_ten_megabyte_payload() {
    let big = "x".repeat(10 << 20);
    let payload = json!({"tool_name": "write", "tool_input": {"content": big}});
    for (command, verdict) in [("sleep 1; exit 1", "error"), ("sleep 1", "continue")] {
        let ws = Ws::new();
        ws.project(&pre_entries(&[(None, command)]));
        let d = ws.fire("PreToolUse", &payload, &["--trusted"]);
        assert_eq!(d.verdict(), verdict, "{command}");
        assert_eq!(
            d.decision()["tool_input"]["content"]
                .as_str()
                .unwrap()
                .len(),
            10 << 20
        );
    }
    // One that never reads it and never ends: the payload's writer must not keep the timeout
    // from firing, so the decision comes after the timeout and grace, not after the hook's
    // minute.
    let ws = Ws::new();
    project_with_timeout(&ws, "exec sleep 60", 1);
    let started = Instant::now();
    let d = ws.fire("PreToolUse", &payload, &["--trusted"]);
    let took = started.elapsed();
    fails_closed(&d);
    let reason = d.decision()["reason"].as_str().unwrap();
    assert!(reason.contains("ran past its 1 s timeout"), "{reason}");
    assert!(took < Duration::from_secs(30), "took {took:?}");
    // And one that reads all of it sees all of it.
    let ws = Ws::new();
    ws.project(&pre_entries(&[(None, "wc -c > size")]));
    ws.fire("PreToolUse", &payload, &["--trusted"]);
    let size: usize = ws.read("size").trim().parse().unwrap();
    assert!(size > 10 << 20, "{size}");
}

#[test]
fn a_hook_past_its_timeout_with_a_grandchild_holding_stdout() {
    let ws = Ws::new();
    // The grandchild leaves the process group (setsid), so no signal to the group reaches it,
    // and it keeps stdout and stderr open for a minute.
    project_with_timeout(
        &ws,
        "cat >/dev/null; setsid sleep 60 & echo $! > grandchild; exec sleep 60",
        1,
    );
    let started = Instant::now();
    let d = ws.pre("shell", &[]);
    let took = started.elapsed();
    let grandchild: i32 = ws.read("grandchild").trim().parse().unwrap();
    kill(grandchild);
    fails_closed(&d);
    assert_eq!(d.verdict(), "error");
    let reason = d.decision()["reason"].as_str().unwrap();
    assert!(reason.contains("ran past its 1 s timeout"), "{reason}");
    // Timeout 1 s plus the 2 s grace; only a hang (the grandchild's minute) fails this.
    assert!(took < Duration::from_secs(30), "took {took:?}");
}

#[test]
fn a_background_child_that_keeps_stdout_open_does_not_hold_the_decision() {
    let ws = Ws::new();
    project_with_timeout(
        &ws,
        "cat >/dev/null; sleep 60 & echo $! > child; exit 0",
        50,
    );
    let started = Instant::now();
    let d = ws.pre("shell", &[]);
    let took = started.elapsed();
    let child: i32 = ws.read("child").trim().parse().unwrap();
    kill(child);
    assert_eq!(d.verdict(), "continue");
    assert!(took < Duration::from_secs(30), "took {took:?}");
}

#[test]
fn a_hundred_megabytes_of_stdout_is_capped_and_warned() {
    let ws = Ws::new();
    ws.project(&pre_entries(&[(
        None,
        "cat >/dev/null; head -c 100000000 /dev/zero",
    )]));
    let d = ws.pre("shell", &[]);
    fails_closed(&d);
    let reason = d.decision()["reason"].as_str().unwrap();
    assert!(reason.contains("stdout went past the cap"), "{reason}");
    assert!(
        d.warnings()
            .iter()
            .any(|w| w.contains("stdout went past the cap; the rest was discarded"))
    );
    assert!(
        d.out.stdout.len() < 100_000,
        "no hook output in the decision"
    );

    let ws = Ws::new();
    ws.project(&pre_entries(&[(
        None,
        "cat >/dev/null; head -c 100000000 /dev/zero | tr '\\0' x >&2; exit 2",
    )]));
    let d = ws.pre("shell", &[]);
    assert_eq!(d.verdict(), "deny");
    assert_eq!(d.decision()["reason"].as_str().unwrap().len(), 2000);
    assert!(
        d.warnings()
            .iter()
            .any(|w| w.contains("stderr went past the cap"))
    );
}

#[test]
fn invalid_utf8_and_nul_bytes_on_stdout_and_stderr() {
    // `\141` is `a`: the words are made by printf, so the command line itself never holds them.
    let noise = r"printf 'b\141d \377\000 bytes'; printf 'b\141d \376\000 err' >&2";
    let ws = Ws::new();
    ws.project(&pre_entries(&[(
        None,
        &format!("cat >/dev/null; {noise}; exit 2"),
    )]));
    let d = ws.pre("shell", &[]);
    assert_eq!(d.verdict(), "deny");
    assert_eq!(d.decision()["reason"], "bad \u{FFFD}\u{FFFD} err");
    assert!(std::str::from_utf8(&d.out.stdout).is_ok());

    let ws = Ws::new();
    ws.project(&pre_entries(&[(
        None,
        &format!("cat >/dev/null; {noise}; exit 1"),
    )]));
    let d = ws.pre("shell", &[]);
    fails_closed(&d);
    assert!(!d.out.stdout.contains(&0));
    // Stdout never leaks; stderr shows, cleaned, only where the hook error quotes it for the
    // user: in its warning and its entry of `hooks`, never in the reason.
    let decision = String::from_utf8_lossy(&d.out.stdout).into_owned();
    assert!(
        !decision.contains("\u{FFFD} bytes"),
        "stdout leaked: {decision}"
    );
    assert_eq!(
        d.decision()["hooks"][0]["stderr"],
        "bad \u{FFFD}\u{FFFD} err"
    );
    assert!(!d.decision()["reason"].as_str().unwrap().contains("bad"));
    let mut rest = d.decision().clone();
    rest["hooks"][0].as_object_mut().unwrap().remove("stderr");
    rest.as_object_mut().unwrap().remove("warnings");
    assert!(
        !rest.to_string().contains("bad"),
        "nothing else leaks: {rest}"
    );
    assert!(
        d.warnings()[0].ends_with("; its stderr: bad \u{FFFD}\u{FFFD} err"),
        "{:?}",
        d.warnings()
    );

    // Exit 0 with garbage on stdout is "not JSON": warned, and the call continues, as the
    // decision table says.
    let ws = Ws::new();
    ws.project(&pre_entries(&[(
        None,
        &format!("cat >/dev/null; {noise}; exit 0"),
    )]));
    let d = ws.pre("shell", &[]);
    assert_eq!(d.verdict(), "continue");
    assert!(d.warnings()[0].contains("stdout is not JSON"));
}

#[test]
fn a_hook_killed_by_a_signal() {
    for sig in ["KILL", "SEGV", "TERM"] {
        let ws = Ws::new();
        ws.project(&pre_entries(&[(
            None,
            &format!("cat >/dev/null; kill -{sig} $$"),
        )]));
        let d = ws.pre("shell", &[]);
        fails_closed(&d);
        assert_eq!(d.verdict(), "error");
        let ending = d.decision()["hooks"][0]["ending"].as_str().unwrap();
        assert!(ending.starts_with("killed by signal"), "{ending}");
    }
}

// A test sets up the processes it drives with calls only the C library offers; the crate
// itself keeps them in `exec::sys`.
#[allow(unsafe_code)]
#[test]
fn a_hook_that_reads_the_terminal_has_none() {
    // hookq itself runs with a pseudo-terminal as its controlling terminal.
    let mut master = 0;
    let mut slave = 0;
    // SAFETY: openpty writes two descriptors into the ints given.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0);
    let with_tty = |cmd: &mut std::process::Command| {
        // SAFETY: setsid and ioctl are async-signal-safe; they run between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setsid() < 0 || libc::ioctl(slave, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    };
    let ws = Ws::new();
    // The setup can fail: a process started this way can open the terminal.
    let mut control = std::process::Command::new("/bin/sh");
    control.args(["-c", "exec 3</dev/tty && echo opened"]);
    with_tty(&mut control);
    let out = control.output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "opened");

    project_with_timeout(&ws, "cat >/dev/null; cat /dev/tty", 20);
    let mut cmd = ws.command();
    with_tty(&mut cmd);
    let d = ws.hookq_with(
        cmd,
        &["agent", "fire", "PreToolUse", "--trusted"],
        br#"{"tool_name": "shell", "tool_input": {}}"#,
    );
    // SAFETY: closing the descriptors openpty gave.
    unsafe {
        libc::close(master);
        libc::close(slave);
    }
    fails_closed(&d);
    // It could not open the terminal at all (a timeout would mean it waited on it).
    assert_eq!(d.decision()["hooks"][0]["ending"], "exit 1");
}

#[test]
fn no_login_shell_noise_reaches_stdout() {
    let ws = Ws::new();
    let deny = r#"echo '{"hookSpecificOutput": {"permissionDecision": "deny", "reason": "startup file ran"}}'"#;
    for file in [".profile", ".bashrc", ".bash_profile", ".shrc"] {
        std::fs::write(ws.home().join(file), format!("{deny}\n")).unwrap();
    }
    // The setup can fail: a login shell with this home prints the noise.
    let login = std::process::Command::new("/bin/sh")
        .args(["-l", "-c", "true"])
        .env("HOME", ws.home())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&login.stdout).contains("startup file ran"));

    ws.project(&pre_entries(&[(None, "cat >/dev/null")]));
    let mut cmd = ws.command();
    cmd.env("ENV", ws.home().join(".shrc"))
        .env("BASH_ENV", ws.home().join(".bashrc"));
    let d = ws.hookq_with(
        cmd,
        &["agent", "fire", "PreToolUse", "--trusted"],
        br#"{"tool_name": "shell", "tool_input": {}}"#,
    );
    assert_eq!(d.verdict(), "continue", "{:?}", d.decision());
    assert!(d.warnings().is_empty(), "{:?}", d.warnings());
}
