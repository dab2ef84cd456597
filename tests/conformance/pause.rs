//! `hookq queue pause` / `resume` through the binary: a paused queue records as usual and no
//! runner starts a point of it, in this process or a later one (on PostgreSQL, on any host);
//! a hub lets the point it runs finish and starts no other until the queue is resumed, then
//! drains at once.

use rustix::process::Signal;
use serde_json::Value;

use super::Driver;
use crate::support::HANG;
use crate::support::queue::{Config, Ws};

conformance!(
    a_paused_queue_records_but_runs_nothing_until_resumed,
    a_hub_paused_mid_point_finishes_it_and_starts_no_other_until_resumed,
);

fn json(ws: &Ws, args: &[&str]) -> Value {
    let out = ws.hookq(args).ok();
    serde_json::from_str(&out.stdout()).unwrap_or_else(|e| panic!("{e}: {}", out.describe()))
}

fn a_paused_queue_records_but_runs_nothing_until_resumed(d: Driver) {
    let ws = d.workspace(
        &Config::hooks(
            r#"after_proposed = ['echo "$ARC_TASK proposed" >> ran.out']
after_awaiting_human = ['echo "$ARC_TASK awaiting" >> ran.out']"#,
        ),
        "",
    );
    let place = ws.queue().place().to_owned();
    let paused = ws.hookq(&["queue", "pause"]).ok();
    assert!(
        paused
            .stdout()
            .starts_with(&format!("queue paused: {place}; "))
            && paused.stdout().contains("queue resume"),
        "{}",
        paused.describe()
    );
    let again = ws.hookq(&["queue", "pause"]).ok();
    assert!(
        again.stdout().contains("queue already paused since "),
        "{}",
        again.describe()
    );
    // Paused for the library's reads too, as every process (and, on PostgreSQL, every host)
    // sees it.
    assert!(ws.queue().paused().unwrap().is_some());

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
    let task = ws
        .queue()
        .task(&hookq::TaskId::new("t1").unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(task.phase.to_string(), "review.awaiting_human");
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
        resumed
            .stdout()
            .starts_with(&format!("queue resumed: {place} (paused since ")),
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

/// The hub's "paused" line says when to look: it is logged by the pass that found the queue
/// paused where it would have started t2, so t2 unstarted then is t2 left alone, not t2 not
/// reached yet.
fn a_hub_paused_mid_point_finishes_it_and_starts_no_other_until_resumed(d: Driver) {
    // Each point's command runs until the test lets it end (the file `go`), bounded.
    let ws = d.workspace(
        &Config::hooks(
            r#"after_proposed = ['echo "$ARC_TASK start" >> ran.out; n=0; while [ ! -e go ] && [ $n -lt 2400 ]; do sleep 0.05; n=$((n + 1)); done; echo "$ARC_TASK end" >> ran.out']"#,
        ),
        "",
    );
    ws.task_add("t1", "p", "todo.proposed").ok();
    ws.task_add("t2", "p", "todo.proposed").ok();
    let mut hub = ws.spawn_env(&["hub"], &[("HOOKQ_LOG", "info")]);
    ws.eventually("t1 to start", || {
        assert!(!hub.exited(), "the hub exited: {}", hub.stderr_so_far());
        ws.lines("ran.out") == ["t1 start"]
    });
    // Paused by another process, as another host would.
    ws.hookq(&["queue", "pause"]).ok();
    std::fs::write(ws.root().join("go"), "").unwrap();
    ws.eventually("the hub to say the queue is paused", || {
        assert!(!hub.exited(), "the hub exited: {}", hub.stderr_so_far());
        hub.stderr_so_far()
            .contains("the queue is paused; waiting for `hookq queue resume`")
    });
    assert_eq!(ws.lines("ran.out"), ["t1 start", "t1 end"]);
    let left: Vec<(String, i64)> = ws
        .pending()
        .into_iter()
        .map(|p| (p.task, p.passes))
        .collect();
    assert_eq!(left, [("t2".to_owned(), 0)], "t1 cleared, t2 unstarted");

    ws.hookq(&["queue", "resume"]).ok();
    ws.eventually("the hub to run t2 after the resume", || {
        ws.lines("ran.out") == ["t1 start", "t1 end", "t2 start", "t2 end"]
    });
    ws.eventually("the queue to be empty", || ws.pending().is_empty());
    hub.signal(Signal::TERM);
    let out = hub.wait_within(HANG);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    assert!(
        out.errors().is_empty() && out.warnings().is_empty(),
        "{}",
        out.describe()
    );
}
