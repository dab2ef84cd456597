//! Loading the two layers of hooks: the user's TOML config (`[hooks]`) and the project's
//! `.radian/hooks.json`, bare or wrapped. Loading never fails: a file that cannot be read or
//! parsed, and every entry or handler outside what hookq runs, is skipped with one warning that
//! names the file, the event, the entry's and handler's index and why.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::event::Event;
use super::matcher::Matcher;
use super::ordered::Ordered;

/// A handler's timeout when it gives none, or gives 0.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The longest timeout a handler may ask for: a day. Longer is taken for a mistake.
pub const MAX_TIMEOUT_SECS: u64 = 86_400;

/// Handler keys that ask for behaviour outside the command subset (run in the background, run
/// conditionally, call a URL, ask a model): a handler holding one is skipped rather than run
/// without it.
pub(crate) const OUTSIDE_SUBSET: [&str; 5] = ["async", "if", "http", "prompt", "agent"];

/// Where an entry came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    /// `<workspace>/.radian/hooks.json`, loaded only when the workspace is trusted.
    Project,
    /// The `[hooks]` table of the user's config file.
    User,
}

impl Layer {
    /// `project` or `user`.
    pub fn name(self) -> &'static str {
        match self {
            Layer::Project => "project",
            Layer::User => "user",
        }
    }
}

/// One command of an entry.
#[derive(Debug, Clone)]
pub struct Handler {
    /// Its index in the entry's `hooks` list, as written (skipped handlers keep their place).
    pub index: usize,
    /// The shell command line, run as `/bin/sh -c`.
    pub command: String,
    /// SIGTERM to its process group after this long.
    pub timeout: Duration,
}

/// One entry: a matcher and the handlers it runs.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The event it belongs to.
    pub event: Event,
    /// The layer it came from.
    pub layer: Layer,
    /// Its index in the event's list, as written.
    pub index: usize,
    /// Which tools it fires for (Stop ignores it).
    pub matcher: Matcher,
    /// Its handlers, at least one.
    pub handlers: Vec<Handler>,
}

/// What became of one source file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceState {
    /// Read and parsed (its entries may still have been skipped one by one).
    Loaded,
    /// Read and parsed; the project file held the wrapped settings shape (`{"hooks": {…}}`).
    LoadedWrapped,
    /// No such file: no hooks from it.
    Missing,
    /// The project file exists but the workspace is not trusted: not read.
    Untrusted,
    /// Could not be read or parsed: nothing loaded from it (the warnings say why).
    Failed,
    /// No path for it (no `--config`, and neither `XDG_CONFIG_HOME` nor `HOME` is set).
    NoPath,
}

/// One of the two source files.
#[derive(Debug, Clone, Serialize)]
pub struct Source {
    /// Which layer it is.
    pub layer: Layer,
    /// Its path.
    pub path: Option<PathBuf>,
    /// What became of it.
    pub state: SourceState,
}

/// Everything loaded: the entries in run order (project first, then user), the user's
/// `intent_stop` switch, what became of each file, and every warning.
#[derive(Debug, Clone)]
pub(crate) struct Hooks {
    /// Project entries, then user entries, each in file order.
    pub entries: Vec<Entry>,
    /// Whether the built-in intent_stop validator runs on the Stop path.
    pub intent_stop: bool,
    /// The project source, then the user source.
    pub sources: Vec<Source>,
    /// Every warning from loading, in the order met.
    pub warnings: Vec<String>,
}

/// Loads both layers: the project file when `trusted`, and the user config at `user_config`,
/// with whether the user named it (then a missing file warns).
pub(crate) fn load(workspace: &Path, trusted: bool, user_config: Option<(&Path, bool)>) -> Hooks {
    let mut hooks = Hooks {
        entries: Vec::new(),
        intent_stop: true,
        sources: Vec::new(),
        warnings: Vec::new(),
    };
    let project = workspace.join(".radian").join("hooks.json");
    let state = if trusted {
        load_project(&project, &mut hooks)
    } else if project.exists() {
        hooks.warnings.push(format!(
            "{}: not loaded: the workspace is not trusted (pass --trusted, or trusted: true in the library, once you have read it)",
            project.display()
        ));
        SourceState::Untrusted
    } else {
        SourceState::Missing
    };
    hooks.sources.push(Source {
        layer: Layer::Project,
        path: Some(project),
        state,
    });
    let state = match user_config {
        Some((path, named)) => {
            let state = load_user(path, &mut hooks);
            if named && state == SourceState::Missing {
                // A path the user typed that is not there is a typo or a wrong directory far
                // more often than a wish for no hooks.
                hooks.warnings.push(format!(
                    "{}: no such file: the user config named does not exist; no user hooks loaded",
                    path.display()
                ));
            }
            state
        }
        None => SourceState::NoPath,
    };
    hooks.sources.push(Source {
        layer: Layer::User,
        path: user_config.map(|(p, _)| p.to_path_buf()),
        state,
    });
    hooks
}

/// Reads a source file; `None` when it is missing or (with a warning) unreadable.
fn read(path: &Path, warnings: &mut Vec<String>) -> Result<String, SourceState> {
    match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes).map_err(|_| {
            warnings.push(format!(
                "{}: cannot read: not UTF-8 text; no hooks loaded from it",
                path.display()
            ));
            SourceState::Failed
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(SourceState::Missing),
        Err(e) => {
            warnings.push(format!(
                "{}: cannot read: {e}; no hooks loaded from it",
                path.display()
            ));
            Err(SourceState::Failed)
        }
    }
}

fn load_project(path: &Path, hooks: &mut Hooks) -> SourceState {
    let text = match read(path, &mut hooks.warnings) {
        Ok(t) => t,
        Err(state) => return state,
    };
    let top = match super::ordered::parse(&text) {
        Ok(top @ Ordered::Object(_)) => top,
        Ok(Ordered::Other(other)) => {
            hooks.warnings.push(format!(
                "{}: cannot parse: the top level is {}, not an object; no hooks loaded from it",
                path.display(),
                kind(&other)
            ));
            return SourceState::Failed;
        }
        Err(e) => {
            hooks.warnings.push(format!(
                "{}: cannot parse: {e}; no hooks loaded from it",
                path.display()
            ));
            return SourceState::Failed;
        }
    };
    let mut reader = Reader {
        path,
        layer: Layer::Project,
        hooks,
    };
    match top.get("hooks") {
        Some(wrapped @ Ordered::Object(_)) => {
            let bare: Vec<&str> = top
                .keys()
                .filter(|k| k.parse::<Event>().is_ok())
                .collect();
            if !bare.is_empty() {
                reader.warn(format!(
                    "holds both the wrapped \"hooks\" object and top-level events ({}); the wrapped object wins and the top-level events are ignored",
                    bare.join(", ")
                ));
            }
            reader.events(wrapped.members().unwrap_or_default(), false);
            SourceState::LoadedWrapped
        }
        Some(other) => {
            reader.warn(format!(
                "\"hooks\" is {}, not an object; no hooks loaded from it",
                kind(&other.to_value())
            ));
            SourceState::Failed
        }
        None => {
            reader.events(top.members().unwrap_or_default(), false);
            SourceState::Loaded
        }
    }
}

fn load_user(path: &Path, hooks: &mut Hooks) -> SourceState {
    let text = match read(path, &mut hooks.warnings) {
        Ok(t) => t,
        Err(state) => return state,
    };
    let table = match toml::from_str::<toml::Table>(&text) {
        Ok(t) => t,
        Err(e) => {
            hooks.warnings.push(format!(
                "{}: cannot parse: {}; no hooks loaded from it",
                path.display(),
                e.to_string().trim_end().replace('\n', " | ")
            ));
            return SourceState::Failed;
        }
    };
    let Some(section) = table.get("hooks") else {
        return SourceState::Loaded;
    };
    // The same reader serves both files: TOML's values map onto JSON's one to one (a date, which
    // no hook key takes, becomes a string).
    let section = match serde_json::to_value(section) {
        Ok(Value::Object(map)) => map,
        Ok(other) => {
            hooks.warnings.push(format!(
                "{}: [hooks] is {}, not a table; no hooks loaded from it",
                path.display(),
                kind(&other)
            ));
            return SourceState::Failed;
        }
        Err(e) => {
            hooks.warnings.push(format!(
                "{}: cannot read [hooks]: {e}; no hooks loaded from it",
                path.display()
            ));
            return SourceState::Failed;
        }
    };
    let mut reader = Reader {
        path,
        layer: Layer::User,
        hooks,
    };
    reader.events(section.into_iter().collect(), true);
    SourceState::Loaded
}

/// Reads the events object of one file into `hooks`.
struct Reader<'a> {
    path: &'a Path,
    layer: Layer,
    hooks: &'a mut Hooks,
}

impl Reader<'_> {
    fn warn(&mut self, why: String) {
        self.hooks
            .warnings
            .push(format!("{}: {why}", self.path.display()));
    }

    /// Reads `events` (an events object's members, in the file's order).
    fn events(&mut self, events: Vec<(String, Value)>, user: bool) {
        for (name, value) in &events {
            if name == "intent_stop" {
                match (user, value) {
                    (true, Value::Bool(on)) => self.hooks.intent_stop = *on,
                    (true, other) => self.warn(format!(
                        "intent_stop is {}, not true or false; it stays on",
                        kind(other)
                    )),
                    (false, _) => self.warn(
                        "intent_stop is set by the user config only; the project file's is ignored"
                            .into(),
                    ),
                }
                continue;
            }
            let Ok(event) = name.parse::<Event>() else {
                self.warn(format!(
                    "event {name:?} is not PreToolUse, PostToolUse or Stop (names are case-sensitive); skipped"
                ));
                continue;
            };
            let Value::Array(entries) = value else {
                self.warn(format!(
                    "{event}: is {}, not a list of entries; skipped",
                    kind(value)
                ));
                continue;
            };
            for (index, entry) in entries.iter().enumerate() {
                if let Some(entry) = self.entry(event, index, entry) {
                    self.hooks.entries.push(entry);
                }
            }
        }
    }

    fn entry(&mut self, event: Event, index: usize, value: &Value) -> Option<Entry> {
        let at = format!("{event} entry {index}");
        let Value::Object(entry) = value else {
            self.warn(format!("{at}: is {}, not an object; skipped", kind(value)));
            return None;
        };
        let matcher = match entry.get("matcher") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.as_str()),
            Some(other) => {
                self.warn(format!(
                    "{at}: skipped: the matcher is {}, not a string",
                    kind(other)
                ));
                return None;
            }
        };
        let list = match entry.get("hooks") {
            Some(Value::Array(list)) if !list.is_empty() => list,
            Some(Value::Array(_)) => {
                self.warn(format!("{at}: skipped: its hooks list is empty"));
                return None;
            }
            None => {
                self.warn(format!("{at}: skipped: it has no hooks list"));
                return None;
            }
            Some(other) => {
                self.warn(format!(
                    "{at}: skipped: hooks is {}, not a list",
                    kind(other)
                ));
                return None;
            }
        };
        for key in entry.keys() {
            if key != "matcher" && key != "hooks" {
                self.warn(format!("{at}: unknown key {key:?} ignored"));
            }
        }
        let matcher = Matcher::new(matcher);
        if let Some(error) = matcher.error() {
            // Stop runs every entry whatever its matcher, so there the pattern costs nothing.
            let effect = if event == Event::Stop {
                "Stop ignores matchers, so the entry still runs"
            } else {
                "the entry matches no tool"
            };
            self.warn(format!(
                "{at}: the matcher {:?} does not compile ({error}); {effect}",
                matcher.source().unwrap_or_default()
            ));
        } else if event != Event::Stop
            && let Matcher::Pattern { source, .. } = &matcher
            && let Some(why) = super::claude::unknown_tool_names(source)
        {
            // The first reason a hook never fires: a tool name from another agent or a typo.
            self.warn(format!("{at}: {why}"));
        }
        if event != Event::Stop
            && let Matcher::Pattern { source, .. } = &matcher
            && let Some(why) = super::claude::untranslatable_patterns(source)
        {
            self.warn(format!("{at}: {why}"));
        }
        let handlers: Vec<Handler> = list
            .iter()
            .enumerate()
            .filter_map(|(i, h)| self.handler(&at, i, h))
            .collect();
        if handlers.is_empty() {
            // Each handler already said why it was skipped: one warning per problem.
            return None;
        }
        Some(Entry {
            event,
            layer: self.layer,
            index,
            matcher,
            handlers,
        })
    }

    fn handler(&mut self, at: &str, index: usize, value: &Value) -> Option<Handler> {
        let at = format!("{at} handler {index}");
        let Value::Object(handler) = value else {
            self.warn(format!(
                "{at}: skipped: it is {}, not an object",
                kind(value)
            ));
            return None;
        };
        match handler.get("type") {
            Some(Value::String(t)) if t == "command" => {}
            Some(Value::String(t)) => {
                self.warn(format!(
                    "{at}: skipped: its type is {t:?}; only \"command\" runs"
                ));
                return None;
            }
            None => {
                self.warn(format!(
                    "{at}: skipped: it has no type; only type \"command\" runs"
                ));
                return None;
            }
            Some(other) => {
                self.warn(format!(
                    "{at}: skipped: its type is {}; only \"command\" runs",
                    kind(other)
                ));
                return None;
            }
        }
        let outside: Vec<&str> = OUTSIDE_SUBSET
            .into_iter()
            .filter(|k| handler.contains_key(*k))
            .collect();
        if !outside.is_empty() {
            self.warn(format!(
                "{at}: skipped: {} outside the command subset (type, command, timeout)",
                outside
                    .iter()
                    .map(|k| format!("{k:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
                    + if outside.len() == 1 { " is" } else { " are" }
            ));
            return None;
        }
        let command = match handler.get("command") {
            Some(Value::String(c)) if !c.trim().is_empty() => c.clone(),
            Some(Value::String(_)) => {
                self.warn(format!("{at}: skipped: its command is empty"));
                return None;
            }
            None => {
                self.warn(format!("{at}: skipped: it has no command"));
                return None;
            }
            Some(other) => {
                self.warn(format!(
                    "{at}: skipped: its command is {}, not a string",
                    kind(other)
                ));
                return None;
            }
        };
        if command.contains('\0') {
            self.warn(format!("{at}: skipped: its command holds a NUL byte"));
            return None;
        }
        let timeout = match timeout(handler.get("timeout")) {
            Ok(t) => t,
            Err(why) => {
                self.warn(format!("{at}: skipped: bad timeout: {why}"));
                return None;
            }
        };
        for key in handler.keys() {
            if !["type", "command", "timeout"].contains(&key.as_str()) {
                self.warn(format!("{at}: unknown key {key:?} ignored"));
            }
        }
        Some(Handler {
            index,
            command,
            timeout,
        })
    }
}

/// A handler's timeout: whole seconds from 0 to a day, 0 or none meaning the default.
pub(crate) fn timeout(value: Option<&Value>) -> Result<Duration, String> {
    let Some(value) = value else {
        return Ok(DEFAULT_TIMEOUT);
    };
    let Value::Number(n) = value else {
        return Err(format!("{} is not a number of seconds", kind(value)));
    };
    let secs = if let Some(secs) = n.as_u64() {
        secs
    } else if n.as_i64().is_some() {
        return Err(format!("{n} is negative"));
    } else {
        let f = n.as_f64().unwrap_or(f64::NAN);
        if f < 0.0 {
            return Err(format!("{n} is negative"));
        }
        // A whole number written with a point (`10.0`) is the same number of seconds.
        if f.fract() != 0.0 || !f.is_finite() {
            return Err(format!("{n} is not a whole number of seconds"));
        }
        if f > MAX_TIMEOUT_SECS as f64 {
            return Err(format!("{n} is more than a day ({MAX_TIMEOUT_SECS} s)"));
        }
        f as u64
    };
    match secs {
        0 => Ok(DEFAULT_TIMEOUT),
        s if s > MAX_TIMEOUT_SECS => Err(format!("{s} is more than a day ({MAX_TIMEOUT_SECS} s)")),
        s => Ok(Duration::from_secs(s)),
    }
}

/// What kind of JSON value this is, for messages.
pub(crate) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(json: &str) -> Hooks {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".radian")).unwrap();
        std::fs::write(dir.path().join(".radian/hooks.json"), json).unwrap();
        load(dir.path(), true, None)
    }

    fn user(toml: &str) -> Hooks {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("config.toml");
        std::fs::write(&cfg, toml).unwrap();
        load(dir.path(), false, Some((&cfg, true)))
    }

    fn commands(h: &Hooks) -> Vec<(Event, Layer, usize, usize, String)> {
        h.entries
            .iter()
            .flat_map(|e| {
                e.handlers
                    .iter()
                    .map(|x| (e.event, e.layer, e.index, x.index, x.command.clone()))
            })
            .collect()
    }

    #[test]
    fn timeouts() {
        use serde_json::json;
        let t = |v: Value| timeout(Some(&v));
        assert_eq!(timeout(None), Ok(DEFAULT_TIMEOUT));
        assert_eq!(t(json!(0)), Ok(DEFAULT_TIMEOUT));
        assert_eq!(t(json!(7)), Ok(Duration::from_secs(7)));
        assert_eq!(t(json!(7.0)), Ok(Duration::from_secs(7)));
        assert!(t(json!(-1)).unwrap_err().contains("negative"));
        assert!(t(json!(-1.5)).unwrap_err().contains("negative"));
        assert!(t(json!(1.5)).unwrap_err().contains("whole"));
        assert!(t(json!("10")).unwrap_err().contains("a string"));
        assert!(t(json!(null)).is_err());
        assert!(t(json!(86_401)).unwrap_err().contains("day"));
        assert!(t(json!(1e300)).unwrap_err().contains("day"));
    }

    #[test]
    fn every_skip_rule_warns_once_and_keeps_the_rest() {
        let h = project(
            r#"{"PreToolUse": [
                {"matcher": "shell", "hooks": [
                    {"type": "command", "command": "good 0"},
                    {"type": "http", "command": "x"},
                    {"command": "no type"},
                    {"type": "command", "command": "x", "async": true},
                    {"type": "command", "command": "x", "if": "y", "prompt": "z"},
                    {"type": "command"},
                    {"type": "command", "command": "  "},
                    {"type": "command", "command": 3},
                    {"type": "command", "command": "x", "timeout": -1},
                    {"type": "command", "command": "x", "timeout": 2.5},
                    {"type": "command", "command": "x", "timeout": "10"},
                    {"type": "command", "command": "good 11", "timeout": 0}
                ]},
                {"matcher": 7, "hooks": [{"type": "command", "command": "x"}]},
                {"matcher": "x"},
                {"matcher": "x", "hooks": []},
                "not an entry",
                {"hooks": [{"type": "agent", "command": "x"}]}
            ],
            "pretooluse": [],
            "Stop": {"hooks": []}}"#,
        );
        assert_eq!(
            commands(&h),
            [
                (Event::PreToolUse, Layer::Project, 0, 0, "good 0".into()),
                (Event::PreToolUse, Layer::Project, 0, 11, "good 11".into()),
            ]
        );
        assert_eq!(h.entries[0].handlers[1].timeout, DEFAULT_TIMEOUT);
        let w = &h.warnings;
        let expect = [
            "PreToolUse entry 0 handler 1: skipped: its type is \"http\"",
            "PreToolUse entry 0 handler 2: skipped: it has no type",
            "PreToolUse entry 0 handler 3: skipped: \"async\" is outside",
            "PreToolUse entry 0 handler 4: skipped: \"if\", \"prompt\" are outside",
            "PreToolUse entry 0 handler 5: skipped: it has no command",
            "PreToolUse entry 0 handler 6: skipped: its command is empty",
            "PreToolUse entry 0 handler 7: skipped: its command is a number",
            "PreToolUse entry 0 handler 8: skipped: bad timeout: -1 is negative",
            "PreToolUse entry 0 handler 9: skipped: bad timeout: 2.5 is not a whole",
            "PreToolUse entry 0 handler 10: skipped: bad timeout: a string",
            "PreToolUse entry 1: skipped: the matcher is a number",
            "PreToolUse entry 2: skipped: it has no hooks list",
            "PreToolUse entry 3: skipped: its hooks list is empty",
            "PreToolUse entry 4: is a string, not an object",
            "PreToolUse entry 5 handler 0: skipped: its type is \"agent\"",
            // The file's order of events, not the alphabet's.
            "event \"pretooluse\" is not PreToolUse",
            "Stop: is an object, not a list",
        ];
        assert_eq!(w.len(), expect.len(), "{w:#?}");
        for (got, want) in w.iter().zip(expect) {
            assert!(got.contains(want), "{got:?} lacks {want:?}");
            assert!(got.contains("hooks.json: "), "names the file: {got}");
        }
    }

    #[test]
    fn a_matcher_that_does_not_compile_warns_by_what_it_does() {
        let h = project(
            r#"{"PreToolUse": [{"matcher": "shell(", "hooks": [{"type": "command", "command": "a"}]}],
                "Stop": [{"matcher": "shell(", "hooks": [{"type": "command", "command": "b"}]}]}"#,
        );
        assert_eq!(h.entries.len(), 2);
        assert_eq!(h.warnings.len(), 2, "{:?}", h.warnings);
        assert!(
            h.warnings[0].contains("PreToolUse entry 0: the matcher \"shell(\" does not compile")
        );
        assert!(h.warnings[0].ends_with("; the entry matches no tool"));
        assert!(h.warnings[1].contains("Stop entry 0: the matcher \"shell(\" does not compile"));
        assert!(h.warnings[1].ends_with("; Stop ignores matchers, so the entry still runs"));
    }

    #[test]
    fn wrapped_beats_bare() {
        let h = project(
            r#"{"PreToolUse": [{"hooks": [{"type": "command", "command": "bare"}]}],
                "permissions": {"allow": []},
                "hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "wrapped"}]}]}}"#,
        );
        assert_eq!(commands(&h)[0].4, "wrapped");
        assert_eq!(h.entries.len(), 1);
        assert_eq!(h.sources[0].state, SourceState::LoadedWrapped);
        assert_eq!(h.warnings.len(), 1, "{:?}", h.warnings);
        assert!(h.warnings[0].contains("the wrapped object wins"));
        let only_wrapped = project(
            r#"{"permissions": {}, "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "w"}]}]}}"#,
        );
        assert!(
            only_wrapped.warnings.is_empty(),
            "{:?}",
            only_wrapped.warnings
        );
        assert_eq!(only_wrapped.entries[0].event, Event::Stop);
    }

    #[test]
    fn unparsable_and_missing_files() {
        for bad in ["{", "[1]", "\"x\"", "{\"hooks\": 3}"] {
            let h = project(bad);
            assert!(h.entries.is_empty());
            assert_eq!(h.warnings.len(), 1, "{bad}: {:?}", h.warnings);
            assert_eq!(h.sources[0].state, SourceState::Failed);
        }
        let dir = tempfile::tempdir().unwrap();
        let none = dir.path().join("none.toml");
        let h = load(dir.path(), true, Some((&none, false)));
        assert!(h.entries.is_empty() && h.warnings.is_empty());
        assert_eq!(h.sources[0].state, SourceState::Missing);
        assert_eq!(h.sources[1].state, SourceState::Missing);
        assert!(h.intent_stop);
        // The same file, named by the user: the state is the same, and one warning says so.
        let h = load(dir.path(), true, Some((&none, true)));
        assert_eq!(h.sources[1].state, SourceState::Missing);
        assert_eq!(h.warnings.len(), 1, "{:?}", h.warnings);
        assert!(
            h.warnings[0].contains("none.toml: no such file"),
            "{:?}",
            h.warnings
        );
        let h = user("[hooks\n");
        assert_eq!(h.warnings.len(), 1);
        assert!(h.warnings[0].contains("cannot parse"), "{:?}", h.warnings);
        assert!(!h.warnings[0].contains('\n'));
    }

    #[test]
    fn the_user_layer_reads_the_documented_shape_and_ignores_other_tables() {
        let h = user(
            r#"
model = "x"
[ui]
theme = "dark"

[hooks]
intent_stop = false

[[hooks.PreToolUse]]
matcher = "shell|write"
[[hooks.PreToolUse.hooks]]
type = "command"
command = "echo one"
timeout = 10
[[hooks.PreToolUse.hooks]]
type = "command"
command = "echo two"

[[hooks.Stop]]
[[hooks.Stop.hooks]]
type = "command"
command = "notify"
timeout = 30
"#,
        );
        assert!(h.warnings.is_empty(), "{:?}", h.warnings);
        assert!(!h.intent_stop);
        assert_eq!(
            commands(&h),
            [
                (Event::PreToolUse, Layer::User, 0, 0, "echo one".into()),
                (Event::PreToolUse, Layer::User, 0, 1, "echo two".into()),
                (Event::Stop, Layer::User, 0, 0, "notify".into()),
            ]
        );
        assert_eq!(h.entries[0].handlers[0].timeout, Duration::from_secs(10));
        let odd = user("[hooks]\nintent_stop = \"no\"\n");
        assert!(odd.intent_stop);
        assert!(odd.warnings[0].contains("intent_stop is a string"));
    }

    #[test]
    fn an_untrusted_project_file_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".radian")).unwrap();
        std::fs::write(
            dir.path().join(".radian/hooks.json"),
            r#"{"Stop": [{"hooks": [{"type": "command", "command": "x"}]}]}"#,
        )
        .unwrap();
        let h = load(dir.path(), false, None);
        assert!(h.entries.is_empty());
        assert_eq!(h.sources[0].state, SourceState::Untrusted);
        assert!(h.warnings[0].contains("not trusted"));
    }
}
