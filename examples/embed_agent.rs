//! A host that embeds hookq's agent tool hooks: `cargo run --example embed_agent`.
//!
//! It writes a project file in a scratch workspace, loads it once, and asks about each of the
//! three events the way a coding agent would: before a tool call (one denied, one rewritten),
//! after one (feedback to the model), and when a turn ends (another turn asked for). It also
//! reads a payload as `hookq agent fire` reads its stdin, and shows what a bad one gives: an
//! `hookq::agent::Error`, whose exit code and hint come from `hookq::Failure`.

use std::error::Error;

use hookq::Failure as _;
use hookq::agent::{Agent, Decision, Event, HostPayload, Options, ToolCall, Turn, Verdict};
use serde_json::json;

/// The project file: a shell guard, a rewrite of where `write` goes, a check after each patch
/// and a Stop hook that asks for more while a marker file says the work is unfinished. Each
/// command says what its exit status means: a failure of `test` is not an accidental 2.
const HOOKS: &str = r#"{
  "PreToolUse": [
    {"matcher": "shell", "hooks": [{"type": "command", "timeout": 10,
      "command": "grep -q protected-host && { echo 'protected host is off limits' >&2; exit 2; }; exit 0"}]},
    {"matcher": "write", "hooks": [{"type": "command", "timeout": 10,
      "command": "cat >/dev/null; echo '{\"hookSpecificOutput\": {\"updatedInput\": {\"path\": \"scratch/notes.txt\"}}}'"}]}
  ],
  "PostToolUse": [
    {"matcher": "patch", "hooks": [{"type": "command",
      "command": "cat >/dev/null; test -s CHANGELOG || { echo 'the patch left CHANGELOG empty' >&2; exit 2; }"}]}
  ],
  "Stop": [
    {"hooks": [{"type": "command",
      "command": "cat >/dev/null; if [ -e TODO ]; then echo 'TODO still lists work' >&2; exit 2; fi"}]}
  ]
}"#;

fn main() -> Result<(), Box<dyn Error>> {
    let scratch = tempfile::tempdir()?;
    let workspace = scratch.path();
    std::fs::create_dir(workspace.join(".radian"))?;
    std::fs::write(workspace.join(".radian/hooks.json"), HOOKS)?;
    std::fs::write(workspace.join("TODO"), "update the changelog\n")?;
    println!("workspace {}", workspace.display());

    // Load once: the project file is read now and never again. Loading never fails; what could
    // not be loaded is a warning.
    let mut options = Options::new(workspace);
    options.trusted = true; // the host's user trusted this workspace
    options.user_config = None; // no user layer in a scratch run
    let agent = Agent::load(&options);
    for w in agent.warnings() {
        println!("warning: {w}");
    }

    let call = |tool: &str, input: serde_json::Value| ToolCall {
        tool_name: tool.into(),
        tool_input: input.as_object().cloned().unwrap_or_default(),
        session_id: "embed-example".into(),
    };

    let d = agent.pre_tool_use(&call(
        "shell",
        json!({"command": "curl -X POST https://protected-host/"}),
    ));
    show("PreToolUse shell", &d);
    assert_eq!(d.decision, Verdict::Deny);

    let d = agent.pre_tool_use(&call("write", json!({"path": "/etc/hosts"})));
    show("PreToolUse write", &d);
    assert_eq!(d.decision, Verdict::Continue);
    if d.input_changed == Some(true) {
        // A hook rewrote the input: the host checks it against its permission rules again
        // before it runs the call with `d.tool_input`.
        println!("  re-validate the new input: {:?}", d.tool_input);
    }

    let d = agent.post_tool_use(&call("patch", json!({"path": "src/lib.rs"})), &json!({}));
    show("PostToolUse patch", &d);
    assert_eq!(d.decision, Verdict::Feedback);

    let d = agent.stop(&Turn {
        session_id: "embed-example".into(),
        last_assistant_message: "The tests pass.".into(),
        ..Turn::default()
    });
    show("Stop", &d);
    assert_eq!(d.decision, Verdict::Continue);

    // A host that gets its payloads as JSON (from a socket, a pipe) reads them as the CLI does.
    let bytes = br#"{"tool_name": "read", "tool_input": {"path": "README.md"}}"#;
    let HostPayload::Tool { call, .. } =
        HostPayload::from_json(Event::PreToolUse, bytes, "the pipe")?
    else {
        unreachable!("a tool event gives a tool payload");
    };
    show("PreToolUse read", &agent.pre_tool_use(&call));

    let bad = HostPayload::from_json(Event::PreToolUse, br#"{"tool_input": {}}"#, "the pipe");
    if let Err(e) = bad {
        println!("a bad payload: error: {e} (exit code {})", e.exit_code());
    }
    Ok(())
}

/// One decision, as a host would log it.
fn show(what: &str, d: &Decision) {
    let why = [&d.reason, &d.feedback, &d.message]
        .into_iter()
        .flatten()
        .next()
        .map_or(String::new(), |t| format!(": {t}"));
    println!("{what}: {:?}{why}", d.decision);
    for w in &d.warnings {
        println!("  warning: {w}");
    }
}
