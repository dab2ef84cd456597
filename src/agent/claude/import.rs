//! `hookq agent import`: a Claude Code settings file's hooks as a project file, its tool names
//! and matchers translated ([`super::patterns`]), with a note for everything changed or left out.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent::error::Error;
use crate::agent::event::Event;
use crate::agent::matcher::{Matcher, RADIAN_TOOLS};
use crate::agent::ordered::Ordered;
use crate::agent::sources::{OUTSIDE_SUBSET, kind, timeout};

use super::patterns::{Leaf, leaves, mcp_name, plain, translate, what_name_is};

/// A Claude Code settings file as a project file.
#[derive(Debug, Clone, PartialEq)]
pub struct Import {
    /// The events object to write as `.radian/hooks.json` (serialise it).
    pub hooks: ProjectFile,
    /// One line per handler, entry or event left out, per matcher changed or kept as written
    /// with a reason, and per command that reads `$CLAUDE_PROJECT_DIR` or `$CLAUDE_PLUGIN_ROOT`,
    /// each naming where it is in the settings file, in the file's order.
    pub notes: Vec<String>,
}

/// A project file's events object (the bare shape), in the order the events happen.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProjectFile {
    /// The PreToolUse entries.
    #[serde(rename = "PreToolUse", default, skip_serializing_if = "Vec::is_empty")]
    pub pre_tool_use: Vec<ImportedEntry>,
    /// The PostToolUse entries.
    #[serde(rename = "PostToolUse", default, skip_serializing_if = "Vec::is_empty")]
    pub post_tool_use: Vec<ImportedEntry>,
    /// The Stop entries.
    #[serde(rename = "Stop", default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<ImportedEntry>,
}

impl ProjectFile {
    fn event(&mut self, event: Event) -> &mut Vec<ImportedEntry> {
        match event {
            Event::PreToolUse => &mut self.pre_tool_use,
            Event::PostToolUse => &mut self.post_tool_use,
            Event::Stop => &mut self.stop,
        }
    }
}

/// One entry of a project file: a matcher and its handlers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportedEntry {
    /// The matcher, with tool names as the host calls them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    /// The handlers the agent can run.
    pub hooks: Vec<ImportedHandler>,
}

/// One handler of a project file: a command the agent runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportedHandler {
    /// Always `command`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The command line, byte for byte as the settings file had it.
    pub command: String,
    /// The timeout in seconds, as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Value>,
}

/// Reads a Claude Code settings file (`.claude/settings.json`: a top-level `hooks` object, or
/// the bare events object; a UTF-8 byte order mark ahead of it is skipped) and translates its
/// hooks: matchers' tool names mapped by [`TOOLS`](super::TOOLS) and Claude Code's MCP names
/// and patterns to ones that match MCP tools only (see `translate`), handlers the agent cannot
/// run left out, commands kept byte for byte. Every change is a note.
pub fn import(path: &Path) -> Result<Import, Error> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::ReadSettings {
        path: path.to_path_buf(),
        source,
    })?;
    let parse_error = |why: String| Error::ParseSettings {
        path: path.to_path_buf(),
        why,
    };
    let top = match crate::agent::ordered::parse(&text) {
        Ok(top @ Ordered::Object(_)) => top,
        Ok(Ordered::Other(other)) => {
            return Err(parse_error(format!(
                "the top level is {}, not an object",
                kind(&other)
            )));
        }
        Err(e) => return Err(parse_error(e.to_string())),
    };
    let mut import = Import {
        hooks: ProjectFile::default(),
        notes: Vec::new(),
    };
    let events = match top.get("hooks") {
        Some(events @ Ordered::Object(_)) => events,
        Some(other) => {
            return Err(parse_error(format!(
                "\"hooks\" is {}, not an object",
                kind(&other.to_value())
            )));
        }
        None if top.keys().any(|k| k.parse::<Event>().is_ok()) => &top,
        None => {
            import
                .notes
                .push("no \"hooks\" object: nothing to import".into());
            return Ok(import);
        }
    };
    for (name, entries) in events.members().unwrap_or_default() {
        let Ok(event) = name.parse::<Event>() else {
            import.notes.push(format!(
                "{name}: left out: no such event here (only PreToolUse, PostToolUse and Stop)"
            ));
            continue;
        };
        let Value::Array(entries) = entries else {
            import.notes.push(format!(
                "{event}: left out: it is {}, not a list of entries",
                kind(&entries)
            ));
            continue;
        };
        for (i, entry) in entries.iter().enumerate() {
            if let Some(entry) = import_entry(event, i, entry, &mut import.notes) {
                import.hooks.event(event).push(entry);
            }
        }
    }
    Ok(import)
}

fn import_entry(
    event: Event,
    index: usize,
    entry: &Value,
    notes: &mut Vec<String>,
) -> Option<ImportedEntry> {
    let at = format!("{event} entry {index}");
    let Value::Object(entry) = entry else {
        notes.push(format!(
            "{at}: left out: it is {}, not an object",
            kind(entry)
        ));
        return None;
    };
    let matcher = match entry.get("matcher") {
        None | Some(Value::Null) => None,
        Some(Value::String(m)) => Some(m),
        Some(other) => {
            notes.push(format!(
                "{at}: left out: its matcher is {}, not a string",
                kind(other)
            ));
            return None;
        }
    };
    let Some(Value::Array(handlers)) = entry.get("hooks") else {
        notes.push(format!("{at}: left out: it has no hooks list"));
        return None;
    };
    let hooks: Vec<ImportedHandler> = handlers
        .iter()
        .enumerate()
        .filter_map(|(j, h)| import_handler(&format!("{at} handler {j}"), h, notes))
        .collect();
    if hooks.is_empty() {
        notes.push(format!("{at}: left out: none of its handlers can run here"));
        return None;
    }
    let matcher = match matcher {
        // Stop runs every entry whatever its matcher: nothing to map.
        Some(m) if event == Event::Stop => Some(m.clone()),
        Some(m) => Some(import_matcher(&at, m, notes)?),
        None => None,
    };
    Some(ImportedEntry { matcher, hooks })
}

/// A tool event's matcher with Claude Code's tool names mapped (see [`translate`]); `None`
/// (with a note) when nothing it names exists here. A matcher with nothing to map is kept as
/// written, anchors and all.
fn import_matcher(at: &str, matcher: &str, notes: &mut Vec<String>) -> Option<String> {
    if matcher == "*" || matcher.trim().is_empty() {
        return Some(matcher.to_owned());
    }
    if let Err(e) = regex::Regex::new(matcher) {
        let why = e.to_string();
        notes.push(format!(
            "{at}: matcher {matcher:?} kept as written: it does not compile ({}), so the entry matches no tool",
            why.lines().last().unwrap_or_default().trim()
        ));
        return Some(matcher.to_owned());
    }
    let mut mapped: Vec<String> = Vec::new();
    let mut changed = false;
    for leaf in leaves(matcher) {
        let name = match translate(leaf) {
            Leaf::Mapped(here) => {
                changed = true;
                here
            }
            Leaf::Nothing(why) => {
                changed = true;
                notes.push(format!("{at}: matcher {leaf:?} left out: {why}"));
                continue;
            }
            Leaf::Untranslatable(why) => {
                notes.push(format!(
                    "{at}: matcher {leaf:?} kept as written: it cannot be translated safely ({why}); check it against Radian's names ({}) and MCP tools' server__tool",
                    RADIAN_TOOLS.join(", ")
                ));
                leaf.to_owned()
            }
            Leaf::Kept => {
                if plain(leaf) && !RADIAN_TOOLS.contains(&leaf) && !mcp_name(leaf) {
                    notes.push(format!(
                        "{at}: matcher {} kept as written, though no tool has that name here",
                        what_name_is(leaf)
                    ));
                }
                leaf.to_owned()
            }
        };
        if !mapped.contains(&name) {
            mapped.push(name);
        }
    }
    if mapped.is_empty() {
        notes.push(format!(
            "{at}: left out: its matcher {matcher:?} names no tool that exists here"
        ));
        return None;
    }
    if !changed {
        return Some(matcher.to_owned());
    }
    let joined = mapped.join("|");
    // Each leaf must stand as a pattern of its own once out of the matcher: the anchor taken off
    // `^*` leaves `*`, which alone would mean every tool (and compiles as no pattern). A
    // matcher whose leaves do not keep it as written, matching what it matched.
    if Matcher::new(Some(&joined)).is_any() || regex::Regex::new(&joined).is_err() {
        notes.push(format!(
            "{at}: matcher {matcher:?} kept as written: its alternatives do not stand as patterns on their own"
        ));
        return Some(matcher.to_owned());
    }
    if joined != matcher {
        notes.push(format!("{at}: matcher {matcher:?} is {joined:?} here"));
    }
    Some(joined)
}

/// A handler as the project file holds it; `None` (with a note) when the agent cannot run it.
fn import_handler(at: &str, handler: &Value, notes: &mut Vec<String>) -> Option<ImportedHandler> {
    let Value::Object(handler) = handler else {
        notes.push(format!(
            "{at}: left out: it is {}, not an object",
            kind(handler)
        ));
        return None;
    };
    match handler.get("type") {
        Some(Value::String(t)) if t == "command" => {}
        Some(Value::String(t)) => {
            notes.push(format!(
                "{at}: left out: its type is {t:?}; only \"command\" runs here"
            ));
            return None;
        }
        _ => {
            notes.push(format!("{at}: left out: it has no type \"command\""));
            return None;
        }
    }
    let outside: Vec<String> = OUTSIDE_SUBSET
        .iter()
        .filter(|k| handler.contains_key(**k))
        .map(|k| format!("{k:?}"))
        .collect();
    if !outside.is_empty() {
        notes.push(format!(
            "{at}: left out: it uses {}, which the agent cannot do (only type, command and timeout)",
            outside.join(", ")
        ));
        return None;
    }
    let command = match handler.get("command") {
        Some(Value::String(c)) if !c.trim().is_empty() => c,
        _ => {
            notes.push(format!("{at}: left out: it has no command"));
            return None;
        }
    };
    let timeout = match handler.get("timeout") {
        Some(t) => match timeout(Some(t)) {
            Ok(_) => Some(t.clone()),
            Err(why) => {
                notes.push(format!("{at}: left out: bad timeout: {why}"));
                return None;
            }
        },
        None => None,
    };
    for key in handler.keys() {
        if !["type", "command", "timeout"].contains(&key.as_str()) {
            notes.push(format!(
                "{at}: {key:?} left out: the agent does not read it"
            ));
        }
    }
    if command.contains("CLAUDE_PROJECT_DIR") {
        notes.push(format!(
            "{at}: its command reads $CLAUDE_PROJECT_DIR, which is not set here: a hook runs in the workspace, so a path relative to it (or \"$PWD\") does the same; kept as written"
        ));
    }
    if command.contains("CLAUDE_PLUGIN_ROOT") {
        notes.push(format!(
            "{at}: its command reads $CLAUDE_PLUGIN_ROOT, which is not set here: it is the folder of the Claude Code plugin the hook came with, so the command finds no script; write the script's path instead; kept as written"
        ));
    }
    Some(ImportedHandler {
        kind: "command".into(),
        command: command.clone(),
        timeout,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_import_never_makes_a_matcher_of_every_tool() {
        // `^*` alone, its anchor taken off, would be `*`: every tool. The regex `|^*` matches
        // only an empty name, so no tool.
        for matcher in ["|^*", "^*", "^*|Bash", "(^*)"] {
            let mut notes = Vec::new();
            let imported = import_matcher("e", matcher, &mut notes);
            let m = Matcher::new(imported.as_deref());
            assert!(!m.matches("read"), "{matcher:?} imported as {imported:?}");
            assert!(!m.is_any(), "{matcher:?} imported as {imported:?}");
        }
    }
}
