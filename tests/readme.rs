//! README.md stays true to the code: the quick start, the code fences (only the embedding example
//! is Rust, and it runs as a doctest), every subcommand and flag, every example command line,
//! every config key, every `ARC_*` variable and stripped git variable, and the exit codes.

use std::collections::BTreeSet;

use clap::{CommandFactory, Parser};
use hookq::cli::Cli;

const README: &str = include_str!("../README.md");

/// Code fences: (info string, body).
fn fences() -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let mut lines = README.lines();
    while let Some(line) = lines.next() {
        let Some(info) = line.trim_start().strip_prefix("```") else {
            continue;
        };
        let indent = line.len() - line.trim_start().len();
        assert_eq!(indent, 0, "indented code fence: {line:?}");
        let mut body = String::new();
        for l in lines.by_ref() {
            if l.trim_start().starts_with("```") {
                break;
            }
            body.push_str(l);
            body.push('\n');
        }
        out.push((info.trim(), body));
    }
    out
}

/// The text of the section under `## title`, up to the next `## `.
fn section(title: &str) -> &'static str {
    let head = format!("\n## {title}\n");
    let start = README
        .find(&head)
        .unwrap_or_else(|| panic!("README.md has no section {title:?}"))
        + head.len();
    let len = README[start..]
        .find("\n## ")
        .unwrap_or(README.len() - start);
    &README[start..start + len]
}

#[test]
fn quick_start_is_the_two_commands() {
    let quick = section("Quick start");
    let block = quick
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("the quick start has a ```sh block");
    assert_eq!(
        block,
        "cargo run --release --example quickstart\ncargo test --locked\n"
    );
}

#[test]
fn only_the_embedding_example_is_rust() {
    let fences = fences();
    let allowed = ["rust", "sh", "toml", "text"];
    for (info, body) in &fences {
        assert!(
            allowed.contains(info),
            "a ```{info} fence (use one of {allowed:?}):\n{body}"
        );
    }
    let rust: Vec<_> = fences.iter().filter(|(i, _)| *i == "rust").collect();
    assert_eq!(rust.len(), 1, "exactly one ```rust block: the doctest");
    assert!(rust[0].1.contains("store.transaction()"));
    assert!(rust[0].1.contains("tx.rollback()"));
    // No indented code block (rustdoc would compile it): no line indented by 4+ spaces outside
    // fences, except continuation lines of list items.
    let mut in_fence = false;
    for line in README.lines() {
        if line.starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        assert!(
            in_fence || !line.starts_with("    "),
            "indented line outside a fence: {line:?}"
        );
    }
}

/// Every subcommand path (`task move`, `queue history`, ...) with its long flags.
fn commands() -> Vec<(String, Vec<String>)> {
    fn walk(cmd: &clap::Command, path: &str, out: &mut Vec<(String, Vec<String>)>) {
        for sub in cmd.get_subcommands() {
            let name = sub.get_name();
            if name == "help" {
                continue;
            }
            let p = if path.is_empty() {
                name.to_owned()
            } else {
                format!("{path} {name}")
            };
            let flags = sub
                .get_arguments()
                .filter_map(|a| a.get_long())
                .filter(|l| !matches!(*l, "help" | "version"))
                .map(|l| format!("--{l}"))
                .collect();
            out.push((p.clone(), flags));
            walk(sub, &p, out);
        }
    }
    let mut out = Vec::new();
    walk(&Cli::command(), "", &mut out);
    out
}

#[test]
fn every_subcommand_and_flag_is_documented() {
    let cli = section("The CLI");
    for (path, flags) in commands() {
        // `hookq task` and `hookq plan` only group their subcommands.
        if matches!(path.as_str(), "task" | "plan") {
            continue;
        }
        let named = format!("hookq {path}");
        assert!(
            cli.contains(&named),
            "the CLI section does not name `{named}`"
        );
        for flag in flags {
            assert!(
                cli.contains(&flag),
                "the CLI section does not name `{named} {flag}`"
            );
        }
    }
    assert!(cli.contains("-C DIR"));
    assert!(cli.contains("--json"));
}

/// Every `hookq ...` command line in a ```sh block parses.
#[test]
fn example_command_lines_parse() {
    let mut seen = BTreeSet::new();
    for (info, body) in fences() {
        if info != "sh" {
            continue;
        }
        for line in body.lines().filter(|l| !l.trim_start().starts_with('#')) {
            let line = line.split(" #").next().unwrap();
            let words: Vec<&str> = line.split_whitespace().collect();
            let Some(at) = words
                .iter()
                .position(|w| *w == "hookq" || w.ends_with("/hookq"))
            else {
                continue;
            };
            let args: Vec<&str> = words[at + 1..]
                .iter()
                .copied()
                .take_while(|w| !matches!(*w, "&&" | ";" | "|"))
                .collect();
            assert!(
                args.iter().all(|a| !a.contains(['"', '\''])),
                "quoted arguments in {line:?}"
            );
            if let Err(e) =
                Cli::try_parse_from(std::iter::once("hookq").chain(args.iter().copied()))
            {
                panic!("README example {line:?} does not parse:\n{e}");
            }
            seen.insert(
                args.iter()
                    .find(|a| !a.starts_with('-') && !a.contains('/'))
                    .copied()
                    .unwrap_or_default()
                    .to_owned(),
            );
        }
    }
    for top in ["init", "task", "plan", "run", "hub", "queue", "check"] {
        assert!(seen.contains(top), "no ```sh example runs `hookq {top}`");
    }
}

#[test]
fn every_config_key_is_documented() {
    let config = section("Configuration");
    let initial = hookq::queue::config::initial_config("origin", "main");
    let mut table = "";
    for line in initial.lines() {
        let line = line.trim_start_matches('#').trim();
        if let Some(t) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            table = t;
            continue;
        }
        let Some((key, _)) = line.split_once(" = ") else {
            continue;
        };
        if key.contains(' ') {
            continue;
        }
        let dotted = format!("`{table}.{key}`");
        assert!(
            config.contains(&dotted),
            "the Configuration section does not document {dotted}"
        );
    }
    for point in hookq::Point::ALL {
        assert!(
            config.contains(&format!("`hooks.{point}`")),
            "hooks.{point} is not documented"
        );
    }
    let defaults = hookq::Config::default();
    assert!(config.contains(&format!("`{}`", defaults.gate.command_timeout.as_secs())));
    assert!(config.contains(&format!("`{}`", defaults.gate.kill_grace.as_secs())));
    assert!(config.contains(&format!("`{}`", defaults.gate.max_log_bytes)));
    assert!(config.contains(&format!("`{}`", defaults.queue.max_interrupted_runs)));
    assert!(config.contains(&format!("`{}`", defaults.queue.keep_history_days)));
}

#[test]
fn every_hook_variable_and_stripped_variable_is_documented() {
    let section = section("How a hook command runs");
    let vars = hookq::queue::env::HookVars {
        task: "t",
        plan: "p",
        attempt: 1,
        worktree: std::path::Path::new("/w"),
        target_branch: "main",
        merged_sha: Some("abcd"),
        state: "done.merged",
        point: hookq::Point::AfterMerge,
    };
    let env = hookq::queue::env::hook_env(&hookq::exec::Environ::new(), &vars);
    assert!(env.len() >= 9);
    for (name, _) in env.iter() {
        let name = name.to_str().unwrap();
        assert!(
            section.contains(&format!("| `{name}` |")),
            "{name} is not in the variable table"
        );
    }
    for name in hookq::queue::env::GIT_LOCAL_ENV_VARS {
        assert!(
            section.contains(&format!("`{name}`")),
            "stripped {name} is not documented"
        );
    }
}

#[test]
fn exit_codes_match_the_code_module() {
    use hookq::error::code;
    let table: BTreeSet<u8> = section("Exit codes")
        .lines()
        .filter_map(|l| l.strip_prefix("| "))
        .filter_map(|l| l.split(' ').next()?.parse().ok())
        .collect();
    let codes: BTreeSet<u8> = [
        code::OK,
        code::FAILURE,
        code::USAGE,
        code::CONFIG,
        code::NOT_FOUND,
        code::DATABASE,
        code::LOCKED,
    ]
    .into();
    assert_eq!(table, codes);
}
