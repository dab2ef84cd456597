//! `hookq agent import` through the real binary: what a Claude Code matcher means once
//! imported (MCP guards stay on MCP tools, anchored and grouped names are translated, what
//! cannot be translated warns in `import` and in every `list`), the commands and tool names it
//! flags, the file's own order of events, and a settings file saved with a byte order mark.

use crate::support::agent as agent_support;

use agent_support::Ws;
use serde_json::{Value, json};

/// A settings file holding `hooks` (its text as given, so the order of events is the test's).
fn settings(ws: &Ws, text: &str) -> String {
    let path = ws.root().join("settings.json");
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

/// A settings file with one PreToolUse entry per matcher, each denying with its index.
fn pre_settings(matchers: &[&str]) -> String {
    let entries: Vec<Value> = matchers
        .iter()
        .enumerate()
        .map(|(i, m)| {
            json!({"matcher": m, "hooks": [{"type": "command",
                "command": format!("cat >/dev/null; echo entry{i} >&2; exit 2")}]})
        })
        .collect();
    json!({"hooks": {"PreToolUse": entries}}).to_string()
}

/// `hookq agent import PATH`: the project file it printed and its stderr.
fn import(ws: &Ws, path: &str) -> (Value, String) {
    let out = ws.hookq(&["agent", "import", path], b"");
    assert_eq!(out.out.status.code(), Some(0), "{}", out.stderr());
    (out.decision().clone(), out.stderr())
}

/// Imports `matchers` into the workspace's project file; the imported matchers and stderr.
fn import_into_project(ws: &Ws, matchers: &[&str]) -> (Vec<Value>, String) {
    let path = settings(ws, &pre_settings(matchers));
    let (file, stderr) = import(ws, &path);
    ws.project(&file.to_string());
    let got = file["PreToolUse"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["matcher"].clone())
        .collect();
    (got, stderr)
}

fn list_warnings(ws: &Ws) -> Vec<String> {
    let list = ws.hookq(&["agent", "list", "--trusted", "--json"], b"");
    list.decision()["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn an_mcp_guard_stays_on_mcp_tools() {
    // The issue's reproduction, with each way of writing "every MCP tool".
    for matcher in ["mcp__.*", "mcp__*", "mcp__.+", "mcp__", "^mcp__.*$"] {
        let ws = Ws::new();
        let path = settings(
            &ws,
            &json!({"hooks": {"PreToolUse": [{"matcher": matcher,
                "hooks": [{"type": "command", "command": "echo no MCP >&2; exit 2"}]}]}})
            .to_string(),
        );
        let (file, stderr) = import(&ws, &path);
        let imported = file["PreToolUse"][0]["matcher"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            !["", "*", ".*", ".+"].contains(&imported.as_str()),
            "{matcher}: {imported}"
        );
        assert!(stderr.contains(&format!("matcher {matcher:?} is {imported:?} here")));
        ws.project(&file.to_string());
        assert_eq!(list_warnings(&ws), Vec::<String>::new(), "{matcher}");
        for tool in ["shell", "read", "write", "ask_user", "memory_search"] {
            let d = ws.pre(tool, &[]);
            assert_eq!(
                d.verdict(),
                "continue",
                "{matcher} {tool}: {:?}",
                d.decision()
            );
        }
        for tool in ["github__create_issue", "memory__read_graph"] {
            let d = ws.pre(tool, &[]);
            assert_eq!(d.verdict(), "deny", "{matcher} {tool}");
            assert_eq!(d.decision()["reason"], "no MCP", "{matcher} {tool}");
        }
    }
}

#[test]
fn anchored_and_grouped_names_are_translated() {
    let ws = Ws::new();
    let matchers = [
        "^mcp__.*__(send_email|delete_file)$",
        "(mcp__github__.*)",
        "^Bash$",
        "^(Edit|Write)$",
        "(?:mcp__memory__create_entities|AskUserQuestion)",
        "mcp__github.*",
    ];
    let (got, stderr) = import_into_project(&ws, &matchers);
    assert_eq!(
        got,
        [
            ".*__(send_email|delete_file)",
            "github__.*",
            "shell",
            "patch|write",
            "memory__create_entities|ask_user",
            "github.*__.+",
        ]
    );
    assert!(!stderr.contains("cannot be translated"), "{stderr}");
    assert_eq!(list_warnings(&ws), Vec::<String>::new());
    let fires = |tool: &str| -> Vec<String> {
        let d = ws.pre(tool, &[]);
        if d.verdict() == "continue" {
            return Vec::new();
        }
        assert_eq!(d.verdict(), "deny", "{tool}");
        vec![d.decision()["reason"].as_str().unwrap().to_owned()]
    };
    assert_eq!(fires("mail__send_email"), ["entry0"]);
    assert_eq!(fires("mail__delete_file"), ["entry0"]);
    assert!(fires("mail__read").is_empty());
    assert_eq!(fires("github__create_issue"), ["entry1"]);
    assert!(fires("gitlab__create_issue").is_empty());
    assert_eq!(fires("githubenterprise__list"), ["entry5"]);
    assert_eq!(fires("shell"), ["entry2"]);
    assert_eq!(fires("patch"), ["entry3"]);
    assert_eq!(fires("write"), ["entry3"]);
    assert_eq!(fires("memory__create_entities"), ["entry4"]);
    assert_eq!(fires("ask_user"), ["entry4"]);
    assert!(fires("read").is_empty());
    assert!(fires("github").is_empty());
}

#[test]
fn what_cannot_be_translated_warns_in_import_and_in_every_list() {
    let ws = Ws::new();
    let untranslatable = [".*mcp__.*", "(mcp__a|mcp__b)__x", "Notebook.*"];
    let (got, stderr) = import_into_project(&ws, &untranslatable);
    assert_eq!(got, untranslatable, "kept as written");
    for (i, m) in untranslatable.iter().enumerate() {
        let note =
            format!("PreToolUse entry {i}: matcher {m:?} kept as written: it cannot be translated");
        assert!(stderr.contains(&note), "{note:?} not in\n{stderr}");
    }
    // The same warning each time the file is loaded, and the entry still loads as written.
    for _ in 0..2 {
        let warnings = list_warnings(&ws);
        assert_eq!(warnings.len(), untranslatable.len(), "{warnings:#?}");
        for (w, (i, m)) in warnings.iter().zip(untranslatable.iter().enumerate()) {
            let want = format!(
                "PreToolUse entry {i}: the matcher {m:?} is a pattern over Claude Code's tool names"
            );
            assert!(w.contains(&want), "{w:?} lacks {want:?}");
        }
    }
    let d = ws.pre("shell", &[]);
    assert_eq!(d.verdict(), "continue");
    assert_eq!(
        d.warnings().len(),
        untranslatable.len(),
        "{:?}",
        d.warnings()
    );
    assert_eq!(
        ws.pre("NotebookEdit", &[]).verdict(),
        "deny",
        "kept as written"
    );

    // A project file written by hand with Claude Code's names in a pattern: the warning gives
    // the translation.
    let ws = Ws::new();
    ws.project(
        &json!({"PreToolUse": [
            {"matcher": "^mcp__.*__(send_email|delete_file)$", "hooks": [{"type": "command", "command": "exit 0"}]},
            {"matcher": "(mcp__github__.*)", "hooks": [{"type": "command", "command": "exit 0"}]},
            {"matcher": "^Bash$", "hooks": [{"type": "command", "command": "exit 0"}]}
        ]})
        .to_string(),
    );
    let warnings = list_warnings(&ws);
    assert_eq!(warnings.len(), 3, "{warnings:#?}");
    for (w, want) in warnings.iter().zip([
        "PreToolUse entry 0: the matcher \"^mcp__.*__(send_email|delete_file)$\" never fires for \"mcp__.*__(send_email|delete_file)\" (Claude Code's names; here it is \".*__(send_email|delete_file)\")",
        "PreToolUse entry 1: the matcher \"(mcp__github__.*)\" never fires for \"mcp__github__.*\" (Claude Code's names; here it is \"github__.*\")",
        "PreToolUse entry 2: the matcher \"^Bash$\" never fires for \"Bash\" (Claude Code's name; here it is \"shell\")",
    ]) {
        assert!(w.contains(want), "{w:?} lacks {want:?}");
    }
}

#[test]
fn plugin_root_is_flagged_and_ask_user_question_is_ask_user() {
    let ws = Ws::new();
    let path = settings(
        &ws,
        &json!({"hooks": {"PreToolUse": [
            {"matcher": "AskUserQuestion", "hooks": [
                {"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/hooks/ask.sh"},
                {"type": "command", "command": "sh $CLAUDE_PLUGIN_ROOT/hooks/log.sh"}
            ]}
        ]}})
        .to_string(),
    );
    let (file, stderr) = import(&ws, &path);
    assert_eq!(file["PreToolUse"][0]["matcher"], "ask_user");
    assert!(
        stderr.contains("PreToolUse entry 0: matcher \"AskUserQuestion\" is \"ask_user\" here")
    );
    for h in 0..2 {
        let note = format!(
            "PreToolUse entry 0 handler {h}: its command reads $CLAUDE_PLUGIN_ROOT, which is not set here"
        );
        assert!(stderr.contains(&note), "{note:?} not in\n{stderr}");
    }
}

#[test]
fn import_warns_in_the_files_order_of_events() {
    let ws = Ws::new();
    // Neither alphabetical nor the order events happen in.
    let text = r#"{"hooks": {
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "date"}]}],
        "Stop": [{"hooks": [{"type": "prompt", "prompt": "done?"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}],
        "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}],
        "PostToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "true"}]}]
    }}"#;
    let (_, stderr) = import(&ws, &settings(&ws, text));
    let order: Vec<&str> = stderr
        .lines()
        .map(|l| l.split(": ").nth(2).unwrap().split(' ').next().unwrap())
        .collect();
    assert_eq!(
        order,
        [
            "UserPromptSubmit",
            "Stop",
            "Stop",
            "PreToolUse",
            "Notification",
            "PostToolUse"
        ],
        "{stderr}"
    );

    // A project file's loading warnings follow its order too.
    ws.project(
        r#"{"Stop": [{"hooks": [{"type": "command", "command": "true", "bogus": 1}]}],
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]}"#,
    );
    let warnings = list_warnings(&ws);
    assert_eq!(warnings.len(), 2, "{warnings:#?}");
    assert!(warnings[0].contains("Stop entry 0 handler 0: unknown key"));
    assert!(warnings[1].contains("PreToolUse entry 0: the matcher \"Bash\""));
}

#[test]
fn a_settings_file_with_a_byte_order_mark_imports() {
    let ws = Ws::new();
    let text = json!({"hooks": {"PreToolUse": [{"matcher": "Bash",
        "hooks": [{"type": "command", "command": "true"}]}]}})
    .to_string();
    let path = settings(&ws, &format!("\u{feff}{text}"));
    let (file, _) = import(&ws, &path);
    assert_eq!(file["PreToolUse"][0]["matcher"], "shell");
    // The project file a Windows editor saved the same way loads too.
    let ws = Ws::new();
    ws.project(&format!("\u{feff}{}", file));
    let list = ws.hookq(&["agent", "list", "--trusted", "--json"], b"");
    assert_eq!(list.decision()["warnings"], json!([]), "{}", list.stderr());
    assert_eq!(list.decision()["entries"].as_array().unwrap().len(), 1);
}

#[test]
fn a_matcher_that_does_not_compile_is_kept_and_said_so() {
    let ws = Ws::new();
    let (got, stderr) = import_into_project(&ws, &["Bash(", "deploy"]);
    assert_eq!(got, ["Bash(", "deploy"]);
    assert!(
        stderr
            .contains("PreToolUse entry 0: matcher \"Bash(\" kept as written: it does not compile"),
        "{stderr}"
    );
    assert!(stderr.contains(
        "PreToolUse entry 1: matcher \"deploy\" kept as written, though no tool has that name here"
    ));
    // Each warns again where the file loads, as import said.
    let warnings = list_warnings(&ws);
    assert_eq!(warnings.len(), 2, "{warnings:#?}");
    assert!(warnings[0].contains("PreToolUse entry 0: the matcher \"Bash(\" does not compile"));
    assert!(warnings[1].contains("PreToolUse entry 1: the matcher \"deploy\" never fires"));
}
