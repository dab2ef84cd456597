//! Which tool calls an entry fires for: `*`, blank or missing for every tool, otherwise a
//! regular expression that must match the whole tool name, case-sensitively.

use regex::Regex;

/// Radian's tool names (MCP tools come as `server__tool` besides). hookq matches any string;
/// these are what a matcher is checked against for names that never fire.
pub const RADIAN_TOOLS: [&str; 11] = [
    "shell",
    "write",
    "patch",
    "read",
    "grep",
    "glob",
    "job",
    "memory_search",
    "ask_user",
    "skill",
    "subagent",
];

/// An entry's matcher, compiled once at load.
#[derive(Debug, Clone)]
pub enum Matcher {
    /// `*`, a blank string or no matcher: every tool.
    Any {
        /// The text as written (`None` when the entry had no matcher).
        source: Option<String>,
    },
    /// A pattern anchored to the whole tool name.
    Pattern {
        /// The text as written.
        source: String,
        /// `^(?:source)$`.
        regex: Regex,
    },
    /// A pattern that does not compile: it matches nothing.
    Invalid {
        /// The text as written.
        source: String,
        /// Why it does not compile (the regex crate's message, on one line).
        error: String,
    },
}

impl Matcher {
    /// Compiles a matcher as written in a hook file.
    pub fn new(source: Option<&str>) -> Matcher {
        let Some(text) = source else {
            return Matcher::Any { source: None };
        };
        if text == "*" || text.trim().is_empty() {
            return Matcher::Any {
                source: Some(text.to_owned()),
            };
        }
        // The pattern is checked on its own first: only a pattern that is whole by itself can be
        // wrapped without its text escaping the anchors (`a)|(b` would otherwise become
        // `^(?:a)|(b)$`, which matches any name starting with `a`).
        let compiled = Regex::new(text).and_then(|_| Regex::new(&format!("^(?:{text})$")));
        match compiled {
            Ok(regex) => Matcher::Pattern {
                source: text.to_owned(),
                regex,
            },
            Err(e) => Matcher::Invalid {
                source: text.to_owned(),
                error: one_line(&e.to_string()),
            },
        }
    }

    /// Whether it matches every tool (no matcher, `*` or a blank one).
    pub fn is_any(&self) -> bool {
        matches!(self, Matcher::Any { .. })
    }

    /// Whether a call of tool `tool` fires the entry.
    pub fn matches(&self, tool: &str) -> bool {
        match self {
            Matcher::Any { .. } => true,
            Matcher::Pattern { regex, .. } => regex.is_match(tool),
            Matcher::Invalid { .. } => false,
        }
    }

    /// The matcher as written, if the entry had one.
    pub fn source(&self) -> Option<&str> {
        match self {
            Matcher::Any { source } => source.as_deref(),
            Matcher::Pattern { source, .. } | Matcher::Invalid { source, .. } => Some(source),
        }
    }

    /// Why the pattern does not compile, if it does not.
    pub fn error(&self) -> Option<&str> {
        match self {
            Matcher::Invalid { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// The regex crate's multi-line message (pattern, caret, error) as one line.
fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.chars().all(|c| c == '^' || c == '~'))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(s: &str) -> Matcher {
        Matcher::new(Some(s))
    }

    #[test]
    fn star_blank_and_missing_match_every_tool() {
        for matcher in [m("*"), m(""), m("   "), Matcher::new(None)] {
            for tool in ["shell", "write", "github__create_issue", ""] {
                assert!(matcher.matches(tool), "{matcher:?} {tool}");
            }
        }
    }

    #[test]
    fn patterns_are_anchored_and_case_sensitive() {
        assert!(m("shell|write").matches("shell"));
        assert!(m("shell|write").matches("write"));
        assert!(!m("shell|write").matches("shellx"));
        assert!(!m("sh").matches("shell"));
        assert!(!m("hell").matches("shell"));
        assert!(!m("Shell").matches("shell"));
        assert!(m("github__.*").matches("github__create_issue"));
        assert!(!m("github__.*").matches("gitlab__x"));
        assert!(m("mem.*_search").matches("memory_search"));
    }

    #[test]
    fn a_pattern_cannot_escape_its_anchors() {
        // Invalid on its own, so it never becomes `^(?:a)|(b)$`.
        let escaped = m("a)|(b");
        assert!(escaped.error().is_some());
        assert!(!escaped.matches("abc"));
        assert!(!escaped.matches("b"));
    }

    #[test]
    fn a_pattern_that_does_not_compile_matches_nothing() {
        let bad = m("shell(");
        assert!(!bad.matches("shell"));
        assert!(!bad.matches("shell("));
        let why = bad.error().unwrap();
        assert!(!why.contains('\n'), "{why}");
        assert!(why.contains("unclosed"), "{why}");
        assert_eq!(bad.source(), Some("shell("));
    }
}
