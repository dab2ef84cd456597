//! How points are drained and how one command runs, driven through the CLI.

use crate::support::queue as common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use common::{Config, Ws, every_point, every_point_runs, log_runs, parse_env0, process_gone};
use fs2::FileExt;

/// A workspace with task `t1` of plan `p` in `todo.ready`.
fn ws_with(hooks: &str) -> Ws {
    let ws = Ws::init();
    ws.write_config(hooks);
    ws.hookq(&["task", "add", "t1", "--plan", "p"]).ok();
    ws
}

#[test]
fn points_run_in_recorded_order() {
    let ws = Ws::init();
    ws.git_init();
    ws.write_config(&every_point_runs(&[
        r#"echo "$ARC_HOOK $ARC_TASK 1" >> order.log"#,
        r#"echo "$ARC_HOOK $ARC_TASK 2" >> order.log"#,
    ]));
    for t in ["a", "b", "c"] {
        ws.hookq(&["task", "add", t, "--plan", "p"]).ok();
    }
    let moves = [
        ("b", "review.awaiting_human"),
        ("a", "review.rework_pending"),
        ("c", "done.merged"),
        ("a", "failed.x"),
        ("b", "review.rework_pending"),
        ("c", "todo.proposed"),
        ("b", "done.merged"),
    ];
    let mut expected = Vec::new();
    for (task, phase) in moves {
        ws.hookq(&["task", "move", task, phase, "--no-run"]).ok();
        let point = ws.pending().last().unwrap().point.clone();
        expected.push(format!("{point} {task} 1"));
        expected.push(format!("{point} {task} 2"));
    }
    let ids: Vec<i64> = ws.pending().iter().map(|p| p.id).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    assert!(!ws.root().join("order.log").exists());

    let out = ws.hookq(&["run"]).ok();
    assert!(
        out.stdout()
            .contains("ran 7 point(s): 14 command(s), 0 failed"),
        "{}",
        out.describe()
    );
    assert_eq!(ws.lines("order.log"), expected);
    let occurrences: Vec<i64> = ws.history().iter().map(|h| h.occurrence).collect();
    let mut in_order = occurrences.clone();
    in_order.sort();
    assert_eq!(occurrences, in_order);
}

#[test]
fn config_is_read_when_the_point_runs() {
    let ws = ws_with("after_awaiting_human = ['echo old >> out']");
    ws.hookq(&["task", "move", "t1", "review.awaiting_human", "--no-run"])
        .ok();
    ws.write_config("after_awaiting_human = ['echo new >> out', 'echo newer >> out']");
    ws.hookq(&["run"]).ok();
    assert_eq!(ws.lines("out"), ["new", "newer"]);
    let commands: Vec<Option<i64>> = ws.history().iter().map(|h| h.command_index).collect();
    assert_eq!(commands, [Some(1), Some(2)]);
}

#[test]
fn a_point_is_cleared_only_after_its_commands_ran() {
    // The command looks at the queue while it runs: its own point is still pending then.
    let ws =
        ws_with(r#"after_fail = ['"$HOOKQ" queue --json > during.json', 'echo second > second']"#);
    ws.hookq(&["task", "move", "t1", "failed.x", "--no-run"])
        .ok();
    let id = ws.pending()[0].id;
    ws.hookq(&["run"]).ok();

    let during: serde_json::Value = serde_json::from_str(&ws.read("during.json")).unwrap();
    let pending = during["pending"].as_array().unwrap();
    assert_eq!(pending.len(), 1, "{during}");
    assert_eq!(pending[0]["id"], id);
    assert_eq!(
        pending[0]["passes"], 1,
        "the pass marked it started before running it"
    );
    assert!(
        during["lock"]["pid"].as_u64().is_some() && during["lock"]["alive"] == true,
        "the runner holds the lock: {during}"
    );

    assert!(ws.pending().is_empty());
    let history = ws.history();
    assert_eq!(history.len(), 2);
    assert!(
        history
            .iter()
            .all(|h| h.occurrence == id && h.outcome == "ok" && h.passes == 1)
    );
    assert_eq!(ws.read("second"), "second\n");
}

#[test]
fn a_point_without_commands_is_cleared_by_a_config_written_a_while_ago() {
    let ws = ws_with("after_merge = ['echo merged >> out']\nafter_rework = []");
    ws.hookq(&["task", "move", "t1", "review.rework_pending", "--no-run"])
        .ok();
    assert_eq!(ws.pending().len(), 1);
    // Written just now, the config may be half-written: the point stays pending, unstarted,
    // and the pass says so.
    let out = ws.hookq(&["run"]).expect_code(0);
    assert_eq!(out.stdout(), "", "{}", out.describe());
    assert_eq!(
        out.stderr().lines().collect::<Vec<_>>(),
        [
            "note: left 1 point(s) pending: config.toml was written less than 5s ago and may be half-written, too recently to clear a point without running it; a later pass decides"
        ],
        "{}",
        out.describe()
    );
    assert_eq!(ws.pending().len(), 1);
    assert_eq!(ws.pending()[0].passes, 0);
    assert!(ws.history().is_empty());
    ws.settle_config();
    let out = ws.hookq(&["run"]).ok();
    assert_eq!(out.stderr(), "", "{}", out.describe());
    assert!(
        out.stdout().contains("ran 1 point(s): 0 command(s)"),
        "{}",
        out.describe()
    );
    assert!(ws.pending().is_empty());
    let history = ws.history();
    assert_eq!(history.len(), 1);
    assert_eq!(
        (
            history[0].outcome.as_str(),
            history[0].command_index,
            history[0].log_path.as_deref()
        ),
        ("empty", None, None)
    );
    assert!(
        !ws.state_dir().join("runs").exists(),
        "nothing ran, so no log"
    );
}

#[test]
fn task_add_never_runs_a_hook() {
    let ws = Ws::init();
    ws.write_config("after_proposed = ['echo ran >> out']");
    ws.task_add("t1", "p", "todo.proposed").ok();
    ws.task_add("t2", "p", "todo.proposed").ok();
    assert!(
        !ws.root().join("out").exists(),
        "the lock was free, still nothing ran"
    );
    assert!(!ws.state_dir().join("runs").exists());
    assert_eq!(ws.pending().len(), 2);
    assert!(ws.history().is_empty());
}

#[test]
fn task_move_runs_pending_hooks_when_the_lock_is_free() {
    let ws = Ws::init();
    ws.write_config(&every_point(r#"echo "$ARC_HOOK $ARC_TASK" >> out"#));
    ws.task_add("t1", "p", "todo.proposed").ok();
    ws.hookq(&["task", "add", "t2", "--plan", "p"]).ok();
    ws.hookq(&["task", "move", "t2", "failed.x", "--no-run"])
        .ok();
    assert_eq!(ws.pending().len(), 2);
    // Its own point and everything recorded before it.
    let out = ws
        .hookq(&["task", "move", "t2", "review.awaiting_human"])
        .ok();
    assert!(
        out.stdout().contains("ran 3 point(s)"),
        "{}",
        out.describe()
    );
    assert_eq!(
        ws.lines("out"),
        [
            "after_proposed t1",
            "after_fail t2",
            "after_awaiting_human t2"
        ]
    );
    assert!(ws.pending().is_empty());
}

#[test]
fn every_owner_transition_drains_and_reports_as_run_does() {
    let ws = ws_with(&every_point("true"));
    ws.write(&Config {
        max_interrupted_runs: 1,
        ..Config::hooks(&every_point("true"))
    });
    ws.settle_config();
    ws.git_init();
    ws.hookq(&["task", "add", "t2", "--plan", "done"]).ok();
    ws.hookq(&["task", "move", "t2", "done.merged", "--no-run"])
        .ok();
    ws.hookq(&["task", "move", "t1", "failed.x", "--no-run"])
        .ok();
    // t1's point was started once before and not cleared: the next pass parks it.
    ws.db()
        .execute("UPDATE pending_hooks SET passes = 1 WHERE task = 't1'", [])
        .unwrap();
    // A plan with no unfinished task: nothing ends, what is pending runs all the same.
    let out = ws.hookq(&["plan", "cancel", "done"]).expect_code(0);
    assert_eq!(
        out.warnings().len(),
        1,
        "the parked point: {}",
        out.describe()
    );
    assert!(
        out.stdout()
            .contains("ran 2 point(s): 1 command(s), 0 failed, 1 parked"),
        "{}",
        out.describe()
    );
    assert!(ws.pending().is_empty());
}

#[test]
fn no_run_leaves_the_point_pending() {
    let ws = ws_with("after_awaiting_human = ['echo ran >> out']");
    ws.hookq(&["task", "move", "t1", "review.awaiting_human", "--no-run"])
        .ok();
    assert!(!ws.root().join("out").exists());
    let pending = ws.pending();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].passes, 0);
    ws.hookq(&["run"]).ok();
    assert_eq!(ws.lines("out"), ["ran"]);
}

#[test]
fn task_move_leaves_points_to_the_lock_holder() {
    let ws = ws_with("after_awaiting_human = ['echo ran >> out']");
    let lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(ws.lock_path())
        .unwrap();
    lock.lock_exclusive().unwrap();

    // Generous: only there to catch a move that waits for the lock.
    let out = ws.hookq_within(
        &["task", "move", "t1", "review.awaiting_human"],
        &[],
        Duration::from_secs(15),
    );
    let out = out.ok();
    assert!(
        out.stdout().contains("runner lock is held elsewhere"),
        "{}",
        out.describe()
    );
    assert_eq!(
        ws.phase("t1").as_deref(),
        Some("review.awaiting_human"),
        "the transition itself is written"
    );
    let pending = ws.pending();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].passes, 0);
    assert!(!ws.root().join("out").exists());

    // A cron pass that may not wait gives up with its own exit code, leaving the point.
    let out = ws.hookq(&["run", "--wait", "1"]).expect_code(6);
    assert!(
        out.errors()[0].contains("runner.lock"),
        "{}",
        out.describe()
    );
    assert_eq!(ws.pending(), pending);

    FileExt::unlock(&lock).unwrap();
    drop(lock);
    ws.hookq(&["run"]).ok();
    assert_eq!(ws.lines("out"), ["ran"]);
    assert!(ws.pending().is_empty());
}

#[test]
fn a_point_left_to_a_holder_on_its_way_out_still_runs() {
    // A `task move` that commits just as a `run` pass ends finds the lock still held and leaves
    // its point to that holder, which has already looked at the queue for the last time: on
    // releasing the lock, the holder sees that another process committed and drains again.
    // Without that second look, about one round in fifteen would leave the point pending until
    // the next pass.
    let ws = ws_with("after_awaiting_human = []\nafter_rework = []");
    ws.settle_config();
    let mut held = 0;
    for round in 0..200 {
        let run = ws.spawn(&["run"]);
        let to = if round % 2 == 0 {
            "review.awaiting_human"
        } else {
            "review.rework_pending"
        };
        let moved = ws.hookq(&["task", "move", "t1", to]).ok();
        run.wait_within(crate::support::HANG).ok();
        if moved.stdout().contains("held elsewhere") {
            held += 1;
        }
        let pending = ws.pending();
        assert!(
            pending.is_empty(),
            "round {round}: left pending {pending:?}; the move said {}",
            moved.describe()
        );
    }
    eprintln!("{held} of 200 moves found the lock held and left their point to the holder");
}

#[test]
fn a_failing_second_look_is_a_warning_after_the_first_pass_is_reported() {
    // t1's hook records a point for t2 (left to this holder: the lock is held), then makes the
    // lock file unusable (a directory where it was). The pass runs t2's point too; the look
    // after releasing, which sees t2's commit, cannot take the lock again. That is one warning:
    // the pass's own work is reported and `run` exits 0.
    let ws = ws_with(
        r#"after_fail = ['"$HOOKQ" task move t2 review.awaiting_human; rm .radian/arc/runner.lock; mkdir .radian/arc/runner.lock']
after_awaiting_human = ['echo "$ARC_TASK" >> ran.out']"#,
    );
    ws.hookq(&["task", "add", "t2", "--plan", "p"]).ok();
    ws.hookq(&["task", "move", "t1", "failed.x", "--no-run"])
        .ok();
    let out = ws.hookq(&["run"]).expect_code(0);
    assert!(
        out.stdout()
            .contains("ran 2 point(s): 2 command(s), 0 failed"),
        "{}",
        out.describe()
    );
    let warnings = out.warnings();
    assert_eq!(warnings.len(), 1, "{}", out.describe());
    assert!(
        warnings[0].contains("left pending") && warnings[0].contains("runner.lock"),
        "{}",
        out.describe()
    );
    assert_eq!(ws.lines("ran.out"), ["t2"]);
    assert!(ws.pending().is_empty());
}

#[test]
fn a_hook_run_from_a_terminal_has_no_terminal_to_wait_on() {
    // `task move` typed in a terminal: its hook runs in a session of its own, without a
    // controlling terminal, so a command that would prompt there (git asking for credentials,
    // ssh for a host key) fails at once instead of being stopped until its timeout. `script`
    // gives `hookq` a terminal of its own. The hook writes whether it could open a terminal,
    // then its pid, process group, session and terminal (`tty_nr`) from `/proc`.
    let ws = ws_with(
        r#"after_awaiting_human = ['if (: > /dev/tty) 2>/dev/null; then echo terminal; else echo none; fi >> tty.out; cut -d" " -f1,5,6,7 /proc/$$/stat >> tty.out']"#,
    );
    let mut cmd = ws.command("script");
    cmd.args([
        "-qec",
        r#""$HOOKQ" task move t1 review.awaiting_human"#,
        "/dev/null",
    ]);
    let out = ws
        .spawn_cmd(cmd, &["task", "move", "(in script)"])
        .wait_within(crate::support::HANG);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    let lines = ws.lines("tty.out");
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0], "none");
    let ids: Vec<&str> = lines[1].split(' ').collect();
    assert_eq!(
        ids[1..],
        [ids[0], ids[0], "0"],
        "leads a process group and a session of its own, no terminal"
    );
}

const ARC_VARS: [&str; 8] = [
    "ARC_TASK",
    "ARC_PLAN",
    "ARC_ATTEMPT",
    "ARC_BRANCH",
    "ARC_WORKTREE",
    "ARC_TARGET_BRANCH",
    "ARC_STATE",
    "ARC_HOOK",
];

/// The runner's own environment, with variables a hook must not inherit.
const HOSTILE: [(&str, &str); 7] = [
    ("ARC_MERGED_SHA", "feedface"),
    ("ARC_TASK", "intruder"),
    ("ARC_LEFTOVER", "x"),
    ("GIT_DIR", "/nonexistent/.git"),
    ("GIT_WORK_TREE", "/nonexistent"),
    ("GIT_INDEX_FILE", "/nonexistent/index"),
    ("KEEP_ME", "kept"),
];

#[test]
fn hooks_see_the_whole_environment_table() {
    let ws = Ws::init();
    let dump = r#"sh "$FIXTURES/hooks/dump-env.sh""#;
    ws.write(&Config {
        main_branch: "trunk".into(),
        ..Config::hooks(&every_point(dump))
    });
    let env_of = |name: &str| {
        parse_env0(
            &ws.read_bytes(format!("env-{name}"))
                .unwrap_or_else(|| panic!("no env-{name}")),
        )
    };
    let arc_keys = |env: &std::collections::BTreeMap<String, String>| -> BTreeSet<String> {
        env.keys()
            .filter(|k| k.starts_with("ARC_"))
            .cloned()
            .collect()
    };
    let expected_keys = |merge: bool| -> BTreeSet<String> {
        let mut keys: BTreeSet<String> = ARC_VARS.iter().map(|s| s.to_string()).collect();
        if merge {
            keys.insert("ARC_MERGED_SHA".into());
        }
        keys
    };
    let root = ws.root().to_str().unwrap().to_owned();

    ws.hookq(&["task", "add", "t1", "--plan", "plan-7"]).ok();
    ws.hookq_env(
        &[
            "task",
            "move",
            "t1",
            "done.merged",
            "--merged-sha",
            "abc123",
            "--attempt",
            "3",
        ],
        &HOSTILE,
    )
    .ok();
    let env = env_of("after_merge-t1");
    assert_eq!(arc_keys(&env), expected_keys(true));
    assert_eq!(env["ARC_TASK"], "t1");
    assert_eq!(env["ARC_PLAN"], "plan-7");
    assert_eq!(env["ARC_ATTEMPT"], "t1-3");
    assert_eq!(env["ARC_BRANCH"], "work/t1");
    assert_eq!(
        env["ARC_WORKTREE"],
        format!("{root}/.radian/arc/worktrees/t1")
    );
    assert!(env["ARC_WORKTREE"].starts_with('/'));
    assert_eq!(
        env["ARC_TARGET_BRANCH"], "trunk",
        "repository.main_branch without integration.target_branch"
    );
    assert_eq!(env["ARC_MERGED_SHA"], "abc123");
    assert_eq!(env["ARC_STATE"], "done.merged");
    assert_eq!(env["ARC_HOOK"], "after_merge");
    for gone in ["GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "ARC_LEFTOVER"] {
        assert!(!env.contains_key(gone), "{gone} leaked into the hook");
    }
    assert_eq!(
        env["KEEP_ME"], "kept",
        "the runner's own environment passes through"
    );
    assert_eq!(env["HOME"], ws.home().to_str().unwrap());
    assert_eq!(
        ws.read("cwd-after_merge-t1").trim_end(),
        root,
        "hooks run in the workspace root"
    );
    assert_eq!(ws.read("stdin-after_merge-t1").trim_end(), "/dev/null");

    // Record a point, let the task move on before it runs, change the target branch.
    ws.hookq_env(
        &["task", "move", "t1", "review.awaiting_human", "--no-run"],
        &HOSTILE,
    )
    .ok();
    ws.hookq_env(
        &["task", "move", "t1", "review.rework_pending", "--no-run"],
        &HOSTILE,
    )
    .ok();
    ws.hookq_env(
        &[
            "task",
            "add",
            "t2",
            "--plan",
            "p2",
            "--phase",
            "todo.proposed",
        ],
        &HOSTILE,
    )
    .ok();
    ws.write(&Config {
        main_branch: "trunk".into(),
        target_branch: Some("release".into()),
        ..Config::hooks(&every_point(dump))
    });
    ws.hookq_env(&["run"], &HOSTILE).ok();

    let env = env_of("after_awaiting_human-t1");
    assert_eq!(
        arc_keys(&env),
        expected_keys(false),
        "ARC_MERGED_SHA is for after_merge only"
    );
    assert_eq!(
        env["ARC_STATE"], "review.awaiting_human",
        "the state recorded, not the task's phase now"
    );
    assert_eq!(env["ARC_TARGET_BRANCH"], "release");
    assert_eq!(env["ARC_ATTEMPT"], "t1-3");
    assert_eq!(env["ARC_TASK"], "t1");
    assert!(!env.contains_key("GIT_DIR"));
    let env = env_of("after_rework-t1");
    assert_eq!(arc_keys(&env), expected_keys(false));
    assert_eq!(env["ARC_STATE"], "review.rework_pending");
    assert_eq!(env["ARC_HOOK"], "after_rework");
    let env = env_of("after_proposed-t2");
    assert_eq!(arc_keys(&env), expected_keys(false));
    assert_eq!(env["ARC_TASK"], "t2");
    assert_eq!(env["ARC_PLAN"], "p2");
    assert_eq!(env["ARC_ATTEMPT"], "t2-1");
    assert_eq!(
        env["ARC_WORKTREE"],
        format!("{root}/.radian/arc/worktrees/t2")
    );
    assert_eq!(env["ARC_STATE"], "todo.proposed");
    assert_eq!(ws.read("stdin-after_proposed-t2").trim_end(), "/dev/null");
}

#[test]
fn a_failing_command_warns_once_and_the_next_still_runs() {
    let ws = ws_with("after_fail = ['echo one >> out; exit 3', 'echo two >> out']");
    ws.hookq(&["task", "move", "t1", "failed.gate", "--no-run"])
        .ok();
    let occurrence = ws.pending()[0].id;

    let out = ws.hookq(&["run"]).expect_code(0);
    assert_eq!(ws.lines("out"), ["one", "two"]);
    let warnings = out.warnings();
    assert_eq!(warnings.len(), 1, "{}", out.describe());
    assert_eq!(out.stderr().lines().count(), 1, "{}", out.describe());
    let log = ws.log_path("t1", "after_fail", 1);
    let w = &warnings[0];
    for part in [
        "after_fail-01",
        "task t1",
        &format!("occurrence {occurrence}"),
        "failed",
        "exit 3",
        &log.display().to_string(),
    ] {
        assert!(w.contains(part), "{w:?} does not name {part:?}");
    }
    assert!(out.stdout().contains("1 failed"), "{}", out.describe());
    assert_eq!(
        ws.phase("t1").as_deref(),
        Some("failed.gate"),
        "hooks never change a task's phase"
    );
    assert!(ws.pending().is_empty());
    let h = ws.history();
    assert_eq!(h.len(), 2);
    assert_eq!(
        (h[0].outcome.as_str(), h[0].exit_code, h[0].command_index),
        ("failed", Some(3), Some(1))
    );
    assert_eq!(h[0].log_path.as_deref(), Some(log.to_str().unwrap()));
    assert_eq!(
        (h[1].outcome.as_str(), h[1].exit_code, h[1].command_index),
        ("ok", Some(0), Some(2))
    );
    let runs = log_runs(&std::fs::read(&log).unwrap());
    assert_eq!(runs.len(), 1);
    assert!(runs[0].body.is_empty(), "its output went to `out`");
    assert!(
        runs[0]
            .footer
            .as_deref()
            .unwrap()
            .starts_with("--- hookq exit 3 after ")
    );

    // The same through an owner transition: the move still succeeds.
    ws.hookq(&["task", "add", "t2", "--plan", "p"]).ok();
    let out = ws
        .hookq(&["task", "move", "t2", "failed.gate"])
        .expect_code(0);
    assert_eq!(out.warnings().len(), 1, "{}", out.describe());
    assert_eq!(ws.phase("t2").as_deref(), Some("failed.gate"));
}

#[test]
fn a_timed_out_command_and_its_whole_group_are_killed() {
    let ws = Ws::init();
    ws.write(&Config {
        // Room on a loaded machine for each command to write its pids and set its trap, and
        // for `echo next` to end by itself.
        timeout_secs: 5,
        grace_secs: 1,
        // A background grandchild keeps stdout open; the second ignores SIGTERM, so only
        // SIGKILL after the grace period ends it.
        ..Config::hooks(
            r#"after_fail = [
  'echo $$ > sh1.pid; sleep 300 & echo $! > bg1.pid; sleep 300',
  'trap "" TERM; echo $$ > sh2.pid; sleep 300 & echo $! > bg2.pid; sleep 300',
  'echo next >> out',
]"#,
        )
    });
    ws.hookq(&["task", "add", "t1", "--plan", "p"]).ok();
    ws.hookq(&["task", "move", "t1", "failed.x", "--no-run"])
        .ok();
    let started = Instant::now();
    let out = ws.hookq(&["run"]).expect_code(0);
    assert!(
        started.elapsed() < Duration::from_secs(150),
        "the run waited for the sleeps: {:?}",
        started.elapsed()
    );

    let warnings = out.warnings();
    assert_eq!(
        warnings.len(),
        2,
        "one line per timed-out command: {}",
        out.describe()
    );
    assert!(
        warnings[0].contains("after_fail-01") && warnings[0].contains("): timed out (SIGTERM"),
        "{}",
        warnings[0]
    );
    assert!(
        warnings[1].contains("after_fail-02") && warnings[1].contains("): timed out (SIGTERM"),
        "{}",
        warnings[1]
    );
    // The outcome is said once, in words: not "timed_out (timed out (...))".
    assert!(
        warnings.iter().all(|w| !w.contains("timed_out")),
        "{warnings:?}"
    );
    assert_eq!(ws.lines("out"), ["next"]);
    let h = ws.history();
    let outcomes: Vec<&str> = h.iter().map(|h| h.outcome.as_str()).collect();
    assert_eq!(outcomes, ["timed_out", "timed_out", "ok"]);
    assert_eq!((h[0].exit_code, h[0].signal), (None, None));
    let footer = log_runs(&std::fs::read(ws.log_path("t1", "after_fail", 2)).unwrap())[0]
        .footer
        .clone()
        .unwrap();
    assert!(footer.contains("SIGKILL"), "{footer}");

    for f in ["sh1.pid", "bg1.pid", "sh2.pid", "bg2.pid"] {
        let pid: i32 = ws.read(f).trim().parse().unwrap();
        // The kill is already sent; allow the kernel a moment on a loaded machine.
        ws.eventually(&format!("{f} ({pid}) to be gone"), || process_gone(pid));
    }
}

#[test]
fn non_utf8_output_is_kept_byte_for_byte() {
    let ws = ws_with(
        r#"after_fail = ['printf "\377\376\000abc"', 'printf "\377\376\000abc\r\n" >&2; printf "\303\n"']"#,
    );
    ws.hookq(&["task", "move", "t1", "failed.x"]).ok();

    let runs = log_runs(&std::fs::read(ws.log_path("t1", "after_fail", 1)).unwrap());
    assert_eq!(runs.len(), 1);
    // The output did not end in a newline: hookq adds one so the footer starts its own line.
    assert_eq!(runs[0].body, b"\xff\xfe\x00abc\n");
    assert!(
        runs[0].header.contains("ARC_STATE=failed.x"),
        "{}",
        runs[0].header
    );
    assert!(
        runs[0]
            .footer
            .as_deref()
            .unwrap()
            .starts_with("--- hookq exit 0 after ")
    );

    let runs = log_runs(&std::fs::read(ws.log_path("t1", "after_fail", 2)).unwrap());
    assert_eq!(
        runs[0].body, b"\xff\xfe\x00abc\r\n\xc3\n",
        "stderr and stdout, as they came"
    );
}

#[test]
fn output_beyond_the_cap_is_cut_with_a_marker() {
    let ws = Ws::init();
    ws.write(&Config {
        max_log_bytes: Some(1024),
        ..Config::hooks(
            r#"after_fail = [
  'i=0; while [ $i -lt 500 ]; do printf "%04d\n" $i; i=$((i+1)); done',
  'head -c 10000000 /dev/zero',
  'printf "%01024d" 7',
]"#,
        )
    });
    ws.hookq(&["task", "add", "t1", "--plan", "p"]).ok();
    ws.hookq(&["task", "move", "t1", "failed.x"]).ok();
    assert!(
        ws.history().iter().all(|h| h.outcome == "ok"),
        "{:?}",
        ws.history()
    );

    let full: String = (0..500).map(|i| format!("{i:04}\n")).collect();
    let runs = log_runs(&std::fs::read(ws.log_path("t1", "after_fail", 1)).unwrap());
    let body = &runs[0].body;
    let (kept, rest) = body.split_at(1024);
    assert_eq!(kept, &full.as_bytes()[..1024]);
    assert_eq!(
        std::str::from_utf8(rest).unwrap(),
        "\n--- hookq output cut here: more than 1024 bytes (gate.max_log_bytes); the rest was discarded\n"
    );
    assert!(
        runs[0]
            .footer
            .as_deref()
            .unwrap()
            .starts_with("--- hookq exit 0")
    );

    // Ten megabytes: still read to the end (the writer is never blocked), still 1024 kept.
    let runs = log_runs(&std::fs::read(ws.log_path("t1", "after_fail", 2)).unwrap());
    assert_eq!(&runs[0].body[..1024], &[0u8; 1024][..]);
    assert!(runs[0].body[1024..].starts_with(b"\n--- hookq output cut here"));

    // Exactly the cap is not cut.
    let runs = log_runs(&std::fs::read(ws.log_path("t1", "after_fail", 3)).unwrap());
    assert_eq!(runs[0].body.len(), 1025);
    assert!(!runs[0].body.windows(9).any(|w| w == b"--- hookq"));
}

#[test]
fn a_pass_killed_mid_point_runs_the_whole_point_again() {
    let ws = ws_with(
        r#"after_fail = [
  'echo first >> out',
  'if [ ! -e killed ]; then : > killed; kill -KILL $PPID; exit 0; fi; echo second >> out',
  'echo third >> out',
]"#,
    );
    ws.hookq(&["task", "move", "t1", "failed.x", "--no-run"])
        .ok();

    let out = ws.hookq(&["run"]);
    assert_eq!(
        out.signal(),
        Some(9),
        "the hook killed its runner: {}",
        out.describe()
    );
    assert_eq!(ws.lines("out"), ["first"]);
    let pending = ws.pending();
    assert_eq!(pending.len(), 1, "the point stays pending");
    assert_eq!(pending[0].passes, 1);
    assert!(ws.history().is_empty());
    let listing: serde_json::Value =
        serde_json::from_slice(&ws.hookq(&["queue", "--json"]).ok().stdout).unwrap();
    assert_eq!(listing["pending"][0]["passes"], 1);
    assert_ne!(
        listing["lock"]["alive"], true,
        "the killed holder is not named as holding the lock"
    );

    ws.hookq(&["run"]).ok();
    assert_eq!(ws.lines("out"), ["first", "first", "second", "third"]);
    assert!(ws.pending().is_empty());
    let h = ws.history();
    assert_eq!(h.len(), 3);
    assert!(
        h.iter()
            .all(|h| h.outcome == "ok" && h.passes == 2 && h.occurrence == pending[0].id)
    );
    let first = log_runs(&std::fs::read(ws.log_path("t1", "after_fail", 1)).unwrap());
    assert_eq!(
        first.len(),
        2,
        "two headers: the first command ran in both passes"
    );
    assert!(first[0].header.contains(" pass 1: ") && first[1].header.contains(" pass 2: "));
    assert!(first.iter().all(|r| r.footer.is_some()));
    let second = log_runs(&std::fs::read(ws.log_path("t1", "after_fail", 2)).unwrap());
    assert_eq!(second.len(), 2);
    assert_eq!(
        second[0].footer, None,
        "its runner died before it could write the footer"
    );
}

#[test]
fn logs_and_the_database_are_readable_by_their_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let ws = ws_with("after_fail = ['echo secret']");
    ws.hookq(&["task", "move", "t1", "failed.x"]).ok();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let log = ws.log_path("t1", "after_fail", 1);
    assert!(
        std::fs::read_to_string(&log)
            .unwrap()
            .contains("\nsecret\n")
    );
    assert_eq!(mode(&log), 0o600, "{}", log.display());
    assert_eq!(mode(&ws.db_path()), 0o600);
    // runs/t1/hooks, runs/t1, runs
    for dir in log.ancestors().skip(1).take(3) {
        assert_eq!(mode(dir) & 0o077, 0, "{} is open to others", dir.display());
    }
}

/// A workspace with `hooks` configured and one `after_fail` point pending, task `t1`'s.
fn one_failed_point(hooks: &str) -> Ws {
    let ws = Ws::init();
    ws.write_config(hooks);
    ws.hookq(&["task", "add", "t1", "--plan", "p"]).ok();
    ws.hookq(&["task", "move", "t1", "failed.x", "--no-run"])
        .ok();
    ws
}

/// A parent that ignores SIGCHLD passes that on through `execve`; hookq sets it back to its
/// default, or the kernel would reap every hook command itself, hookq could not learn how it
/// ended, and each pass would run the point again until it was parked.
// A test sets up the processes it drives with calls only the C library offers; the crate
// itself keeps them in `exec::sys`.
#[allow(unsafe_code)]
#[test]
fn an_inherited_ignored_sigchld_does_not_lose_the_outcome() {
    use std::os::unix::process::CommandExt;
    let ws = one_failed_point("after_fail = ['echo ran >> ran.out']");
    let mut cmd = ws.command(common::HOOKQ);
    cmd.arg("run").stdin(std::process::Stdio::null());
    // SAFETY: signal() is async-signal-safe; it runs in the child between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGCHLD, libc::SIG_IGN);
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(ws.lines("ran.out"), ["ran"]);
    assert!(ws.pending().is_empty());
    assert_eq!(ws.history()[0].outcome, "ok");
}

/// A runner killed with SIGKILL, which it cannot catch, leaves its hook command running in a
/// process group of its own, and the lock goes with the runner. The next runner ends that
/// command, with a warning, before it runs the point again: the two never run side by side.
#[test]
fn a_killed_runners_command_is_ended_before_its_point_runs_again() {
    let ws =
        one_failed_point("after_fail = ['echo start $$ >> trace; sleep 60; echo end $$ >> trace']");
    let runner = ws.spawn(&["run"]);
    ws.eventually("the command to start", || ws.lines("trace").len() == 1);
    let first: i32 = ws.lines("trace")[0]
        .strip_prefix("start ")
        .unwrap()
        .parse()
        .unwrap();
    runner.signal(rustix::process::Signal::KILL);
    runner.wait_within(crate::support::HANG);
    assert!(!process_gone(first), "the command outlives its runner");

    // Quick this time, so the test does not wait for a sleep.
    ws.write_config("after_fail = ['echo again $$ >> trace']");
    let out = ws.hookq(&["run"]);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    assert!(
        process_gone(first),
        "the command the killed runner left was ended"
    );
    let warnings = out.warnings();
    assert_eq!(warnings.len(), 1, "{}", out.describe());
    assert!(
        warnings[0].contains("died while a hook command ran")
            && warnings[0].contains(&format!("(process group {first})")),
        "{}",
        out.describe()
    );
    let trace = ws.lines("trace");
    assert_eq!(trace.len(), 2, "{trace:?}");
    assert!(trace[1].starts_with("again "), "{trace:?}");
    assert!(ws.pending().is_empty());
}
