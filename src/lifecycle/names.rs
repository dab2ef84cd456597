//! Names that become path components and environment values: repository names
//! (`worktrees/<name>/…`, `pre-create.<name>.sh`, `~/.arashi/hooks/<name>/`) and branch names
//! (`worktrees/<repo>/<branch>`). Both are checked before anything is run or written.

use std::path::{Component, Path, PathBuf};

/// Why a repository name is refused, or `None` when it is fine: `[A-Za-z0-9][A-Za-z0-9._-]*`,
/// at most 128 characters. A `/` would let a name reach outside `worktrees/`, and a name that
/// is a hook file's suffix must be a single component.
pub fn repo_name_problem(name: &str) -> Option<&'static str> {
    let mut chars = name.chars();
    match chars.next() {
        None => return Some("is empty"),
        Some(c) if !c.is_ascii_alphanumeric() => return Some("must start with a letter or digit"),
        _ => {}
    }
    if name.len() > 128 {
        return Some("is longer than 128 characters");
    }
    if !chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')) {
        return Some("may hold only letters, digits, '.', '_' and '-'");
    }
    None
}

/// Why a branch name is refused, or `None`: git's rules for a branch name (not `HEAD`, no `..`,
/// no component starting with `.` or ending in `.lock`, no control characters, space,
/// `~^:?*[\`, no `@{`, not `@`, no empty component, no trailing `.`), and not starting with
/// `-`, since the name also becomes the worktree's path below `worktrees/<repo>/`. The plan
/// also asks git itself (`git check-ref-format --branch`), so a rule this list misses is still
/// caught before any change.
pub fn branch_name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("is empty");
    }
    if name.starts_with('-') {
        return Some("must not start with '-'");
    }
    if name == "HEAD" {
        return Some("must not be 'HEAD'");
    }
    if name == "@" || name.contains("@{") {
        return Some("must not be '@' or contain '@{'");
    }
    if name.contains("..") {
        return Some("must not contain '..'");
    }
    if name
        .chars()
        .any(|c| c.is_control() || c == ' ' || "~^:?*[\\".contains(c))
    {
        return Some("must not contain spaces, control characters or any of ~^:?*[\\");
    }
    if name.ends_with('.') || name.ends_with('/') || name.starts_with('/') {
        return Some("must not start with '/' or end with '/' or '.'");
    }
    for part in name.split('/') {
        if part.is_empty() {
            return Some("must not contain '//'");
        }
        if part.starts_with('.') {
            return Some("has a component starting with '.'");
        }
        if part.ends_with(".lock") {
            return Some("has a component ending in '.lock'");
        }
    }
    None
}

/// `path` with `.` dropped and `..` folded into its parent, without looking at the file system
/// (the worktree paths hooks are given are lexically normalized, never resolved through links).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                // `/..` is `/`.
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => out.push(".."),
            },
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repository_names() {
        for ok in ["web", "api-2", "a.b_c", "X"] {
            assert_eq!(repo_name_problem(ok), None, "{ok}");
        }
        for bad in ["", ".x", "-x", "a/b", "..", "a b", "é", &"a".repeat(129)] {
            assert!(repo_name_problem(bad).is_some(), "{bad:?}");
        }
    }

    #[test]
    fn branch_names() {
        for ok in ["main", "feature/auth", "fix-1.2", "a/b/c", "x@y"] {
            assert_eq!(branch_name_problem(ok), None, "{ok}");
        }
        for bad in [
            "",
            "HEAD",
            "-x",
            "@",
            "a@{1}",
            "a..b",
            "a b",
            "a~1",
            "a^",
            "a:b",
            "a?",
            "a*",
            "a[",
            "a\\b",
            "a.",
            "a/",
            "/a",
            "a//b",
            ".a",
            "a/.b",
            "a.lock",
            "a/b.lock/c",
            "a\nb",
            "a\u{7f}",
        ] {
            assert!(branch_name_problem(bad).is_some(), "{bad:?}");
        }
    }

    #[test]
    fn lexical_normalization() {
        assert_eq!(normalize(Path::new("/a/./b/../c")), Path::new("/a/c"));
        assert_eq!(normalize(Path::new("/a/b/../../..")), Path::new("/"));
        assert_eq!(normalize(Path::new("a/../../b")), Path::new("../b"));
    }
}
