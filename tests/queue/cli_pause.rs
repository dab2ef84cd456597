//! `hookq queue pause` / `resume` on the SQLite queue, through the binary: a paused queue
//! records as usual and no runner starts a point of it, in this process or a later one; a hub
//! lets the point it runs finish and starts no other until the queue is resumed.

use crate::support::queue as common;

use std::time::Duration;

use common::{Running, Ws};
use rustix::process::Signal;
use serde_json::Value;

fn json(ws: &Ws, args: &[&str]) -> Value {
    let out = ws.hookq(args).ok();
    serde_json::from_str(&out.stdout()).unwrap_or_else(|e| panic!("{e}: {}", out.describe()))
}

#[test]
fn a_paused_queue_records_but_runs_nothing_until_resumed() {
    let ws = Ws::init();
    ws.write_config(
        r#"after_proposed = ['echo "$ARC_TASK proposed" >> ran.out']
after_awaiting_human = ['echo "$ARC_TASK awaiting" >> ran.out']"#,
    );
    let paused = ws.hookq(&["queue", "pause"]).ok();
    assert!(
        paused.stdout().starts_with("queue paused: ") && paused.stdout().contains("queue resume"),
        "{}",
        paused.describe()
    );
    let again = ws.hookq(&["queue", "pause"]).ok();
    assert!(
        again.stdout().contains("queue already paused since "),
        "{}",
        again.describe()
    );

    // Recorded as usual; the move's own drain runs nothing and says why.
    ws.task_add("t1", "p", "todo.proposed").ok();
    let moved = ws
        .hookq(&["task", "move", "t1", "review.awaiting_human"])
        .ok();
    assert!(
        moved
            .stdout()
            .contains("queue paused; 2 point(s) left pending until `hookq queue resume`"),
        "{}",
        moved.describe()
    );
    assert_eq!(ws.phase("t1").as_deref(), Some("review.awaiting_human"));
    // A runner in a later process finds it paused too.
    let run = ws.hookq(&["run"]).ok();
    assert!(
        run.stdout()
            .contains("queue paused; 2 point(s) left pending"),
        "{}",
        run.describe()
    );
    assert!(!run.stdout().contains("ran "), "{}", run.describe());
    assert!(!ws.root().join("ran.out").exists());
    let pending = ws.pending();
    assert_eq!(pending.len(), 2);
    assert!(pending.iter().all(|p| p.passes == 0), "{pending:?}");

    // Shown by the listing, stats and check.
    let listing = ws.hookq(&["queue"]).ok().stdout();
    assert!(listing.starts_with("queue: paused since "), "{listing}");
    let listed = json(&ws, &["queue", "--json"]);
    assert_eq!(listed["paused"], true);
    assert!(listed["paused_since_ms"].is_i64(), "{listed}");
    assert!(
        ws.hookq(&["queue", "stats"])
            .ok()
            .stdout()
            .contains("paused       since ")
    );
    assert!(json(&ws, &["queue", "stats", "--json"])["paused_since_ms"].is_i64());
    let checked = ws.hookq(&["check"]).ok();
    assert!(
        checked.stdout().contains("queue: paused since "),
        "{}",
        checked.describe()
    );
    assert!(json(&ws, &["check", "--json"])["paused_since_ms"].is_i64());

    let resumed = ws.hookq(&["queue", "resume"]).ok();
    assert!(
        resumed.stdout().starts_with("queue resumed: ")
            && resumed.stdout().contains("paused since"),
        "{}",
        resumed.describe()
    );
    let again = ws.hookq(&["queue", "resume"]).ok();
    assert!(
        again.stdout().contains("queue not paused: "),
        "{}",
        again.describe()
    );
    let run = ws.hookq(&["run"]).ok();
    assert!(!run.stdout().contains("paused"), "{}", run.describe());
    assert_eq!(ws.lines("ran.out"), ["t1 proposed", "t1 awaiting"]);
    assert!(ws.pending().is_empty());
    let listed = json(&ws, &["queue", "--json"]);
    assert_eq!(listed["paused"], false);
    assert!(
        ws.hookq(&["queue", "stats"])
            .ok()
            .stdout()
            .contains("paused       no")
    );
    assert!(!ws.hookq(&["check"]).ok().stdout().contains("paused"));
}

#[test]
fn a_hub_paused_mid_point_finishes_it_and_starts_no_other_until_resumed() {
    let ws = Ws::init();
    // Each point's command runs until the test lets it end (the file `go`).
    ws.write_config(
        r#"after_proposed = ['echo "$ARC_TASK start" >> ran.out; n=0; while [ ! -e go ] && [ $n -lt 2400 ]; do sleep 0.05; n=$((n + 1)); done; echo "$ARC_TASK end" >> ran.out']"#,
    );
    ws.task_add("t1", "p", "todo.proposed").ok();
    ws.task_add("t2", "p", "todo.proposed").ok();
    let mut hub: Running = ws.spawn_env(&["hub"], &[("HOOKQ_LOG", "info")]);
    ws.eventually("t1 to start", || {
        assert!(!hub.exited(), "the hub exited: {}", hub.stderr_so_far());
        ws.lines("ran.out") == ["t1 start"]
    });
    ws.hookq(&["queue", "pause"]).ok();
    std::fs::write(ws.root().join("go"), "").unwrap();
    ws.eventually("t1 to finish and be cleared", || {
        ws.pending()
            .iter()
            .map(|p| p.task.as_str())
            .collect::<Vec<_>>()
            == ["t2"]
    });
    // Time enough for a hub that ignored the pause to start t2, which would then end at once.
    std::thread::sleep(Duration::from_millis(1000));
    assert_eq!(ws.lines("ran.out"), ["t1 start", "t1 end"]);
    assert_eq!(ws.pending()[0].passes, 0);
    assert!(!hub.exited(), "{}", hub.stderr_so_far());

    ws.hookq(&["queue", "resume"]).ok();
    ws.eventually("the hub to run t2 after the resume", || {
        ws.lines("ran.out") == ["t1 start", "t1 end", "t2 start", "t2 end"]
    });
    ws.eventually("the queue to be empty", || ws.pending().is_empty());
    hub.signal(Signal::TERM);
    let out = hub.wait_within(Duration::from_secs(60));
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    assert!(
        out.errors().is_empty() && out.warnings().is_empty(),
        "{}",
        out.describe()
    );
}
