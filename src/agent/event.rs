//! The three events a host asks about, named as hosts and hook files spell them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// When the host asks: before a tool runs, after it ran, or when a turn ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Event {
    /// Before each tool call; hooks may deny it or rewrite its input.
    PreToolUse,
    /// After each tool call; hooks may send feedback to the model with the result.
    PostToolUse,
    /// After a completed turn; hooks may ask for another turn.
    Stop,
}

impl Event {
    /// Every event, in the order listings show them.
    pub const ALL: [Event; 3] = [Event::PreToolUse, Event::PostToolUse, Event::Stop];

    /// The name as written in hook files and on the command line (case-sensitive).
    pub fn name(self) -> &'static str {
        match self {
            Event::PreToolUse => "PreToolUse",
            Event::PostToolUse => "PostToolUse",
            Event::Stop => "Stop",
        }
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not one of the three events (they are case-sensitive).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown event {0:?}: expected PreToolUse, PostToolUse or Stop (case-sensitive)")]
pub struct UnknownEvent(pub String);

impl FromStr for Event {
    type Err = UnknownEvent;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Event::ALL
            .into_iter()
            .find(|e| e.name() == s)
            .ok_or_else(|| UnknownEvent(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_case_sensitive() {
        assert_eq!("Stop".parse::<Event>(), Ok(Event::Stop));
        assert_eq!("PreToolUse".parse::<Event>(), Ok(Event::PreToolUse));
        assert!("pretooluse".parse::<Event>().is_err());
        assert!("stop".parse::<Event>().is_err());
        assert!("PostToolUse ".parse::<Event>().is_err());
    }
}
