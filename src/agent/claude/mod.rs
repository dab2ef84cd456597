//! Carrying hooks over from Claude Code, whose hook files have the same shape but name tools,
//! reply keys and features differently. Nothing here changes a decision: it names the
//! differences (a matcher that names a Claude Code tool never fires; a reply key that is not
//! read) and translates a Claude Code settings file into a project file ([`import`]).
//!
//! Each difference is read from one table: [`TOOLS`] for tool names, [`REPLY_KEYS`] for the
//! keys of a hook's reply.

mod import;
mod names;
mod patterns;

pub use import::{Import, ImportedEntry, ImportedHandler, ProjectFile, import};
pub use names::{REPLY_KEYS, ReplyKey, TOOLS};
pub(crate) use names::unread_keys;
pub(crate) use patterns::{unknown_tool_names, untranslatable_patterns};
