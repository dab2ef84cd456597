//! Input that is refused: malformed configs, bad ids, bad phases. Each gives
//! one clear `error:` line, the documented exit code, and leaves the database as it was.
//!
//! Exit codes (src/failure.rs `code`): 2 usage, 3 config, 4 not found, 5 database, 6 locked.

use crate::support::queue as common;

use std::path::Path;

use common::{Ws, fixtures};

const USAGE: i32 = 2;
const CONFIG: i32 = 3;
const NOT_FOUND: i32 = 4;
const DATABASE: i32 = 5;

/// A workspace with a valid config and one point pending for task `t1`.
fn ws_with_pending() -> Ws {
    let ws = Ws::init();
    ws.write_config("after_awaiting_human = ['echo ran >> out']\nafter_fail = ['echo ran >> out']");
    ws.hookq(&["task", "add", "t1", "--plan", "p"]).ok();
    ws.hookq(&["task", "move", "t1", "review.awaiting_human", "--no-run"])
        .ok();
    assert_eq!(ws.pending().len(), 1);
    ws
}

/// Puts `bytes` in place as config.toml and checks that everything that reads it refuses it
/// with `error: <config>:<at>: <rest...>` and that no hook runs and nothing pending changes.
/// `at` is `line: key` (or `line` alone, or empty where the file has no line to blame).
fn refused(bytes: &[u8], at: &str, message: &str) {
    let ws = ws_with_pending();
    ws.write_config_text(bytes);
    let cfg = ws.config_path();
    let expected = if at.is_empty() {
        format!("error: {}: {message}", cfg.display())
    } else {
        format!("error: {}:{at}: {message}", cfg.display())
    };
    let before = ws.snapshot();

    for args in [&["run"][..], &["check"], &["run", "--wait", "5"]] {
        let out = ws.hookq(args).expect_code(CONFIG);
        let errors = out.errors();
        assert_eq!(errors.len(), 1, "{}", out.describe());
        assert!(
            errors[0].starts_with(&expected),
            "expected {expected:?}\n{}",
            out.describe()
        );
        assert!(out.warnings().is_empty(), "{}", out.describe());
        assert!(out.stdout.is_empty(), "{}", out.describe());
        assert_eq!(
            ws.snapshot(),
            before,
            "`hookq {}` changed the database",
            args.join(" ")
        );
    }

    // An owner transition is still written; its hooks are left pending with one warning.
    let out = ws.hookq(&["task", "move", "t1", "failed.x"]).expect_code(0);
    let warnings = out.warnings();
    assert_eq!(warnings.len(), 1, "{}", out.describe());
    assert!(
        warnings[0].contains(&expected["error: ".len()..]),
        "{}",
        out.describe()
    );
    let pending = ws.pending();
    assert_eq!(pending.len(), 2);
    assert!(
        pending.iter().all(|p| p.passes == 0),
        "nothing was started: {pending:?}"
    );
    assert!(ws.history().is_empty());
    assert!(!ws.root().join("out").exists(), "no hook ran");
    assert!(!ws.state_dir().join("runs").exists(), "no hook ran");
}

fn refused_fixture(name: &str, at: &str, message: &str) {
    let bytes = std::fs::read(fixtures().join("config/bad").join(name)).unwrap();
    refused(&bytes, at, message);
}

#[test]
fn unknown_key_under_hooks() {
    refused_fixture(
        "unknown_hook_key.toml",
        "7: hooks.after_mrge",
        "unknown key",
    );
}

#[test]
fn unknown_key_under_queue() {
    refused_fixture(
        "unknown_queue_key.toml",
        "3: queue.max_interupted_runs",
        "unknown key",
    );
}

#[test]
fn hooks_value_of_the_wrong_type() {
    refused_fixture(
        "hooks_not_an_array.toml",
        "4: hooks.after_fail",
        "expected an array of command lines, found string",
    );
}

#[test]
fn hooks_table_of_the_wrong_type() {
    refused_fixture(
        "hooks_not_a_table.toml",
        "2: hooks",
        "expected a table, found array",
    );
}

#[test]
fn command_line_of_the_wrong_type() {
    refused_fixture(
        "hook_line_not_a_string.toml",
        "5: hooks.after_merge[1]",
        "expected a command line (string), found integer",
    );
}

#[test]
fn timeout_zero() {
    refused_fixture(
        "timeout_zero.toml",
        "4: gate.command_timeout_secs",
        "must be a whole number from 1 to 604800, found 0",
    );
}

#[test]
fn timeout_fraction() {
    refused_fixture(
        "timeout_fraction.toml",
        "3: gate.command_timeout_secs",
        "must be a whole number from 1 to 604800, found 1.5",
    );
}

#[test]
fn timeout_negative() {
    refused_fixture(
        "timeout_negative.toml",
        "3: gate.command_timeout_secs",
        "must be a whole number from 1 to 604800, found -1",
    );
}

#[test]
fn timeout_string() {
    refused_fixture(
        "timeout_string.toml",
        "3: gate.command_timeout_secs",
        "expected a whole number, found string",
    );
}

#[test]
fn grace_zero() {
    refused_fixture(
        "grace_zero.toml",
        "4: gate.kill_grace_secs",
        "must be a whole number from 1 to 3600, found 0",
    );
}

#[test]
fn log_cap_below_the_minimum() {
    refused_fixture(
        "log_cap_too_small.toml",
        "3: gate.max_log_bytes",
        "must be a whole number from 1024",
    );
}

#[test]
fn log_file_cap_below_the_minimum() {
    refused_fixture(
        "log_file_cap_small.toml",
        "2: queue.max_log_file_bytes",
        "must be a whole number from 1024 to 1099511627776, found 512",
    );
}

#[test]
fn duplicate_key() {
    refused_fixture(
        "duplicate_key.toml",
        "5: hooks.after_merge",
        "duplicate key",
    );
}

#[test]
fn unclosed_array() {
    refused_fixture("unclosed_array.toml", "3", "unclosed array");
}

#[test]
fn bytes_that_are_not_utf8() {
    refused_fixture("non_utf8.toml", "3", "not valid UTF-8");
}

#[test]
fn a_file_of_two_megabytes() {
    let mut big = b"[hooks]\nafter_merge = []\n".to_vec();
    while big.len() < 2 * 1024 * 1024 {
        big.extend_from_slice(
            b"# padding padding padding padding padding padding padding padding\n",
        );
    }
    refused(&big, "", "file is larger than 1048576 bytes");
}

#[test]
fn a_missing_config() {
    let ws = ws_with_pending();
    std::fs::remove_file(ws.config_path()).unwrap();
    let before = ws.snapshot();
    let out = ws.hookq(&["run"]).expect_code(CONFIG);
    assert!(
        out.errors()[0].starts_with(&format!(
            "error: cannot read {}",
            ws.config_path().display()
        )),
        "{}",
        out.describe()
    );
    assert!(
        out.stderr()
            .contains("hint: `hookq init` writes a config.toml"),
        "{}",
        out.describe()
    );
    assert_eq!(ws.snapshot(), before);
}

/// Checks that `args` is refused with exit `code` and the single stderr line `error: <start>…`,
/// and that the database is unchanged.
#[track_caller]
fn refuses(ws: &Ws, args: &[&str], code: i32, start: &str) {
    let before = ws.snapshot();
    let out = ws.hookq(args).expect_code(code);
    let stderr = out.stderr();
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(
        !lines.is_empty() && lines[0].starts_with(&format!("error: {start}")),
        "expected `error: {start}`\n{}",
        out.describe()
    );
    assert!(
        lines[1..].iter().all(|l| l.starts_with("hint: ")),
        "one error line (and hints): {}",
        out.describe()
    );
    assert!(lines[0].len() < 300, "a short line: {}", lines[0]);
    assert!(out.stdout.is_empty(), "{}", out.describe());
    assert_eq!(
        ws.snapshot(),
        before,
        "`hookq {args:?}` changed the database"
    );
}

/// The state dir's entries (recursively), to show nothing was created.
fn state_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        if e.file_type().unwrap().is_dir() {
            out.extend(
                state_files(&e.path())
                    .into_iter()
                    .map(|n| format!("{name}/{n}")),
            );
        }
        out.push(name);
    }
    out.sort();
    out
}

#[test]
fn bad_ids_are_refused_before_any_write() {
    let ws = ws_with_pending();
    let files_before = state_files(&ws.state_dir());
    let long = "a".repeat(200);
    let bad = [
        "a/b",
        "..",
        ".",
        long.as_str(),
        "a\nb",
        "t\u{0430}sk",
        "",
        "a b",
        "../x",
        "x;rm -rf ~",
        ".hidden",
    ];
    for id in bad {
        let shown = {
            let cut: String = id.chars().take(40).collect();
            format!("{cut:?}")
        };
        refuses(
            &ws,
            &["task", "add", id, "--plan", "p"],
            USAGE,
            &format!("invalid task id {shown}"),
        );
        refuses(
            &ws,
            &["task", "move", id, "done.merged"],
            USAGE,
            &format!("invalid task id {shown}"),
        );
        refuses(&ws, &["task", "show", id], USAGE, "invalid task id");
        refuses(
            &ws,
            &["task", "add", "ok", "--plan", id],
            USAGE,
            &format!("invalid plan id {shown}"),
        );
        refuses(
            &ws,
            &["plan", "cancel", id],
            USAGE,
            &format!("invalid plan id {shown}"),
        );
    }
    // The long one is shown cut short.
    let out = ws.hookq(&["task", "add", &long, "--plan", "p"]);
    assert!(out.stderr().contains("(cut)"), "{}", out.describe());

    assert_eq!(ws.task_count(), 1, "no task created");
    assert_eq!(ws.pending().len(), 1, "the pending point is still pending");
    assert_eq!(
        state_files(&ws.state_dir()),
        files_before,
        "nothing created in the state dir"
    );
    assert!(!ws.root().join("a").exists() && !ws.base().join("x").exists());
}

#[test]
fn bad_phases_are_refused_before_any_write() {
    let ws = ws_with_pending();
    for phase in [
        "Done.merged",
        "done",
        "done.merged.x",
        "done.",
        ".merged",
        "done.merged\n",
        "d\u{043e}ne.merged",
        "done.Merged",
        "1done.x",
        "done merged",
    ] {
        let shown = format!("{phase:?}");
        refuses(
            &ws,
            &["task", "move", "t1", phase],
            USAGE,
            &format!("invalid phase {shown}"),
        );
        refuses(
            &ws,
            &["task", "add", "t2", "--plan", "p", "--phase", phase],
            USAGE,
            &format!("invalid phase {shown}"),
        );
    }
    assert_eq!(ws.phase("t1").as_deref(), Some("review.awaiting_human"));
    assert_eq!(ws.phase("t2"), None);
    assert_eq!(ws.pending().len(), 1);
}

#[test]
fn bad_move_facts_are_refused_before_any_write() {
    let ws = ws_with_pending();
    for sha in ["xyz", "abc; rm -rf /", "12", "", &"a".repeat(65)] {
        refuses(
            &ws,
            &["task", "move", "t1", "done.merged", "--merged-sha", sha],
            USAGE,
            "invalid merged sha",
        );
    }
    refuses(
        &ws,
        &["task", "move", "t1", "done.merged", "--attempt", "0"],
        USAGE,
        "invalid attempt 0",
    );
    refuses(
        &ws,
        &["task", "add", "t1", "--plan", "p"],
        USAGE,
        "task t1 exists already",
    );
    assert_eq!(ws.phase("t1").as_deref(), Some("review.awaiting_human"));
}

#[test]
fn unknown_names_exit_not_found() {
    let ws = ws_with_pending();
    // What was not found is named with the database it was looked for in.
    let db = ws.db_path();
    let db = db.display();
    for (args, start) in [
        (
            &["task", "move", "nosuch", "done.merged"][..],
            "no task nosuch in",
        ),
        (&["task", "show", "nosuch"], "no task nosuch in"),
        (&["queue", "drop", "999"], "no pending occurrence 999 in"),
        (&["queue", "retry", "999"], "no history row 999 in"),
        (
            &["queue", "show", "999"],
            "no occurrence 999, pending or in history, in",
        ),
    ] {
        refuses(&ws, args, NOT_FOUND, &format!("{start} {db}"));
    }

    let elsewhere = Ws::new();
    let out = elsewhere.hookq(&["queue"]).expect_code(NOT_FOUND);
    assert!(
        out.errors()[0].starts_with("error: no hookq workspace"),
        "{}",
        out.describe()
    );
    assert!(
        out.stderr().contains("hint: run `hookq init`"),
        "{}",
        out.describe()
    );
    assert!(
        !elsewhere.root().join(".radian").exists(),
        "reading never creates a workspace"
    );

    // `-C` to a directory that does not exist, inside a workspace: an error, as with `git -C`,
    // not that workspace; nothing written.
    refuses(
        &ws,
        &["-C", "no/such/dir", "task", "add", "t9", "--plan", "p"],
        NOT_FOUND,
        "cannot use no/such/dir as the directory to start from",
    );
}

#[test]
fn a_database_from_a_newer_hookq_is_refused() {
    let ws = ws_with_pending();
    ws.db()
        .execute(
            "INSERT INTO refinery_schema_history (version, name, applied_on, checksum) VALUES (999, 'future', '', '0')",
            [],
        )
        .unwrap();
    let before = ws.snapshot();
    for args in [
        &["queue"][..],
        &["run"],
        &["task", "move", "t1", "failed.x"],
    ] {
        let out = ws.hookq(args).expect_code(DATABASE);
        assert!(
            out.errors()[0].contains("newer than this hookq"),
            "{}",
            out.describe()
        );
    }
    assert_eq!(ws.snapshot(), before);
    assert!(!ws.root().join("out").exists());
}

#[test]
fn a_file_that_is_not_a_database_is_refused() {
    let ws = Ws::init();
    std::fs::remove_file(ws.db_path()).unwrap();
    for ext in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(ws.state_dir().join(format!("arc.db{ext}")));
    }
    let garbage = vec![0x5a_u8; 8192];
    std::fs::write(ws.db_path(), &garbage).unwrap();
    let out = ws
        .hookq(&["task", "add", "t1", "--plan", "p"])
        .expect_code(DATABASE);
    assert!(out.errors()[0].contains("corrupt"), "{}", out.describe());
    assert_eq!(
        std::fs::read(ws.db_path()).unwrap(),
        garbage,
        "hookq never replaces it"
    );
}

/// `hookq queue | head -0` and `hookq task add 'a/b' 2>&1 | head -0`: a reader that went away
/// is not a panic (exit 101); the command still ends with its own exit code.
#[test]
fn a_closed_stdout_or_stderr_is_not_a_panic() {
    use std::process::Stdio;
    let ws = ws_with_pending();
    let closed = || {
        let (reader, writer) = rustix::pipe::pipe().unwrap();
        drop(reader);
        Stdio::from(writer)
    };
    let out = ws
        .command(common::HOOKQ)
        .args(["queue"])
        .stdout(closed())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = ws
        .command(common::HOOKQ)
        .args(["task", "add", "a/b", "--plan", "p"])
        .stdout(Stdio::null())
        .stderr(closed())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(USAGE));
}

/// A stdout that takes nothing (`hookq queue --json > /dev/full`) is not a closed pipe: the
/// listing was lost, and the exit status says so.
#[test]
fn output_that_cannot_be_written_is_an_error() {
    let ws = ws_with_pending();
    for args in [&["queue", "--json"][..], &["queue", "stats"]] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = ws
            .command(common::HOOKQ)
            .args(args)
            .stdout(full)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.starts_with("error: cannot write to stdout: No space left on device"),
            "{args:?}: {stderr}"
        );
    }
    assert_eq!(ws.pending().len(), 1, "reading changed nothing");
}

/// Values clap takes that the command cannot honour are usage errors, not a panic or a listing
/// that says nothing is pending.
#[test]
fn out_of_range_values_are_refused_or_honoured() {
    let ws = ws_with_pending();
    for args in [
        &["queue", "--limit", "0"][..],
        &["queue", "history", "--limit", "0"],
        &["queue", "history", "--task", "../x"],
    ] {
        let out = ws.hookq(args).expect_code(USAGE);
        assert!(out.stderr().starts_with("error: "), "{}", out.describe());
    }
    // A wait beyond what the clock can count is a wait as long as it takes.
    let out = ws.hookq(&["run", "--wait", "18446744073709551615"]).ok();
    assert!(
        out.stdout().contains("ran 1 point(s)"),
        "{}",
        out.describe()
    );
}

/// A key of a shared table a typo away from one hookq reads is not refused (the table is also
/// arc's) but gets one `warning:` line from `check` and from every command that loads the
/// config, once per process; arc's other keys stay quiet.
#[test]
fn a_misspelt_shared_key_is_a_warning() {
    let ws = Ws::init();
    ws.write_config_text(
        b"[repository]\nmain_brach = 'trunk'\nmirror = 'x'\n[gate]\ncommands = ['cargo test']\ncomand_timeout_secs = 10\n[hooks]\nafter_fail = ['true']\n",
    );
    let cfg = ws.config_path();
    let expected = [
        format!(
            "warning: {}:2: repository.main_brach: not a key hookq reads; did you mean repository.main_branch?",
            cfg.display()
        ),
        format!(
            "warning: {}:6: gate.comand_timeout_secs: not a key hookq reads; did you mean gate.command_timeout_secs?",
            cfg.display()
        ),
    ];
    let check = ws.hookq(&["check"]).expect_code(0);
    assert_eq!(check.warnings(), expected, "{}", check.describe());
    assert!(
        check.stdout().contains("timeout 600s"),
        "{}",
        check.describe()
    );
    let json = ws.hookq(&["check", "--json"]).expect_code(0);
    let v: serde_json::Value = serde_json::from_str(&json.stdout()).unwrap();
    assert_eq!(v["warnings"].as_array().map(Vec::len), Some(2), "{v}");

    ws.hookq(&["task", "add", "t1", "--plan", "p"]).ok();
    let moved = ws.hookq(&["task", "move", "t1", "failed.x"]).expect_code(0);
    assert_eq!(moved.warnings(), expected, "{}", moved.describe());
    assert!(
        moved.stdout().contains("ran 1 point(s)"),
        "{}",
        moved.describe()
    );
    let run = ws.hookq(&["run"]).expect_code(0);
    assert_eq!(run.warnings(), expected, "{}", run.describe());
    // A command that does not load the config says nothing of it.
    let listed = ws.hookq(&["task", "list"]).ok();
    assert!(listed.warnings().is_empty(), "{}", listed.describe());

    // Only the keys near hookq's: arc's own keys pass quietly.
    ws.write_config_text(b"[repository]\nmirror = 'x'\n[gate]\ncommands = ['cargo test']\n");
    let check = ws.hookq(&["check"]).ok();
    assert!(check.warnings().is_empty(), "{}", check.describe());
}

/// A database key or table a typo away from `[queue] database` is an error for every command of
/// the queue, with the line `check` gives: read as absent, it would record into a new SQLite
/// file where no other host drains. Nothing is written, and the URL's password is never shown.
#[test]
fn a_misspelt_database_key_is_refused_by_every_queue_command_and_nothing_is_written() {
    let cases = [
        (
            "[queue]\ndatabse = 'postgres://hq:Zx9Qv7Lk@db.example/hq'\n",
            "2: queue.databse: unknown key, did you mean queue.database?",
        ),
        (
            "[queu]\ndatabase = 'postgres://hq:Zx9Qv7Lk@db.example/hq'\n",
            "1: queu: unknown table, did you mean [queue]?",
        ),
        (
            "[hooks]\nafter_fail = ['true']\n[queue]\nDatabase = 'host=db password=Zx9Qv7Lk'\n",
            "4: queue.Database: unknown key, did you mean queue.database?",
        ),
    ];
    let commands: [&[&str]; 11] = [
        &["task", "add", "t1", "--plan", "p"],
        &["task", "move", "t1", "failed.x"],
        &["task", "list"],
        &["task", "show", "t1"],
        &["plan", "cancel", "p"],
        &["queue"],
        &["queue", "--json"],
        &["queue", "stats"],
        &["run"],
        &["hub"],
        &["check"],
    ];
    for (text, said) in cases {
        let ws = Ws::new();
        std::fs::create_dir_all(ws.state_dir()).unwrap();
        std::fs::write(ws.config_path(), text).unwrap();
        let files = || {
            let mut names: Vec<_> = std::fs::read_dir(ws.state_dir())
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            names.sort();
            names
        };
        let before = files();
        for args in commands {
            let out = ws.hookq(args).expect_code(CONFIG);
            let expected = format!("error: {}:{said}", ws.config_path().display());
            assert_eq!(
                out.stderr().lines().next(),
                Some(expected.as_str()),
                "{}",
                out.describe()
            );
            assert!(
                !out.stdout().contains("Zx9Qv7Lk") && !out.stderr().contains("Zx9Qv7Lk"),
                "{}",
                out.describe()
            );
            assert!(!ws.db_path().exists(), "{args:?} made an SQLite queue");
            assert_eq!(files(), before, "{args:?} wrote");
        }
    }
}
