//! What stops an agent command before it can give a decision: a bad event name or payload, a
//! workspace that is not a directory, a settings file to import that cannot be read. Loading
//! hooks never fails (what cannot be loaded is a warning) and a hook that fails is part of the
//! decision, so neither is here.

use std::io::ErrorKind;
use std::path::PathBuf;

use super::event::{Event, UnknownEvent};
use super::payload::BadPayload;
use crate::failure::{Failure, code};

/// Why an agent command could not give a decision (or an import could not be made).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An event name that is not one of the three (they are case-sensitive).
    #[error(transparent)]
    UnknownEvent(#[from] UnknownEvent),
    /// The payload could not be read at all.
    #[error("cannot read the payload from {from}: {source}")]
    ReadPayload {
        /// Where it was read from (`stdin`).
        from: &'static str,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The payload is not JSON.
    #[error("cannot read the {event} payload on {from}: {source}")]
    PayloadNotJson {
        /// The event it was given for.
        event: Event,
        /// Where it was read from (`stdin`).
        from: &'static str,
        /// Where the JSON breaks.
        #[source]
        source: serde_json::Error,
    },
    /// The payload is JSON, but not one the event can use.
    #[error("cannot use the {event} payload on {from}: {source}")]
    BadPayload {
        /// The event it was given for.
        event: Event,
        /// Where it was read from (`stdin`).
        from: &'static str,
        /// What is wrong with it.
        #[source]
        source: BadPayload,
    },
    /// A fact about the turn (continuations, a goal, a loop, background jobs) given with an
    /// event other than Stop, which is the only one that reads them.
    #[error("{option} is for Stop only, not {event}")]
    StopOnly {
        /// The option as the caller names it (`--continuations`).
        option: &'static str,
        /// The event fired.
        event: Event,
    },
    /// A name for the sandbox's environment that no variable can have: an assignment or a typo,
    /// which, dropped silently, would leave a hook without a variable its author meant to allow.
    #[error("{option} {name:?}: not a variable name (names hold no \"=\")")]
    VariableName {
        /// The option as the caller names it (`--sandbox-env`).
        option: &'static str,
        /// The name given.
        name: String,
    },
    /// The workspace does not exist or is not a directory, so no hook could run there.
    #[error("{named_by} {}: {}", path.display(), not_a_directory(source))]
    Workspace {
        /// How it was named (`--workspace`, `the workspace`).
        named_by: &'static str,
        /// The path given.
        path: PathBuf,
        /// Why it cannot be used.
        #[source]
        source: std::io::Error,
    },
    /// A settings file to import cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    ReadSettings {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A settings file to import is not a JSON object, or its `hooks` is not one.
    #[error("{}: cannot parse: {why}", path.display())]
    ParseSettings {
        /// The file.
        path: PathBuf,
        /// Where and why it breaks, on one line.
        why: String,
    },
}

fn not_a_directory(source: &std::io::Error) -> String {
    match source.kind() {
        ErrorKind::NotFound => "not a directory: it does not exist".into(),
        ErrorKind::NotADirectory => "not a directory".into(),
        _ => format!("cannot use it: {source}"),
    }
}

impl Failure for Error {
    fn exit_code(&self) -> u8 {
        match self {
            Error::UnknownEvent(_)
            | Error::PayloadNotJson { .. }
            | Error::BadPayload { .. }
            | Error::StopOnly { .. }
            | Error::VariableName { .. } => code::USAGE,
            Error::ReadPayload { .. } => code::FAILURE,
            Error::Workspace { source, .. } => match source.kind() {
                ErrorKind::NotFound | ErrorKind::NotADirectory => code::NOT_FOUND,
                _ => code::FAILURE,
            },
            Error::ReadSettings { .. } | Error::ParseSettings { .. } => code::CONFIG,
        }
    }

    fn hint(&self) -> Option<String> {
        match self {
            Error::ReadSettings { .. } | Error::ParseSettings { .. } => Some(
                "`hookq agent import` reads a Claude Code settings file, such as .claude/settings.json"
                    .into(),
            ),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_and_exit_codes() {
        let missing = Error::Workspace {
            named_by: "the workspace",
            path: "/nonexistent".into(),
            source: ErrorKind::NotFound.into(),
        };
        assert_eq!(
            missing.to_string(),
            "the workspace /nonexistent: not a directory: it does not exist"
        );
        assert_eq!(missing.exit_code(), code::NOT_FOUND);
        let file = Error::Workspace {
            named_by: "--workspace",
            path: "/etc/passwd".into(),
            source: ErrorKind::NotADirectory.into(),
        };
        assert_eq!(file.to_string(), "--workspace /etc/passwd: not a directory");
        assert_eq!(file.exit_code(), code::NOT_FOUND);
        let stop_only = Error::StopOnly {
            option: "--continuations",
            event: Event::PreToolUse,
        };
        assert_eq!(stop_only.exit_code(), code::USAGE);
        assert_eq!(stop_only.hint(), None);
        let unreadable = Error::ReadSettings {
            path: "/x/settings.json".into(),
            source: ErrorKind::NotFound.into(),
        };
        assert_eq!(unreadable.exit_code(), code::CONFIG);
        assert!(unreadable.hint().is_some());
    }
}
