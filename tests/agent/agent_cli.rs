//! `hookq agent fire` and `hookq agent list` through the real binary, with real hook scripts
//! (sh and Python) in temp workspaces: every row of the decision table, the skip rules, the
//! layers and their order, the matchers, and the Stop path.

use crate::support::agent as agent_support;

use agent_support::{Ws, hooks_json, pre_entries, script};
use serde_json::{Value, json};

fn sh(args: &str) -> String {
    format!("sh {} {args}", script("exit.sh"))
}

fn py(args: &str) -> String {
    format!("python3 {} {args}", script("exit.py"))
}

fn reply(json: &str) -> String {
    format!("python3 {} '{json}'", script("reply.py"))
}

fn append(tag: &str) -> String {
    format!("python3 {} {tag}", script("append.py"))
}

fn post_payload() -> Value {
    json!({"tool_name": "shell", "tool_input": {"command": "make check"}, "session_id": "s1",
           "tool_response": {"content": "ok", "is_error": false}})
}

fn stop_payload(message: &str) -> Value {
    json!({"session_id": "s1", "last_assistant_message": message})
}

#[test]
fn every_exit_code_for_every_event() {
    // (exit code, PreToolUse, PostToolUse, Stop), for a sh hook and a Python hook alike.
    let rows = [
        (0, "continue", "continue", "end"),
        (2, "deny", "feedback", "continue"),
        (1, "error", "error", "error"),
        (3, "error", "error", "error"),
        (127, "error", "error", "error"),
    ];
    for (code, pre, post, stop) in rows {
        // The message is built by the shell, so the command line itself never holds it.
        let args = format!("{code} \"$(printf 'sa%sd {code}' i)\"");
        for hook in [sh(&args), py(&args)] {
            let ws = Ws::new();
            ws.project(&format!(
                r#"{{"PreToolUse": [{{"hooks": [{{"type": "command", "command": {h}}}]}}],
                    "PostToolUse": [{{"hooks": [{{"type": "command", "command": {h}}}]}}],
                    "Stop": [{{"hooks": [{{"type": "command", "command": {h}}}]}}]}}"#,
                h = Value::String(hook.clone())
            ));
            let cfg = ["--trusted", "--config", "/nonexistent/config.toml"];
            let d = ws.pre("shell", &cfg[1..]);
            assert_eq!(d.verdict(), pre, "{hook}: {:?}", d.decision());
            assert_eq!(d.out.status.code(), Some(0), "a decision was printed");
            let d = ws.fire("PostToolUse", &post_payload(), &cfg);
            assert_eq!(d.verdict(), post, "{hook}: {:?}", d.decision());
            let d = ws.fire("Stop", &stop_payload("All tests pass."), &cfg);
            assert_eq!(d.verdict(), stop, "{hook}: {:?}", d.decision());
            match code {
                2 => {
                    let said = format!("said {code}");
                    let pre = ws.pre("shell", &cfg[1..]);
                    assert_eq!(pre.decision()["reason"], said.as_str());
                    let post = ws.fire("PostToolUse", &post_payload(), &cfg);
                    assert_eq!(post.decision()["feedback"], said.as_str());
                    let stop = ws.fire("Stop", &stop_payload("Done."), &cfg);
                    assert_eq!(stop.decision()["message"], said.as_str());
                }
                0 => {}
                _ => {
                    // A hook error names the hook and how it ended, never what it printed.
                    let reason = d.decision()["reason"].as_str().unwrap().to_owned();
                    assert!(reason.contains(&format!("exit {code}")), "{reason}");
                    assert!(!reason.contains("said"), "stderr leaked: {reason}");
                    assert!(d.stderr().contains("warning: hook error"), "{}", d.stderr());
                }
            }
        }
    }
}

#[test]
fn exit_zero_json_on_pre_tool_use() {
    let cases: &[(&str, &str, Option<&str>, Option<&str>)] = &[
        // (stdout, decision, reason, warning)
        (
            r#"{"hookSpecificOutput": {"permissionDecision": "deny", "reason": "no network writes"}}"#,
            "deny",
            Some("no network writes"),
            None,
        ),
        (
            r#"{"hookSpecificOutput": {"permissionDecision": "deny"}, "reason": "top-level reason"}"#,
            "deny",
            Some("top-level reason"),
            None,
        ),
        (
            r#"{"hookSpecificOutput": {"permissionDecision": "deny", "reason": ""}, "reason": "fallback"}"#,
            "deny",
            Some("fallback"),
            None,
        ),
        (
            r#"{"hookSpecificOutput": {"permissionDecision": "deny"}}"#,
            "deny",
            None,
            None,
        ),
        (
            r#"{"hookSpecificOutput": {"permissionDecision": "allow"}}"#,
            "continue",
            None,
            Some("permissionDecision \"allow\" refused"),
        ),
        (
            r#"{"hookSpecificOutput": {"permissionDecision": "ask"}}"#,
            "continue",
            None,
            Some("permissionDecision \"ask\" refused"),
        ),
        (
            r#"{"hookSpecificOutput": {"permissionDecision": "block"}}"#,
            "continue",
            None,
            Some("permissionDecision is a string other than \"deny\""),
        ),
        (
            r#"{"hookSpecificOutput": {"permissionDecision": ["deny"]}}"#,
            "continue",
            None,
            Some("permissionDecision is a list, not \"deny\"; ignored"),
        ),
        ("", "continue", None, None),
        ("   \n", "continue", None, None),
        (
            "this is not json",
            "continue",
            None,
            Some("stdout is not JSON"),
        ),
        ("[1, 2]", "continue", None, Some("not an object")),
        // Another agent's reply key: named, never obeyed, never quoted.
        (
            r#"{"continue": true}"#,
            "continue",
            None,
            Some("continue is not read here"),
        ),
    ];
    for (stdout, verdict, reason, warning) in cases {
        let ws = Ws::new();
        ws.project(&pre_entries(&[(None, &reply(stdout))]));
        let d = ws.pre("shell", &[]);
        assert_eq!(d.verdict(), *verdict, "{stdout}: {:?}", d.decision());
        match reason {
            Some(r) => assert_eq!(d.decision()["reason"], *r),
            None if *verdict == "deny" => {
                let r = d.decision()["reason"].as_str().unwrap();
                assert!(r.contains("gave no reason"), "default message: {r}");
            }
            None => assert!(d.decision().get("reason").is_none()),
        }
        let warnings = d.warnings();
        match warning {
            Some(w) => {
                assert_eq!(warnings.len(), 1, "{warnings:?}");
                assert!(warnings[0].contains(w), "{warnings:?}");
                assert!(d.stderr().contains(&format!("warning: {}", warnings[0])));
            }
            None => assert!(warnings.is_empty(), "{stdout}: {warnings:?}"),
        }
        // What the hook printed reaches the decision only as the reason. (The command line,
        // which holds the reply, is named in `hooks` and at the head of each warning.)
        let mut rest = d.decision().clone();
        for field in ["reason", "hooks", "warnings"] {
            rest.as_object_mut().unwrap().remove(field);
        }
        let mut rest = rest.to_string();
        for w in &warnings {
            rest.push_str(w.split_once("`): ").map_or(w.as_str(), |(_, why)| why));
        }
        for word in ["block", "network", "fallback", "top-level"] {
            assert!(!rest.contains(word), "{word}: {rest}");
        }
    }
}

#[test]
fn exit_zero_json_reasons_are_capped_and_a_refused_allow_keeps_the_rest() {
    let long = "é".repeat(5000);
    for reply_json in [
        json!({"hookSpecificOutput": {"permissionDecision": "deny", "reason": long}}),
        json!({"hookSpecificOutput": {"permissionDecision": "deny"}, "reason": long}),
    ] {
        let ws = Ws::new();
        ws.project(&pre_entries(&[(None, &reply(&reply_json.to_string()))]));
        let d = ws.pre("shell", &[]);
        assert_eq!(d.verdict(), "deny");
        let reason = d.decision()["reason"].as_str().unwrap();
        assert_eq!(reason.chars().count(), 2000);
        assert!(reason.chars().all(|c| c == 'é'));
    }
    // A refused allow or ask counts as no decision, and its rewrite still applies.
    for refused in ["allow", "ask"] {
        let ws = Ws::new();
        let out = json!({"hookSpecificOutput": {"permissionDecision": refused,
                         "updatedInput": {"command": "make check -j1"}}});
        ws.project(&pre_entries(&[(None, &reply(&out.to_string()))]));
        let d = ws.pre("shell", &[]);
        assert_eq!(d.verdict(), "continue");
        assert_eq!(
            d.decision()["tool_input"],
            json!({"command": "make check -j1"})
        );
        assert_eq!(d.decision()["input_changed"], true);
        assert!(d.warnings()[0].contains("refused"), "{:?}", d.warnings());
    }
}

#[test]
fn a_hook_never_widens_a_deny() {
    // An allow after a deny is never reached; an allow before a deny does not stop it.
    let ws = Ws::new();
    ws.project(&pre_entries(&[
        (
            None,
            &reply(r#"{"hookSpecificOutput": {"permissionDecision": "allow"}}"#),
        ),
        (None, &sh("2 'still denied'")),
        (
            None,
            &reply(r#"{"hookSpecificOutput": {"permissionDecision": "allow"}}"#),
        ),
    ]));
    let d = ws.pre("shell", &[]);
    assert_eq!(d.verdict(), "deny");
    assert_eq!(d.decision()["reason"], "still denied");
    assert_eq!(d.decision()["hooks"].as_array().unwrap().len(), 2);
}

#[test]
fn exit_two_reasons_default_and_cap() {
    let ws = Ws::new();
    ws.project(&pre_entries(&[(None, &sh("2"))]));
    let d = ws.pre("shell", &[]);
    let reason = d.decision()["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("denied by project PreToolUse entry 0 handler 0 (`sh "),
        "{reason}"
    );
    assert!(reason.contains("gave no reason"), "{reason}");

    let ws = Ws::new();
    ws.project(&pre_entries(&[(
        None,
        "cat >/dev/null; python3 -c 'import sys; sys.stderr.write(\"ü\" * 5000)'; exit 2",
    )]));
    let d = ws.pre("shell", &[]);
    let reason = d.decision()["reason"].as_str().unwrap();
    assert_eq!(reason.chars().count(), 2000);
    assert!(reason.chars().all(|c| c == 'ü'));
}

#[test]
fn updated_input_replaces_and_chains_across_three_hooks() {
    let ws = Ws::new();
    ws.project(&pre_entries(&[
        (Some("shell"), &append("one")),
        (Some("shell|write"), &append("two")),
        (None, &append("three")),
    ]));
    let d = ws.pre("shell", &[]);
    assert_eq!(d.verdict(), "continue", "{:?}", d.decision());
    assert_eq!(
        d.decision()["tool_input"],
        json!({"command": "make check | one | two | three"})
    );
    assert_eq!(d.decision()["input_changed"], true);

    // A later hook with empty stdout leaves the rewrite in place.
    let ws = Ws::new();
    ws.project(&pre_entries(&[(None, &append("one")), (None, &sh("0"))]));
    let d = ws.pre("shell", &[]);
    assert_eq!(d.decision()["tool_input"]["command"], "make check | one");
    assert_eq!(d.decision()["input_changed"], true);

    // No rewrite: the host's input, unchanged.
    let ws = Ws::new();
    ws.project(&pre_entries(&[(None, &sh("0"))]));
    let d = ws.pre("shell", &[]);
    assert_eq!(d.decision()["tool_input"], json!({"command": "make check"}));
    assert_eq!(d.decision()["input_changed"], false);
}

#[test]
fn an_updated_input_that_is_not_an_object_is_a_hook_error() {
    for bad in [r#""echo safe""#, "[1]", "null", "3"] {
        let ws = Ws::new();
        ws.project(&pre_entries(&[
            (None, &append("one")),
            (
                None,
                &reply(&format!(
                    r#"{{"hookSpecificOutput": {{"updatedInput": {bad}}}}}"#
                )),
            ),
            (None, "touch later-ran"),
        ]));
        let d = ws.pre("shell", &[]);
        assert_eq!(d.verdict(), "error", "{bad}");
        assert!(
            d.decision()["reason"]
                .as_str()
                .unwrap()
                .contains("updatedInput is")
        );
        assert!(
            !ws.root().join("later-ran").exists(),
            "the event ended at the error"
        );
    }
}

#[test]
fn the_first_deny_ends_the_event_and_later_hooks_do_not_run() {
    let ws = Ws::new();
    ws.project(&pre_entries(&[
        (None, "touch first-ran"),
        (None, &sh("2 first")),
        (None, "touch third-ran"),
    ]));
    let d = ws.pre("shell", &[]);
    assert_eq!(d.verdict(), "deny");
    assert!(ws.root().join("first-ran").exists());
    assert!(!ws.root().join("third-ran").exists());
}

#[test]
fn post_tool_use_runs_every_hook_unless_one_errs() {
    let ws = Ws::new();
    ws.project(&hooks_json(
        "PostToolUse",
        &[
            (None, &sh("2 'fmt failed'")),
            (None, &sh("0")),
            (None, &py("2 'lint failed'")),
        ],
    ));
    let d = ws.fire("PostToolUse", &post_payload(), &["--trusted"]);
    assert_eq!(d.verdict(), "feedback");
    assert_eq!(d.decision()["feedback"], "fmt failed\n\nlint failed");
    assert_eq!(d.decision()["hooks"].as_array().unwrap().len(), 3);
    assert!(d.decision().get("tool_input").is_none());

    let ws = Ws::new();
    ws.project(&hooks_json(
        "PostToolUse",
        &[
            (None, &sh("2 'fmt failed'")),
            (None, &sh("1")),
            (None, "touch third-ran"),
        ],
    ));
    let d = ws.fire("PostToolUse", &post_payload(), &["--trusted"]);
    assert_eq!(d.verdict(), "error");
    assert!(!ws.root().join("third-ran").exists());
}

#[test]
fn missing_unreadable_and_unparsable_files() {
    // Missing: empty, no warning.
    let ws = Ws::new();
    let d = ws.pre("shell", &[]);
    assert_eq!(d.verdict(), "continue");
    assert!(d.warnings().is_empty(), "{:?}", d.warnings());

    // Unreadable (a directory where the file should be), unparsable, not UTF-8: one warning
    // each, nothing loaded, and the user layer still loads.
    let unreadable = Ws::new();
    std::fs::create_dir_all(unreadable.root().join(".radian/hooks.json")).unwrap();
    let unparsable = Ws::new();
    unparsable.project(r#"{"PreToolUse": [{"hooks": [{"type": "command", "command": "exit 2"}]}"#);
    let binary = Ws::new();
    binary.project("{\"PreToolUse\": \"\u{1}\"}");
    std::fs::write(binary.root().join(".radian/hooks.json"), b"\xff\xfe{}").unwrap();
    for (ws, why) in [
        (&unreadable, "cannot read"),
        (&unparsable, "cannot parse"),
        (&binary, "not UTF-8"),
    ] {
        ws.user("[[hooks.PreToolUse]]\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = \"echo user >> hook-log\"\n");
        let d = ws.pre("shell", &[]);
        assert_eq!(d.verdict(), "continue");
        let w = d.warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("hooks.json: ") && w[0].contains(why), "{w:?}");
        assert_eq!(ws.read("hook-log"), "user\n");
    }

    // An unreadable user config (a directory) warns once, and the project layer still loads.
    let ws = Ws::new();
    std::fs::create_dir_all(ws.user_config()).unwrap();
    ws.project(&pre_entries(&[(None, "echo project >> hook-log")]));
    let d = ws.pre("shell", &[]);
    let w = d.warnings();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("config.toml: cannot read"), "{w:?}");
    assert_eq!(ws.read("hook-log"), "project\n");

    // An unparsable user config warns once and loads nothing from it.
    let ws = Ws::new();
    ws.user("[[hooks.PreToolUse]\n");
    ws.project(&pre_entries(&[(None, "echo project >> hook-log")]));
    let d = ws.pre("shell", &[]);
    let w = d.warnings();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("config.toml: cannot parse"), "{w:?}");
    assert_eq!(ws.read("hook-log"), "project\n");
}

#[test]
fn every_skip_rule_warns_once_each() {
    let ws = Ws::new();
    ws.project(
        r#"{"PreToolUse": [{"matcher": "shell", "hooks": [
              {"type": "prompt", "prompt": "is this ok?"},
              {"type": "command", "command": "x", "async": true},
              {"type": "command", "command": "x", "http": "http://example.invalid"},
              {"type": "command", "command": "x", "agent": "reviewer"},
              {"type": "command", "command": "x", "if": "true"},
              {"type": "command"},
              {"type": "command", "command": ""},
              {"type": "command", "command": "x", "timeout": -5},
              {"type": "command", "command": "x", "timeout": 1.5},
              {"type": "command", "command": "x", "timeout": "soon"},
              {"type": "command", "command": "echo ran >> hook-log"}
            ]},
            {"matcher": ["shell"], "hooks": [{"type": "command", "command": "x"}]},
            {"matcher": "shell"},
            {"matcher": "shell", "hooks": []}],
          "SessionStart": [{"hooks": [{"type": "command", "command": "x"}]}]}"#,
    );
    let d = ws.pre("shell", &[]);
    assert_eq!(d.verdict(), "continue");
    assert_eq!(ws.read("hook-log"), "ran\n", "the good handler still runs");
    let w = d.warnings();
    assert_eq!(w.len(), 14, "{w:#?}");
    for (i, at) in (0..10).map(|h| (h, format!("PreToolUse entry 0 handler {h}: skipped"))) {
        assert!(w[i].contains(&at), "{} lacks {at}", w[i]);
    }
    assert!(w[10].contains("PreToolUse entry 1: skipped: the matcher is a list"));
    assert!(w[11].contains("PreToolUse entry 2: skipped: it has no hooks list"));
    assert!(w[12].contains("PreToolUse entry 3: skipped: its hooks list is empty"));
    assert!(w[13].contains("\"SessionStart\" is not PreToolUse"));
}

#[test]
fn wrapped_beats_bare() {
    let ws = Ws::new();
    ws.project(
        r#"{"PreToolUse": [{"hooks": [{"type": "command", "command": "echo bare >> hook-log"}]}],
            "hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "echo wrapped >> hook-log"}]}]}}"#,
    );
    let d = ws.pre("shell", &[]);
    assert_eq!(ws.read("hook-log"), "wrapped\n");
    assert!(d.warnings()[0].contains("the wrapped object wins"));
    let ws = Ws::new();
    ws.project(
        r#"{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "echo wrapped >> hook-log"}]}]}}"#,
    );
    let d = ws.pre("shell", &[]);
    assert_eq!(ws.read("hook-log"), "wrapped\n");
    assert!(d.warnings().is_empty());
}

#[test]
fn an_untrusted_project_file_is_not_loaded() {
    let ws = Ws::new();
    ws.project(&pre_entries(&[(None, "touch ran; exit 2")]));
    let d = ws.fire(
        "PreToolUse",
        &json!({"tool_name": "shell", "tool_input": {"command": "ls"}}),
        &[],
    );
    assert_eq!(d.verdict(), "continue");
    assert!(!ws.root().join("ran").exists());
    assert!(
        d.warnings()[0].contains("not trusted"),
        "{:?}",
        d.warnings()
    );
    let list = ws.hookq(&["agent", "list", "--json"], b"");
    assert_eq!(list.decision()["sources"][0]["state"], "untrusted");
    assert_eq!(list.decision()["entries"], json!([]));
}

#[test]
fn project_before_user_and_an_identical_command_once() {
    let ws = Ws::new();
    let record = |name: &str| format!("sh {} {name}", script("record.sh"));
    ws.project(&pre_entries(&[
        (None, &record("project")),
        (Some("shell"), &record("both")),
    ]));
    ws.user(&format!(
        "[[hooks.PreToolUse]]\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = {:?}\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = {:?}\n",
        record("user"),
        record("both")
    ));
    let d = ws.pre("shell", &[]);
    assert_eq!(d.verdict(), "continue");
    let log = ws.read("hook-log");
    let names: Vec<&str> = log.lines().map(|l| l.split(' ').next().unwrap()).collect();
    assert_eq!(names, ["project", "both", "user"]);
    let layers: Vec<&str> = d.decision()["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["layer"].as_str().unwrap())
        .collect();
    assert_eq!(layers, ["project", "project", "user"]);
    // The payload each hook read.
    let payload: Value =
        serde_json::from_str(log.lines().next().unwrap().split_once(' ').unwrap().1).unwrap();
    assert_eq!(
        payload,
        json!({"hook_event_name": "PreToolUse", "tool_name": "shell",
               "tool_input": {"command": "make check"}, "cwd": ws.root().to_str().unwrap(),
               "session_id": "s1"})
    );
    // A tool only the first project entry matches: `both` runs once, from the user layer.
    std::fs::remove_file(ws.root().join("hook-log")).unwrap();
    ws.pre("write", &[]);
    let names: Vec<String> = ws
        .read("hook-log")
        .lines()
        .map(|l| l.split(' ').next().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["project", "user", "both"]);
}

#[test]
fn matchers() {
    type Case<'a> = (Option<&'a str>, &'a [(&'a str, bool)]);
    let cases: &[Case] = &[
        (
            Some("*"),
            &[("shell", true), ("github__create_issue", true)],
        ),
        (Some(""), &[("shell", true), ("write", true)]),
        (Some("  "), &[("shell", true)]),
        (None, &[("shell", true), ("memory_search", true)]),
        (
            Some("shell|write"),
            &[("shell", true), ("write", true), ("patch", false)],
        ),
        (Some("sh"), &[("shell", false), ("sh", true)]),
        (Some("Shell"), &[("shell", false), ("Shell", true)]),
        (
            Some("github__.*"),
            &[("github__create_issue", true), ("shell", false)],
        ),
        (Some("shell("), &[("shell", false), ("shell(", false)]),
    ];
    for (matcher, tools) in cases {
        let ws = Ws::new();
        ws.project(&pre_entries(&[(*matcher, &sh("2 matched"))]));
        for (tool, fires) in *tools {
            let d = ws.pre(tool, &[]);
            let want = if *fires { "deny" } else { "continue" };
            assert_eq!(d.verdict(), want, "matcher {matcher:?} tool {tool}");
        }
    }
    // The inspector says which matcher does not compile.
    let ws = Ws::new();
    ws.project(&pre_entries(&[(Some("shell("), "x"), (Some("shell"), "y")]));
    let list = ws.hookq(&["agent", "list", "--trusted", "--json"], b"");
    let entries = list.decision()["entries"].as_array().unwrap().clone();
    assert_eq!(entries[0]["matcher_compiles"], false);
    assert!(
        entries[0]["matcher_error"]
            .as_str()
            .unwrap()
            .contains("unclosed")
    );
    assert_eq!(entries[1]["matcher_compiles"], true);
    let text = ws.hookq(&["agent", "list", "--trusted"], b"");
    let stdout = String::from_utf8_lossy(&text.out.stdout);
    assert!(
        stdout.contains("matcher \"shell(\" does not compile, matches no tool"),
        "{stdout}"
    );
    assert!(stdout.contains("matcher \"shell\" compiles"), "{stdout}");
}

#[test]
fn stop_ignores_matchers_and_joins_reasons() {
    let ws = Ws::new();
    ws.project(&hooks_json(
        "Stop",
        &[
            (Some("no-such-tool"), &sh("2 'tests fail'")),
            (Some("shell("), &py("2 'docs missing'")),
            (None, &sh("0")),
        ],
    ));
    let d = ws.fire(
        "Stop",
        &stop_payload("All done: the tests were run."),
        &["--trusted"],
    );
    assert_eq!(d.verdict(), "continue", "{:?}", d.decision());
    assert_eq!(d.decision()["message"], "tests fail\n\ndocs missing");
    assert_eq!(d.decision()["hooks"].as_array().unwrap().len(), 3);
    // The pattern that does not compile is reported as harmless here, not as matching nothing.
    let w = d.warnings();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].contains("Stop entry 1: the matcher \"shell(\" does not compile")
            && w[0].ends_with("Stop ignores matchers, so the entry still runs"),
        "{w:?}"
    );

    // A Stop hook error ends the event: the hooks after it do not run.
    let ws = Ws::new();
    ws.project(&hooks_json(
        "Stop",
        &[
            (None, &sh("2 'tests fail'")),
            (None, &py("1")),
            (None, "touch third-ran"),
        ],
    ));
    let d = ws.fire("Stop", &stop_payload("Done."), &["--trusted"]);
    assert_eq!(d.verdict(), "error", "{:?}", d.decision());
    assert!(d.decision().get("message").is_none(), "{:?}", d.decision());
    assert!(!ws.root().join("third-ran").exists());
}

#[test]
fn the_wake_budget_over_three_consecutive_continuations() {
    let ws = Ws::new();
    ws.project(&hooks_json("Stop", &[(None, &sh("2 'keep going'"))]));
    let fire = |n: u32| {
        ws.fire(
            "Stop",
            &stop_payload("Done."),
            &["--trusted", "--continuations", &n.to_string()],
        )
    };
    assert_eq!(fire(0).verdict(), "continue");
    assert_eq!(fire(1).verdict(), "continue");
    let third = fire(2);
    assert_eq!(third.verdict(), "wait");
    assert_eq!(third.decision()["message"], "keep going");
    assert!(
        third.decision()["notice"]
            .as_str()
            .unwrap()
            .contains("wake budget")
    );
    assert_eq!(fire(3).verdict(), "wait");
    // The host cleared the count on the next user message.
    assert_eq!(fire(0).verdict(), "continue");
}

#[test]
fn intent_stop_runs_with_no_hooks_and_is_off_by_config() {
    let announcing = stop_payload("The lint job fails in app.rs. Let me fix the import.");
    let ws = Ws::new();
    let d = ws.fire("Stop", &announcing, &[]);
    assert_eq!(d.verdict(), "continue", "{:?}", d.decision());
    assert!(
        d.decision()["message"]
            .as_str()
            .unwrap()
            .contains("Let me fix the import.")
    );
    assert!(d.decision()["hooks"].as_array().unwrap().is_empty());
    assert_eq!(
        ws.fire("Stop", &stop_payload("Fixed the import; lint passes."), &[])
            .verdict(),
        "end"
    );
    for quiet in [
        &["--goal-active"][..],
        &["--loop-active"],
        &["--background-jobs", "1"],
    ] {
        assert_eq!(
            ws.fire("Stop", &announcing, quiet).verdict(),
            "end",
            "{quiet:?}"
        );
    }
    assert_eq!(
        ws.fire("Stop", &announcing, &["--background-jobs", "0"])
            .verdict(),
        "continue"
    );
    // Its reason joins the hooks' under the same budget.
    ws.project(&hooks_json("Stop", &[(None, &sh("2 'tests fail'"))]));
    let d = ws.fire("Stop", &announcing, &["--trusted"]);
    let message = d.decision()["message"].as_str().unwrap();
    assert!(
        message.starts_with("tests fail\n\nYour last message"),
        "{message}"
    );
    let d = ws.fire("Stop", &announcing, &["--trusted", "--continuations", "2"]);
    assert_eq!(d.verdict(), "wait");
    // Off by config.
    let ws = Ws::new();
    ws.user("[hooks]\nintent_stop = false\n");
    assert_eq!(ws.fire("Stop", &announcing, &[]).verdict(), "end");
    let list = ws.hookq(&["agent", "list", "--json"], b"");
    assert_eq!(list.decision()["intent_stop"], false);
}

#[test]
fn payloads_reach_hooks_as_documented() {
    let ws = Ws::new();
    let record = |name: &str| format!("sh {} {name}", script("record.sh"));
    ws.project(&format!(
        r#"{{"PostToolUse": [{{"hooks": [{{"type": "command", "command": {p}}}]}}],
            "Stop": [{{"hooks": [{{"type": "command", "command": {s}}}]}}]}}"#,
        p = Value::String(record("post")),
        s = Value::String(record("stop"))
    ));
    ws.fire("PostToolUse", &post_payload(), &["--trusted"]);
    ws.fire("Stop", &stop_payload("Done."), &["--trusted"]);
    let log = ws.read("hook-log");
    let lines: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l.split_once(' ').unwrap().1).unwrap())
        .collect();
    let cwd = ws.root().to_str().unwrap().to_owned();
    assert_eq!(
        lines[0],
        json!({"hook_event_name": "PostToolUse", "tool_name": "shell",
               "tool_input": {"command": "make check"},
               "tool_response": {"content": "ok", "is_error": false}, "cwd": cwd, "session_id": "s1"})
    );
    assert_eq!(
        lines[1],
        json!({"hook_event_name": "Stop", "cwd": cwd, "session_id": "s1", "last_assistant_message": "Done."})
    );
}

#[test]
fn hooks_run_in_the_workspace_with_the_sandboxed_environment() {
    let ws = Ws::new();
    ws.project(&pre_entries(&[(
        None,
        "cat >/dev/null; pwd > where; env > env-seen",
    )]));
    let other = tempfile::tempdir().unwrap();
    let mut cmd = ws.command();
    cmd.current_dir(other.path())
        .env("SECRET_TOKEN", "s3cr3t")
        .env("KEEP_ME", "yes");
    let ws_arg = ws.root().to_str().unwrap().to_owned();
    let payload = json!({"tool_name": "shell", "tool_input": {}}).to_string();
    let d = ws.hookq_with(
        cmd,
        &[
            "agent",
            "fire",
            "PreToolUse",
            "--workspace",
            &ws_arg,
            "--trusted",
            "--sandbox-env",
            "KEEP_ME,PATH",
        ],
        payload.as_bytes(),
    );
    assert_eq!(d.verdict(), "continue");
    assert_eq!(ws.read("where").trim(), ws_arg);
    let env = ws.read("env-seen");
    assert!(env.contains("KEEP_ME=yes"), "{env}");
    assert!(!env.contains("SECRET_TOKEN"), "{env}");
    assert!(!env.contains("HOME="), "{env}");
    // Without a sandbox, hookq's own environment.
    let mut cmd = ws.command();
    cmd.env("SECRET_TOKEN", "s3cr3t");
    ws.hookq_with(
        cmd,
        &["agent", "fire", "PreToolUse", "--trusted"],
        payload.as_bytes(),
    );
    assert!(ws.read("env-seen").contains("SECRET_TOKEN=s3cr3t"));
}

#[test]
fn dash_c_names_the_default_workspace() {
    let ws = Ws::new();
    ws.project(&pre_entries(&[(None, &sh("2 'from -C'"))]));
    let root = ws.root().to_str().unwrap().to_owned();
    let mut cmd = ws.command();
    cmd.current_dir(ws.home());
    let payload = json!({"tool_name": "shell", "tool_input": {}}).to_string();
    let d = ws.hookq_with(
        cmd,
        &["-C", &root, "agent", "fire", "PreToolUse", "--trusted"],
        payload.as_bytes(),
    );
    assert_eq!(d.decision()["reason"], "from -C");
}

#[test]
fn usage_errors_print_one_error_line_and_no_decision() {
    let ws = Ws::new();
    let tool = json!({"tool_name": "shell", "tool_input": {}}).to_string();
    let cases: &[(&[&str], &[u8], &str)] = &[
        (
            &["agent", "fire", "pretooluse"],
            tool.as_bytes(),
            "unknown event \"pretooluse\"",
        ),
        (
            &["agent", "fire", "PreToolUse"],
            b"",
            "cannot read the PreToolUse payload on stdin",
        ),
        (
            &["agent", "fire", "PreToolUse"],
            b"{not json",
            "cannot read the PreToolUse payload",
        ),
        (&["agent", "fire", "PreToolUse"], b"[]", "not a JSON object"),
        (
            &["agent", "fire", "PreToolUse"],
            br#"{"tool_input": {}}"#,
            "tool_name is missing",
        ),
        (
            &["agent", "fire", "PostToolUse", "--continuations", "1"],
            tool.as_bytes(),
            "--continuations is for Stop only",
        ),
        (
            &["agent", "fire", "Stop", "--continuations", "-1"],
            b"{}",
            "error:",
        ),
        (
            &["agent", "fire", "Stop", "--workspace", "/nonexistent/dir"],
            b"{}",
            "not a directory",
        ),
        (&["agent", "list", "--bogus"], b"", "error:"),
        (
            &["agent", "fire", "Stop", "--sandbox-env", "PATH,HOME=/tmp"],
            b"{}",
            "--sandbox-env \"HOME=/tmp\": not a variable name",
        ),
        (
            &["agent", "fire", "PreToolUse"],
            br#"{"tool_name": "shell", "tool_input": {}, "hook_event_name": "Stop"}"#,
            "but the event fired is PreToolUse",
        ),
    ];
    for (args, stdin, says) in cases {
        let out = ws.hookq(args, stdin);
        let stderr = out.stderr();
        assert_ne!(out.out.status.code(), Some(0), "{args:?}");
        assert!(out.out.stdout.is_empty(), "{args:?}: no decision");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
        // hookq's own errors are one line; the argument parser's add its usage after theirs.
        if *says != "error:" {
            assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        }
    }
}

#[test]
fn the_list_shows_layers_entries_handlers_and_warnings() {
    let ws = Ws::new();
    ws.project(&pre_entries(&[(Some("shell"), "make lint")]));
    ws.user("[hooks]\nintent_stop = true\n[[hooks.Stop]]\nmatcher = \"x\"\n[[hooks.Stop.hooks]]\ntype = \"command\"\ncommand = \"notify-send done\"\ntimeout = 30\n[[hooks.Bogus]]\n");
    let list = ws.hookq(&["agent", "list", "--trusted", "--json"], b"");
    let v = list.decision();
    assert_eq!(v["sources"][0]["layer"], "project");
    assert_eq!(v["sources"][0]["state"], "loaded");
    assert_eq!(v["sources"][1]["layer"], "user");
    assert_eq!(v["sources"][1]["path"], ws.user_config().to_str().unwrap());
    assert_eq!(
        v["entries"][0]["handlers"][0],
        json!({"handler": 0, "command": "make lint", "timeout_secs": 30})
    );
    assert_eq!(v["entries"][1]["event"], "Stop");
    assert_eq!(v["entries"][1]["layer"], "user");
    assert_eq!(v["entries"][1]["matcher_ignored"], true);
    assert_eq!(v["entries"][1]["handlers"][0]["timeout_secs"], 30);
    assert_eq!(v["warnings"].as_array().unwrap().len(), 1);
    let text = ws.hookq(&["agent", "list", "--trusted"], b"");
    let stdout = String::from_utf8_lossy(&text.out.stdout);
    for line in [
        "project  ",
        "PreToolUse: 1 entry",
        "  project entry 0: matcher \"shell\" compiles",
        "    handler 0  timeout 30s  make lint",
        "Stop: 1 entry (matchers are ignored)",
        "  user entry 0: matcher \"x\" ignored: Stop runs every entry",
        "warnings: 1",
        "\"Bogus\" is not PreToolUse",
    ] {
        assert!(stdout.contains(line), "{line:?} not in\n{stdout}");
    }
}

#[test]
fn the_hosts_input_comes_back_exactly() {
    let ws = Ws::new();
    ws.project(&pre_entries(&[(None, &sh("0"))]));
    let input = r#"{"x":0.1,"tiny":3.2783337077954106e-122,"big":12345678901234567890,"neg":-4.4157465289218284e+297,"s":"\u00e9\u0000"}"#;
    let payload = format!(r#"{{"tool_name": "shell", "tool_input": {input}}}"#);
    let d = ws.hookq(
        &["agent", "fire", "PreToolUse", "--trusted"],
        payload.as_bytes(),
    );
    assert_eq!(d.decision()["input_changed"], false);
    let out = String::from_utf8(d.out.stdout.clone()).unwrap();
    assert!(
        out.contains(r#""tool_input":{"big":12345678901234567890,"neg":-4.4157465289218284e+297,"s":"é\u0000","tiny":3.2783337077954106e-122,"x":0.1}"#),
        "{out}"
    );
}

#[test]
fn the_docs_worked_example_blocks_a_protected_host() {
    let ws = Ws::new();
    ws.user(&format!(
        "[[hooks.PreToolUse]]\nmatcher = \"shell\"\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = {:?}\n",
        format!("sh {}", script("block-hosts.sh"))
    ));
    let fire = |command: &str| {
        ws.fire(
            "PreToolUse",
            &json!({"tool_name": "shell", "tool_input": {"command": command}, "session_id": "s1"}),
            &[],
        )
    };
    let d = fire("curl -X POST https://protected-host/");
    assert_eq!(d.verdict(), "deny");
    assert_eq!(d.decision()["reason"], "protected host is off limits");
    assert_eq!(d.decision()["hooks"][0]["layer"], "user");
    assert_eq!(fire("make check").verdict(), "continue");
}

#[test]
fn a_workspace_that_does_not_exist_is_not_found() {
    // Exit 4, as for the queue and worktree commands: a script tells a missing directory from
    // a bad command line.
    let ws = Ws::new();
    let file = ws.root().join("a-file");
    std::fs::write(&file, "").unwrap();
    let file = file.to_str().unwrap();
    let cases: &[&[&str]] = &[
        &["-C", "/nonexistent", "agent", "list"],
        &["-C", "/nonexistent", "agent", "fire", "Stop"],
        &["agent", "list", "--workspace", "/nonexistent/dir"],
        &["agent", "fire", "Stop", "--workspace", "/nonexistent/dir"],
        &["-C", file, "agent", "list"],
    ];
    for args in cases {
        let out = ws.hookq(args, b"{}");
        let stderr = out.stderr();
        assert_eq!(out.out.status.code(), Some(4), "{args:?}: {stderr}");
        assert!(out.out.stdout.is_empty(), "{args:?}");
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
        assert!(stderr.contains("not a directory"), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    }
}

#[test]
fn a_config_named_on_the_command_line_that_does_not_exist_warns() {
    let ws = Ws::new();
    let named = ws.home().join("radian/confg.toml");
    let named = named.to_str().unwrap();
    // Named and missing: one warning, on stderr, in the decision and in the listing.
    let d = ws.fire(
        "Stop",
        &stop_payload("All tests pass."),
        &["--config", named],
    );
    assert_eq!(d.verdict(), "end");
    let warnings = d.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with(&format!("{named}: no such file")),
        "{warnings:?}"
    );
    assert!(
        d.stderr()
            .contains(&format!("warning: {named}: no such file"))
    );
    let list = ws.hookq(&["agent", "list", "--json", "--config", named], b"");
    let v = list.decision();
    assert_eq!(v["sources"][1]["state"], "missing");
    assert_eq!(v["warnings"].as_array().unwrap().len(), 1, "{v}");
    // The default config, missing, stays quiet.
    let d = ws.fire("Stop", &stop_payload("All tests pass."), &[]);
    assert!(d.warnings().is_empty(), "{:?}", d.warnings());
    assert!(d.stderr().is_empty(), "{}", d.stderr());
}

#[test]
fn a_hook_error_shows_why_from_the_hooks_stderr() {
    // The usual first failure of a hook carried over from elsewhere: a path built on a variable
    // that is not set here, so the shell cannot find the script and exits 127.
    let ws = Ws::new();
    ws.project(&pre_entries(&[(
        Some("shell"),
        "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/check.sh",
    )]));
    let d = ws.pre("shell", &[]);
    assert_eq!(d.verdict(), "error");
    let hook = &d.decision()["hooks"][0];
    assert_eq!(hook["ending"], "exit 127");
    let stderr = hook["stderr"].as_str().unwrap();
    assert!(stderr.contains("/.claude/hooks/check.sh"), "{stderr}");
    assert!(stderr.contains("not found"), "{stderr}");
    let warning = &d.warnings()[0];
    assert!(warning.starts_with("hook error: "), "{warning}");
    assert!(warning.contains("exit 127"), "{warning}");
    assert!(warning.contains("; its stderr: "), "{warning}");
    assert!(warning.contains("not found"), "{warning}");
    let printed = d.stderr();
    assert!(
        printed
            .lines()
            .any(|l| l.starts_with("warning: hook error: ") && l.contains("not found")),
        "{printed}"
    );
    // The model is told which hook failed and how, not what it printed.
    let reason = d.decision()["reason"].as_str().unwrap();
    assert!(reason.contains("exit 127"), "{reason}");
    assert!(!reason.contains("not found"), "{reason}");
    // Stdout stays unquoted.
    let ws = Ws::new();
    ws.project(&pre_entries(&[(
        None,
        "cat >/dev/null; printf 'out%s' put; printf 'err%s' or >&2; exit 3",
    )]));
    let d = ws.pre("shell", &[]);
    assert_eq!(d.decision()["hooks"][0]["stderr"], "error");
    let all = String::from_utf8_lossy(&d.out.stdout).into_owned() + &d.stderr();
    assert!(!all.contains("output"), "{all}");
}

/// The JSON blocks of docs/agent.md's project file section, in order.
fn project_file_examples() -> Vec<String> {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/agent.md"),
    )
    .unwrap();
    let section = doc
        .split("### The project file (JSON)")
        .nth(1)
        .and_then(|rest| rest.split("\n### ").next())
        .unwrap();
    section
        .split("```json\n")
        .skip(1)
        .map(|block| block.split("```").next().unwrap().to_owned())
        .collect()
}

#[test]
fn the_docs_project_files_deny_no_ordinary_call_when_tools_fail() {
    // In a workspace where every tool the examples run fails as it does in a fresh checkout
    // (no Makefile: make exits 2, no notifier), an ordinary shell call still runs.
    let examples = project_file_examples();
    assert_eq!(examples.len(), 2, "the bare and the wrapped shape");
    for example in &examples {
        let ws = Ws::new();
        ws.project(example);
        let ls = ws.fire(
            "PreToolUse",
            &json!({"tool_name": "shell", "tool_input": {"command": "ls"}, "session_id": "s1"}),
            &["--trusted"],
        );
        assert_eq!(ls.verdict(), "continue", "{example}: {:?}", ls.decision());
        assert!(ls.warnings().is_empty(), "{:?}", ls.warnings());
        let patch = ws.fire(
            "PostToolUse",
            &json!({"tool_name": "patch", "tool_input": {}, "tool_response": {}, "session_id": "s1"}),
            &["--trusted"],
        );
        assert_eq!(
            patch.verdict(),
            "feedback",
            "{example}: {:?}",
            patch.decision()
        );
        assert_eq!(
            patch.decision()["feedback"],
            "make lint fails after this patch"
        );
        let stop = ws.fire("Stop", &stop_payload("All tests pass."), &["--trusted"]);
        assert_eq!(stop.verdict(), "end", "{example}: {:?}", stop.decision());
    }
    let ws = Ws::new();
    ws.project(&examples[0]);
    let d = ws.fire(
        "PreToolUse",
        &json!({"tool_name": "shell", "tool_input": {"command": "curl https://protected-host/"}}),
        &["--trusted"],
    );
    assert_eq!(d.decision()["reason"], "protected host is off limits");
}

#[test]
fn a_matcher_naming_no_tool_here_warns_once_per_entry_in_list_and_fire() {
    let ws = Ws::new();
    ws.project(
        &json!({
            "PreToolUse": [
                {"matcher": "Bash|Edit|shell", "hooks": [{"type": "command", "command": "exit 0"}]},
                {"matcher": "shel", "hooks": [{"type": "command", "command": "exit 0"}]},
                {"matcher": "mcp__github__create_issue", "hooks": [{"type": "command", "command": "exit 0"}]},
                {"matcher": "shell|write|github__create_issue|github__.*", "hooks": [{"type": "command", "command": "true"}]},
                {"matcher": "Notebook.*", "hooks": [{"type": "command", "command": "true"}]}
            ],
            "PostToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "exit 0"}]}],
            "Stop": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "exit 0"}]}]
        })
        .to_string(),
    );
    let expect = [
        // Events in file order: the project file here lists PostToolUse first.
        "PostToolUse entry 0: the matcher \"Write\" never fires for \"Write\" (Claude Code's name; here it is \"write\")",
        "PreToolUse entry 0: the matcher \"Bash|Edit|shell\" never fires for \"Bash\" (Claude Code's name; here it is \"shell\"), \"Edit\" (Claude Code's name; here it is \"patch\"): no tool has that name here",
        "PreToolUse entry 1: the matcher \"shel\" never fires for \"shel\" (did you mean \"shell\"?)",
        "PreToolUse entry 2: the matcher \"mcp__github__create_issue\" never fires for \"mcp__github__create_issue\" (Claude Code's name; here it is \"github__create_issue\")",
        "PreToolUse entry 4: the matcher \"Notebook.*\" is a pattern over Claude Code's tool names that cannot be translated safely",
    ];
    let check = |warnings: &[String]| {
        assert_eq!(warnings.len(), expect.len(), "{warnings:#?}");
        for (w, want) in warnings.iter().zip(expect) {
            assert!(w.contains(want), "{w:?} lacks {want:?}");
            assert!(w.contains("hooks.json: "), "names the file: {w}");
        }
    };
    let list = ws.hookq(&["agent", "list", "--trusted", "--json"], b"");
    let warnings: Vec<String> = list.decision()["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap().to_owned())
        .collect();
    check(&warnings);
    let d = ws.pre("shell", &[]);
    check(&d.warnings());
    assert_eq!(d.verdict(), "continue", "no decision rule changed");
    let fired: Vec<&str> = d.decision()["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap_or_default())
        .collect();
    assert_eq!(fired.len(), 2, "shell matches entries 0 and 3 only");
    for want in expect {
        assert!(d.stderr().contains(want), "{}", d.stderr());
    }
}

#[test]
fn reply_keys_of_another_agent_warn_and_change_no_decision() {
    // A Claude Code hook's usual replies, on exit 0: each key that is not read is named with
    // what is read instead, and the decision is what it was without the warning.
    let claude_block =
        r#"{"decision": "block", "reason": "BLOCKWORD", "systemMessage": "SYSWORD"}"#;
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "PreToolUse",
            "continue",
            &[
                "decision is not read here; a hook denies by exiting 2",
                "systemMessage is not read here",
            ],
        ),
        (
            "PostToolUse",
            "continue",
            &[
                "decision is not read here; a hook sends feedback to the model by exiting 2",
                "systemMessage is not read here",
            ],
        ),
        (
            "Stop",
            "end",
            &[
                "decision is not read here; a hook asks for another turn by exiting 2",
                "systemMessage is not read here",
            ],
        ),
    ];
    for (event, verdict, notes) in cases {
        let ws = Ws::new();
        ws.project(&hooks_json(event, &[(None, &reply(claude_block))]));
        let payload = match *event {
            "Stop" => stop_payload("All tests pass."),
            "PostToolUse" => post_payload(),
            _ => json!({"tool_name": "shell", "tool_input": {"command": "ls"}}),
        };
        let d = ws.fire(event, &payload, &["--trusted"]);
        assert_eq!(d.verdict(), *verdict, "{event}: {:?}", d.decision());
        let warnings = d.warnings();
        assert_eq!(warnings.len(), notes.len(), "{event}: {warnings:?}");
        for (w, note) in warnings.iter().zip(*notes) {
            assert!(w.contains(note), "{event}: {w:?} lacks {note:?}");
        }
        let all = String::from_utf8_lossy(&d.out.stdout).into_owned() + &d.stderr();
        let all = all.replace(&reply(claude_block), "");
        let command = serde_json::to_string(&reply(claude_block)).unwrap();
        let all = all.replace(&command[1..command.len() - 1], "");
        for word in ["BLOCKWORD", "SYSWORD"] {
            assert!(!all.contains(word), "{event}: stdout quoted: {all}");
        }
    }
    // Claude Code's deny reason key: the deny stands, with the default reason and a warning.
    let ws = Ws::new();
    ws.project(&pre_entries(&[(
        None,
        &reply(r#"{"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "RWORD"}}"#),
    )]));
    let d = ws.pre("shell", &[]);
    assert_eq!(d.verdict(), "deny");
    assert!(
        d.decision()["reason"]
            .as_str()
            .unwrap()
            .contains("gave no reason")
    );
    assert!(
        d.warnings()[0].contains("hookSpecificOutput.permissionDecisionReason is not read here; the deny reason is hookSpecificOutput.reason"),
        "{:?}",
        d.warnings()
    );
}

fn claude_settings() -> std::path::PathBuf {
    agent_support::fixtures().join("claude/settings.json")
}

#[test]
fn import_translates_a_claude_code_settings_file() {
    let ws = Ws::new();
    let path = claude_settings();
    let out = ws.hookq(&["agent", "import", path.to_str().unwrap()], b"");
    assert_eq!(out.out.status.code(), Some(0), "{}", out.stderr());
    let got = out.decision().clone();
    let settings: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let command =
        |event: &str, entry: usize| settings["hooks"][event][entry]["hooks"][0]["command"].clone();
    assert_eq!(
        got,
        json!({
            "PreToolUse": [
                {"matcher": "shell", "hooks": [{"type": "command", "command": command("PreToolUse", 0), "timeout": 10}]},
                {"matcher": "patch|write", "hooks": [{"type": "command", "command": command("PreToolUse", 1)}]},
                {"matcher": "memory__create_entities", "hooks": [{"type": "command", "command": command("PreToolUse", 4)}]}
            ],
            "PostToolUse": [
                {"matcher": "write|patch", "hooks": [{"type": "command", "command": command("PostToolUse", 0)}]}
            ],
            "Stop": [
                {"hooks": [{"type": "command", "command": command("Stop", 0), "timeout": 300}]}
            ]
        })
    );
    let stderr = out.stderr();
    let at = format!("warning: {}: ", path.display());
    for line in stderr.lines() {
        assert!(line.starts_with(&at), "{line}");
    }
    for note in [
        "PreToolUse entry 0 handler 0: its command reads $CLAUDE_PROJECT_DIR",
        "PreToolUse entry 0: matcher \"Bash\" is \"shell\" here",
        "PreToolUse entry 1 handler 1: left out: its type is \"prompt\"",
        "PreToolUse entry 2: matcher \"WebFetch\" left out",
        "PreToolUse entry 3 handler 0: left out: it uses \"async\"",
        "PreToolUse entry 3: left out: none of its handlers can run here",
        "PostToolUse entry 0 handler 0: \"statusMessage\" left out",
        "UserPromptSubmit: left out: no such event here",
        "Notification: left out: no such event here",
    ] {
        assert!(
            stderr.contains(&format!("{at}{note}")),
            "{note:?} not in\n{stderr}"
        );
    }
    // What it prints is a project file that loads with no warning.
    ws.project(&String::from_utf8(out.out.stdout.clone()).unwrap());
    let list = ws.hookq(&["agent", "list", "--trusted", "--json"], b"");
    assert_eq!(list.decision()["warnings"], json!([]), "{}", list.stderr());
    assert_eq!(list.decision()["entries"].as_array().unwrap().len(), 5);
}

#[test]
fn import_refuses_a_file_it_cannot_read() {
    let ws = Ws::new();
    std::fs::write(ws.root().join("broken.json"), "{\"hooks\": ").unwrap();
    std::fs::write(ws.root().join("list.json"), "[]").unwrap();
    for (file, says) in [
        ("missing.json", "cannot read"),
        ("broken.json", "cannot parse"),
        ("list.json", "the top level is a list, not an object"),
    ] {
        let out = ws.hookq(&["agent", "import", file], b"");
        let stderr = out.stderr();
        assert_eq!(out.out.status.code(), Some(3), "{file}: {stderr}");
        assert!(out.out.stdout.is_empty());
        assert!(stderr.starts_with("error: "), "{stderr}");
        assert!(stderr.contains(says), "{file}: {stderr}");
        assert!(stderr.contains("hint: "), "{stderr}");
    }
}
