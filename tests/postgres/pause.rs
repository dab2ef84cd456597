//! `hookq queue pause` / `resume` on a queue in PostgreSQL, through the binary: the pause is the
//! queue's, for every host and every process; a hub that runs a point when it lands finishes it
//! and starts no other until the queue is resumed, then drains at once.

use std::time::Duration;

use hookq::queue::pg::{PgStore, store};
use rustix::process::Signal;
use serde_json::Value;

use crate::cli::{open, pg_workspace_with};
use crate::support::queue::{Config, Ws};

/// `(task, passes)` of the queue's pending points, in order.
fn pending(s: &mut PgStore) -> Vec<(String, i64)> {
    s.pending(0, 1000, None)
        .unwrap()
        .into_iter()
        .map(|r| (r.task.to_string(), r.passes))
        .collect()
}

fn json(ws: &Ws, args: &[&str]) -> Value {
    let out = ws.hookq(args).ok();
    serde_json::from_str(&out.stdout()).unwrap_or_else(|e| panic!("{e}: {}", out.describe()))
}

#[test]
fn a_paused_queue_records_but_no_process_runs_it_until_resumed() {
    if crate::without_postgres("a_paused_queue_records_but_no_process_runs_it_until_resumed") {
        return;
    }
    let hooks = r#"after_fail = ['echo "fail $ARC_TASK" >> ran']
after_rework = ['echo "rework $ARC_TASK" >> ran']
"#;
    let (ws, _db, url) = pg_workspace_with(&Config::hooks(hooks), "");
    let mut s = open(&url, "q");
    let out = ws.hookq(&["queue", "pause"]).ok();
    assert!(
        out.stdout().starts_with("queue paused: queue q on "),
        "{}",
        out.describe()
    );
    let out = ws.hookq(&["queue", "pause"]).ok();
    assert!(
        out.stdout().contains("queue already paused since "),
        "{}",
        out.describe()
    );
    // Paused for the library's reads too, as every host sees it.
    assert!(s.paused().unwrap().is_some());

    ws.task_add("t1", "p", "failed.x").ok();
    let moved = ws
        .hookq(&["task", "move", "t1", "review.rework_pending"])
        .ok();
    assert!(
        moved
            .stdout()
            .contains("queue paused; 2 point(s) left pending until `hookq queue resume`"),
        "{}",
        moved.describe()
    );
    let run = ws.hookq(&["run"]).ok();
    assert!(
        run.stdout()
            .contains("queue paused; 2 point(s) left pending"),
        "{}",
        run.describe()
    );
    assert!(ws.lines("ran").is_empty());
    assert_eq!(pending(&mut s), [("t1".into(), 0), ("t1".into(), 0)]);

    assert!(
        ws.hookq(&["queue"])
            .ok()
            .stdout()
            .starts_with("queue: paused since "),
        "the listing says so"
    );
    assert_eq!(json(&ws, &["queue", "--json"])["paused"], true);
    assert!(json(&ws, &["queue", "stats", "--json"])["paused_since_ms"].is_i64());
    assert!(
        ws.hookq(&["check"])
            .ok()
            .stdout()
            .contains("queue: paused since ")
    );

    let out = ws.hookq(&["queue", "resume"]).ok();
    assert!(
        out.stdout().starts_with("queue resumed: queue q on "),
        "{}",
        out.describe()
    );
    let out = ws.hookq(&["queue", "resume"]).ok();
    assert!(
        out.stdout().contains("queue not paused: "),
        "{}",
        out.describe()
    );
    ws.hookq(&["run"]).ok();
    assert_eq!(ws.lines("ran"), ["fail t1", "rework t1"]);
    assert!(pending(&mut s).is_empty());
    assert_eq!(json(&ws, &["queue", "--json"])["paused"], false);
}

#[test]
fn a_hub_paused_mid_point_finishes_it_and_starts_no_other_until_resumed() {
    if crate::without_postgres(
        "a_hub_paused_mid_point_finishes_it_and_starts_no_other_until_resumed",
    ) {
        return;
    }
    // Each point's command runs until the test lets it end (the file `go`).
    let hooks = r#"after_fail = ['echo "$ARC_TASK start" >> ran; n=0; while [ ! -e go ] && [ $n -lt 2400 ]; do sleep 0.05; n=$((n + 1)); done; echo "$ARC_TASK end" >> ran']
"#;
    let (ws, _db, url) = pg_workspace_with(&Config::hooks(hooks), "");
    let mut s = open(&url, "q");
    ws.task_add("t1", "p", "failed.x").ok();
    ws.task_add("t2", "p", "failed.x").ok();
    let mut hub = ws.spawn_env(&["hub"], &[("HOOKQ_LOG", "info")]);
    ws.eventually("t1 to start", || {
        assert!(!hub.exited(), "the hub exited: {}", hub.stderr_so_far());
        ws.lines("ran") == ["t1 start"]
    });
    // Paused by another process, as another host would.
    ws.hookq(&["queue", "pause"]).ok();
    std::fs::write(ws.root().join("go"), "").unwrap();
    ws.eventually("t1 to finish and be cleared", || {
        pending(&mut s) == [("t2".to_owned(), 0)]
    });
    // Time enough for a hub that ignored the pause to start t2, which would then end at once.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(ws.lines("ran"), ["t1 start", "t1 end"]);
    assert_eq!(pending(&mut s), [("t2".to_owned(), 0)]);
    assert!(!hub.exited(), "{}", hub.stderr_so_far());

    ws.hookq(&["queue", "resume"]).ok();
    ws.eventually("the hub to run t2 after the resume", || {
        ws.lines("ran") == ["t1 start", "t1 end", "t2 start", "t2 end"]
    });
    ws.eventually("the queue to be empty", || pending(&mut s).is_empty());
    hub.signal(Signal::TERM);
    let out = hub.wait_within(Duration::from_secs(60));
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    assert!(out.errors().is_empty(), "{}", out.describe());
}

#[test]
fn the_pause_is_the_queues_and_the_start_mark_reads_it() {
    if crate::without_postgres("the_pause_is_the_queues_and_the_start_mark_reads_it") {
        return;
    }
    use hookq::queue::pg::record;
    use hookq::queue::{Mark, MoveFacts, Phase, PlanId, TaskId, Wait};

    let db = crate::cluster::cluster().database();
    let url = crate::cluster::cluster().url(&db, "");
    let (mut s, mut other) = (open(&url, "q"), open(&url, "other"));
    for store in [&mut s, &mut other] {
        store
            .write(|tx, q| {
                let t = TaskId::new("t1").unwrap();
                let p = PlanId::new("p").unwrap();
                record::add_task(tx, q, &t, &p, &Phase::new("failed.x").unwrap())?;
                record::move_task(
                    tx,
                    q,
                    &t,
                    &Phase::new("review.rework_pending").unwrap(),
                    &MoveFacts::default(),
                )
            })
            .unwrap();
    }
    let seen = s.change_mark().unwrap();
    let paused = s.write(store::pause).unwrap();
    assert!(paused.changed);
    let again = s.write(store::pause).unwrap();
    assert_eq!((again.changed, again.since_ms), (false, paused.since_ms));
    assert_ne!(s.change_mark().unwrap(), seen);
    assert_eq!(s.stats().unwrap().paused_since_ms, Some(paused.since_ms));

    // The runner's mark refuses to start a point of the paused queue, and counts nothing.
    let rows = s.pending(0, 10, None).unwrap();
    let mut lock = s.lock(Wait::No).unwrap().unwrap();
    assert_eq!(
        store::mark_started(&mut lock, &rows[0]).unwrap(),
        Mark::Paused
    );
    assert_eq!(pending(&mut s), [("t1".into(), 0), ("t1".into(), 0)]);
    // Another queue of the database runs on.
    assert_eq!(other.paused().unwrap(), None);
    let others = other.pending(0, 10, None).unwrap();
    let mut other_lock = other.lock(Wait::No).unwrap().unwrap();
    assert_eq!(
        store::mark_started(&mut other_lock, &others[0]).unwrap(),
        Mark::Started
    );

    let resumed = s.write(store::resume).unwrap().unwrap();
    assert_eq!(resumed.since_ms, paused.since_ms);
    assert_eq!(s.write(store::resume).unwrap(), None);
    assert_eq!(
        store::mark_started(&mut lock, &rows[0]).unwrap(),
        Mark::Started
    );
    assert_eq!(pending(&mut s), [("t1".into(), 1), ("t1".into(), 0)]);
}
