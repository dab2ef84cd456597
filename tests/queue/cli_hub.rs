//! `hookq hub` as a child process: it runs points that other processes commit, and stops
//! cleanly on SIGTERM, SIGINT or SIGHUP (a second one stops it at once).

use crate::support::HANG;
use crate::support::queue as common;

use std::time::{Duration, Instant};

use common::{Running, Ws, process_gone};
use rustix::process::Signal;

/// Starts a hub and waits until it says it is draining, which it does after installing its
/// signal handlers: a SIGTERM sent before then would kill it with the default action.
fn start_hub(ws: &Ws) -> Running {
    start_hub_with(ws, &["hub"])
}

/// [`start_hub`] with the command line `args` (`["hub", "--jobs", "2"]`).
pub(crate) fn start_hub_with(ws: &Ws, args: &[&str]) -> Running {
    let mut hub = ws.spawn_env(args, &[("HOOKQ_LOG", "info")]);
    ws.eventually("the hub to start", || {
        assert!(!hub.exited(), "the hub exited: {}", hub.stderr_so_far());
        hub.stderr_so_far().contains("hub draining")
    });
    hub
}

/// SIGTERM, then the hub must exit 0 with no `error:`/`warning:` lines.
pub(crate) fn stop_cleanly(hub: Running) {
    hub.signal(Signal::TERM);
    let out = hub.wait_within(HANG);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    assert!(
        out.errors().is_empty() && out.warnings().is_empty(),
        "{}",
        out.describe()
    );
}

#[test]
fn hub_runs_points_other_processes_commit() {
    let ws = Ws::init();
    ws.write_config(
        r#"after_proposed = ['echo "$ARC_TASK" >> proposed.out']
after_awaiting_human = ['echo "$ARC_TASK $ARC_STATE" >> awaiting.out']"#,
    );
    let hub = start_hub(&ws);

    // The recording-only path: task add never runs a hook itself; the hub does.
    ws.task_add("t1", "p", "todo.proposed").ok();
    ws.eventually("the hub to run after_proposed", || {
        ws.lines("proposed.out") == ["t1"]
    });

    ws.hookq(&["task", "move", "t1", "review.awaiting_human", "--no-run"])
        .ok();
    ws.eventually("the hub to run after_awaiting_human", || {
        ws.lines("awaiting.out") == ["t1 review.awaiting_human"]
    });

    // A burst, run in the order it was recorded.
    let tasks: Vec<String> = (2..=8).map(|i| format!("t{i}")).collect();
    for t in &tasks {
        ws.hookq(&["task", "add", t, "--plan", "p", "--phase", "todo.proposed"])
            .ok();
    }
    let mut expected = vec!["t1".to_owned()];
    expected.extend(tasks.iter().cloned());
    ws.eventually("the hub to run the burst", || {
        ws.lines("proposed.out").len() == expected.len()
    });
    assert_eq!(ws.lines("proposed.out"), expected);
    ws.eventually("the queue to be empty", || ws.pending().is_empty());
    assert!(ws.history().iter().all(|h| h.outcome == "ok"));

    stop_cleanly(hub);
}

#[test]
fn an_idle_hub_stops_on_sigterm() {
    let ws = Ws::init();
    let hub = start_hub(&ws);
    stop_cleanly(hub);
}

#[test]
fn a_hub_started_with_hangup_and_interrupt_ignored_keeps_them_ignored() {
    // `nohup hookq hub &`, or a hub a script starts in the background (sh ignores SIGINT for
    // it): what its starter ignored does not stop it. SIGTERM still does.
    let ws = Ws::init();
    ws.write_config(r#"after_proposed = ['echo "$ARC_TASK" >> proposed.out']"#);
    let mut cmd = ws.command("/bin/sh");
    cmd.args(["-c", r#"trap '' HUP INT; exec "$0" hub"#, common::HOOKQ])
        .env("HOOKQ_LOG", "info");
    let mut hub = ws.spawn_cmd(cmd, &["hub"]);
    ws.eventually("the hub to start", || {
        assert!(!hub.exited(), "the hub exited: {}", hub.stderr_so_far());
        hub.stderr_so_far().contains("hub draining")
    });
    hub.signal(Signal::HUP);
    hub.signal(Signal::INT);
    ws.task_add("t1", "p", "todo.proposed").ok();
    ws.eventually("the hub to run after_proposed", || {
        assert!(!hub.exited(), "the hub exited: {}", hub.stderr_so_far());
        ws.lines("proposed.out") == ["t1"]
    });
    stop_cleanly(hub);
}

#[test]
fn first_sigterm_lets_the_running_command_finish() {
    first_stop_signal_lets_the_running_command_finish(Signal::TERM);
}

/// A closed terminal: without a handler, SIGHUP would end the hub at once and leave its hook
/// command (a process group of its own) running with the lock free.
#[test]
fn sighup_lets_the_running_command_finish() {
    first_stop_signal_lets_the_running_command_finish(Signal::HUP);
}

fn first_stop_signal_lets_the_running_command_finish(stop: Signal) {
    let ws = Ws::init();
    ws.write_config(
        r#"after_awaiting_human = [
  'echo started > started; sleep 2; echo done > f',
  'echo second >> second.out',
]"#,
    );
    ws.hookq(&["task", "add", "t1", "--plan", "p"]).ok();
    let hub = start_hub(&ws);
    ws.hookq(&["task", "move", "t1", "review.awaiting_human", "--no-run"])
        .ok();
    ws.eventually("the first command to start", || {
        ws.root().join("started").exists()
    });

    // Reading the queue never waits for the lock: it names the hub as the holder.
    let listing = ws.hookq(&["queue", "--json"]).ok();
    let listing: serde_json::Value = serde_json::from_slice(&listing.stdout).unwrap();
    assert_eq!(listing["lock"]["pid"], hub.pid(), "{listing}");
    assert_eq!(listing["lock"]["alive"], true);
    assert_eq!(listing["pending"][0]["passes"], 1);

    hub.signal(stop);
    let out = hub.wait_within(HANG);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    assert_eq!(ws.read("f"), "done\n", "the running command finished");
    assert!(
        !ws.root().join("second.out").exists(),
        "nothing new started after the signal"
    );
    let pending = ws.pending();
    assert_eq!(
        pending.len(),
        1,
        "commands were left, so the point stays pending"
    );
    assert_eq!(pending[0].passes, 1);
    assert!(ws.history().is_empty());

    // The next pass runs the whole point again.
    ws.hookq(&["run"]).ok();
    assert_eq!(ws.read("f"), "done\n");
    assert_eq!(ws.lines("second.out"), ["second"]);
    assert!(ws.pending().is_empty());
    assert_eq!(ws.history().len(), 2);
}

#[test]
fn second_sigterm_stops_at_once() {
    let ws = Ws::init();
    ws.write_config("after_awaiting_human = ['echo $$ > sh.pid; sleep 300 & echo $! > bg.pid; sleep 300; echo done > f']");
    ws.hookq(&["task", "add", "t1", "--plan", "p"]).ok();
    let mut hub = start_hub(&ws);
    ws.hookq(&["task", "move", "t1", "review.awaiting_human", "--no-run"])
        .ok();
    ws.eventually("the command to start", || {
        ws.root().join("bg.pid").exists() && !ws.read("bg.pid").is_empty()
    });

    let started = Instant::now();
    hub.signal(Signal::TERM);
    // Keep signalling until it is gone, so two signals arriving as one cannot make this hang.
    ws.eventually("the hub to stop on a second SIGTERM", || {
        let gone = hub.exited();
        if !gone {
            hub.signal(Signal::TERM);
        }
        gone
    });
    assert!(
        started.elapsed() < Duration::from_secs(200),
        "it waited for the sleep"
    );
    let out = hub.wait_within(HANG);
    assert_eq!(out.code(), Some(0), "{}", out.describe());

    assert!(!ws.root().join("f").exists(), "the command was stopped");
    for f in ["sh.pid", "bg.pid"] {
        let pid: i32 = ws.read(f).trim().parse().unwrap();
        ws.eventually(&format!("{f} ({pid}) to be gone"), || process_gone(pid));
    }
    let pending = ws.pending();
    assert_eq!(pending.len(), 1, "the point stays pending");
    assert_eq!(pending[0].passes, 1);
    assert!(ws.history().is_empty());
}

#[test]
fn hub_waits_out_a_bad_config() {
    let ws = Ws::init();
    ws.write_config("after_fail = ['echo ran >> out']");
    ws.hookq(&["task", "add", "t1", "--plan", "p"]).ok();
    let hub = start_hub(&ws);
    ws.write_config_text(b"[hooks]\nafter_fail = 'echo ran >> out'\n");
    ws.hookq(&["task", "move", "t1", "failed.x", "--no-run"])
        .ok();
    let expected = format!(
        "error: {}:2: hooks.after_fail: expected an array",
        ws.config_path().display()
    );
    ws.eventually("the hub to report the config", || {
        hub.stderr_so_far()
            .lines()
            .any(|l| l.starts_with(&expected))
    });
    assert!(
        !process_gone(hub.pid()),
        "a bad config does not end the hub"
    );
    let pending = ws.pending();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].passes, 0, "nothing was started");
    assert!(!ws.root().join("out").exists());

    // Fixed: the hub notices the change and runs the point.
    ws.write_config("after_fail = ['echo ran >> out', 'echo again >> out']");
    ws.eventually("the hub to run the point", || {
        ws.lines("out") == ["ran", "again"]
    });
    ws.eventually("the queue to be empty", || ws.pending().is_empty());

    hub.signal(Signal::TERM);
    let out = hub.wait_within(HANG);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
}

#[test]
fn two_hubs_share_the_work_without_running_a_point_twice() {
    let ws = Ws::init();
    ws.write_config(r#"after_proposed = ['echo "$ARC_TASK" >> out']"#);
    let a = start_hub(&ws);
    let b = start_hub(&ws);
    let tasks: Vec<String> = (1..=12).map(|i| format!("t{i}")).collect();
    for t in &tasks {
        ws.hookq(&["task", "add", t, "--plan", "p", "--phase", "todo.proposed"])
            .ok();
    }
    ws.eventually("every point to run", || {
        ws.pending().is_empty() && ws.lines("out").len() >= tasks.len()
    });
    // Once both hubs have ended, any would-be duplicate run has ended too.
    stop_cleanly(a);
    stop_cleanly(b);
    assert_eq!(ws.lines("out"), tasks, "each point ran once, in order");
    assert_eq!(ws.history().len(), tasks.len());
}

/// An editor that rewrites config.toml in place (truncate, write, pause, write the rest) again and
/// again while a hub drains: the half-written file parses as a valid config with the point's
/// commands missing, and no pass may clear a point as `empty` by it. (`config_writes` has a
/// writer whose pause is longer than any second read's delay.)
#[test]
fn a_config_rewritten_in_place_never_clears_a_point_unrun() {
    use std::io::Write;
    let ws = Ws::init();
    let full = common::Config::hooks("after_fail = ['echo \"$ARC_STATE\" >> out']").text();
    ws.write_config_text(full.as_bytes());
    ws.hookq(&["task", "add", "t1", "--plan", "p"]).ok();
    let hub = start_hub(&ws);
    let cut = full.find("[hooks]").unwrap() + "[hooks]\n".len();
    let config = ws.config_path();
    let editor = std::thread::spawn(move || {
        for _ in 0..8 {
            let mut f = std::fs::File::create(&config).unwrap();
            f.write_all(&full.as_bytes()[..cut]).unwrap();
            // The editor's pause mid-file and between saves: the thing under test.
            std::thread::sleep(Duration::from_millis(30));
            f.write_all(&full.as_bytes()[cut..]).unwrap();
            drop(f);
            std::thread::sleep(Duration::from_millis(500));
        }
    });
    let mut store = hookq::Store::open(&ws.db_path()).unwrap();
    let task = hookq::TaskId::new("t1").unwrap();
    let points = 120;
    let started = Instant::now();
    for i in 0..points {
        let phase = hookq::Phase::new(&format!("failed.s{i}")).unwrap();
        store
            .write(|tx| hookq::queue::record::move_task(tx, &task, &phase, &Default::default()))
            .unwrap();
        // Paced so that the recordings span the editor's rewrites.
        std::thread::sleep(Duration::from_millis(30));
    }
    editor.join().unwrap();
    ws.eventually("the hub to drain", || ws.pending().is_empty());
    let outcomes: Vec<String> = ws
        .history()
        .into_iter()
        .map(|h| h.outcome.to_string())
        .collect();
    assert_eq!(outcomes.len(), points, "after {:?}", started.elapsed());
    assert!(
        outcomes.iter().all(|o| o == "ok"),
        "{outcomes:?}\n{}",
        hub.stderr_so_far()
    );
    assert_eq!(ws.lines("out").len(), points);
    stop_cleanly(hub);
}

/// A service manager stops a hub by sending SIGTERM to every process of the service (systemd's
/// default `KillMode=control-group`), the running hook included. That hook was interrupted, not
/// failed: its point stays pending and runs again, it is not cleared as `signalled`.
#[test]
fn a_hook_killed_by_the_same_stop_stays_pending() {
    let ws = Ws::init();
    ws.write_config("after_fail = ['echo $$ > hook.pid; sleep 60', 'echo second >> out']");
    ws.hookq(&["task", "add", "t1", "--plan", "p"]).ok();
    let hub = start_hub(&ws);
    ws.hookq(&["task", "move", "t1", "failed.x", "--no-run"])
        .ok();
    ws.eventually("the hook to start", || {
        ws.read_bytes("hook.pid")
            .is_some_and(|b| b.ends_with(b"\n"))
    });
    let hook: i32 = ws.read("hook.pid").trim().parse().unwrap();
    hub.signal(Signal::TERM);
    let group = rustix::process::Pid::from_raw(hook).unwrap();
    rustix::process::kill_process_group(group, Signal::TERM).unwrap();
    let out = hub.wait_within(HANG);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    assert!(
        out.warnings().is_empty(),
        "not a failure: {}",
        out.describe()
    );
    let pending = ws.pending();
    assert_eq!(pending.len(), 1, "the point stays pending");
    assert!(ws.history().is_empty(), "{:?}", ws.history());
    assert!(
        !ws.root().join("out").exists(),
        "the stop came before the second command"
    );
    // The next pass runs the whole point again.
    ws.write_config("after_fail = ['true', 'echo second >> out']");
    ws.hookq(&["run"]).ok();
    assert_eq!(ws.lines("out"), ["second"]);
    assert!(ws.pending().is_empty());
}

/// `queue log` prints a task's hook logs, newest last, each under its file name; `--tail`,
/// `--point` and `--json` narrow or describe them; an unknown task is not found.
#[test]
fn queue_log_prints_a_tasks_logs() {
    let ws = Ws::init();
    ws.write_config("after_fail = ['echo first; echo second', 'echo other; exit 3']");
    ws.hookq(&["task", "add", "t1", "--plan", "p"]).ok();
    ws.hookq(&["task", "move", "t1", "failed.x"]).expect_code(0);
    let out = ws.hookq(&["queue", "log", "t1"]).ok().stdout();
    let one = out.find("==> after_fail-01.log <==\n").expect(&out);
    let two = out.find("==> after_fail-02.log <==\n").expect(&out);
    assert!(one < two, "{out}");
    for line in ["first\nsecond\n", "other\n", "--- hookq exit 3"] {
        assert!(out.contains(line), "{out}");
    }
    let tail = ws
        .hookq(&["queue", "log", "t1", "--tail", "2"])
        .ok()
        .stdout();
    assert!(
        tail.contains("==> after_fail-01.log <==\nsecond\n--- hookq exit 0"),
        "{tail}"
    );
    assert!(!tail.contains("first"), "{tail}");
    let none = ws
        .hookq(&["queue", "log", "t1", "--point", "after_merge"])
        .ok()
        .stdout();
    assert_eq!(none, "no hook logs of after_merge for task t1 yet\n");
    let json: serde_json::Value =
        serde_json::from_str(&ws.hookq(&["queue", "log", "t1", "--json"]).ok().stdout()).unwrap();
    let files = json.as_array().unwrap();
    assert_eq!(files.len(), 2, "{json}");
    let log = ws.log_path("t1", "after_fail", 1);
    assert_eq!(files[0]["path"], log.to_str().unwrap());
    assert_eq!(
        files[0]["size"].as_u64(),
        Some(std::fs::metadata(&log).unwrap().len())
    );
    ws.hookq(&["queue", "log", "t9"]).expect_code(4);
    ws.hookq(&["queue", "log", "t1", "--point", "after_mrge"])
        .expect_code(2);
}

/// `queue log --follow` keeps printing what a hub writes, new log files included, and ends
/// with exit 0 on Ctrl-C.
#[test]
fn queue_log_follows_a_hub_until_interrupted() {
    let ws = Ws::init();
    ws.write_config(
        "after_awaiting_human = ['echo one; sleep 1; echo two']\nafter_fail = ['echo failed once']",
    );
    ws.hookq(&["task", "add", "t1", "--plan", "p"]).ok();
    ws.hookq(&["task", "move", "t1", "failed.x"]).ok();
    let mut follow = ws.spawn(&["queue", "log", "t1", "--follow"]);
    ws.eventually("the follower to print the log there is", || {
        assert!(!follow.exited(), "{}", follow.stderr_so_far());
        follow.stdout_so_far().contains("failed once")
    });
    let hub = start_hub(&ws);
    ws.hookq(&["task", "move", "t1", "review.awaiting_human", "--no-run"])
        .ok();
    ws.eventually("the follower to print what the hub wrote", || {
        follow.stdout_so_far().contains("two\n--- hookq exit 0")
    });
    follow.signal(Signal::INT);
    let out = follow.wait_within(HANG);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    let text = out.stdout();
    assert!(
        text.contains("==> after_awaiting_human-01.log <==\n--- hookq ")
            && text.contains("one\ntwo\n"),
        "{text}"
    );
    assert!(
        text.find("after_fail-01.log").unwrap() < text.find("after_awaiting_human-01").unwrap(),
        "{text}"
    );
    stop_cleanly(hub);
}

/// `queue log` orders a task's logs by when their runs happened, the occurrence of each file's
/// last run, not by modification times, which two runs milliseconds apart can share (nor, when
/// they do, by the order the points are declared in).
#[test]
fn queue_log_orders_logs_by_their_runs_not_their_times() {
    let ws = Ws::init();
    ws.write_config("after_awaiting_human = ['echo waiting']\nafter_rework = ['echo rework']");
    ws.hookq(&["task", "add", "t1", "--plan", "p"]).ok();
    ws.hookq(&["task", "move", "t1", "review.awaiting_human"])
        .expect_code(0);
    ws.hookq(&["task", "move", "t1", "review.rework_pending"])
        .expect_code(0);
    let (waiting, rework) = (
        ws.log_path("t1", "after_awaiting_human", 1),
        ws.log_path("t1", "after_rework", 1),
    );
    // after_rework is declared before after_awaiting_human: equal times once ordered them so.
    for log in [&waiting, &rework] {
        let status = std::process::Command::new("touch")
            .args(["-d", "2026-01-02 03:04:05"])
            .arg(log)
            .status()
            .unwrap();
        assert!(status.success());
    }
    let out = ws.hookq(&["queue", "log", "t1"]).ok().stdout();
    let first = out.find("==> after_awaiting_human-01.log <==").expect(&out);
    let second = out.find("==> after_rework-01.log <==").expect(&out);
    assert!(first < second, "{out}");
    let json: serde_json::Value =
        serde_json::from_str(&ws.hookq(&["queue", "log", "t1", "--json"]).ok().stdout()).unwrap();
    let occurrences: Vec<i64> = json
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            f["occurrence"]
                .as_i64()
                .expect("each file names its last run")
        })
        .collect();
    assert_eq!(occurrences.len(), 2, "{json}");
    assert!(occurrences[0] < occurrences[1], "{json}");
}
