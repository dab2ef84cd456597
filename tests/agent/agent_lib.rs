//! The library surface a Rust host embeds: load once, fire many times, with real sh and Python
//! hook scripts; the decision is the same object the CLI prints.

use crate::support::agent as agent_support;

use std::path::Path;

use agent_support::{Ws, hooks_json, pre_entries, script};
use hookq::agent::{Agent, Decision, HookEnv, Options, ToolCall, Turn, Verdict};
use serde_json::{Value, json};

fn options(root: &Path) -> Options {
    let mut o = Options::new(root);
    o.user_config = None;
    o.trusted = true;
    o
}

fn call(tool: &str, command: &str) -> ToolCall {
    ToolCall {
        tool_name: tool.into(),
        tool_input: json!({"command": command}).as_object().unwrap().clone(),
        session_id: "s1".into(),
    }
}

fn exit_hook(lang: &str, code: i32, message: &str) -> String {
    match lang {
        "sh" => format!("sh {} {code} '{message}'", script("exit.sh")),
        _ => format!("python3 {} {code} '{message}'", script("exit.py")),
    }
}

#[test]
fn every_exit_code_for_every_event_through_the_library() {
    let rows = [
        (0, Verdict::Continue, Verdict::Continue, Verdict::End),
        (2, Verdict::Deny, Verdict::Feedback, Verdict::Continue),
        (1, Verdict::Error, Verdict::Error, Verdict::Error),
        (42, Verdict::Error, Verdict::Error, Verdict::Error),
    ];
    for lang in ["sh", "python"] {
        for (code, pre, post, stop) in rows {
            let ws = Ws::new();
            let h = Value::String(exit_hook(lang, code, "why"));
            ws.project(&format!(
                r#"{{"PreToolUse": [{{"hooks": [{{"type": "command", "command": {h}}}]}}],
                    "PostToolUse": [{{"hooks": [{{"type": "command", "command": {h}}}]}}],
                    "Stop": [{{"hooks": [{{"type": "command", "command": {h}}}]}}]}}"#
            ));
            let agent = Agent::load(&options(&ws.root()));
            assert!(agent.warnings().is_empty(), "{:?}", agent.warnings());
            let d = agent.pre_tool_use(&call("shell", "ls"));
            assert_eq!(d.decision, pre, "{lang} {code}: {d:?}");
            let d = agent.post_tool_use(&call("shell", "ls"), &json!({"content": "x"}));
            assert_eq!(d.decision, post, "{lang} {code}: {d:?}");
            let d = agent.stop(&Turn {
                last_assistant_message: "All tests pass.".into(),
                ..Turn::default()
            });
            assert_eq!(d.decision, stop, "{lang} {code}: {d:?}");
            if code == 2 {
                assert_eq!(d.message.as_deref(), Some("why"));
            }
            assert_eq!(d.hooks[0].ending, format!("exit {code}"));
        }
    }
}

#[test]
fn loaded_once_nothing_is_read_again() {
    let ws = Ws::new();
    ws.project(&pre_entries(&[(None, &exit_hook("sh", 2, "loaded"))]));
    let agent = Agent::load(&options(&ws.root()));
    // The file changes and then goes: the loaded hooks still run, as loaded.
    ws.project(&pre_entries(&[(None, "exit 0")]));
    std::fs::remove_file(ws.root().join(".radian/hooks.json")).unwrap();
    for _ in 0..3 {
        let d = agent.pre_tool_use(&call("shell", "ls"));
        assert_eq!(d.reason.as_deref(), Some("loaded"));
    }
}

#[test]
fn updated_input_chains_through_the_library() {
    let ws = Ws::new();
    let append = |t: &str| format!("python3 {} {t}", script("append.py"));
    ws.project(&pre_entries(&[
        (None, &append("a")),
        (None, "cat >/dev/null"),
        (None, &append("b")),
    ]));
    let agent = Agent::load(&options(&ws.root()));
    let d = agent.pre_tool_use(&call("shell", "ls"));
    assert_eq!(d.decision, Verdict::Continue);
    assert_eq!(d.tool_input.unwrap()["command"], "ls | a | b");
    assert_eq!(d.input_changed, Some(true));
}

#[test]
fn the_library_decision_is_the_cli_decision() {
    let ws = Ws::new();
    ws.project(&pre_entries(&[(
        Some("shell"),
        &exit_hook("sh", 2, "no network writes"),
    )]));
    let agent = Agent::load(&options(&ws.root()));
    let lib = agent.pre_tool_use(&call("shell", "curl -X POST x"));
    // No user layer either way: the private home has no config, which is missing quietly.
    let cli = ws.fire(
        "PreToolUse",
        &json!({"tool_name": "shell", "tool_input": {"command": "curl -X POST x"}, "session_id": "s1"}),
        &["--trusted"],
    );
    let mut from_cli: Decision = serde_json::from_value(cli.decision().clone()).unwrap();
    // Only the timings may differ.
    from_cli.hooks[0].duration_ms = lib.hooks[0].duration_ms;
    assert_eq!(from_cli, lib);
}

#[test]
fn a_sandbox_passes_only_the_named_variables() {
    let ws = Ws::new();
    ws.project(&hooks_json("Stop", &[(None, "env > env-seen")]));
    let mut o = options(&ws.root());
    o.env = HookEnv::Only(vec![
        "PATH".into(),
        "NO_SUCH_VARIABLE_HERE".into(),
        "PATH".into(),
    ]);
    let agent = Agent::load(&o);
    agent.stop(&Turn::default());
    let seen = ws.read("env-seen");
    let names: Vec<&str> = seen
        .lines()
        .map(|l| l.split('=').next().unwrap())
        .filter(|n| !["PWD", "SHLVL", "_", "OLDPWD"].contains(n))
        .collect();
    assert_eq!(names, ["PATH"], "{seen}");
}

#[test]
fn no_matching_entry_runs_nothing() {
    let ws = Ws::new();
    let entries: Vec<(Option<&str>, &str)> =
        (0..50).map(|_| (Some("write"), "touch ran")).collect();
    ws.project(&pre_entries(&entries));
    let agent = Agent::load(&options(&ws.root()));
    let d = agent.pre_tool_use(&call("shell", "ls"));
    assert_eq!(d.decision, Verdict::Continue);
    assert!(d.hooks.is_empty());
    assert!(!ws.root().join("ran").exists());
    assert_eq!(agent.entries().len(), 50);
}

#[test]
fn an_agent_can_be_shared_between_threads() {
    fn shared<T: Send + Sync>(_: &T) {}
    let ws = Ws::new();
    ws.project(&pre_entries(&[(
        Some("shell"),
        &exit_hook("sh", 2, "denied"),
    )]));
    let agent = Agent::load(&options(&ws.root()));
    shared(&agent);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| s.spawn(|| agent.pre_tool_use(&call("shell", "ls")).decision))
            .collect();
        for h in handles {
            assert_eq!(h.join().unwrap(), Verdict::Deny);
        }
    });
}

/// Fires every event once on `agent`.
fn fire_each(agent: &Agent) -> [Decision; 3] {
    [
        agent.pre_tool_use(&call("shell", "ls")),
        agent.post_tool_use(&call("shell", "ls"), &json!({"content": "x"})),
        agent.stop(&Turn {
            last_assistant_message: "All tests pass.".into(),
            ..Turn::default()
        }),
    ]
}

#[test]
fn a_timeout_a_signal_and_a_failure_to_start_are_hook_errors_on_every_event() {
    for (command, timeout, ending) in [
        (
            "cat >/dev/null; printf 'sa%sd' i >&2; exec sleep 60",
            1,
            "timed out (",
        ),
        (
            "cat >/dev/null; printf 'sa%sd' i >&2; kill -TERM $$",
            30,
            "killed by signal 15",
        ),
    ] {
        let ws = Ws::new();
        let entry =
            json!([{"hooks": [{"type": "command", "command": command, "timeout": timeout}]}]);
        ws.project(&json!({"PreToolUse": entry, "PostToolUse": entry, "Stop": entry}).to_string());
        let agent = Agent::load(&options(&ws.root()));
        for d in fire_each(&agent) {
            assert_eq!(d.decision, Verdict::Error, "{command}: {d:?}");
            assert!(d.hooks[0].ending.starts_with(ending), "{d:?}");
            let reason = d.reason.unwrap();
            assert!(reason.starts_with("hook error: "), "{reason}");
            assert!(!reason.contains("said"), "stderr never leaks: {reason}");
            assert!(d.message.is_none() && d.feedback.is_none());
        }
    }
    // The workspace goes after loading: /bin/sh cannot start there.
    let ws = Ws::new();
    let entry = json!([{"hooks": [{"type": "command", "command": "exit 0"}]}]);
    ws.project(&json!({"PreToolUse": entry, "PostToolUse": entry, "Stop": entry}).to_string());
    let agent = Agent::load(&options(&ws.root()));
    std::fs::remove_dir_all(ws.root()).unwrap();
    for d in fire_each(&agent) {
        assert_eq!(d.decision, Verdict::Error, "{d:?}");
        assert!(
            d.hooks[0].ending.starts_with("could not start"),
            "{:?}",
            d.hooks[0]
        );
    }
}
