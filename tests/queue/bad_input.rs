//! The hostile end of the bad-input corpus, beyond the malformed configs and ids of
//! `cli_errors.rs`: huge values, a 10 MB config, 10,000-character ids, damaged databases, a
//! read-only state dir, a full disk, and a database held by another writer. Each gets one clear
//! `error:` line naming what and where, a non-zero exit, and every pending point stays pending.

use crate::support::queue as common;
use crate::support::skipped;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;

use common::{HOOKQ, Ws, fixtures};

/// A workspace with a valid config and one point pending for task `t1`.
fn ws_with_pending() -> Ws {
    let ws = Ws::init();
    ws.write_config("after_fail = ['echo ran >> out']");
    ws.hookq(&["task", "add", "t1", "--plan", "p"]).ok();
    ws.hookq(&["task", "move", "t1", "failed.x", "--no-run"])
        .ok();
    assert_eq!(ws.pending().len(), 1);
    ws
}

/// Exactly one `error:` line (hints aside) that starts with `start`; returns it.
#[track_caller]
fn one_error(out: &common::Out, start: &str) -> String {
    let stderr = out.stderr();
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.starts_with("hint: "))
        .collect();
    assert_eq!(errors.len(), 1, "{}", out.describe());
    assert!(
        errors[0].starts_with(start),
        "expected {start:?}\n{}",
        out.describe()
    );
    assert!(errors[0].len() < 400, "a short line: {}", errors[0]);
    errors[0].to_owned()
}

#[test]
fn huge_and_out_of_range_numbers_name_their_key() {
    for (fixture, key) in [
        (
            "timeout_huge.toml",
            "3: gate.command_timeout_secs: must be a whole number",
        ),
        ("timeout_overflow.toml", "3: gate.command_timeout_secs: "),
        (
            "grace_huge.toml",
            "3: gate.kill_grace_secs: must be a whole number",
        ),
        (
            "max_runs_zero.toml",
            "2: queue.max_interrupted_runs: must be a whole number",
        ),
        (
            "timeout_hex_zero.toml",
            "2: gate.command_timeout_secs: must be a whole number",
        ),
    ] {
        let ws = ws_with_pending();
        ws.write_config_text(&std::fs::read(fixtures().join("config/bad").join(fixture)).unwrap());
        let before = ws.snapshot();
        let out = ws.hookq(&["run"]).expect_code(3);
        one_error(
            &out,
            &format!("error: {}:{key}", ws.config_path().display()),
        );
        assert_eq!(ws.snapshot(), before, "{fixture}");
    }
}

#[test]
fn a_ten_megabyte_config_is_refused_unread() {
    let ws = ws_with_pending();
    let mut big = b"[hooks]\nafter_fail = ['true']\n".to_vec();
    big.resize(10 * 1024 * 1024, b'#');
    ws.write_config_text(&big);
    let before = ws.snapshot();
    let out = ws.hookq(&["run"]).expect_code(3);
    one_error(
        &out,
        &format!("error: {}: file is larger than", ws.config_path().display()),
    );
    assert_eq!(ws.snapshot(), before);
}

#[test]
fn ten_thousand_character_ids_are_refused_with_a_short_message() {
    let ws = ws_with_pending();
    let before = ws.snapshot();
    let long = "x".repeat(10_000);
    for args in [
        vec!["task", "add", long.as_str(), "--plan", "p"],
        vec!["task", "add", "t2", "--plan", long.as_str()],
        vec!["task", "move", long.as_str(), "failed.y"],
        vec!["task", "show", long.as_str()],
        vec!["plan", "cancel", long.as_str()],
    ] {
        let out = ws.hookq(&args).expect_code(2);
        let line = one_error(&out, "error: invalid ");
        assert!(line.contains("(cut)"), "{line}");
    }
    assert_eq!(ws.snapshot(), before);
}

/// Replaces arc.db with `bytes` (and removes its WAL files) and checks every command refuses it.
fn damaged(bytes: Vec<u8>, says: &str) {
    let ws = ws_with_pending();
    let db = ws.db_path();
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
    std::fs::write(&db, &bytes).unwrap();
    for args in [
        &["queue"][..],
        &["run"],
        &["task", "list"],
        &["task", "move", "t1", "failed.y"],
    ] {
        let out = ws.hookq(args).expect_code(5);
        one_error(&out, &format!("error: {}: {says}", db.display()));
    }
    assert_eq!(
        std::fs::read(&db).unwrap(),
        bytes,
        "hookq never rewrites a damaged database"
    );
    assert!(!ws.root().join("out").exists(), "no hook ran");
}

#[test]
fn random_bytes_as_a_database() {
    let mut bytes = vec![0u8; 64 * 1024];
    let mut x: u32 = 0x9e37_79b9;
    for b in &mut bytes {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        *b = x as u8;
    }
    damaged(bytes, "database is corrupt or not a hookq database");
}

#[test]
fn a_truncated_database() {
    let ws = ws_with_pending();
    // Fold the WAL into the main file, then keep only its first part.
    ws.db()
        .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
        .unwrap();
    let whole = std::fs::read(ws.db_path()).unwrap();
    assert!(whole.len() > 8192);
    damaged(
        whole[..whole.len() / 2 + 100].to_vec(),
        "database is corrupt or not a hookq database",
    );
}

/// Runs `hookq ARGS` as an unprivileged user (the tests run as root, which ignores
/// permissions), through util-linux's `setpriv`.
fn as_nobody(ws: &Ws, args: &[&str]) -> std::process::Output {
    let mut cmd = ws.command("setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", HOOKQ])
        .args(args)
        .stdin(Stdio::null());
    cmd.output().unwrap()
}

fn chmod_tree(dir: &Path, dirs: u32, files: u32) {
    use std::os::unix::fs::PermissionsExt;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            chmod_tree(&p, dirs, files);
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(dirs)).unwrap();
        } else {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(files)).unwrap();
        }
    }
}

#[test]
fn a_read_only_state_dir() {
    if !rustix::process::geteuid().is_root() {
        skipped(
            "a_read_only_state_dir",
            "switching to an unprivileged user needs root",
        );
        return;
    }
    let ws = ws_with_pending();
    let before = ws.snapshot();
    // Everyone may read and enter, nobody but root may write.
    for d in [ws.base(), ws.root(), &ws.root().join(".radian")] {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    chmod_tree(&ws.root().join(".radian"), 0o755, 0o644);
    for args in [
        &["run"][..],
        &["task", "move", "t1", "failed.y"],
        &["queue"],
    ] {
        let out = as_nobody(&ws, args);
        assert_eq!(
            out.status.code(),
            Some(5),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        let first = stderr.lines().next().unwrap();
        assert!(
            first.starts_with(&format!(
                "error: {}: database is read-only",
                ws.db_path().display()
            )),
            "{first}"
        );
    }
    // A state dir that cannot even be entered says so rather than "no workspace".
    chmod_tree(&ws.root().join(".radian"), 0o700, 0o600);
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            ws.root().join(".radian"),
            std::fs::Permissions::from_mode(0o700),
        )
        .unwrap();
    }
    let out = as_nobody(&ws, &["queue"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with(&format!(
            "error: cannot access {}",
            ws.state_dir().display()
        )),
        "{stderr}"
    );
    assert_eq!(ws.snapshot(), before);
    assert_eq!(ws.pending().len(), 1);
}

#[test]
fn a_database_held_by_another_writer_beyond_busy_timeout() {
    let ws = ws_with_pending();
    let holder = ws.db();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let before_pending = ws.pending();
    for args in [
        &["task", "move", "t1", "failed.y"][..],
        &["task", "add", "t9", "--plan", "p"],
        &["run"],
    ] {
        let out = ws
            .hookq_env(args, &[("HOOKQ_BUSY_TIMEOUT_MS", "300")])
            .expect_code(5);
        one_error(
            &out,
            &format!(
                "error: {}: database is locked by another writer (waited 300 ms)",
                ws.db_path().display()
            ),
        );
    }
    // Reading still works while the writer holds it.
    ws.hookq_env(&["queue"], &[("HOOKQ_BUSY_TIMEOUT_MS", "300")])
        .ok();
    holder.execute_batch("ROLLBACK").unwrap();
    assert_eq!(ws.pending(), before_pending);
    assert_eq!(ws.phase("t1").as_deref(), Some("failed.x"));
    ws.hookq(&["run"]).ok();
    assert!(ws.pending().is_empty());
}

/// `hookq ARGS` with no file allowed to grow past `bytes` (RLIMIT_FSIZE): a full disk as one
/// process sees it, every write past the limit failing with EFBIG.
// A test sets up the processes it drives with calls only the C library offers; the crate
// itself keeps them in `exec::sys`.
#[allow(unsafe_code)]
fn hookq_with_file_size_limit(ws: &Ws, args: &[&str], bytes: u64) -> std::process::Output {
    let mut cmd = ws.command(HOOKQ);
    cmd.args(args).stdin(Stdio::null());
    // SAFETY: setrlimit is async-signal-safe; it runs in the child between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let limit = rustix::process::Rlimit {
                current: Some(bytes),
                maximum: None,
            };
            rustix::process::setrlimit(rustix::process::Resource::Fsize, limit)
                .map_err(std::io::Error::from)
        });
    }
    cmd.output().unwrap()
}

/// `hookq init` on a disk that fills while it writes `config.toml` leaves no config rather than
/// a short one: a short or empty config, which the next `init` would keep, clears every point
/// without running it.
#[test]
fn init_never_leaves_a_short_config() {
    let ws = Ws::new();
    let out = hookq_with_file_size_limit(&ws, &["init"], 100);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "error: cannot write {}",
            ws.config_path().display()
        )),
        "{stderr}"
    );
    // Nothing left behind: not the state dir init made either.
    let left: Vec<_> = std::fs::read_dir(ws.root())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "nothing left behind: {left:?}");
    let out = ws.hookq(&["init"]).ok();
    assert!(out.stdout().contains("wrote"), "{}", out.describe());
    let check = ws.hookq(&["check"]).ok();
    assert!(
        check.stdout().contains("after_merge: 3 command(s)"),
        "{}",
        check.describe()
    );
}

/// A full disk, as a file-size limit: every write past one byte fails with EFBIG. Before hookq
/// handled SIGXFSZ, the limit killed it mid-write instead of giving an error.
#[test]
fn a_full_disk_as_a_file_size_limit() {
    let ws = ws_with_pending();
    // Leave the WAL empty so the next write must grow a file.
    ws.db()
        .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
        .unwrap();
    let before = ws.snapshot();
    for args in [&["task", "move", "t1", "failed.y"][..], &["run"]] {
        let out = hookq_with_file_size_limit(&ws, args, 1);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(5),
            "{args:?} ended {:?}: {stderr}",
            out.status
        );
        assert!(
            stderr.starts_with(&format!(
                "error: {}: disk I/O error",
                ws.db_path().display()
            )),
            "{stderr}"
        );
    }
    assert_eq!(ws.snapshot(), before);
    ws.hookq(&["run"]).ok();
    assert!(ws.pending().is_empty());
}

/// A disk that fills while a hook writes its log (a 1 MiB file-size limit, past which every
/// write fails with EFBIG): the command is not killed halfway but runs to its end, its output
/// from there on discarded; then the pass stops with the log's error, the point still pending.
// A test sets up the processes it drives with calls only the C library offers; the crate
// itself keeps them in `exec::sys`.
#[allow(unsafe_code)]
#[test]
fn a_log_that_fills_the_disk_mid_command() {
    const LIMIT: u64 = 1 << 20;
    let ws = Ws::init();
    ws.write_config("after_fail = ['head -c 3000000 /dev/zero; : > done']");
    ws.hookq(&["task", "add", "t1", "--plan", "p"]).ok();
    ws.hookq(&["task", "move", "t1", "failed.x", "--no-run"])
        .ok();
    let mut cmd = ws.command(HOOKQ);
    cmd.arg("run").stdin(Stdio::null());
    // SAFETY: setrlimit is async-signal-safe; it runs in the child between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let limit = rustix::process::Rlimit {
                current: Some(LIMIT),
                maximum: None,
            };
            rustix::process::setrlimit(rustix::process::Resource::Fsize, limit)
                .map_err(std::io::Error::from)
        });
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let log = ws.log_path("t1", "after_fail", 1);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with(&format!("error: cannot write log {}: ", log.display())),
        "{stderr}"
    );
    assert!(ws.root().join("done").exists(), "the hook was cut short");
    assert_eq!(std::fs::metadata(&log).unwrap().len(), LIMIT);
    assert_eq!(ws.pending().len(), 1);
    // With room again, the point runs and is cleared.
    std::fs::remove_file(ws.root().join("done")).unwrap();
    ws.hookq(&["run"]).ok();
    assert!(ws.root().join("done").exists());
    assert!(ws.pending().is_empty());
}

/// A 4 MiB tmpfs mounted over `dir`, where the machine lets the test mount one (root, as in CI);
/// unmounted when dropped. `None`, once [`skipped`] has said so, elsewhere:
/// `a_full_disk_as_a_file_size_limit` covers the failure there.
fn small_tmpfs(test: &str, dir: &Path) -> Option<Unmount> {
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=4m", "tmpfs"])
        .arg(dir)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        skipped(
            test,
            "cannot mount a tmpfs here (a_full_disk_as_a_file_size_limit covers the failure)",
        );
        return None;
    }
    Some(Unmount(dir.to_path_buf()))
}

/// A mount, lazily unmounted when dropped.
struct Unmount(std::path::PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

/// A really full file system, where the machine lets the test mount a small tmpfs: recording
/// fails cleanly, nothing pending is lost, and after space is freed the point runs.
#[test]
fn a_full_tmpfs() {
    let mnt = tempfile::tempdir().unwrap();
    let Some(_mounted) = small_tmpfs("a_full_tmpfs", mnt.path()) else {
        return;
    };
    let root = mnt.path();
    let hookq = |args: &[&str]| {
        std::process::Command::new(HOOKQ)
            .arg("-C")
            .arg(root)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    assert!(hookq(&["init"]).status.success());
    std::fs::write(
        root.join(".radian/arc/config.toml"),
        "[hooks]\nafter_fail = ['echo ran']\n",
    )
    .unwrap();
    assert!(
        hookq(&["task", "add", "t1", "--plan", "p"])
            .status
            .success()
    );
    assert!(
        hookq(&["task", "move", "t1", "failed.x", "--no-run"])
            .status
            .success()
    );
    let filler = root.join("filler");
    let _ = std::fs::write(&filler, vec![0u8; 8 << 20]);
    let out = hookq(&["task", "move", "t1", "failed.y", "--no-run"]);
    assert_eq!(
        out.status.code(),
        Some(5),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = hookq(&["run"]);
    assert_ne!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: "));
    std::fs::remove_file(&filler).unwrap();
    let out = hookq(&["run"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log =
        std::fs::read_to_string(root.join(".radian/arc/runs/t1/hooks/after_fail-01.log")).unwrap();
    assert!(
        log.contains("ARC_STATE=failed.x") && log.contains("\nran\n"),
        "{log}"
    );
    let out = hookq(&["queue", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["pending"].as_array().unwrap().len(), 0);
}

/// A hub meets a full disk: its pass fails with an `error:` line, the hub keeps running, and once
/// space is freed the next commit wakes it and the point runs. (Taking the runner lock writes the
/// holder into `runner.lock`; a file emptied on release would need a new block for that.)
#[test]
fn a_hub_outlives_a_full_disk() {
    let ws = Ws::new();
    let Some(_mounted) = small_tmpfs("a_hub_outlives_a_full_disk", ws.root()) else {
        return;
    };
    ws.hookq(&["init"]).ok();
    ws.write_config("after_fail = ['echo ran']");
    ws.hookq(&["task", "add", "t0", "--plan", "p"]).ok();
    ws.hookq(&["task", "add", "t1", "--plan", "p"]).ok();
    ws.hookq(&["task", "move", "t0", "failed.x", "--no-run"])
        .ok();
    let mut hub = ws.spawn(&["hub"]);
    ws.eventually("the hub's first pass to end", || {
        ws.pending().is_empty() && !ws.read(ws.lock_path()).contains("pid ")
    });
    // The disk fills while the hub waits; a point recorded just before wakes it.
    hub.signal(rustix::process::Signal::STOP);
    ws.hookq(&["task", "move", "t1", "failed.x", "--no-run"])
        .ok();
    let filler = ws.root().join("filler");
    let _ = std::fs::write(&filler, vec![0u8; 8 << 20]);
    hub.signal(rustix::process::Signal::CONT);
    ws.eventually("the hub's pass to fail on the full disk", || {
        hub.stderr_so_far().contains("error: ")
    });
    assert_eq!(ws.pending().len(), 1, "{}", hub.stderr_so_far());
    std::fs::remove_file(&filler).unwrap();
    ws.hookq(&["task", "add", "t2", "--plan", "p"]).ok();
    ws.eventually("the hub to run the point once space was freed", || {
        hub.exited() || ws.pending().is_empty()
    });
    assert!(!hub.exited(), "the hub ended:\n{}", hub.stderr_so_far());
    assert!(
        ws.read(ws.log_path("t1", "after_fail", 1))
            .contains("\nran\n"),
        "{}",
        hub.stderr_so_far()
    );
    hub.signal(rustix::process::Signal::TERM);
    let out = hub.wait_within(crate::support::HANG);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    let errors = out.errors();
    assert_eq!(errors.len(), 1, "one failed pass: {}", out.describe());
    assert!(errors[0].contains("No space left"), "{}", out.describe());
}
