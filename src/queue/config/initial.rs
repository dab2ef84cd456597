//! The `config.toml` that `hookq init` writes.

/// `s` as a TOML basic string: quoted, with `"`, `\` and control characters escaped.
pub fn toml_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The config `hookq init` writes, naming `remote` and `main_branch`. `remote` also goes into
/// the default `after_merge` lines as it is, so it must be a plain name
/// (`[A-Za-z0-9][A-Za-z0-9._-]*`, which `hookq init` checks).
pub fn initial_config(remote: &str, main_branch: &str) -> String {
    debug_assert!(
        remote
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')),
        "remote {remote:?} is not a plain name"
    );
    let (main_branch, remote_toml) = (toml_quote(main_branch), toml_quote(remote));
    format!(
        r#"# hookq / arc configuration: every key is described in hookq's docs/queue.md.

[repository]
main_branch = {main_branch}
remote = {remote_toml}

[integration]
# target_branch = "release"

[gate]
command_timeout_secs = 600
kill_grace_secs = 5
# max_log_bytes = 67108864

[queue]
max_interrupted_runs = 5
keep_history_days = 30
# max_log_file_bytes = 16777216

[hooks]
# Each line runs as `/bin/sh -c <line>` in the repository root, with ARC_TASK, ARC_BRANCH,
# ARC_WORKTREE and the other ARC_* variables set. Every line must be safe to run twice, and
# exits 0 when there is nothing left to do: a remote that is not configured, a branch or a
# worktree already gone. A push refused or a remote that cannot be reached still fails.
after_merge = [
  'git remote get-url {remote} >/dev/null 2>&1; rc=$?; if [ $rc -eq 2 ]; then echo "no remote {remote}: no remote branch to delete"; exit 0; elif [ $rc -ne 0 ]; then git remote get-url {remote} >/dev/null; exit; fi; git ls-remote --exit-code {remote} "refs/heads/$ARC_BRANCH" >/dev/null; rc=$?; if [ $rc -eq 0 ]; then git push --quiet {remote} --delete "$ARC_BRANCH"; elif [ $rc -ne 2 ]; then exit $rc; fi',
  'git worktree remove --force "$ARC_WORKTREE" 2>/dev/null; git worktree prune; [ ! -e "$ARC_WORKTREE" ]',
  'if git show-ref --verify --quiet "refs/heads/$ARC_BRANCH"; then git branch -D --quiet "$ARC_BRANCH"; fi',
]
after_fail = []
after_rework = []
after_awaiting_human = []
after_proposed = []
"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::config::Config;
    use crate::queue::phase::Point;
    use std::path::Path;

    fn parse(s: &str) -> Config {
        Config::parse(Path::new("/ws/config.toml"), s.as_bytes()).unwrap()
    }

    #[test]
    fn toml_quote_round_trips_through_the_parser() {
        for s in [
            "plain",
            "say \"hi\"",
            "back\\slash",
            "two\nlines\tand tab\r",
            "nul \0 bell \u{7} del \u{7f} c1 \u{85}",
            "ünïcødé ☃ 𝄞",
            "",
        ] {
            let text = format!("[repository]\nmain_branch = {}\n", toml_quote(s));
            let table: toml::Table =
                toml::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(
                table["repository"]["main_branch"].as_str(),
                Some(s),
                "{text}"
            );
        }
    }

    #[test]
    fn initial_config_is_valid() {
        let c = parse(&initial_config("up", "trunk"));
        assert_eq!(c.hooks(Point::AfterMerge).len(), 3);
        assert!(c.hooks(Point::AfterMerge)[0].contains("git push --quiet up --delete"));
        assert!(c.hooks(Point::AfterMerge)[0].contains("ls-remote --exit-code up "));
        assert_eq!(c.repository.main_branch, "trunk");
    }
}
