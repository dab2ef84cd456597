//! The layout of `tests/` itself: a few test binaries, each a `tests/<binary>/main.rs`, and every
//! `.rs` file under `tests/` compiled into one of them. A file that no binary declares would never
//! run, and nothing else would say so; a file at the top of `tests/` would be a binary of its own,
//! linked and started separately.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// `tests/` in the repository.
fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

/// Every `.rs` file below `dir`.
fn rust_files(dir: &Path) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = e.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|x| x == "rs") {
                out.insert(path);
            }
        }
    }
    out
}

/// The files the `mod NAME;` declarations of `file` load, as rustc finds them: a `#[path]` is
/// relative to the declaring file's folder; otherwise `NAME.rs` or `NAME/mod.rs` in the folder
/// the declaring file's modules live in (its own folder for a `main.rs`, a `mod.rs` or a file
/// loaded by `#[path]`, else the folder named after it). Declarations inside inline `mod { }`
/// blocks are not followed: no test file has them.
fn declared(file: &Path, owns_folder: bool) -> Vec<(PathBuf, bool)> {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let folder = file.parent().unwrap();
    let modules = if owns_folder {
        folder.to_path_buf()
    } else {
        folder.join(file.file_stem().unwrap())
    };
    let mut out = Vec::new();
    let mut path_attr: Option<String> = None;
    for line in text.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("#[path") {
            let value = rest.split('"').nth(1).expect("#[path = \"...\"]");
            path_attr = Some(value.to_owned());
            continue;
        }
        if line.starts_with("#[") || line.starts_with("//") {
            continue;
        }
        let decl = ["pub(crate) mod ", "pub(super) mod ", "pub mod ", "mod "]
            .iter()
            .find_map(|p| line.strip_prefix(p));
        if let Some(name) = decl.and_then(|d| d.strip_suffix(';')) {
            match path_attr.take() {
                Some(p) => out.push((folder.join(p), true)),
                None => {
                    let flat = modules.join(format!("{name}.rs"));
                    if flat.is_file() {
                        out.push((flat, false));
                    } else {
                        out.push((modules.join(name).join("mod.rs"), true));
                    }
                }
            }
        } else {
            path_attr = None;
        }
    }
    out
}

/// Every file under `top` that the binary whose root is `main` compiles, following the `mod`
/// declarations, normalised (`a/../b` is `b`) so that files reached by `#[path]` compare equal to
/// the walk's. Files outside `top` (the CLI's source, the bench harness) are not followed.
fn compiled_within(top: &Path, main: &Path) -> BTreeSet<PathBuf> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![(main.to_path_buf(), true)];
    while let Some((file, owns_folder)) = stack.pop() {
        let file = normalise(&file);
        if !file.starts_with(top) || !seen.insert(file.clone()) {
            continue;
        }
        stack.extend(declared(&file, owns_folder));
    }
    seen
}

fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The binaries cargo finds: every `tests/<name>/main.rs`.
fn binaries() -> Vec<PathBuf> {
    let mut mains: Vec<PathBuf> = std::fs::read_dir(tests_dir())
        .unwrap()
        .map(|e| e.unwrap().path().join("main.rs"))
        .filter(|m| m.is_file())
        .collect();
    mains.sort();
    mains
}

#[test]
fn every_rust_file_under_tests_is_part_of_a_binary() {
    let mains = binaries();
    assert!(!mains.is_empty(), "no tests/<binary>/main.rs");
    let compiled: BTreeSet<PathBuf> = mains
        .iter()
        .flat_map(|m| compiled_within(&tests_dir(), m))
        .collect();
    let orphans: Vec<String> = rust_files(&tests_dir())
        .into_iter()
        .filter(|f| !compiled.contains(f))
        .map(|f| f.strip_prefix(tests_dir()).unwrap().display().to_string())
        .collect();
    assert!(
        orphans.is_empty(),
        "these files under tests/ are in no test binary, so none of their tests runs; declare \
         each with `mod` in the main.rs of the binary it belongs to:\n{}",
        orphans.join("\n")
    );
}

#[test]
fn no_test_file_is_a_binary_of_its_own() {
    let top: Vec<String> = std::fs::read_dir(tests_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "rs"))
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(
        top.is_empty(),
        "each of these files at the top of tests/ is a test binary of its own; move it into the \
         folder of the binary it belongs to (tests/queue/, tests/ui/, tests/agent/, \
         tests/lifecycle/, tests/docs/) and declare it in that main.rs:\n{}",
        top.join("\n")
    );
    let count = binaries().len();
    assert!(count <= 6, "{count} test binaries; at most 6");
}

/// The walk itself finds a file no binary declares, and a file reached only by `#[path]`.
#[test]
fn the_walk_finds_an_undeclared_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let write = |rel: &str, text: &str| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write(
        "bin/main.rs",
        "#[allow(dead_code)]\n#[path = \"../shared/mod.rs\"]\nmod shared;\n\nmod a;\n",
    );
    write("bin/a.rs", "mod inner;\n");
    write("bin/a/inner.rs", "");
    write("shared/mod.rs", "pub mod helper;\n");
    write("shared/helper.rs", "");
    write("bin/forgotten.rs", "");
    let compiled = compiled_within(&root, &root.join("bin/main.rs"));
    let names: BTreeSet<String> = compiled
        .iter()
        .map(|f| f.strip_prefix(&root).unwrap().display().to_string())
        .collect();
    let expected: BTreeSet<String> = [
        "bin/main.rs",
        "bin/a.rs",
        "bin/a/inner.rs",
        "shared/mod.rs",
        "shared/helper.rs",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    assert_eq!(names, expected);
    assert!(!compiled.contains(&root.join("bin/forgotten.rs")));
}
