//! Property tests of the decision: arbitrary bytes as hook stdout and stderr, arbitrary endings
//! and arbitrary JSON as the tool input never panic, never give `continue` (PreToolUse,
//! PostToolUse) after a hook that exited other than 0, and never leak what a hook printed
//! where the decision table does not name it: stdout only as a PreToolUse reason, stderr only
//! as an exit-2 hook's text or, for the user, where a hook error quotes the failed hook's
//! stderr (its warning and its entry of `hooks`). First on the pure fold, then on real hooks.

use crate::support::agent as agent_support;

use std::time::Duration;

use hookq::agent::claude::TOOLS;
use hookq::agent::{
    Agent, Decision, Event, HookRun, Layer, Matcher, Options, RADIAN_TOOLS, StopFacts, ToolCall,
    Verdict, fold,
};
use hookq::exec::{Collected, Ending};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Put in what hooks print on stdout: it may reach the decision only as a PreToolUse reason.
const MARK: &str = "LEAKMARK7";

/// Put in what hooks print on stderr: it may reach the decision only as the reason, feedback or
/// message of an exit-2 hook.
const ERR_MARK: &str = "ERRMARK3";

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(".{0,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn object() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map(".{0,6}", json_value(), 0..4).prop_map(|m| m.into_iter().collect())
}

fn ending() -> impl Strategy<Value = Ending> {
    prop_oneof![
        4 => prop_oneof![Just(0), Just(2), Just(1), any::<i32>()].prop_map(Ending::Exited),
        1 => (1..65i32).prop_map(Ending::Signalled),
        1 => any::<bool>().prop_map(|killed| Ending::TimedOut { killed }),
        1 => Just(Ending::Interrupted),
        1 => any::<i32>().prop_map(Ending::SpawnFailed),
    ]
}

/// Stdout: arbitrary bytes with the marker after them, or replies shaped like the ones hooks
/// send (valid JSON), with the marker as their reason or their permissionDecision.
fn stdout() -> impl Strategy<Value = Vec<u8>> {
    let decision = prop_oneof![
        Just("deny"),
        Just("allow"),
        Just("ask"),
        Just("x"),
        Just(MARK)
    ];
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..64).prop_map(|mut bytes| {
            bytes.extend_from_slice(MARK.as_bytes());
            bytes
        }),
        (decision, json_value(), any::<bool>()).prop_map(|(d, input, reason)| {
            let mut specific = json!({"permissionDecision": d, "updatedInput": input});
            if reason {
                specific["reason"] = json!(MARK);
            }
            serde_json::to_vec(&json!({"hookSpecificOutput": specific})).unwrap()
        }),
        object().prop_map(|o| serde_json::to_vec(
            &json!({"hookSpecificOutput": {"updatedInput": o}})
        )
        .unwrap()),
    ]
}

fn run() -> impl Strategy<Value = HookRun> {
    (
        ending(),
        stdout(),
        prop::collection::vec(any::<u8>(), 0..48),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(ending, stdout, mut stderr, so, se)| {
            stderr.extend_from_slice(ERR_MARK.as_bytes());
            HookRun {
                layer: Layer::Project,
                entry: 0,
                handler: 0,
                command: "hook".into(),
                timeout: Duration::from_secs(1),
                collected: Collected {
                    ending,
                    duration: Duration::from_millis(1),
                    stdout,
                    stderr,
                    stdout_truncated: so,
                    stderr_truncated: se,
                },
            }
        })
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        Just(Event::PreToolUse),
        Just(Event::PostToolUse),
        Just(Event::Stop)
    ]
}

/// `d` without the failed hook's stderr where a hook error quotes it for the user: the `stderr`
/// of the last hook's entry and the end of the hook error's warning. Asserts that only a hook
/// error quotes stderr, only there, and never quotes stdout.
fn without_quoted_stderr(d: &Decision) -> Decision {
    let mut rest = d.clone();
    let quoted = rest.hooks.iter().filter(|h| h.stderr.is_some()).count();
    if d.decision != Verdict::Error {
        assert_eq!(quoted, 0, "{d:?}");
        return rest;
    }
    assert!(quoted <= 1, "{d:?}");
    if let Some(last) = rest.hooks.last_mut()
        && let Some(stderr) = last.stderr.take()
    {
        assert!(!stderr.contains(MARK), "{d:?}");
    }
    for w in rest.warnings.iter_mut() {
        if w.starts_with("hook error: ")
            && let Some(at) = w.find("; its stderr: ")
        {
            assert!(!w[at..].contains(MARK), "{w}");
            w.truncate(at);
        }
    }
    rest
}

/// What must hold of any decision over `runs`.
fn holds(event: Event, runs: &[HookRun], d: &Decision) {
    let ran = &runs[..d.hooks.len()];
    assert!(d.hooks.len() <= runs.len());
    let failed = ran.iter().any(|r| r.collected.ending != Ending::Exited(0));
    let hard = ran
        .iter()
        .any(|r| !matches!(r.collected.ending, Ending::Exited(0 | 2)));
    match event {
        Event::PreToolUse | Event::PostToolUse => {
            if failed {
                assert_ne!(d.decision, Verdict::Continue, "{ran:?}");
            }
            if hard {
                assert_eq!(d.decision, Verdict::Error);
            }
        }
        Event::Stop => {
            if hard {
                assert_eq!(d.decision, Verdict::Error);
            }
        }
    }
    // Only PreToolUse reads stdout, and only an exit-0 hook's, and only its reason shows.
    let reads_stdout =
        event == Event::PreToolUse && ran.iter().any(|r| r.collected.ending == Ending::Exited(0));
    let reads_stderr = ran.iter().any(|r| r.collected.ending == Ending::Exited(2));
    let reason = d.reason.as_deref().unwrap_or_default();
    if reason.contains(MARK) {
        assert!(reads_stdout, "{d:?}");
        assert_eq!(d.decision, Verdict::Deny, "{d:?}");
    }
    let texts = [&d.reason, &d.feedback, &d.message]
        .into_iter()
        .flatten()
        .any(|t| t.contains(ERR_MARK));
    assert!(!texts || reads_stderr, "{d:?}");
    let mut rest = d.clone();
    rest.reason = None;
    assert!(
        !serde_json::to_string(&rest).unwrap().contains(MARK),
        "{rest:?}"
    );
    rest.feedback = None;
    rest.message = None;
    let rest = without_quoted_stderr(&rest);
    assert!(
        !serde_json::to_string(&rest).unwrap().contains(ERR_MARK),
        "{rest:?}"
    );
    // Every hook error quotes the failed hook's stderr, which always holds the marker here.
    if d.decision == Verdict::Error {
        let quoted = d.hooks.last().and_then(|h| h.stderr.as_deref());
        assert!(quoted.is_some_and(|q| q.contains(ERR_MARK)), "{d:?}");
        assert!(
            d.warnings.iter().any(|w| w.starts_with("hook error: ")
                && w.contains("; its stderr: ")
                && w.contains(ERR_MARK)
                && !w.contains('\n')),
            "{d:?}"
        );
    }
    let text = serde_json::to_string(d).unwrap();
    let back: Decision = serde_json::from_str(&text).unwrap();
    assert_eq!(&back, d);
    if event == Event::PreToolUse {
        assert!(d.tool_input.is_some() && d.input_changed.is_some());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn the_fold_never_widens_and_never_panics(
        event in event(),
        input in object(),
        runs in prop::collection::vec(run(), 0..5),
        continuations in 0u32..5,
        intent in prop::option::of(".{0,10}"),
    ) {
        let d = fold(event, (event == Event::PreToolUse).then_some(input), &runs, StopFacts { continuations, intent });
        holds(event, &runs, &d);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn real_hooks_with_arbitrary_output_and_payloads(
        event in event(),
        input in object(),
        out in stdout(),
        err in prop::collection::vec(any::<u8>(), 0..48),
        code in prop_oneof![Just(0), Just(2), Just(1), 3..256i32],
        response in json_value(),
    ) {
        let ws = agent_support::Ws::new();
        std::fs::write(ws.root().join("out.bin"), &out).unwrap();
        let mut err = err;
        err.extend_from_slice(ERR_MARK.as_bytes());
        std::fs::write(ws.root().join("err.bin"), &err).unwrap();
        ws.project(&json!({ event.name(): [{"hooks": [{"type": "command",
            "command": format!("cat > payload.json; cat out.bin; cat err.bin >&2; exit {code}")}]}]}).to_string());
        let mut opts = Options::new(ws.root());
        opts.user_config = None;
        opts.trusted = true;
        let agent = Agent::load(&opts);
        let call = ToolCall { tool_name: "shell".into(), tool_input: input.clone(), session_id: "s".into() };
        let d = match event {
            Event::PreToolUse => agent.pre_tool_use(&call),
            Event::PostToolUse => agent.post_tool_use(&call, &response),
            Event::Stop => agent.stop(&hookq::agent::Turn::default()),
        };
        prop_assert_eq!(&d.hooks[0].ending, &format!("exit {code}"));
        // Stderr reaches the decision only as an exit-2 hook's text.
        let mut rest = d.clone();
        let text = [rest.reason.take(), rest.feedback.take(), rest.message.take()];
        let rest = without_quoted_stderr(&rest);
        prop_assert!(!serde_json::to_string(&rest).unwrap().contains(ERR_MARK));
        if d.decision == Verdict::Error {
            prop_assert!(d.hooks[0].stderr.as_deref().is_some_and(|q| q.contains(ERR_MARK)));
        }
        if code != 2 {
            prop_assert!(!text.iter().flatten().any(|t| t.contains(ERR_MARK)));
        }
        if code != 0 && event != Event::Stop {
            prop_assert_ne!(d.decision, Verdict::Continue);
        }
        // The payload the hook read is the host's, as given.
        let seen: Value = serde_json::from_str(&ws.read("payload.json")).unwrap();
        if event != Event::Stop {
            prop_assert_eq!(&seen["tool_input"], &Value::Object(input));
        }
        if event == Event::PostToolUse {
            prop_assert_eq!(&seen["tool_response"], &response);
        }
    }
}

/// What a host might pipe to `hookq agent fire`: arbitrary bytes, arbitrary JSON, or objects
/// shaped like payloads with arbitrary values in their fields.
fn stdin() -> impl Strategy<Value = Vec<u8>> {
    let field = prop_oneof![json_value(), object().prop_map(Value::Object)];
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..64),
        json_value().prop_map(|v| serde_json::to_vec(&v).unwrap()),
        (
            prop::option::of(prop_oneof![".{0,8}".prop_map(Value::String), json_value()]),
            prop::option::of(field.clone()),
            prop::option::of(field),
            prop::option::of(json_value()),
        )
            .prop_map(|(name, input, response, other)| {
                let mut payload = Map::new();
                for (key, value) in [
                    ("tool_name", name),
                    ("tool_input", input),
                    ("tool_response", response.clone()),
                    ("last_assistant_message", response),
                    ("session_id", other),
                ] {
                    if let Some(v) = value {
                        payload.insert(key.into(), v);
                    }
                }
                serde_json::to_vec(&payload).unwrap()
            }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn the_cli_answers_any_stdin_with_one_decision_or_one_error_line(
        event in event(),
        input in stdin(),
    ) {
        let ws = agent_support::Ws::new();
        let out = ws.hookq(&["agent", "fire", event.name()], &input);
        let stderr = out.stderr();
        prop_assert!(!stderr.contains("panicked"), "{}", stderr);
        match out.out.status.code() {
            Some(0) => {
                let stdout = String::from_utf8(out.out.stdout.clone()).unwrap();
                prop_assert_eq!(stdout.lines().count(), 1, "{}", stdout);
                let d: Decision = serde_json::from_str(&stdout).unwrap();
                prop_assert_eq!(d.event, event);
            }
            Some(2) => {
                prop_assert!(out.out.stdout.is_empty());
                prop_assert!(stderr.starts_with("error: "), "{}", stderr);
                prop_assert_eq!(stderr.lines().count(), 1, "{}", stderr);
            }
            other => prop_assert!(false, "exit {:?}: {}", other, stderr),
        }
    }
}

/// A Claude Code matcher built of the pieces that make MCP, anchored and grouped patterns.
fn claude_matcher() -> impl Strategy<Value = String> {
    let piece = prop::sample::select(vec![
        "mcp__",
        "mcp__",
        "github",
        "__",
        "_",
        ".*",
        ".+",
        "*",
        "?",
        "(",
        ")",
        "(?:",
        "|",
        "^",
        "$",
        "Bash",
        "Edit",
        "Write",
        "AskUserQuestion",
        "WebFetch",
        "shell",
        "read",
        "s",
        "[a-z]",
    ]);
    prop::collection::vec(piece, 1..7).prop_map(|p| p.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Import never widens a matcher to one of Radian's own tools: what the imported matcher
    /// matches among them, the settings file's matched by that name or by Claude Code's name
    /// for it. A guard written for MCP tools stays off `shell` and `read`.
    #[test]
    fn import_never_widens_a_matcher_to_radians_tools(matcher in claude_matcher()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        let settings = json!({"hooks": {"PreToolUse": [{"matcher": matcher,
            "hooks": [{"type": "command", "command": "true"}]}]}});
        std::fs::write(&path, settings.to_string()).unwrap();
        let import = hookq::agent::import(&path).unwrap();
        let Some(entry) = import.hooks.pre_tool_use.first() else {
            return Ok(());
        };
        let written = Matcher::new(Some(&matcher));
        let imported = Matcher::new(entry.matcher.as_deref());
        for tool in RADIAN_TOOLS {
            if !imported.matches(tool) {
                continue;
            }
            let claude_names = TOOLS
                .iter()
                .filter(|(_, here)| *here == Some(tool))
                .map(|(claude, _)| *claude);
            prop_assert!(
                written.matches(tool) || claude_names.clone().any(|c| written.matches(c)),
                "{:?} imported as {:?} matches {}", matcher, entry.matcher, tool
            );
        }
    }
}
