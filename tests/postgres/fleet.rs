//! One `hookq hub` draining a SQLite and a PostgreSQL workspace together, and a second hub over
//! the same workspaces standing by for the PostgreSQL queue's runner lock.

use crate::postgres::cli::pg_workspace_with;
use crate::support::HANG;
use crate::support::queue::{Config, Running, Ws};
use rustix::process::Signal;

/// Waits until `hub` says `ready, 2 queues attached`.
fn wait_ready(ws: &Ws, hub: &mut Running) {
    ws.eventually("the hub to say both queues are attached", || {
        assert!(!hub.exited(), "the hub exited: {}", hub.stderr_so_far());
        hub.stdout_so_far()
            .lines()
            .any(|l| l == "hookq hub: ready, 2 queues attached")
    });
}

#[test]
fn one_hub_drains_sqlite_and_postgres_queues_and_a_standby_takes_over() {
    if crate::postgres::without_postgres(
        "one_hub_drains_sqlite_and_postgres_queues_and_a_standby_takes_over",
    ) {
        return;
    }
    let hooks = r#"after_fail = ['echo "$ARC_TASK" >> ran']"#;
    let (pg, _db, _url) = pg_workspace_with(&Config::hooks(hooks), "");
    let lite = Ws::init();
    lite.write_config(hooks);
    let file = lite.base().join("workspaces");
    std::fs::write(
        &file,
        format!("{}\n{}\n", pg.root().display(), lite.root().display()),
    )
    .unwrap();
    let args = ["hub", "--workspaces", file.to_str().unwrap()];
    let mut first = lite.spawn_env(&args, &[("HOOKQ_LOG", "info")]);
    wait_ready(&lite, &mut first);
    // The standby attaches the SQLite queue, and waits for the PostgreSQL queue's lock.
    let mut standby = lite.spawn_env(&args, &[("HOOKQ_LOG", "info")]);

    pg.task_add("p1", "p", "failed.x").ok();
    lite.task_add("l1", "p", "failed.x").ok();
    pg.eventually("the PostgreSQL queue to drain", || {
        pg.lines("ran") == ["p1"]
    });
    lite.eventually("the SQLite queue to drain", || lite.lines("ran") == ["l1"]);
    assert!(
        !standby.stdout_so_far().contains("ready"),
        "the standby cannot hold the lock the first hub holds: {}",
        standby.stdout_so_far()
    );

    first.signal(Signal::TERM);
    let out = first.wait_within(HANG);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    wait_ready(&pg, &mut standby);
    pg.task_add("p2", "p", "failed.x").ok();
    pg.eventually("the standby to drain the PostgreSQL queue", || {
        pg.lines("ran") == ["p1", "p2"]
    });

    standby.signal(Signal::TERM);
    let out = standby.wait_within(HANG);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    assert!(!out.stderr().contains("error:"), "{}", out.describe());
}
