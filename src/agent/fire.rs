//! Loading once and firing many times: the [`Agent`] a host holds, which matches an event's
//! entries, runs their hooks one after another on the shared executor and folds what they did
//! into the decision.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use super::decision::{Decision, Flow, Fold, HookRun, StopFacts};
use super::event::Event;
use super::intent_stop;
use super::payload::{StopPayload, ToolCall, ToolPayload, Turn};
use super::sources::{self, Entry, Hooks, Source};
use crate::exec::{self, Collected, Ending, Environ, Input, Job, Program, Stop};

/// The most bytes kept of each of a hook's stdout and stderr.
pub const MAX_OUTPUT: usize = 1 << 20;

/// How long a hook has to end after SIGTERM before its group gets SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_secs(2);

/// What hooks see of hookq's environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookEnv {
    /// All of hookq's own environment.
    Inherit,
    /// Only these variables, when hookq has them (a sandbox is enforced).
    Only(Vec<String>),
}

/// How to load.
#[derive(Debug, Clone)]
pub struct Options {
    /// The workspace: hooks run there, its `.radian/hooks.json` is the project layer, and it is
    /// the payload's `cwd`.
    pub workspace: PathBuf,
    /// The user config file (TOML, its `[hooks]` table); `None` for no user layer. See
    /// [`default_user_config`].
    pub user_config: Option<PathBuf>,
    /// Whether the user named `user_config` themselves (`--config`): a file they named that does
    /// not exist is a warning, where the default one may be missing quietly.
    pub user_config_named: bool,
    /// Whether the workspace is trusted: only then is its project file read.
    pub trusted: bool,
    /// What hooks see of the environment.
    pub env: HookEnv,
    /// SIGKILL this long after SIGTERM.
    pub kill_grace: Duration,
}

impl Options {
    /// Options for `workspace` (made absolute), the default user config, untrusted, inheriting
    /// the environment.
    pub fn new(workspace: impl Into<PathBuf>) -> Options {
        let workspace = workspace.into();
        Options {
            workspace: std::path::absolute(&workspace).unwrap_or(workspace),
            user_config: default_user_config(),
            user_config_named: false,
            trusted: false,
            env: HookEnv::Inherit,
            kill_grace: KILL_GRACE,
        }
    }
}

/// `$XDG_CONFIG_HOME/radian/config.toml`, else `~/.config/radian/config.toml`; `None` when
/// neither variable is set (as absolute paths).
pub fn default_user_config() -> Option<PathBuf> {
    let var = |name| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    var("XDG_CONFIG_HOME")
        .or_else(|| var("HOME").map(|h| h.join(".config")))
        .map(|base| base.join("radian").join("config.toml"))
}

/// Hooks loaded once, fired any number of times. Nothing is read again per event.
#[derive(Debug)]
pub struct Agent {
    hooks: Hooks,
    workspace: PathBuf,
    cwd: String,
    env: Environ,
    kill_grace: Duration,
}

impl Agent {
    /// Loads both layers. Never fails: what cannot be loaded is in [`Agent::warnings`].
    pub fn load(opts: &Options) -> Agent {
        let user = opts
            .user_config
            .as_deref()
            .map(|path| (path, opts.user_config_named));
        let hooks = sources::load(&opts.workspace, opts.trusted, user);
        let env = match &opts.env {
            HookEnv::Inherit => std::env::vars_os().collect(),
            HookEnv::Only(names) => {
                let mut env = Environ::new();
                let mut seen = Vec::new();
                for name in names {
                    // No variable has such a name, and the environment lookup must not see one.
                    if name.is_empty() || name.contains(['=', '\0']) || seen.contains(&name) {
                        continue;
                    }
                    seen.push(name);
                    if let Some(value) = std::env::var_os(name) {
                        env.push(name, value);
                    }
                }
                env
            }
        };
        Agent {
            cwd: opts.workspace.to_string_lossy().into_owned(),
            workspace: opts.workspace.clone(),
            hooks,
            env,
            kill_grace: opts.kill_grace,
        }
    }

    /// Every entry, project first, then user.
    pub fn entries(&self) -> &[Entry] {
        &self.hooks.entries
    }

    /// What became of the project file and the user config.
    pub fn sources(&self) -> &[Source] {
        &self.hooks.sources
    }

    /// Every warning from loading.
    pub fn warnings(&self) -> &[String] {
        &self.hooks.warnings
    }

    /// Whether the intent_stop validator runs on the Stop path.
    pub fn intent_stop(&self) -> bool {
        self.hooks.intent_stop
    }

    /// The workspace hooks run in.
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// Before a tool call: `continue` (with the input as the hooks left it), `deny` or `error`.
    pub fn pre_tool_use(&self, call: &ToolCall) -> Decision {
        let mut fold = Fold::new(Event::PreToolUse, Some(call.tool_input.clone()));
        for (entry, handler) in self.matching(Event::PreToolUse, Some(&call.tool_name)) {
            let payload = ToolPayload {
                hook_event_name: Event::PreToolUse,
                tool_name: &call.tool_name,
                tool_input: fold.tool_input().unwrap_or(&call.tool_input),
                tool_response: None,
                cwd: &self.cwd,
                session_id: &call.session_id,
            };
            let run = self.run(entry, handler, &payload);
            if fold.push(&run) == Flow::Done {
                break;
            }
        }
        fold.finish(StopFacts::default())
    }

    /// After a tool call: `continue`, `feedback` or `error`.
    pub fn post_tool_use(&self, call: &ToolCall, tool_response: &Value) -> Decision {
        let payload = ToolPayload {
            hook_event_name: Event::PostToolUse,
            tool_name: &call.tool_name,
            tool_input: &call.tool_input,
            tool_response: Some(tool_response),
            cwd: &self.cwd,
            session_id: &call.session_id,
        };
        self.fire_all(Event::PostToolUse, Some(&call.tool_name), &payload, None)
    }

    /// After a completed turn: `end`, `continue`, `wait` or `error`. The intent_stop validator
    /// runs after the hooks, unless turned off or the turn end is a goal's, a loop's or a
    /// background job's.
    pub fn stop(&self, turn: &Turn) -> Decision {
        let payload = StopPayload {
            hook_event_name: Event::Stop,
            cwd: &self.cwd,
            session_id: &turn.session_id,
            last_assistant_message: &turn.last_assistant_message,
        };
        self.fire_all(Event::Stop, None, &payload, Some(turn))
    }

    fn fire_all(
        &self,
        event: Event,
        tool: Option<&str>,
        payload: &impl serde::Serialize,
        turn: Option<&Turn>,
    ) -> Decision {
        let mut fold = Fold::new(event, None);
        let mut bytes = None;
        for (entry, handler) in self.matching(event, tool) {
            // Every hook of these events reads the same payload: serialised once.
            let bytes = bytes.get_or_insert_with(|| to_json(payload));
            let run = self.run_bytes(entry, handler, bytes);
            if fold.push(&run) == Flow::Done {
                break;
            }
        }
        let facts = match turn {
            Some(turn) => StopFacts {
                continuations: turn.continuations,
                intent: (self.hooks.intent_stop && !fold.done())
                    .then(|| intent_stop::check(turn))
                    .flatten(),
            },
            None => StopFacts::default(),
        };
        fold.finish(facts)
    }

    /// The handlers `event` runs for `tool`, in order, each command string once.
    fn matching<'a>(
        &'a self,
        event: Event,
        tool: Option<&'a str>,
    ) -> impl Iterator<Item = (&'a Entry, &'a sources::Handler)> + 'a {
        let mut seen: Vec<&str> = Vec::new();
        self.hooks
            .entries
            .iter()
            .filter(move |e| e.event == event)
            .filter(move |e| event == Event::Stop || tool.is_none_or(|t| e.matcher.matches(t)))
            .flat_map(|e| e.handlers.iter().map(move |h| (e, h)))
            .filter(move |(_, h)| {
                if seen.contains(&h.command.as_str()) {
                    false
                } else {
                    seen.push(&h.command);
                    true
                }
            })
    }

    fn run(
        &self,
        entry: &Entry,
        handler: &sources::Handler,
        payload: &impl serde::Serialize,
    ) -> HookRun {
        self.run_bytes(entry, handler, &to_json(payload))
    }

    fn run_bytes(&self, entry: &Entry, handler: &sources::Handler, payload: &[u8]) -> HookRun {
        let job = Job {
            program: Program::Shell(&handler.command),
            cwd: &self.workspace,
            env: &self.env,
            input: Input::Bytes(payload),
            timeout: handler.timeout,
            kill_grace: self.kill_grace,
            max_output: MAX_OUTPUT,
            echo: false,
            // Decided while the host waits: nothing outlives a killed hookq to be ended later.
            owner: None,
        };
        let collected = exec::collect(&job, &Stop::new()).unwrap_or_else(|e| {
            // No pipe or no poll: the hook could not be run as it must be, which fails closed
            // like a hook that could not start.
            tracing::debug!("cannot run hook `{}`: {e}", handler.command);
            let errno = match &e {
                exec::ExecError::Os(io) | exec::ExecError::Log { source: io, .. } => {
                    io.raw_os_error().unwrap_or(-1)
                }
            };
            Collected {
                ending: Ending::SpawnFailed(errno),
                duration: Duration::ZERO,
                stdout: Vec::new(),
                stderr: Vec::new(),
                stdout_truncated: false,
                stderr_truncated: false,
            }
        });
        HookRun {
            layer: entry.layer,
            entry: entry.index,
            handler: handler.index,
            command: handler.command.clone(),
            timeout: handler.timeout,
            collected,
        }
    }
}

fn to_json(payload: &impl serde::Serialize) -> Vec<u8> {
    // Maps with string keys and plain values always serialise.
    serde_json::to_vec(payload).unwrap_or_else(|_| b"{}".to_vec())
}
