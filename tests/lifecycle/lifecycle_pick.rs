//! `hookq worktree create --interactive` on a real pseudo-terminal: the repositories are
//! chosen on the terminal (all at first, toggled by number, Enter accepts) and the create runs
//! as with the matching `--repo` flags; a cancel or an empty choice changes nothing; without a
//! terminal, with `--json` or with `--repo` it is refused with one line.

use crate::support::lifecycle as lifecycle_common;

use crate::support::HANG;
use crate::support::pty::Pty;
use lifecycle_common::{Ws, git};

/// web, api and docs, each with a recording post-create hook.
fn ws() -> Ws {
    let mut ws = Ws::configured(&["web", "api", "docs"], None);
    // The config lists them in this order (the helper writes a JSON object: sorted keys).
    ws.write_config(
        r#"{"repos": {"web": {"path": "repos/web"}, "api": {"path": "repos/api"},
                      "docs": {"path": "repos/docs"}}}"#,
    );
    let recorder = lifecycle_common::fixtures().join("record.sh");
    ws.env
        .push(("RECORDER".into(), recorder.display().to_string()));
    for r in ["web", "api", "docs"] {
        ws.recorder(&format!(".arashi/hooks/post-create.{r}.sh"));
    }
    ws
}

/// Runs `args` of hookq on a pty in the workspace root, then prints its exit code.
fn on_pty(ws: &Ws, args: &str) -> Pty {
    Pty::spawn(ws.command_of(
        "bash",
        &ws.root,
        &["-c", &format!("\"$HOOKQ\" {args}; echo \"rc=$?\"")],
    ))
}

#[test]
fn the_repositories_chosen_on_the_terminal_are_the_ones_created() {
    let w = ws();
    let mut pty = on_pty(&w, "worktree create --interactive feature/p");
    pty.wait_for("> ", HANG);
    let text = pty.text();
    for line in ["1 [x] web", "2 [x] api", "3 [x] docs"] {
        assert!(text.contains(line), "{text}");
    }
    assert!(text.contains("repositories for branch feature/p"), "{text}");
    // A word that is not a listed number toggles nothing, and says so.
    pty.send(b"2 9\r");
    pty.wait_for("not a number from 1 to 3: \"9\"; nothing was toggled", HANG);
    pty.send(b"2\r");
    pty.wait_for("2 [ ] api", HANG);
    pty.send(b"\r");
    pty.wait(HANG);
    let text = pty.text();
    assert!(text.contains("rc=0"), "{text}");
    // As with --repo web --repo docs: those two, in config order, and their hooks only.
    let root = w.root.display().to_string();
    assert_eq!(
        w.order(),
        [
            format!("post-create.web|repository|web|{root}/worktrees/web/feature/p"),
            format!("post-create.docs|repository|docs|{root}/worktrees/docs/feature/p"),
        ]
    );
    assert!(w.root.join("worktrees/web/feature/p").is_dir());
    assert!(w.root.join("worktrees/docs/feature/p").is_dir());
    assert!(!w.root.join("worktrees/api").exists());
    assert!(git(&w.repo("api"), &["branch", "--list", "feature/p"]).is_empty());
    let created = &text[text
        .find("created worktrees of branch feature/p")
        .expect(&text)..];
    assert!(
        created.contains("web") && created.contains("docs"),
        "{text}"
    );
    assert!(!created.contains("  api  "), "{text}");
}

#[test]
fn a_cancel_at_the_question_changes_nothing() {
    for (key, how) in [(&b"\x03"[..], "Ctrl-C"), (&b"\x04"[..], "end of input")] {
        let w = ws();
        let before = w.snapshot();
        let mut pty = on_pty(&w, "worktree create --interactive feature/p");
        pty.wait_for("> ", HANG);
        pty.send(b"1");
        pty.send(b"\x15"); // the line so far is erased: Ctrl-D then ends the input
        pty.send(key);
        pty.wait(HANG);
        let text = pty.text();
        assert!(text.contains("rc=7"), "{how}: {text}");
        assert!(
            text.contains(&format!(
                "error: create of branch feature/p cancelled at the repository question ({how}); nothing was changed"
            )),
            "{how}: {text}"
        );
        assert_eq!(w.snapshot(), before, "{how}");
        assert!(w.order().is_empty(), "{how}: a hook ran");
        assert!(!w.root.join("worktrees").exists(), "{how}");
    }
}

#[test]
fn choosing_no_repository_is_an_error_that_changes_nothing() {
    let w = ws();
    let before = w.snapshot();
    let mut pty = on_pty(&w, "worktree create --interactive feature/p");
    pty.wait_for("> ", HANG);
    pty.send(b"1 2 3\r");
    pty.wait_for("3 [ ] docs", HANG);
    pty.send(b"\r");
    pty.wait(HANG);
    let text = pty.text();
    assert!(text.contains("rc=2"), "{text}");
    assert!(
        text.contains(
            "error: no repository chosen: a create needs at least one; nothing was changed"
        ),
        "{text}"
    );
    assert_eq!(w.snapshot(), before);
}

#[test]
fn interactive_is_refused_with_one_line_where_it_cannot_ask() {
    let w = ws();
    let before = w.snapshot();
    // No terminal: stdin is /dev/null.
    let out = w.run(&["worktree", "create", "--interactive", "feature/p"]);
    out.expect(2);
    assert_eq!(
        out.stderr,
        "error: --interactive needs a terminal on stdin to ask which repositories to use: name them with --repo\n"
    );
    // --json never asks: the refusal is the JSON document.
    let out = w.run(&["worktree", "create", "--interactive", "--json", "feature/p"]);
    out.expect(2);
    assert!(out.stderr.is_empty(), "{}", out.stderr);
    let j = out.json();
    assert_eq!(j["error"]["code"], "usage");
    assert!(
        j["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("--interactive asks on the terminal and --json never asks"),
        "{j}"
    );
    // With --repo, even on a terminal.
    let mut pty = on_pty(&w, "worktree create --interactive --repo web feature/p");
    pty.wait(HANG);
    let text = pty.text();
    assert!(text.contains("rc=2"), "{text}");
    let errors: Vec<&str> = text.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(
        errors,
        ["error: --interactive chooses the repositories itself: give it or --repo, not both"],
        "{text}"
    );
    assert!(!text.contains("[x]"), "it asked: {text}");
    assert_eq!(w.snapshot(), before);
    // Standalone: there is one repository and nothing to choose.
    let s = Ws::bare();
    let main = s.root.join("app");
    lifecycle_common::make_repo(&main, 1);
    let mut pty = Pty::spawn(s.command_of(
        "bash",
        &main,
        &[
            "-c",
            "\"$HOOKQ\" worktree create --interactive feature/p; echo \"rc=$?\"",
        ],
    ));
    pty.wait(HANG);
    let text = pty.text();
    assert!(text.contains("rc=2"), "{text}");
    assert!(
        text.contains("error: --interactive needs a configured workspace (.arashi/config.json)"),
        "{text}"
    );
    assert!(!s.root.join("app.worktrees").exists());
}
