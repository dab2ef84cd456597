//! The rule for tests that need a program the README lists as optional (Chromium with its
//! driver, PostgreSQL's server): without it, outside CI, a test says `SKIPPED` and passes, so
//! that `cargo test --locked` passes on a fresh clone; under CI it fails. The rule lives in
//! `tests/support/` (`skipped`, and the WebDriver client that applies it); these checks keep
//! every test going through it, as a test that started `chromedriver` itself and called
//! `expect` on it stopped a whole `cargo test` on a machine without it.

use std::path::{Path, PathBuf};

/// The one file that may start Chromium and its driver.
const CLIENT: &str = "tests/support/browser.rs";

/// Every `.rs` file below `dir`, with its path from the repository's root.
fn rust_files(dir: &str) -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    let mut stack = vec![root.join(dir)];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path: PathBuf = e.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&path)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                let name = path.strip_prefix(root).unwrap().display().to_string();
                out.push((name, text));
            }
        }
    }
    out.sort();
    out
}

/// What in `text` (the file `name`) breaks the browser rule: a program of Chromium's named
/// outside the client, or a browser start whose absence would panic rather than skip.
fn browser_rule_breaks(name: &str, text: &str) -> Vec<String> {
    let mut breaks = Vec::new();
    if name != CLIENT {
        for program in ["\"chromedriver\"", "\"chromium\""] {
            if text.contains(program) {
                breaks.push(format!(
                    "{name} names {program}: start a browser through {CLIENT}"
                ));
            }
        }
    }
    // Each start, up to the end of its statement, binds the `Option` with `let ... else`.
    for what in ["Browser::start(", "Browser::start_alone("] {
        for (at, _) in text.match_indices(what) {
            let before = &text[..at];
            let line_start = before.rfind('\n').map_or(0, |i| i + 1);
            let line = &before[line_start..];
            if line.trim_start().starts_with("//") {
                continue;
            }
            let statement = &text[at..text[at..].find(';').map_or(text.len(), |i| at + i)];
            if statement.contains(".unwrap()")
                || statement.contains(".expect(")
                || !statement.contains("else")
            {
                breaks.push(format!(
                    "{name}: `{}` does not return on `None` with `let Some(..) = .. else`",
                    statement.lines().next().unwrap_or_default()
                ));
            }
        }
    }
    // The client itself: starting a program never unwraps, so a missing one skips.
    if name == CLIENT {
        for (at, _) in text.match_indices(".spawn()") {
            let after = text[at + ".spawn()".len()..].trim_start();
            if after.starts_with(".unwrap()") || after.starts_with(".expect(") {
                breaks.push(format!("{name}: a program's start is unwrapped"));
            }
        }
    }
    breaks
}

#[test]
fn no_browser_test_panics_on_a_missing_browser() {
    let mut breaks = Vec::new();
    for dir in ["tests", "benches"] {
        // This file's own samples break the rule on purpose.
        for (name, text) in rust_files(dir).into_iter().filter(|(n, _)| n != file!()) {
            breaks.extend(browser_rule_breaks(&name, &text));
        }
    }
    assert!(breaks.is_empty(), "{breaks:#?}");
    // The client is where the rule is kept.
    let client = rust_files("tests/support")
        .into_iter()
        .find(|(name, _)| name == CLIENT)
        .expect("the WebDriver client")
        .1;
    assert!(client.contains("skipped(test, &why)"));
}

#[test]
fn the_browser_check_catches_a_test_that_starts_its_driver_itself() {
    // Put together from pieces, so that this file's own text holds no test that starts a
    // driver and panics when it is missing (a line-based check of the tree would flag it).
    let own = [
        "\n        let driver = Command::new(\"chrome",
        "driver\")\n            .arg(format!(\"--port={port}\"))\n            .spawn()\n",
        "            .expect(\"chromedriver on PATH\");\n    ",
    ]
    .concat();
    assert_eq!(browser_rule_breaks("tests/x/browser.rs", &own).len(), 1);
    let unwrapped = r#"let b = Browser::start("t").unwrap();"#;
    assert_eq!(browser_rule_breaks("tests/x/b.rs", unwrapped).len(), 1);
    let kept = "let Some(b) = Browser::start(\"t\")\n    else {\n        return;\n    };";
    assert!(browser_rule_breaks("tests/x/b.rs", kept).is_empty());
    let client = "let mut child = cmd.spawn().unwrap();";
    assert_eq!(browser_rule_breaks(CLIENT, client).len(), 1);
}

/// The `#[test]` functions of `text` whose body does not begin with the PostgreSQL gate.
fn ungated_tests(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices("#[test]") {
        let rest = &text[at..];
        let Some(fn_at) = rest.find("fn ") else {
            continue;
        };
        let name: String = rest[fn_at + 3..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        // Compared without whitespace and a trailing comma, which rustfmt adds around a long
        // name.
        let body: String = rest[rest.find('{').unwrap() + 1..]
            .chars()
            .filter(|c| !c.is_whitespace())
            .take(200)
            .collect::<String>()
            .replace(",)", ")");
        // The gate by any path: the module's own `without_postgres` or one reached from
        // the crate root.
        let gated = body.strip_prefix("if").is_some_and(|b| {
            let call = format!("without_postgres(\"{name}\"){{");
            b.find(&call).is_some_and(|at| {
                b[..at]
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == ':')
                    && b[at..].starts_with(&call)
            })
        });
        if !gated {
            out.push(name);
        }
    }
    out
}

#[test]
fn every_postgres_test_first_asks_for_the_server() {
    let mut ungated = Vec::new();
    for (name, text) in rust_files("tests/postgres") {
        ungated.extend(
            ungated_tests(&text)
                .into_iter()
                .map(|t| format!("{name}: {t}")),
        );
    }
    assert!(ungated.is_empty(), "{ungated:#?}");
    // The conformance suite's PostgreSQL half asks in the macro that makes each of its tests.
    let suite = rust_files("tests/conformance")
        .into_iter()
        .find(|(n, _)| n == "tests/conformance/mod.rs")
        .unwrap()
        .1;
    assert!(suite.contains("if $crate::postgres::without_postgres(stringify!($test)) {"));
    // The bench at smoke size starts one too.
    let smoke = rust_files("tests/docs")
        .into_iter()
        .find(|(n, _)| n == "tests/docs/bench_smoke.rs")
        .unwrap()
        .1;
    assert!(smoke.contains("if let Some(why) = harness::postgres::server_missing() {"));
    // The check sees a test that starts the cluster without asking.
    let bare = "#[test]\nfn t() {\n    let (_db, s) = fresh(\"q\");\n}\n";
    assert_eq!(ungated_tests(bare), ["t"]);
    let gated = "#[test]\nfn t() {\n    if crate::postgres::without_postgres(\"t\") {\n        return;\n    }\n}\n";
    assert!(ungated_tests(gated).is_empty());
    let other = "#[test]\nfn t() {\n    if crate::postgres::without_postgres(\"u\") {\n        return;\n    }\n}\n";
    assert_eq!(ungated_tests(other), ["t"]);
}

/// The README's quick start says which tests need Chromium and PostgreSQL, what they say and
/// do without them, and that CI fails instead; the lines it quotes are the ones printed.
#[test]
fn the_readme_says_which_tests_skip_and_why() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let quick = &readme[readme.find("## Quick start").unwrap()..readme.find("## A tour").unwrap()];
    let flat = quick.split_whitespace().collect::<Vec<_>>().join(" ");
    for said in [
        "`SKIPPED <test>: <what is missing> (Debian: apt-get install ...)`",
        "`apt-get install chromium chromium-driver`",
        "`apt-get install postgresql`",
        "`CI=true`",
        "`--test ui browser`",
        "`--test queue postgres`",
        "about seven minutes",
    ] {
        assert!(flat.contains(said), "the quick start does not say {said}");
    }
    let support = rust_files("tests/support");
    let client = &support.iter().find(|(n, _)| n == CLIENT).unwrap().1;
    assert!(client.contains("(Debian: apt-get install chromium chromium-driver)"));
    let cluster = rust_files("tests/postgres")
        .into_iter()
        .find(|(n, _)| n == "tests/postgres/cluster.rs")
        .unwrap()
        .1;
    assert!(cluster.contains("Debian: apt-get install postgresql)"));
    let mod_rs = &support
        .iter()
        .find(|(n, _)| n == "tests/support/mod.rs")
        .unwrap()
        .1;
    assert!(mod_rs.contains("\"SKIPPED {test}: {why}\""));
}
