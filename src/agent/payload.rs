//! What the host tells hookq about a call or a turn, and the JSON object each hook reads on its
//! stdin. hookq sets `hook_event_name` and `cwd`; the host gives the rest.

use serde::Serialize;
use serde_json::{Map, Value};

use super::error::Error;
use super::event::Event;

/// A tool call, before or after it ran.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The host's tool name (`shell`, `write`, an MCP tool as `server__tool`, …).
    pub tool_name: String,
    /// The tool's input, a JSON object.
    pub tool_input: Map<String, Value>,
    /// The host's session id.
    pub session_id: String,
}

/// A completed turn, and what the host knows about who owns its end.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Turn {
    /// The host's session id.
    pub session_id: String,
    /// The text of the turn's last assistant message.
    pub last_assistant_message: String,
    /// How many consecutive continuations this turn has had since the last user message (the
    /// host clears it when the user writes).
    pub continuations: u32,
    /// A goal owns the turn end: intent_stop stays quiet.
    pub goal_active: bool,
    /// A loop (`/loop`) owns the turn end: intent_stop stays quiet.
    pub loop_active: bool,
    /// How many background jobs are running: intent_stop stays quiet while any is.
    pub background_jobs: u32,
}

/// The object a PreToolUse or PostToolUse hook reads.
#[derive(Serialize)]
pub(crate) struct ToolPayload<'a> {
    pub hook_event_name: Event,
    pub tool_name: &'a str,
    pub tool_input: &'a Map<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_response: Option<&'a Value>,
    pub cwd: &'a str,
    pub session_id: &'a str,
}

/// The object a Stop hook reads.
#[derive(Serialize)]
pub(crate) struct StopPayload<'a> {
    pub hook_event_name: Event,
    pub cwd: &'a str,
    pub session_id: &'a str,
    pub last_assistant_message: &'a str,
}

/// A payload the host gave that hookq cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BadPayload {
    /// The payload is not a JSON object.
    #[error("the payload is not a JSON object")]
    NotAnObject,
    /// A field the event needs is missing.
    #[error("{0} is missing")]
    Missing(&'static str),
    /// A field holds another kind of value than the event needs.
    #[error("{field} is not {expected}")]
    WrongKind {
        /// The field.
        field: &'static str,
        /// What it must be (`a string`, `an object`).
        expected: &'static str,
    },
    /// `hook_event_name` names another event than the one fired.
    #[error("hook_event_name is {given}, but the event fired is {event}")]
    OtherEvent {
        /// The host's value when it is a short string (quoted), else the kind of value it is.
        given: String,
        /// The event fired.
        event: Event,
    },
}

/// A host's payload for `event`, read from one JSON value (what `hookq agent fire` reads on
/// stdin): a tool event needs `tool_name` (a string) and `tool_input` (an object), PostToolUse
/// also `tool_response` (any value; missing is `null`); Stop takes `last_assistant_message`
/// (missing is empty). `session_id`, when given, is a string. `hook_event_name` and `cwd` are
/// hookq's to set: a `hook_event_name` naming another event is refused, and `cwd` is replaced.
/// Other fields are not passed on.
pub enum HostPayload {
    /// PreToolUse or PostToolUse.
    Tool {
        /// The call.
        call: ToolCall,
        /// PostToolUse's result (`None` for PreToolUse).
        tool_response: Option<Value>,
    },
    /// Stop: the session and the last message (the turn's other facts come from options).
    Stop {
        /// The session id.
        session_id: String,
        /// The last assistant message.
        last_assistant_message: String,
    },
}

impl HostPayload {
    /// Reads `bytes`, which came from `from` (`stdin`), as the JSON payload of `event`: what
    /// `hookq agent fire` does with its stdin.
    pub fn from_json(event: Event, bytes: &[u8], from: &'static str) -> Result<HostPayload, Error> {
        let value: Value =
            serde_json::from_slice(bytes).map_err(|source| Error::PayloadNotJson {
                event,
                from,
                source,
            })?;
        HostPayload::read(event, value).map_err(|source| Error::BadPayload {
            event,
            from,
            source,
        })
    }

    /// Reads `value` as the payload of `event`.
    pub fn read(event: Event, value: Value) -> Result<HostPayload, BadPayload> {
        let Value::Object(mut obj) = value else {
            return Err(BadPayload::NotAnObject);
        };
        match obj.get("hook_event_name") {
            None => {}
            Some(Value::String(s)) if s == event.name() => {}
            Some(other) => {
                // The host's value is named only when it is short enough for one error line.
                let what = match other {
                    Value::String(s) if s.chars().count() <= 40 => format!("{s:?}"),
                    other => super::sources::kind(other).to_owned(),
                };
                return Err(BadPayload::OtherEvent { given: what, event });
            }
        }
        let session_id = match obj.remove("session_id") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s,
            Some(_) => {
                return Err(BadPayload::WrongKind {
                    field: "session_id",
                    expected: "a string",
                });
            }
        };
        match event {
            Event::Stop => {
                let last_assistant_message = match obj.remove("last_assistant_message") {
                    None | Some(Value::Null) => String::new(),
                    Some(Value::String(s)) => s,
                    Some(_) => {
                        return Err(BadPayload::WrongKind {
                            field: "last_assistant_message",
                            expected: "a string",
                        });
                    }
                };
                Ok(HostPayload::Stop {
                    session_id,
                    last_assistant_message,
                })
            }
            Event::PreToolUse | Event::PostToolUse => {
                let tool_name = match obj.remove("tool_name") {
                    Some(Value::String(s)) => s,
                    None => return Err(BadPayload::Missing("tool_name")),
                    Some(_) => {
                        return Err(BadPayload::WrongKind {
                            field: "tool_name",
                            expected: "a string",
                        });
                    }
                };
                let tool_input = match obj.remove("tool_input") {
                    Some(Value::Object(m)) => m,
                    None => return Err(BadPayload::Missing("tool_input")),
                    Some(_) => {
                        return Err(BadPayload::WrongKind {
                            field: "tool_input",
                            expected: "an object",
                        });
                    }
                };
                let tool_response = (event == Event::PostToolUse)
                    .then(|| obj.remove("tool_response").unwrap_or(Value::Null));
                Ok(HostPayload::Tool {
                    call: ToolCall {
                        tool_name,
                        tool_input,
                        session_id,
                    },
                    tool_response,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_payloads_need_a_name_and_an_object_input() {
        let ok = HostPayload::read(
            Event::PostToolUse,
            json!({"tool_name": "shell", "tool_input": {"command": "ls"}, "session_id": "s",
                   "tool_response": {"content": "x", "is_error": false}, "cwd": "/elsewhere"}),
        )
        .unwrap();
        let HostPayload::Tool {
            call,
            tool_response,
        } = ok
        else {
            panic!("a tool payload")
        };
        assert_eq!(call.tool_name, "shell");
        assert_eq!(call.session_id, "s");
        assert_eq!(tool_response.unwrap()["content"], "x");
        for (bad, why) in [
            (json!([]), "not a JSON object"),
            (json!({"tool_input": {}}), "tool_name is missing"),
            (
                json!({"tool_name": 1, "tool_input": {}}),
                "tool_name is not a string",
            ),
            (json!({"tool_name": "x"}), "tool_input is missing"),
            (
                json!({"tool_name": "x", "tool_input": "ls"}),
                "tool_input is not an object",
            ),
            (
                json!({"tool_name": "x", "tool_input": {}, "session_id": 5}),
                "session_id",
            ),
            (
                json!({"tool_name": "x", "tool_input": {}, "hook_event_name": "Stop"}),
                "hook_event_name is \"Stop\", but the event fired is PreToolUse",
            ),
            (
                json!({"tool_name": "x", "tool_input": {}, "hook_event_name": "x".repeat(5000)}),
                "hook_event_name is a string, but",
            ),
            (
                json!({"tool_name": "x", "tool_input": {}, "hook_event_name": ["Stop"]}),
                "hook_event_name is a list, but",
            ),
        ] {
            let e = HostPayload::read(Event::PreToolUse, bad).err().unwrap();
            assert!(e.to_string().contains(why), "{e} lacks {why}");
        }
    }

    #[test]
    fn a_stop_payload_may_be_empty() {
        let HostPayload::Stop {
            last_assistant_message,
            ..
        } = HostPayload::read(Event::Stop, json!({})).unwrap()
        else {
            panic!("a stop payload")
        };
        assert_eq!(last_assistant_message, "");
        assert!(HostPayload::read(Event::Stop, json!({"last_assistant_message": 3})).is_err());
    }
}
