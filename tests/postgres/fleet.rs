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

/// One hub over three workspaces whose queues share one PostgreSQL database listens for all
/// three on one connection (its listener's), and drains each on its commits.
#[test]
fn one_hub_of_three_postgres_queues_listens_on_one_connection() {
    if crate::postgres::without_postgres(
        "one_hub_of_three_postgres_queues_listens_on_one_connection",
    ) {
        return;
    }
    use std::os::unix::fs::PermissionsExt;

    use crate::postgres::cli::{open, pg_config};
    use crate::postgres::cluster::cluster;

    let hooks = r#"after_fail = ['echo "$ARC_TASK" >> ran']"#;
    let db = cluster().database();
    let url = cluster().url(&db, "");
    let spaces: Vec<Ws> = ["a", "b", "c"]
        .iter()
        .map(|queue| {
            let ws = Ws::init();
            ws.write_config_text(pg_config(&Config::hooks(hooks), &url, queue, "").as_bytes());
            std::fs::set_permissions(ws.config_path(), std::fs::Permissions::from_mode(0o600))
                .unwrap();
            ws
        })
        .collect();
    let file = spaces[0].base().join("workspaces");
    let listing: String = spaces
        .iter()
        .map(|ws| format!("{}\n", ws.root().display()))
        .collect();
    std::fs::write(&file, listing).unwrap();
    let mut hub = spaces[0].spawn(&["hub", "--workspaces", file.to_str().unwrap()]);
    spaces[0].eventually("the hub to attach the three queues", || {
        assert!(!hub.exited(), "the hub exited: {}", hub.stderr_so_far());
        hub.stdout_so_far()
            .lines()
            .any(|l| l == "hookq hub: ready, 3 queues attached")
    });
    // Each queue's watcher is made before the hub says it attached it.
    let mut watch = open(&url, "a");
    let listening: i64 = watch
        .client()
        .query_one(
            "SELECT count(*) FROM pg_stat_activity
             WHERE datname = current_database() AND application_name LIKE $1",
            &[&format!(
                "{} pid {}%",
                hookq::testing::listener::APPLICATION_NAME,
                hub.pid()
            )],
        )
        .unwrap()
        .get(0);
    assert_eq!(listening, 1, "the hub's listening connections");

    for (ws, task) in spaces.iter().zip(["ta", "tb", "tc"]) {
        ws.task_add(task, "p", "failed.x").ok();
        ws.eventually("the queue to drain", || ws.lines("ran") == [task]);
    }
    hub.signal(Signal::TERM);
    let out = hub.wait_within(HANG);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
}
