//! Carrying hooks over from Claude Code, whose hook files have the same shape but name tools,
//! reply keys and features differently. Nothing here changes a decision: it names the
//! differences (a matcher that names a Claude Code tool never fires; a reply key that is not
//! read) and translates a Claude Code settings file into a project file ([`import`]).
//!
//! Each difference is read from one table: [`TOOLS`] for tool names, [`REPLY_KEYS`] for the
//! keys of a hook's reply.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::error::Error;
use super::event::Event;
use super::matcher::{Matcher, RADIAN_TOOLS};
use super::ordered::Ordered;
use super::sources::{OUTSIDE_SUBSET, kind, timeout};

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

/// Claude Code's prefix of an MCP tool's name: its `mcp__server__tool` is `server__tool` here.
const MCP_PREFIX: &str = "mcp__";

/// Every MCP tool here, and no other: Radian's own tool names hold no `__`.
const ANY_MCP_TOOL: &str = ".+__.+";

/// What follows `mcp__` in a Claude Code matcher that means every MCP tool. `*` is written as a
/// wildcard (`mcp__*`); the bare prefix is what the matcher's author meant by it too.
const EVERY_MCP_TOOL: [&str; 6] = ["", "*", ".*", ".+", ".*?", ".+?"];

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

/// Whether a matcher alternative is a plain name: no character a regular expression treats
/// specially, so it matches exactly that tool name.
fn plain(alternative: &str) -> bool {
    !alternative.is_empty()
        && alternative
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// An MCP tool's name as the host gives it: `server__tool`, Claude Code's `mcp__` prefix aside.
fn mcp_name(name: &str) -> bool {
    !name.starts_with(MCP_PREFIX)
        && name
            .split_once("__")
            .is_some_and(|(server, tool)| !server.is_empty() && !tool.is_empty())
}

/// What a plain name that no tool here has is, for a message: Claude Code's name of a tool,
/// Claude Code's name of an MCP tool, or close to a Radian tool's name.
fn what_name_is(name: &str) -> String {
    if let Some(&(_, radian)) = TOOLS.iter().find(|(claude, _)| *claude == name) {
        return match radian {
            Some(r) => format!("{name:?} (Claude Code's name; here it is {r:?})"),
            None => format!("{name:?} (a Claude Code tool with no counterpart here)"),
        };
    }
    if let Some(server_tool) = name.strip_prefix(MCP_PREFIX)
        && mcp_name(server_tool)
    {
        return format!("{name:?} (Claude Code's name; here it is {server_tool:?})");
    }
    match nearest(name) {
        Some(near) => format!("{name:?} (did you mean {near:?}?)"),
        None => format!("{name:?}"),
    }
}

/// The Radian tool name closest to `name`, when one is close: at most two edits, and fewer than
/// half its length, ignoring case.
fn nearest(name: &str) -> Option<&'static str> {
    let lower = name.to_ascii_lowercase();
    RADIAN_TOOLS
        .iter()
        .map(|t| (distance(&lower, t), *t))
        .filter(|(d, t)| *d <= 2 && d * 2 < t.len())
        .min_by_key(|(d, _)| *d)
        .map(|(_, t)| t)
}

/// Levenshtein distance, by characters.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(ca != *cb))
                .min(above + 1)
                .min(row[j] + 1);
            diagonal = above;
        }
    }
    row[b.len()]
}

/// The names a matcher is made of: its top-level alternatives, each with its leading `^` and
/// trailing `$` taken off and a group that is the whole of it opened up, so `^(Edit|Write)$` is
/// `Edit` and `Write`. A matcher is anchored to the whole tool name, so these anchors and groups
/// change nothing and the leaves joined with `|` match what the matcher matches. A leaf is a
/// plain name or a pattern (`github__.*`, `(a|b)__x`: a group followed by more stays whole).
fn leaves(matcher: &str) -> Vec<&str> {
    let mut out = Vec::new();
    push_leaves(matcher, &mut out);
    out
}

fn push_leaves<'a>(pattern: &'a str, out: &mut Vec<&'a str>) {
    for branch in split_top(pattern) {
        let core = trim_anchors(branch);
        match whole_group(core) {
            Some(inner) => push_leaves(inner, out),
            None => out.push(core),
        }
    }
}

/// `pattern` split at each `|` outside any group, class or escape.
fn split_top(pattern: &str) -> Vec<&str> {
    let b = pattern.as_bytes();
    let mut parts = Vec::new();
    let (mut depth, mut start, mut i) = (0usize, 0, 0);
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'[' => i = class_end(b, i),
            b'(' => depth += 1,
            b')' => depth = depth.saturating_sub(1),
            b'|' if depth == 0 => {
                parts.push(&pattern[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    parts.push(&pattern[start..]);
    parts
}

/// The index of the `]` that closes the class opening at `open` (nested classes included); the
/// last index when it is not closed.
fn class_end(b: &[u8], open: usize) -> usize {
    let mut i = open + 1;
    if b.get(i) == Some(&b'^') {
        i += 1;
    }
    // A `]` first in a class is a literal.
    if b.get(i) == Some(&b']') {
        i += 1;
    }
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'[' => i = class_end(b, i),
            b']' => return i,
            _ => {}
        }
        i += 1;
    }
    b.len().saturating_sub(1)
}

/// A branch without its leading `^`s and its unescaped trailing `$`s.
fn trim_anchors(branch: &str) -> &str {
    let mut core = branch.trim_start_matches('^');
    while let Some(rest) = core.strip_suffix('$') {
        let escapes = rest.bytes().rev().take_while(|&c| c == b'\\').count();
        if escapes % 2 == 1 {
            break;
        }
        core = rest;
    }
    core
}

/// The inside of `core` when it is one group from its first character to its last (`(…)`,
/// `(?:…)`, `(?P<name>…)`, `(?<name>…)`); `None` otherwise, and for a group that sets flags.
fn whole_group(core: &str) -> Option<&str> {
    let b = core.as_bytes();
    if b.first() != Some(&b'(') || b.last() != Some(&b')') {
        return None;
    }
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'[' => i = class_end(b, i),
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 && i != b.len() - 1 {
                    return None;
                }
            }
            _ => {}
        }
        i += 1;
    }
    if depth != 0 {
        // The last `)` was escaped: the group is not closed there.
        return None;
    }
    let inner = &core[1..core.len() - 1];
    let Some(rest) = inner.strip_prefix('?') else {
        return Some(inner);
    };
    if let Some(body) = rest.strip_prefix(':') {
        return Some(body);
    }
    let named = rest.strip_prefix("P<").or_else(|| rest.strip_prefix('<'))?;
    named.split_once('>').map(|(_, body)| body)
}

/// What one leaf of a Claude Code matcher is here.
#[derive(Debug, Clone, PartialEq)]
enum Leaf {
    /// Nothing of Claude Code's in it: kept as written.
    Kept,
    /// Claude Code's name or pattern, and what matches the same tools here.
    Mapped(String),
    /// Nothing here has it (a Claude Code tool with no counterpart, an MCP name with no tool),
    /// and why.
    Nothing(String),
    /// A pattern over Claude Code's names that has no translation known to mean the same, and
    /// why.
    Untranslatable(&'static str),
}

/// What `leaf` names here. An MCP pattern is translated only into one that matches MCP tools
/// alone (every name it matches holds `__`), since Radian's own tools hold none: a guard meant
/// for MCP tools never widens to `shell` or `read`.
fn translate(leaf: &str) -> Leaf {
    if leaf.trim().is_empty() {
        // Kept, it could be all that is left, and a blank matcher means every tool.
        return Leaf::Nothing("an empty alternative matches no tool's name".into());
    }
    if let Some(&(_, radian)) = TOOLS.iter().find(|(claude, _)| *claude == leaf) {
        return match radian {
            Some(r) => Leaf::Mapped(r.to_owned()),
            None => Leaf::Nothing("a Claude Code tool with no counterpart here".into()),
        };
    }
    if let Some(rest) = leaf.strip_prefix(MCP_PREFIX) {
        return translate_mcp(rest);
    }
    if plain(leaf) {
        return Leaf::Kept;
    }
    if leaf.contains(MCP_PREFIX) {
        return Leaf::Untranslatable("it holds Claude Code's mcp__ other than at the start of a name");
    }
    // A pattern that holds `__` matches MCP tools only, whose servers may well be capitalised.
    if has_upper_case(leaf) && !holds_two_underscores(leaf) {
        return Leaf::Untranslatable(
            "it matches capitalised names, as Claude Code's are; Radian's are lower case",
        );
    }
    Leaf::Kept
}

/// What `mcp__` followed by `rest` is here.
fn translate_mcp(rest: &str) -> Leaf {
    if EVERY_MCP_TOOL.contains(&rest) {
        return Leaf::Mapped(ANY_MCP_TOOL.into());
    }
    if plain(rest) {
        // Claude Code matches a plain name exactly, and its MCP tools are mcp__server__tool.
        return if mcp_name(rest) {
            Leaf::Mapped(rest.to_owned())
        } else {
            Leaf::Nothing("no MCP tool has that name (Claude Code's are mcp__server__tool)".into())
        };
    }
    let why = "only mcp__ followed by a server and a tool (mcp__github__.*), a server and .* \
               (mcp__github.*) or .* alone has a translation that matches MCP tools only";
    let mapped = if rest.starts_with(['*', '+', '?', '{']) {
        // The quantifier repeats mcp__'s last underscore: there is no prefix to take off.
        return Leaf::Untranslatable(why);
    } else if holds_two_underscores(rest) {
        rest.to_owned()
    } else if let Some(server) = [".*", ".+", "*"]
        .iter()
        .find_map(|any| rest.strip_suffix(any))
        .filter(|s| plain(s) && !s.contains("__") && !s.ends_with('_'))
    {
        // Names that start with the server's name and go on to hold `__`: the `__` cannot
        // straddle the name's end, which is no underscore.
        format!("{server}.*__.+")
    } else {
        return Leaf::Untranslatable(why);
    };
    match regex::Regex::new(&mapped) {
        Ok(_) => Leaf::Mapped(mapped),
        Err(_) => Leaf::Untranslatable(why),
    }
}

/// Whether every name `pattern` matches holds `__`: two underscores in a row at its top level,
/// the second not made optional.
fn holds_two_underscores(pattern: &str) -> bool {
    let b = pattern.as_bytes();
    let (mut depth, mut i) = (0usize, 0);
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'[' => i = class_end(b, i),
            b'(' => depth += 1,
            b')' => depth = depth.saturating_sub(1),
            b'|' if depth == 0 => return false,
            b'_' if depth == 0
                && b.get(i + 1) == Some(&b'_')
                && !matches!(b.get(i + 2), Some(b'?' | b'*' | b'{')) =>
            {
                return true;
            }
            _ => {}
        }
        i += 1;
    }
    false
}

/// Whether `pattern` holds a capital letter outside an escape (`\W`, `\p{Lu}`) and a group's
/// name.
fn has_upper_case(pattern: &str) -> bool {
    let mut chars = pattern.chars().peekable();
    let mut before = ' ';
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('p' | 'P') if chars.peek() == Some(&'{') => {
                    chars.by_ref().find(|&c| c == '}');
                }
                _ => {}
            },
            // `(?P<name>` and `(?<name>`: the name is not matched against anything.
            '<' if before == '?' || before == 'P' => {
                chars.by_ref().find(|&c| c == '>');
            }
            c if c.is_ascii_uppercase() && !(c == 'P' && before == '?') => return true,
            _ => {}
        }
        before = c;
    }
    false
}

/// Why a tool event's matcher never fires for some of what it names: each plain name that is
/// neither a Radian tool nor an MCP tool's `server__tool`, and each pattern over Claude Code's
/// MCP names that has a translation. `None` when there is none.
pub(crate) fn unknown_tool_names(matcher: &str) -> Option<String> {
    let unknown: Vec<String> = leaves(matcher)
        .into_iter()
        .filter_map(|leaf| {
            if plain(leaf) {
                (!RADIAN_TOOLS.contains(&leaf) && !mcp_name(leaf)).then(|| what_name_is(leaf))
            } else if let Leaf::Mapped(here) = translate(leaf) {
                Some(format!(
                    "{leaf:?} (Claude Code's names; here it is {here:?})"
                ))
            } else {
                None
            }
        })
        .collect();
    if unknown.is_empty() {
        return None;
    }
    Some(format!(
        "the matcher {matcher:?} never fires for {}: no tool has that name here (Radian's are {}, and MCP tools' server__tool)",
        unknown.join(", "),
        RADIAN_TOOLS.join(", ")
    ))
}

/// Why a tool event's matcher may not fire for what its author meant: a pattern over Claude
/// Code's tool names with no translation that keeps its meaning. `None` when there is none.
pub(crate) fn untranslatable_patterns(matcher: &str) -> Option<String> {
    let found: Vec<String> = leaves(matcher)
        .into_iter()
        .filter_map(|leaf| match translate(leaf) {
            Leaf::Untranslatable(why) => Some(format!("{leaf:?} ({why})")),
            _ => None,
        })
        .collect();
    if found.is_empty() {
        return None;
    }
    Some(format!(
        "the matcher {matcher:?} is a pattern over Claude Code's tool names that cannot be translated safely: {}; it matches names as written, so check it against Radian's ({}) and MCP tools' server__tool",
        found.join(", "),
        RADIAN_TOOLS.join(", ")
    ))
}

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
/// hooks: matchers' tool names mapped by [`TOOLS`] and Claude Code's MCP names and patterns to
/// ones that match MCP tools only (see `translate`), handlers the agent cannot run left out,
/// commands kept byte for byte. Every change is a note.
pub fn import(path: &Path) -> Result<Import, Error> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::ReadSettings {
        path: path.to_path_buf(),
        source,
    })?;
    let parse_error = |why: String| Error::ParseSettings {
        path: path.to_path_buf(),
        why,
    };
    let top = match super::ordered::parse(&text) {
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
    use serde_json::json;

    #[test]
    fn names_that_never_fire() {
        assert_eq!(unknown_tool_names("shell|write"), None);
        assert_eq!(unknown_tool_names("github__create_issue"), None);
        assert_eq!(
            unknown_tool_names("github__.*|Notebook.*"),
            None,
            "patterns pass"
        );
        let w = unknown_tool_names("^(Edit|Write)$").unwrap();
        assert!(
            w.contains("never fires for \"Edit\" (Claude Code's name; here it is \"patch\"), \"Write\""),
            "a group of names is names: {w}"
        );
        assert_eq!(unknown_tool_names("^(shell|(?:write))$"), None);
        let w = unknown_tool_names("Bash|shell|Edit").unwrap();
        assert!(
            w.contains("\"Bash\" (Claude Code's name; here it is \"shell\"), \"Edit\" (Claude Code's name; here it is \"patch\")"),
            "{w}"
        );
        let w = unknown_tool_names("mcp__github__create_issue").unwrap();
        assert!(w.contains("here it is \"github__create_issue\""), "{w}");
        assert!(
            unknown_tool_names("shel")
                .unwrap()
                .contains("did you mean \"shell\"?")
        );
        assert!(
            unknown_tool_names("Shell")
                .unwrap()
                .contains("did you mean \"shell\"?")
        );
        assert!(
            unknown_tool_names("WebFetch")
                .unwrap()
                .contains("no counterpart")
        );
        let far = unknown_tool_names("deploy").unwrap();
        assert!(far.contains("for \"deploy\":"), "{far}");
        assert!(!far.contains("did you mean"), "{far}");
        assert_eq!(nearest("job"), Some("job"));
        assert_eq!(nearest("ab"), None, "too far to guess");
        assert_eq!(distance("kitten", "sitting"), 3);
    }

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

    #[test]
    fn leaves_open_anchors_and_whole_groups_only() {
        assert_eq!(leaves("^(Edit|Write)$"), ["Edit", "Write"]);
        assert_eq!(leaves("^x$|(?:a|(?P<n>b)|(?<m>c))"), ["x", "a", "b", "c"]);
        assert_eq!(leaves("(a|b)__x|(a)(b)"), ["(a|b)__x", "(a)(b)"]);
        assert_eq!(leaves("[|(]x|y"), ["[|(]x", "y"]);
        assert_eq!(leaves("[]|]|[^]|]"), ["[]|]", "[^]|]"]);
        assert_eq!(leaves(r"a\|b|c\$"), [r"a\|b", r"c\$"]);
        assert_eq!(leaves("(?i:Bash)"), ["(?i:Bash)"], "flags change what it matches");
        assert_eq!(leaves("(x)+"), ["(x)+"]);
        assert_eq!(leaves(r"(a\)"), [r"(a\)"], "not closed where it ends");
    }

    #[test]
    fn each_leaf_translates_to_what_matches_the_same_tools_here() {
        let mapped = |s: &str| Leaf::Mapped(s.into());
        for (leaf, want) in [
            ("Bash", mapped("shell")),
            ("AskUserQuestion", mapped("ask_user")),
            ("mcp__github__create_issue", mapped("github__create_issue")),
            ("mcp__.*", mapped(ANY_MCP_TOOL)),
            ("mcp__*", mapped(ANY_MCP_TOOL)),
            ("mcp__.+", mapped(ANY_MCP_TOOL)),
            ("mcp__", mapped(ANY_MCP_TOOL)),
            ("mcp__github__.*", mapped("github__.*")),
            ("mcp__.*__(send_email|delete_file)", mapped(".*__(send_email|delete_file)")),
            ("mcp__github.*", mapped("github.*__.+")),
            ("mcp__git_hub.+", mapped("git_hub.*__.+")),
            ("mcp__(a|b)__x", mapped("(a|b)__x")),
            ("shell", Leaf::Kept),
            ("github__.*", Leaf::Kept),
            ("deploy", Leaf::Kept),
            (r"\w+", Leaf::Kept),
            ("(?P<Tool>sh.*)", Leaf::Kept),
            ("Linear__.*", Leaf::Kept),
        ] {
            assert_eq!(translate(leaf), want, "{leaf}");
        }
        for leaf in ["WebFetch", "mcp__github", "mcp__shell", "mcp__github__", "", " "] {
            assert!(matches!(translate(leaf), Leaf::Nothing(_)), "{leaf}");
        }
        for leaf in [
            ".*mcp__.*",
            "(mcp__a|mcp__b)__x",
            "Notebook.*",
            "[A-Z].*",
            "mcp__s.*h",
            "mcp__github_.*",
            "mcp__.*_?_x",
            "mcp__+",
            "mcp__*__x",
            "mcp__(a|b__c)",
            "mcp__(a|b)",
        ] {
            assert!(matches!(translate(leaf), Leaf::Untranslatable(_)), "{leaf}");
        }
    }

    #[test]
    fn an_mcp_translation_matches_mcp_tools_only() {
        for leaf in [
            "mcp__.*",
            "mcp__*",
            "mcp__.+",
            "mcp__",
            "mcp__github.*",
            "mcp__.*__(send_email|delete_file)",
            "mcp__s__.*",
        ] {
            let Leaf::Mapped(here) = translate(leaf) else {
                panic!("{leaf}")
            };
            let m = super::super::matcher::Matcher::new(Some(&here));
            for tool in RADIAN_TOOLS {
                assert!(!m.matches(tool), "{leaf} as {here} matches {tool}");
            }
        }
        let every = super::super::matcher::Matcher::new(Some(ANY_MCP_TOOL));
        assert!(every.matches("github__create_issue"));
        assert!(every.matches("a__b__c"));
        assert!(!every.matches("__x") && !every.matches("x__"));
    }

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
