//! Which Bash runs the hooks, chosen the same way on every run and never by accident of the
//! terminal: the configured `hooks.interpreters.bash`, else the first executable `bash` in the
//! non-empty `PATH` entries, in order. An empty entry is not read as the current directory: a
//! hook's interpreter must not depend on where the command was started.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use super::snippet::Snippet;

/// Why no Bash can run the hooks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unavailable {
    /// The configured Bash is not an executable file.
    Configured(PathBuf),
    /// None of the `PATH` entries holds one (or `PATH` is unset).
    NotOnPath,
}

/// The Bash to run hooks with.
pub fn find_bash(
    configured: Option<&Path>,
    path_var: Option<&OsStr>,
) -> Result<PathBuf, Unavailable> {
    if let Some(c) = configured {
        return if executable(c) {
            Ok(c.to_path_buf())
        } else {
            Err(Unavailable::Configured(c.to_path_buf()))
        };
    }
    let Some(var) = path_var else {
        return Err(Unavailable::NotOnPath);
    };
    std::env::split_paths(var)
        .filter(|d| !d.as_os_str().is_empty() && d.is_absolute())
        .map(|d| d.join("bash"))
        .find(|p| executable(p))
        .ok_or(Unavailable::NotOnPath)
}

/// Why `bash` cannot parse `snippet`, or `None` when it parses. Bash's own message for a
/// syntax error quotes the offending line, and an inline hook's text must never be shown, so
/// the snippet is checked (`bash -n`, which runs nothing) before anything is changed, and only
/// the line number is kept of what Bash says. `extglob` is on for the check, so a snippet that
/// turns it on itself is not refused. A Bash that cannot be started here is left for the run
/// to report.
#[cfg(test)]
pub fn syntax_problem(bash: &Path, snippet: &Snippet) -> Option<String> {
    SyntaxCheck::start(bash, snippet)?.problem()
}

/// A `bash -n` check under way: several run side by side, and beside a plan's git queries, so
/// checking costs a create about one Bash start whatever the number of inline hooks.
#[derive(Debug)]
pub struct SyntaxCheck(Child);

impl SyntaxCheck {
    /// Starts checking `snippet` (`None`: Bash could not be started).
    pub fn start(bash: &Path, snippet: &Snippet) -> Option<SyntaxCheck> {
        Command::new(bash)
            .args(["-O", "extglob", "-n", "-c"])
            .arg(snippet.to_arg())
            .arg("syntax-check")
            .env_clear()
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .ok()
            .map(SyntaxCheck)
    }

    /// Waits for the verdict: why Bash cannot parse the snippet, or `None`.
    pub fn problem(self) -> Option<String> {
        let out = self.0.wait_with_output().ok()?;
        if out.status.success() {
            return None;
        }
        let text = String::from_utf8_lossy(&out.stderr);
        let line = text.split("line ").skip(1).find_map(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse::<u32>().ok()
        });
        Some(match line {
            Some(n) => format!("Bash cannot parse it (a syntax error on line {n})"),
            None => "Bash cannot parse it".into(),
        })
    }
}

fn executable(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

impl Unavailable {
    /// The problem's message.
    pub fn message(&self) -> String {
        match self {
            Unavailable::Configured(p) => format!(
                "no Bash to run the hooks: the configured bash {} (hooks.interpreters.bash) is not an executable file",
                p.display()
            ),
            Unavailable::NotOnPath => {
                "no Bash to run the hooks: no executable bash in the non-empty PATH entries".into()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn fake_bash(dir: &Path, mode: u32) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let p = dir.join("bash");
        std::fs::write(&p, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    }

    #[test]
    fn a_snippet_bash_cannot_parse_is_named_by_line_only() {
        let bash = find_bash(None, std::env::var_os("PATH").as_deref()).unwrap();
        let ok = Snippet::new("set -e\necho fine && [[ -n x ]]".into());
        assert_eq!(syntax_problem(&bash, &ok), None);
        // Turning extglob on in the snippet itself is honoured.
        let ext = Snippet::new("shopt -s extglob\necho @(a|b)".into());
        assert_eq!(syntax_problem(&bash, &ext), None);
        let bad = Snippet::new("true\n: SECRET-TEXT; echo )".into());
        let why = syntax_problem(&bash, &bad).unwrap();
        assert_eq!(why, "Bash cannot parse it (a syntax error on line 2)");
        // Nothing of the snippet was run.
        let t = tempfile::tempdir().unwrap();
        let canary = t.path().join("ran");
        let runs = Snippet::new(format!("touch {}\nif", canary.display()));
        assert!(syntax_problem(&bash, &runs).is_some());
        assert!(!canary.exists());
    }

    #[test]
    fn path_order_empty_entries_and_the_configured_bash() {
        let t = tempfile::tempdir().unwrap();
        let a = t.path().join("a");
        let b = fake_bash(&t.path().join("b"), 0o755);
        let c = fake_bash(&t.path().join("c"), 0o755);
        fake_bash(&a, 0o644); // not executable: skipped
        let path = std::env::join_paths([&a, &t.path().join("b"), &t.path().join("c")]).unwrap();
        assert_eq!(find_bash(None, Some(&path)), Ok(b.clone()));
        // Configured wins over PATH.
        assert_eq!(find_bash(Some(&c), Some(&path)), Ok(c.clone()));
        // A configured bash that is not there is an error, not a fallback.
        let missing = t.path().join("nope/bash");
        assert_eq!(
            find_bash(Some(&missing), Some(&path)),
            Err(Unavailable::Configured(missing))
        );
        // Empty and relative entries are never read (the integration tests start hookq in a
        // directory holding a bash to show an empty entry is not the current directory).
        assert_eq!(
            find_bash(None, Some(OsStr::new("::"))),
            Err(Unavailable::NotOnPath)
        );
        assert_eq!(
            find_bash(None, Some(OsStr::new(""))),
            Err(Unavailable::NotOnPath)
        );
        assert_eq!(find_bash(None, None), Err(Unavailable::NotOnPath));
        assert_eq!(
            find_bash(None, Some(OsStr::new("relative"))),
            Err(Unavailable::NotOnPath)
        );
    }
}
