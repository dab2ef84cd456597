//! The quick start's agent part: a host asks hookq before two tool calls and gets a decision
//! back at once, one deny and one rewritten input.

use std::error::Error;
use std::path::Path;

use hookq::agent::{Agent, Options, ToolCall};
use serde_json::json;

/// The project file this part writes: one hook that blocks a host, one that rewrites a path.
const HOOKS: &str = r#"{
  "PreToolUse": [
    {"matcher": "shell", "hooks": [{"type": "command", "timeout": 10,
      "command": "grep -q protected-host && { echo 'protected host is off limits' >&2; exit 2; }; exit 0"}]},
    {"matcher": "write", "hooks": [{"type": "command", "timeout": 10,
      "command": "cat >/dev/null; echo '{\"hookSpecificOutput\": {\"updatedInput\": {\"path\": \"scratch/notes.txt\", \"content\": \"hello\"}}}'"}]}
  ]
}"#;

/// Writes a trusted `.radian/hooks.json` in a workspace under `dir`, loads it once, and fires
/// PreToolUse twice, printing each decision.
pub fn tour(dir: &Path) -> Result<(), Box<dyn Error>> {
    let root = dir.join("agent-workspace");
    std::fs::create_dir_all(root.join(".radian"))?;
    std::fs::write(root.join(".radian/hooks.json"), HOOKS)?;

    println!();
    println!("Agent tool hooks (`hookq agent fire`, docs/agent.md)");
    println!("----------------------------------------------------");
    println!("A coding agent asks hookq before each tool call. The project file");
    println!("  {}", root.join(".radian/hooks.json").display());
    println!(
        "holds one hook that blocks a protected host and one that rewrites where `write` goes."
    );

    let mut options = Options::new(&root);
    options.trusted = true;
    options.user_config = None;
    let agent = Agent::load(&options);
    for w in agent.warnings() {
        println!("  warning: {w}");
    }

    let shell = ToolCall {
        tool_name: "shell".into(),
        tool_input: json!({"command": "curl -X POST https://protected-host/api"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
        session_id: "quickstart".into(),
    };
    let d = agent.pre_tool_use(&shell);
    println!("\nshell `curl -X POST https://protected-host/api` ->");
    println!("  {}", serde_json::to_string(&d)?);

    let write = ToolCall {
        tool_name: "write".into(),
        tool_input: json!({"path": "/etc/hosts", "content": "hello"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
        session_id: "quickstart".into(),
    };
    let d = agent.pre_tool_use(&write);
    println!("\nwrite to /etc/hosts ->");
    println!("  {}", serde_json::to_string(&d)?);
    println!("  (input_changed: the host re-validates the new input before running the call)");
    println!(
        "\nThe same from any language: echo '<payload>' | hookq agent fire PreToolUse --workspace {} --trusted",
        root.display()
    );
    Ok(())
}
