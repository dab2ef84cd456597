//! Agent tool hooks: a coding agent (the host) asks before a tool runs, after it ran, and when
//! a turn ends, and gets a decision back at once. No queue and no database: hooks are loaded
//! once from the user's TOML config and the trusted project's `.radian/hooks.json`, and each
//! event runs its matching commands one after another on the shared executor.
//!
//! ```no_run
//! use hookq::agent::{Agent, Options, ToolCall, Verdict};
//!
//! let agent = Agent::load(&Options::new("."));
//! let call = ToolCall {
//!     tool_name: "shell".into(),
//!     tool_input: serde_json::json!({"command": "make check"}).as_object().unwrap().clone(),
//!     session_id: "s1".into(),
//! };
//! let d = agent.pre_tool_use(&call);
//! if d.decision == Verdict::Continue {
//!     // run the call with d.tool_input, re-validated if d.input_changed
//! }
//! ```
//!
//! What stops a command before any decision is an [`Error`], which implements
//! [`crate::Failure`] for its exit code. See `docs/agent.md` for the configuration, the decision
//! table and the intent_stop rule.

pub mod claude;
mod decision;
mod error;
mod event;
mod fire;
pub mod intent_stop;
mod matcher;
mod ordered;
mod payload;
mod sources;

pub use claude::{Import, ImportedEntry, ImportedHandler, ProjectFile, import};
pub use decision::{
    Decision, HookReport, HookRun, REASON_CAP, StopFacts, Verdict, WAKE_BUDGET, fold,
};
pub use error::Error;
pub use event::{Event, UnknownEvent};
pub use fire::{Agent, HookEnv, KILL_GRACE, MAX_OUTPUT, Options, default_user_config};
pub use matcher::{Matcher, RADIAN_TOOLS};
pub use payload::{BadPayload, HostPayload, ToolCall, Turn};
pub use sources::{DEFAULT_TIMEOUT, Entry, Handler, Layer, MAX_TIMEOUT_SECS, Source, SourceState};

/// The library example of `docs/agent.md` runs as a doctest of this item.
#[cfg(doctest)]
#[doc = include_str!("../../docs/agent.md")]
pub struct AgentDocDoctests;
