//! The documents stay true to the code: README.md's quick start; the code fences of every page
//! (only docs/embedding.md's, docs/agent.md's and docs/lifecycle.md's examples are Rust, and they
//! run as doctests);
//! every subcommand and flag; every example command line; every config key; every `ARC_*`
//! variable and stripped git variable; the exit codes; and no page narrating how the project was
//! made.
//!
//! The pages are README.md and every `docs/*.md`, read when the test runs, so a page another
//! model adds is checked as soon as it exists.

#[allow(dead_code)]
#[path = "../../examples/quickstart/cli.rs"]
mod quickstart_cli;

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

/// After the quick start's first command there is a `hookq` to type: the tour builds it beside
/// itself, in the same profile, and the README says where that is and how to put it on `PATH`.
#[test]
fn the_quick_start_leaves_the_cli_where_the_readme_says() {
    let example = Path::new("/src/hookq/target/release/examples/quickstart");
    assert_eq!(
        quickstart_cli::binary_beside(example).as_deref(),
        Some(Path::new("/src/hookq/target/release/hookq"))
    );
    assert_eq!(
        quickstart_cli::build_args(true),
        [
            "build",
            "--locked",
            "--bin",
            "hookq",
            "--example",
            "quickstart",
            "--release"
        ]
    );
    let quick = section(&page("README.md"), "Quick start");
    assert!(quick.contains("`target/release/hookq`"), "{quick}");
    assert!(
        quick.contains("`cargo install --locked --path .`"),
        "{quick}"
    );
    let tour = std::fs::read_to_string(root().join("examples/quickstart/main.rs")).unwrap();
    assert!(
        tour.contains("cli::build()") && tour.contains("cli::tell(&built)"),
        "the tour builds the CLI and ends saying where it is"
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
    // crate includes (docs/embedding.md, docs/agent.md from `hookq::agent`, docs/lifecycle.md
    // from `hookq::lifecycle`); a Rust block anywhere else would never be compiled.
    let allowed = ["sh", "toml", "text", "json"];
    let doctested = [
        "docs/embedding.md",
        "docs/agent.md",
        "docs/lifecycle.md",
        "docs/postgres.md",
        "docs/ui.md",
    ];
    for p in pages() {
        let fences = fences(&p.text);
        let compiled = doctested.contains(&p.name.as_str());
        for (info, body) in &fences {
            assert!(
                allowed.contains(&info.as_str())
                    || (compiled && (info == "rust" || info == "rust,no_run")),
                "{}: a ```{info} fence (use one of {allowed:?}):\n{body}",
                p.name
            );
        }
        if !compiled {
            continue;
        }
        let rust: Vec<_> = fences
            .iter()
            .filter(|(i, _)| i.starts_with("rust"))
            .collect();
        // Three doctests on embedding.md (recording inside the host's transaction, reading
        // and steering the queue through `Queue`, then a pass and a hub) and two on postgres.md (compiled, not run, since
        // they need a server: recording in the host's transaction, then many writers with a
        // `Recorder` each and one `Notifier`); one on each other page.
        let expected: &[&[&str]] = match p.name.as_str() {
            "docs/embedding.md" => &[
                &["store.transaction()", "tx.rollback()"],
                &["Queue::open"],
                &["pass::run", "hub::run_queue"],
            ],
            "docs/postgres.md" => &[
                &["record::move_task", "tx.commit()"],
                &["Recorder::prepare", "Notifier::new"],
            ],
            "docs/ui.md" => &[&[".nest(\"/hooks\", view)"]],
            "docs/lifecycle.md" => &[&["Worktrees::discover"]],
            _ => &[&["Agent::load"]],
        };
        assert_eq!(rust.len(), expected.len(), "{}: the ```rust blocks", p.name);
        for ((_, body), needles) in rust.iter().zip(expected) {
            for needle in *needles {
                assert!(
                    body.contains(needle),
                    "{}: a doctest without {needle}",
                    p.name
                );
            }
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

/// Every "N of M" (or "N of its M") with both numbers written in digits in `text`.
fn counts(text: &str) -> Vec<(u32, u32)> {
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || matches!(c, '(' | ')' | ',' | ':' | '.'))
        .filter(|w| !w.is_empty())
        .collect();
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        if *w != "of" || i == 0 {
            continue;
        }
        let mut next = i + 1;
        if words.get(next) == Some(&"its") {
            next += 1;
        }
        if let (Ok(n), Some(Ok(m))) = (
            words[i - 1].parse::<u32>(),
            words.get(next).map(|w| w.parse::<u32>()),
        ) {
            out.push((n, m));
        }
    }
    out
}

/// Every `YYYY-MM-DD HH:MM UTC` in `text`.
fn run_times(text: &str) -> Vec<String> {
    let b = text.as_bytes();
    (0..b.len().saturating_sub(19))
        .filter(|&i| {
            let s = &b[i..i + 20];
            let digits = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15];
            digits.iter().all(|&d| s[d].is_ascii_digit())
                && s[4] == b'-'
                && s[7] == b'-'
                && s[10] == b' '
                && s[13] == b':'
                && &s[16..20] == b" UTC"
                && (i == 0 || !b[i - 1].is_ascii_digit())
        })
        .map(|i| text[i..i + 20].to_owned())
        .collect()
}

/// BENCHMARKS.md names one run and gives its figures once: the counts of targets met that it
/// states are those of the table it shows, every time it names a run it is that one, and no
/// other table repeats the run's figures.
#[test]
fn benchmarks_state_one_run_and_agree_with_its_table() {
    let page = Page {
        name: "BENCHMARKS.md".to_owned(),
        text: std::fs::read_to_string(root().join("BENCHMARKS.md")).expect("BENCHMARKS.md"),
    };
    let last = section(&page, "Last full run");
    let table = last
        .split("```text\n")
        .nth(1)
        .and_then(|t| t.split("```").next())
        .expect("the last full run's table");
    let mut results = Vec::new();
    for line in table.lines().skip_while(|l| !l.starts_with("--")).skip(1) {
        let cells: Vec<&str> = line.split_whitespace().collect();
        let (Some(id), Some(result)) = (cells.first(), cells.last()) else {
            break;
        };
        results.push((id.to_string(), result.to_string()));
    }
    let met = results.iter().filter(|(_, r)| r == "PASS").count() as u32;
    let missed: Vec<&str> = results
        .iter()
        .filter(|(_, r)| r == "MISS")
        .map(|(id, _)| id.as_str())
        .collect();
    let targets = met + missed.len() as u32;
    assert!(
        targets >= 20 && results.len() > 25,
        "the walk found the rows"
    );

    let stated = counts(&page.text);
    assert!(
        stated.contains(&(met, targets)),
        "BENCHMARKS.md never states {met} of {targets}"
    );
    for (n, m) in stated {
        assert_eq!(
            (n, m),
            (met, targets),
            "BENCHMARKS.md states {n} of {m}; its table shows {met} of {targets} targets met"
        );
    }
    let stands = section(&page, "Where it stands");
    let all_but = match missed.as_slice() {
        [] => "all of them".to_owned(),
        [one] => format!("all but {one}"),
        [init @ .., last] => format!("all but {} and {last}", init.join(", ")),
    };
    assert!(
        stands.contains(&all_but),
        "\"Where it stands\" does not say {all_but:?}"
    );

    let times = run_times(&page.text);
    let run = run_times(&stands);
    assert_eq!(run.len(), 1, "\"Where it stands\" names one run: {run:?}");
    assert!(
        run_times(&last).contains(&run[0]),
        "\"Last full run\" is the run \"Where it stands\" names"
    );
    assert!(
        times.iter().all(|t| *t == run[0]),
        "every run named is the one: {times:?}"
    );
    for line in page.text.lines().filter(|l| l.starts_with("| id ")) {
        assert!(
            !line.to_lowercase().contains("last full run"),
            "a table repeats the run's figures: {line}"
        );
    }
}
