//! The documents stay true to the code: README.md's quick start; the code fences of every page
//! (only docs/embedding.md's and docs/agent.md's examples are Rust, and they run as doctests);
//! every subcommand and flag; every example command line; every config key; every `ARC_*`
//! variable and stripped git variable; the exit codes; and no page narrating how the project was
//! made.
//!
//! The pages are README.md and every `docs/*.md`, read when the test runs, so a page another
//! model adds is checked as soon as it exists.

use std::collections::BTreeSet;
use std::path::Path;

use crate::cli::Cli;
use clap::{CommandFactory, Parser};

/// One document: its path relative to the crate root, and its text.
struct Page {
    name: String,
    text: String,
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// README.md, then every `docs/*.md` by name.
fn pages() -> Vec<Page> {
    let read = |name: &str| Page {
        name: name.to_owned(),
        text: std::fs::read_to_string(root().join(name))
            .unwrap_or_else(|e| panic!("cannot read {name}: {e}")),
    };
    let mut names: Vec<String> = std::fs::read_dir(root().join("docs"))
        .expect("a docs/ folder")
        .map(|e| e.expect("a docs/ entry").file_name())
        .filter_map(|n| n.to_str().map(str::to_owned))
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    names.sort();
    std::iter::once("README.md".to_owned())
        .chain(names)
        .map(|n| read(&n))
        .collect()
}

/// The page named `name` (`"README.md"`, `"docs/queue.md"`).
fn page(name: &str) -> Page {
    pages()
        .into_iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("no page {name}"))
}

/// Code fences: (info string, body).
fn fences(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut lines = text.lines();
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
        out.push((info.trim().to_owned(), body));
    }
    out
}

/// The text of `page`'s section under `## title`, up to the next `## `.
fn section(page: &Page, title: &str) -> String {
    let head = format!("\n## {title}\n");
    let start = page
        .text
        .find(&head)
        .unwrap_or_else(|| panic!("{} has no section {title:?}", page.name))
        + head.len();
    let len = page.text[start..]
        .find("\n## ")
        .unwrap_or(page.text.len() - start);
    page.text[start..start + len].to_owned()
}

#[test]
fn quick_start_is_the_two_commands() {
    let quick = section(&page("README.md"), "Quick start");
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
fn the_readme_leads_to_every_page() {
    let readme = page("README.md");
    for p in pages().iter().filter(|p| p.name != "README.md") {
        assert!(
            readme.text.contains(&format!("]({})", p.name)),
            "README.md does not link {}",
            p.name
        );
    }
}

#[test]
fn only_the_embedding_example_is_rust() {
    // rustdoc compiles ```rust and unlabelled fences, and indented blocks, of the pages the
    // crate includes (docs/embedding.md, and docs/agent.md from `hookq::agent`); a Rust block
    // anywhere else would never be compiled.
    let allowed = ["sh", "toml", "text", "json"];
    let doctested = ["docs/embedding.md", "docs/agent.md"];
    for p in pages() {
        let fences = fences(&p.text);
        let compiled = doctested.contains(&p.name.as_str());
        for (info, body) in &fences {
            assert!(
                allowed.contains(&info.as_str()) || (compiled && info == "rust"),
                "{}: a ```{info} fence (use one of {allowed:?}):\n{body}",
                p.name
            );
        }
        if !compiled {
            continue;
        }
        let rust: Vec<_> = fences.iter().filter(|(i, _)| i == "rust").collect();
        assert_eq!(rust.len(), 1, "exactly one ```rust block: the doctest");
        if p.name == "docs/embedding.md" {
            assert!(rust[0].1.contains("store.transaction()"));
            assert!(rust[0].1.contains("tx.rollback()"));
        } else {
            assert!(rust[0].1.contains("Agent::load"));
        }
        // No indented code block (rustdoc would compile it): no line indented by 4+ spaces
        // outside fences.
        let mut in_fence = false;
        for line in p.text.lines() {
            if line.starts_with("```") {
                in_fence = !in_fence;
                continue;
            }
            assert!(
                in_fence || !line.starts_with("    "),
                "{}: indented line outside a fence: {line:?}",
                p.name
            );
        }
    }
}

/// Every subcommand path (`task move`, `queue history`, ...) with its long flags, and whether
/// it only groups subcommands (`task`, `plan`).
fn commands() -> Vec<(String, Vec<String>, bool)> {
    fn walk(cmd: &clap::Command, path: &str, out: &mut Vec<(String, Vec<String>, bool)>) {
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
            let flags: Vec<String> = sub
                .get_arguments()
                .filter_map(|a| a.get_long())
                .filter(|l| !matches!(*l, "help" | "version"))
                .map(|l| format!("--{l}"))
                .collect();
            let grouping =
                sub.has_subcommands() && flags.is_empty() && sub.get_positionals().next().is_none();
            out.push((p.clone(), flags, grouping));
            walk(sub, &p, out);
        }
    }
    let mut out = Vec::new();
    walk(&Cli::command(), "", &mut out);
    out
}

#[test]
fn every_subcommand_and_flag_is_documented() {
    let pages = pages();
    let commands = commands();
    assert!(commands.len() >= 15, "the walk found the clap tree");
    for (path, flags, grouping) in commands {
        // `hookq task` and `hookq plan` only group their subcommands.
        if grouping {
            continue;
        }
        let named = format!("hookq {path}");
        let naming: Vec<&Page> = pages.iter().filter(|p| p.text.contains(&named)).collect();
        assert!(!naming.is_empty(), "no page names `{named}`");
        for flag in flags {
            assert!(
                naming.iter().any(|p| p.text.contains(&flag)),
                "no page that names `{named}` documents `{flag}` (pages naming it: {})",
                naming
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    let cli = section(&page("docs/queue.md"), "The CLI");
    assert!(cli.contains("-C DIR"));
    assert!(cli.contains("--json"));
}

/// Every `hookq ...` command line in a ```sh block of any page parses.
#[test]
fn example_command_lines_parse() {
    let mut seen = BTreeSet::new();
    for p in pages() {
        for (info, body) in fences(&p.text) {
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
                // The command ends at a shell operator or a redirection.
                let args: Vec<&str> = words[at + 1..]
                    .iter()
                    .copied()
                    .take_while(|w| {
                        !matches!(*w, "&&" | "||" | ";" | "|" | "&")
                            && !w.starts_with(['<', '>'])
                            && !w.starts_with("2>")
                    })
                    .collect();
                assert!(
                    args.iter().all(|a| !a.contains(['"', '\''])),
                    "{}: quoted arguments in {line:?}",
                    p.name
                );
                if let Err(e) =
                    Cli::try_parse_from(std::iter::once("hookq").chain(args.iter().copied()))
                {
                    panic!("{}: example {line:?} does not parse:\n{e}", p.name);
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
    }
    for top in ["init", "task", "plan", "run", "hub", "queue", "check"] {
        assert!(seen.contains(top), "no ```sh example runs `hookq {top}`");
    }
}

#[test]
fn every_config_key_is_documented() {
    let config = section(&page("docs/queue.md"), "Configuration");
    let initial = hookq::queue::config::initial_config("origin", "main");
    let mut table = "";
    let mut keys = 0;
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
        keys += 1;
    }
    assert!(keys >= 8, "the walk found the config's keys");
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
    let section = section(&page("docs/queue.md"), "How a hook command runs");
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
    use hookq::failure::code;
    let table: BTreeSet<u8> = page("docs/exit-codes.md")
        .text
        .lines()
        .filter_map(|l| l.strip_prefix("| "))
        .filter_map(|l| l.split(' ').next()?.parse().ok())
        .collect();
    // Every constant of the code module, read from its source so a new code cannot be missed.
    let source = std::fs::read_to_string(root().join("src/failure.rs")).expect("src/failure.rs");
    let codes: BTreeSet<u8> = source
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub const "))
        .filter_map(|l| l.split_once(": u8 = "))
        .map(|(_, v)| v.trim_end_matches(';').parse().expect("a code"))
        .collect();
    assert!(codes.contains(&code::OK) && codes.contains(&code::PREFLIGHT));
    assert_eq!(table, codes);
}

/// Documents describe the product as it is; git keeps how it came to be. None cites the
/// project's contract by section or narrates its work sessions.
#[test]
fn documents_describe_what_is() {
    let mut pages = pages();
    pages.push(Page {
        name: "BENCHMARKS.md".to_owned(),
        text: std::fs::read_to_string(root().join("BENCHMARKS.md")).expect("BENCHMARKS.md"),
    });
    for p in pages {
        for (n, line) in p.text.lines().enumerate() {
            let lower = line.to_lowercase();
            let session = lower
                .match_indices("session ")
                .any(|(i, m)| lower[i + m.len()..].starts_with(|c: char| c.is_ascii_digit()));
            assert!(
                !session && !line.contains("SPEC \u{a7}"),
                "{}:{}: narrates history or cites the spec: {line:?}",
                p.name,
                n + 1
            );
        }
    }
}
