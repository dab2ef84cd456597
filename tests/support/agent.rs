//! The agent tool hooks' workspace: a project file and a user config in a scratch workspace with
//! a home of its own, the real `hookq` binary run with a pinned environment, and the fixture hook
//! scripts.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

use super::run::bounded;
use super::workspace::Scratch;
pub use super::{HANG, HOOKQ};

/// `fixtures/agent/` in the repository.
pub fn fixtures() -> PathBuf {
    super::fixtures().join("agent")
}

/// A fixture hook script's path, shell-quoted for a command line.
pub fn script(name: &str) -> String {
    let p = fixtures().join("hooks").join(name);
    format!("'{}'", p.display())
}

/// A scratch workspace (`root`) and a home directory beside it, removed at the end.
pub struct Ws {
    scratch: Scratch,
}

/// What one `hookq agent` run gave.
pub struct Fired {
    /// The process output.
    pub out: Output,
    /// Stdout parsed as the decision, when it is JSON.
    pub decision: Option<Value>,
}

impl Fired {
    /// The decision, or a panic that shows what the run printed.
    pub fn decision(&self) -> &Value {
        self.decision.as_ref().unwrap_or_else(|| {
            panic!(
                "no decision: exit {:?}\nstdout: {}\nstderr: {}",
                self.out.status.code(),
                String::from_utf8_lossy(&self.out.stdout),
                self.stderr()
            )
        })
    }

    /// `decision.decision`.
    pub fn verdict(&self) -> &str {
        self.decision()["decision"].as_str().unwrap_or_default()
    }

    /// Stderr as text.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }

    /// The decision's `warnings`.
    pub fn warnings(&self) -> Vec<String> {
        self.decision()["warnings"]
            .as_array()
            .map(|a| a.iter().map(|w| w.as_str().unwrap().to_owned()).collect())
            .unwrap_or_default()
    }
}

impl Ws {
    /// An empty workspace and home.
    pub fn new() -> Ws {
        Ws {
            scratch: Scratch::new(),
        }
    }

    /// The workspace.
    pub fn root(&self) -> PathBuf {
        self.scratch.root().to_path_buf()
    }

    /// The home directory hookq runs with.
    pub fn home(&self) -> PathBuf {
        self.scratch.home().to_path_buf()
    }

    /// The user config path under the home (`~/.config/radian/config.toml`).
    pub fn user_config(&self) -> PathBuf {
        self.home().join(".config/radian/config.toml")
    }

    /// Writes the project file.
    pub fn project(&self, json: &str) -> &Self {
        let dir = self.root().join(".radian");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("hooks.json"), json).unwrap();
        self
    }

    /// Writes the user config.
    pub fn user(&self, toml: &str) -> &Self {
        let path = self.user_config();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, toml).unwrap();
        self
    }

    /// A file in the workspace, read (empty when absent).
    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.root().join(name)).unwrap_or_default()
    }

    /// `hookq` with a pinned environment, run in the workspace.
    pub fn command(&self) -> Command {
        let mut cmd = self.scratch.command(HOOKQ, self.scratch.root());
        cmd.env("LC_ALL", "C");
        cmd
    }

    /// `hookq ARGS` with `stdin`, waited for at most [`HANG`].
    pub fn hookq(&self, args: &[&str], stdin: &[u8]) -> Fired {
        self.hookq_with(self.command(), args, stdin)
    }

    /// [`Ws::hookq`] on a prepared command.
    pub fn hookq_with(&self, mut cmd: Command, args: &[&str], stdin: &[u8]) -> Fired {
        let out = bounded(
            cmd.args(args),
            Some(stdin),
            HANG,
            &format!("hookq {args:?}"),
        );
        let decision = serde_json::from_slice(&out.stdout).ok();
        Fired { out, decision }
    }

    /// `hookq agent fire EVENT ARGS` with `payload` on stdin.
    pub fn fire(&self, event: &str, payload: &Value, args: &[&str]) -> Fired {
        let mut all = vec!["agent", "fire", event];
        all.extend_from_slice(args);
        self.hookq(&all, payload.to_string().as_bytes())
    }

    /// `hookq agent fire PreToolUse --trusted` for a `shell` call of `command`.
    pub fn pre(&self, tool: &str, args: &[&str]) -> Fired {
        let mut all = vec!["--trusted"];
        all.extend_from_slice(args);
        self.fire(
            "PreToolUse",
            &serde_json::json!({"tool_name": tool, "tool_input": {"command": "make check"}, "session_id": "s1"}),
            &all,
        )
    }
}

/// A project file with one PreToolUse entry per `(matcher, command)`.
pub fn pre_entries(entries: &[(Option<&str>, &str)]) -> String {
    hooks_json("PreToolUse", entries)
}

/// A bare project file with one `event` entry per `(matcher, command)`.
pub fn hooks_json(event: &str, entries: &[(Option<&str>, &str)]) -> String {
    let list: Vec<Value> = entries
        .iter()
        .map(|(m, c)| {
            let mut e =
                serde_json::json!({"hooks": [{"type": "command", "command": c, "timeout": 30}]});
            if let Some(m) = m {
                e["matcher"] = Value::String((*m).to_owned());
            }
            e
        })
        .collect();
    serde_json::json!({ event: list }).to_string()
}
