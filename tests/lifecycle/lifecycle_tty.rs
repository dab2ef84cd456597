//! The hook input policy under a real pseudo-terminal, a held-open pipe and CI: `tty` hooks see
//! the banner first, show an unterminated prompt and read the answer; Ctrl-C and timeouts end
//! the hook and give the terminal back as it was; everything else reads end of file at once.

use crate::support::lifecycle as lifecycle_common;

use std::io::Read as _;
use std::process::Stdio;

use crate::support::HANG;
use crate::support::pty::Pty;
use lifecycle_common::Ws;

/// web only, with `hook` as its native post-create and the given timeout.
fn ws(hook: &str, timeout_ms: u64) -> Ws {
    let ws = Ws::configured(
        &["web"],
        Some(&format!(
            r#"{{"repos": {{"web": {{"path": "repos/web"}}}}, "hooks": {{"timeout": {timeout_ms}}}}}"#
        )),
    );
    ws.native(".arashi/hooks/post-create.web.sh", hook);
    ws
}

/// Runs `script` in bash on a pty, in the workspace root, with the pinned environment.
fn on_pty(ws: &Ws, script: &str) -> Pty {
    Pty::spawn(ws.command_of("bash", &ws.root, &["-c", script]))
}

fn answer_file(ws: &Ws) -> std::path::PathBuf {
    ws.tmp.path().join("answer")
}

#[test]
fn a_tty_hook_sees_the_banner_then_prompts_and_reads_the_answer() {
    let w = ws(
        "[ \"$ARASHI_HOOK_INPUT\" = tty ] || exit 9\nprintf 'Continue setup? [y/N] '\nIFS= read -r answer\necho \"$answer\" > \"$ANSWER\"\n[ \"$answer\" = y ]\n",
        60_000,
    );
    let mut w = w;
    w.env
        .push(("ANSWER".into(), answer_file(&w).display().to_string()));
    // A workspace hook's banner names the workspace, never a child target.
    w.native(".arashi/hooks/pre-create.sh", "true\n");
    let mut pty = on_pty(&w, "\"$HOOKQ\" worktree create feature/t; echo \"rc=$?\"");
    pty.wait_for("Continue setup? [y/N] ");
    let text = pty.text();
    let root = w.root.display();
    assert!(
        text.contains(&format!(
            "hookq: running pre-create hook pre-create (workspace scope) for workspace {root} (source: {root}/.arashi/hooks/pre-create.sh)"
        )),
        "{text}"
    );
    let banner = text
        .find("hookq: running post-create hook post-create.web")
        .expect(&text);
    assert!(banner < text.find("Continue setup?").unwrap(), "{text}");
    assert!(
        text.contains(&format!(
            "{}/.arashi/hooks/post-create.web.sh",
            w.root.display()
        )),
        "{text}"
    );
    assert!(text.contains("web worktree"), "{text}");
    pty.send(b"y\r");
    assert!(pty.wait(HANG).success());
    assert!(pty.text().contains("rc=0"), "{}", pty.text());
    assert_eq!(std::fs::read_to_string(answer_file(&w)).unwrap(), "y\n");
    assert!(w.root.join("worktrees/web/feature/t").exists());
}

/// After hookq: the shell's own process group is the terminal's foreground again, and the
/// modes the hook changed are back.
const AFTER: &str = "read -r -a st < /proc/$$/stat; echo \"fg=${st[7]} pg=${st[4]}\"; stty -a";

fn restored(text: &str) -> bool {
    let fg = text
        .rsplit_once("fg=")
        .and_then(|(_, rest)| rest.split_once(" pg="))
        .and_then(|(fg, rest)| Some((fg, rest.split_whitespace().next()?)));
    let foreground = fg.is_some_and(|(fg, pg)| fg == pg);
    let modes = &text[text.rfind("speed").unwrap_or(0)..];
    foreground && !modes.contains("-echo ") && !modes.contains("-icanon")
}

#[test]
fn ctrl_c_in_a_tty_hook_fails_it_rolls_back_and_restores_the_terminal() {
    let w = ws(
        "stty -echo -icanon\nprintf 'ready> '\nread -r x\necho read > \"$ANSWER\"\n",
        60_000,
    );
    let mut w = w;
    w.env
        .push(("ANSWER".into(), answer_file(&w).display().to_string()));
    let before = w.snapshot();
    let mut pty = on_pty(
        &w,
        &format!("\"$HOOKQ\" worktree create feature/t; echo \"rc=$?\"; {AFTER}"),
    );
    pty.wait_for("ready> ");
    pty.send(b"\x03");
    pty.wait(HANG);
    let text = pty.text();
    assert!(text.contains("rc=7"), "{text}");
    assert!(text.contains("ended by signal 2"), "{text}");
    assert!(restored(&text), "the terminal was not restored:\n{text}");
    assert!(!answer_file(&w).exists());
    assert_eq!(w.snapshot(), before);
}

#[test]
fn a_tty_hook_past_its_timeout_fails_and_the_terminal_is_restored() {
    let w = ws("stty -echo -icanon\nprintf 'waiting> '\nread -r x\n", 700);
    let before = w.snapshot();
    let mut pty = on_pty(
        &w,
        &format!("\"$HOOKQ\" worktree create feature/t; echo \"rc=$?\"; {AFTER}"),
    );
    pty.wait_for("waiting> ");
    pty.wait(HANG);
    let text = pty.text();
    assert!(text.contains("rc=7"), "{text}");
    assert!(text.contains("timed out"), "{text}");
    assert!(restored(&text), "the terminal was not restored:\n{text}");
    assert_eq!(w.snapshot(), before);
}

/// A hook that records its input mode and whether `read` got end of file.
const PROBE: &str = "echo \"$ARASHI_HOOK_INPUT\" > \"$ANSWER\"\nif read -r x; then echo read >> \"$ANSWER\"; else echo eof >> \"$ANSWER\"; fi\n";

fn probe_ws() -> Ws {
    let mut w = ws(PROBE, 60_000);
    w.env
        .push(("ANSWER".into(), answer_file(&w).display().to_string()));
    w
}

#[test]
fn json_and_no_hook_input_disable_input_even_on_a_terminal() {
    for (flags, mode) in [
        ("--json > \"$OUT\"", "disabled"),
        ("--no-hook-input", "disabled"),
    ] {
        let mut w = probe_ws();
        let out = w.tmp.path().join("out.json");
        w.env.push(("OUT".into(), out.display().to_string()));
        let mut pty = on_pty(
            &w,
            &format!("\"$HOOKQ\" worktree create feature/t {flags}; echo \"rc=$?\""),
        );
        pty.wait(HANG);
        let text = pty.text();
        assert!(text.contains("rc=0"), "{flags}: {text}");
        assert!(
            !text.contains("hookq: running"),
            "no banner without tty input: {text}"
        );
        assert_eq!(
            std::fs::read_to_string(answer_file(&w)).unwrap(),
            format!("{mode}\neof\n"),
            "{flags}"
        );
        if flags.starts_with("--json") {
            let j: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
            assert_eq!(j["ok"], true);
        }
    }
}

#[test]
fn ci_on_a_terminal_is_unavailable() {
    let mut w = probe_ws();
    w.env.push(("CI".into(), "true".into()));
    let mut pty = on_pty(&w, "\"$HOOKQ\" worktree create feature/t; echo \"rc=$?\"");
    pty.wait(HANG);
    assert!(pty.text().contains("rc=0"), "{}", pty.text());
    assert_eq!(
        std::fs::read_to_string(answer_file(&w)).unwrap(),
        "unavailable\neof\n"
    );
}

#[test]
fn a_pipe_held_open_is_unavailable_and_never_hangs() {
    let w = probe_ws();
    let mut c = w.command(&w.root, &["worktree", "create", "feature/t"]);
    c.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    // The write end stays open the whole time: a hook reading it would wait forever.
    let _held = child.stdin.take().unwrap();
    let status =
        crate::support::run::wait_until(&mut child, HANG).expect("hookq waited on the open pipe");
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(status.success(), "{err}");
    assert_eq!(
        std::fs::read_to_string(answer_file(&w)).unwrap(),
        "unavailable\neof\n"
    );
}
