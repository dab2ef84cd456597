//! Claude Code's tool matchers read here: the names and patterns a matcher is made of, which of
//! them no tool here has, and what each translates to so that it matches the same tools
//! ([`translate`]), never more.

use crate::agent::matcher::RADIAN_TOOLS;

use super::names::TOOLS;

/// Claude Code's prefix of an MCP tool's name: its `mcp__server__tool` is `server__tool` here.
const MCP_PREFIX: &str = "mcp__";

/// Every MCP tool here, and no other: Radian's own tool names hold no `__`.
const ANY_MCP_TOOL: &str = ".+__.+";

/// What follows `mcp__` in a Claude Code matcher that means every MCP tool. `*` is written as a
/// wildcard (`mcp__*`); the bare prefix is what the matcher's author meant by it too.
const EVERY_MCP_TOOL: [&str; 6] = ["", "*", ".*", ".+", ".*?", ".+?"];

/// Whether a matcher alternative is a plain name: no character a regular expression treats
/// specially, so it matches exactly that tool name.
pub(super) fn plain(alternative: &str) -> bool {
    !alternative.is_empty()
        && alternative
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// An MCP tool's name as the host gives it: `server__tool`, Claude Code's `mcp__` prefix aside.
pub(super) fn mcp_name(name: &str) -> bool {
    !name.starts_with(MCP_PREFIX)
        && name
            .split_once("__")
            .is_some_and(|(server, tool)| !server.is_empty() && !tool.is_empty())
}

/// What a plain name that no tool here has is, for a message: Claude Code's name of a tool,
/// Claude Code's name of an MCP tool, or close to a Radian tool's name.
pub(super) fn what_name_is(name: &str) -> String {
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
pub(super) fn leaves(matcher: &str) -> Vec<&str> {
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
pub(super) enum Leaf {
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
pub(super) fn translate(leaf: &str) -> Leaf {
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

#[cfg(test)]
mod tests {
    use super::*;

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
            let m = crate::agent::matcher::Matcher::new(Some(&here));
            for tool in RADIAN_TOOLS {
                assert!(!m.matches(tool), "{leaf} as {here} matches {tool}");
            }
        }
        let every = crate::agent::matcher::Matcher::new(Some(ANY_MCP_TOOL));
        assert!(every.matches("github__create_issue"));
        assert!(every.matches("a__b__c"));
        assert!(!every.matches("__x") && !every.matches("x__"));
    }
}
