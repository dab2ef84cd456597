//! Claude Code's names for what differs here: its tools ([`TOOLS`]) and the keys of a hook's
//! reply it reads and this agent does not ([`REPLY_KEYS`]), each difference in one table.

use serde_json::{Map, Value};

use crate::agent::event::Event;

/// Claude Code's tool names and the Radian tool each one is here (`None`: there is none).
pub const TOOLS: &[(&str, Option<&str>)] = &[
    ("Bash", Some("shell")),
    ("Edit", Some("patch")),
    ("MultiEdit", Some("patch")),
    ("Write", Some("write")),
    ("Read", Some("read")),
    ("Grep", Some("grep")),
    ("Glob", Some("glob")),
    ("Task", Some("subagent")),
    ("AskUserQuestion", Some("ask_user")),
    ("LS", None),
    ("WebFetch", None),
    ("WebSearch", None),
    ("TodoWrite", None),
    ("NotebookEdit", None),
    ("NotebookRead", None),
    ("BashOutput", None),
    ("KillShell", None),
    ("ExitPlanMode", None),
    ("SlashCommand", None),
];

/// One reply key Claude Code reads and this agent does not.
#[derive(Debug, Clone, Copy)]
pub struct ReplyKey {
    /// Where the key sits in the reply (`["hookSpecificOutput", "additionalContext"]`).
    pub path: &'static [&'static str],
    /// What is read here instead: on PreToolUse, PostToolUse and Stop.
    pub instead: [&'static str; 3],
}

impl ReplyKey {
    /// What is read instead on `event`.
    pub fn instead_on(&self, event: Event) -> &'static str {
        match event {
            Event::PreToolUse => self.instead[0],
            Event::PostToolUse => self.instead[1],
            Event::Stop => self.instead[2],
        }
    }
}

/// The reply keys of Claude Code that this agent does not read, with what it reads instead. A
/// reply holding one is warned about; the decision is what it would be without the warning.
pub const REPLY_KEYS: &[ReplyKey] = &[
    ReplyKey {
        path: &["decision"],
        instead: [
            "a hook denies by exiting 2 with the reason on stderr, or with hookSpecificOutput.permissionDecision \"deny\"",
            "a hook sends feedback to the model by exiting 2 with the text on stderr",
            "a hook asks for another turn by exiting 2 with the reason on stderr",
        ],
    },
    ReplyKey {
        path: &["hookSpecificOutput", "permissionDecisionReason"],
        instead: [
            "the deny reason is hookSpecificOutput.reason, else reason",
            "the feedback is the stderr of a hook that exits 2",
            "the message is the stderr of a hook that exits 2",
        ],
    },
    ReplyKey {
        path: &["permissionDecisionReason"],
        instead: [
            "the deny reason is hookSpecificOutput.reason, else reason",
            "the feedback is the stderr of a hook that exits 2",
            "the message is the stderr of a hook that exits 2",
        ],
    },
    ReplyKey {
        path: &["continue"],
        instead: [WHAT_ENDS_THE_TURN; 3],
    },
    ReplyKey {
        path: &["stopReason"],
        instead: [WHAT_ENDS_THE_TURN; 3],
    },
    ReplyKey {
        path: &["systemMessage"],
        instead: ["a hook's stdout is never shown to the user; hookq's warnings are, with the stderr of a hook that failed";
            3],
    },
    ReplyKey {
        path: &["suppressOutput"],
        instead: ["a hook's stdout is never shown, so there is nothing to suppress"; 3],
    },
    ReplyKey {
        path: &["hookSpecificOutput", "additionalContext"],
        instead: [
            "text reaches the model as the deny reason: stderr with exit 2",
            "text reaches the model as feedback: stderr with exit 2",
            "text reaches the model as the next turn's message: stderr with exit 2",
        ],
    },
];

const WHAT_ENDS_THE_TURN: &str =
    "no reply stops the agent; a hook error (an exit other than 0 and 2, a timeout) ends the turn";

/// One note per key of [`REPLY_KEYS`] that `reply` holds, for `event`. Only the key is named,
/// never its value: what a hook prints on stdout reaches no warning.
pub(crate) fn unread_keys(event: Event, reply: &Map<String, Value>) -> Vec<String> {
    REPLY_KEYS
        .iter()
        .filter(|k| holds(reply, k.path))
        .map(|k| {
            format!(
                "{} is not read here; {}",
                k.path.join("."),
                k.instead_on(event)
            )
        })
        .collect()
}

fn holds(reply: &Map<String, Value>, path: &[&str]) -> bool {
    match path {
        [] => false,
        [key] => reply.contains_key(*key),
        [key, rest @ ..] => match reply.get(*key) {
            Some(Value::Object(inner)) => holds(inner, rest),
            _ => false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reply_keys_are_named_never_their_values() {
        let reply = json!({"decision": "block", "reason": "r", "continue": false,
            "hookSpecificOutput": {"additionalContext": "SECRET", "permissionDecision": "deny"}});
        let notes = unread_keys(Event::PostToolUse, reply.as_object().unwrap());
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert!(notes[0].starts_with("decision is not read here; a hook sends feedback"));
        assert!(notes[1].starts_with("continue is not read here"));
        assert!(notes[2].starts_with("hookSpecificOutput.additionalContext is not read here"));
        assert!(
            notes
                .iter()
                .all(|n| !n.contains("SECRET") && !n.contains("block"))
        );
        assert!(unread_keys(Event::Stop, &Map::new()).is_empty());
    }
}
