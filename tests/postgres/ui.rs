//! `hookq ui` on a workspace whose queue is on PostgreSQL: the same pages and JSON over real
//! HTTP, history naming the host that ran each hook and filtered by it, a log another host ran
//! said to be there, and the database's password nowhere.

// The ui binary's HTTP helpers; this test uses a part of them.
#[allow(dead_code)]
#[path = "../ui/server.rs"]
mod server;

use hookq::queue::pg::lock::host_name;
use server::{Served, attrs};

use crate::postgres::cli::pg_workspace_with;
use crate::postgres::cluster::{PASSWORD, cluster};
use crate::support::queue::Config;

#[test]
fn the_view_shows_a_postgres_queue() {
    if crate::postgres::without_postgres("the_view_shows_a_postgres_queue") {
        return;
    }
    let cfg = Config::hooks(
        r#"after_rework = ['echo rework $ARC_TASK; printf "\033[33mamber\033[0m\n"']"#,
    );
    let (ws, db, _url) = pg_workspace_with(&cfg, "");
    ws.settle_config();
    ws.task_add("t1", "p1", "todo.ready").ok();
    ws.hookq(&["task", "move", "t1", "review.rework_pending"])
        .ok();
    ws.task_add("t2", "p2", "todo.ready").ok();
    ws.hookq(&["task", "move", "t2", "review.rework_pending", "--no-run"])
        .ok();
    // A run another host made: its history row names that host and its log is there.
    let mut admin = cluster().admin(&db);
    let now = chrono::Utc::now().timestamp_millis();
    admin
        .execute(
            "INSERT INTO hookq_hook_history (queue, occurrence, task, point, state, recorded_ms,
                 passes, command_index, command, outcome, exit_code, started_ms, duration_ms,
                 log_path, finished_ms, host)
             VALUES ('q', 99, 't1', 'after_merge', 'done.merged', $1, 1, 1, 'make deploy',
                 'failed', 2, $1, 40, '/srv/other/runs/t1/hooks/after_merge-01.log', $1,
                 'build-box-7')",
            &[&now],
        )
        .unwrap();

    let ui = Served::start(&ws, &["--actions"]);
    assert!(
        ui.stdout
            .contains("hookq ui: serving queue q on postgres://hookq:***@127.0.0.1:"),
        "{}",
        ui.stdout
    );
    let overview = ui.get("").main();
    assert!(
        overview.contains(r#"<p id="lock" class="free">free</p>"#),
        "{overview}"
    );
    assert!(overview.contains(
        r#"<a href="pending?point=after_rework">after_rework</a></td><td class="num">1</td>"#
    ));
    assert!(overview.contains("hook runs per hour over the last 24 hours: 2 in all"));

    let pending = ui.get("pending").main();
    assert_eq!(attrs(&pending, "data-id").len(), 1, "{pending}");
    assert!(pending.contains(r#"<td class="task"><a href="task/t2">t2</a></td>"#));

    let here = host_name();
    let history = ui.get("history").main();
    assert_eq!(attrs(&history, "data-id").len(), 2, "{history}");
    assert!(history.contains("<th>Host</th>"));
    assert!(
        history.contains(&format!(r#"<td class="host">{here}</td>"#)),
        "{history}"
    );
    assert!(history.contains(r#"<td class="host">build-box-7</td>"#));
    let elsewhere = ui.get("history?host=build-box-7").main();
    assert_eq!(attrs(&elsewhere, "data-id").len(), 1);
    let rows = ui.get(&format!("api/history?host={here}")).json();
    assert_eq!(rows.as_array().unwrap().len(), 1);
    assert_eq!(rows[0]["host"], here.as_str());

    let task = ui.get("task/t1").main();
    assert!(task.contains(r#"<dd id="phase">review.rework_pending</dd>"#));
    assert!(
        task.contains(r#"href="task/t1/log/after_rework-01.log""#),
        "{task}"
    );
    let log = ui.get("task/t1/log/after_rework-01.log").main();
    assert!(log.contains("rework t1\n"), "{log}");
    assert!(log.contains(r#"<span class="fg-3">amber</span>"#), "{log}");
    let other = ui.get("task/t1/log/after_merge-01.log").main();
    assert!(
        other.contains(r#"this log is on host <strong class="host">build-box-7</strong>"#),
        "{other}"
    );
    assert_eq!(ui.get("task/t1/log/after_fail-01.log").status, 404);

    // Paused from the view, for every host: `hookq queue stats` reads it back.
    let csrf = server::attr_after(&ui.get("").ok(), r#"name="csrf""#, "value");
    let done = ui.post("action/pause", &[("csrf", &csrf), ("back", "")]);
    assert_eq!(done.status, 303);
    let stats = ws.hookq(&["queue", "stats", "--json"]).ok().stdout();
    assert!(!stats.contains("\"paused_since_ms\": null"), "{stats}");

    for page in [
        "",
        "pending",
        "history",
        "task/t1",
        "api/overview",
        "api/pending",
    ] {
        assert!(
            !ui.get(page).body.contains(PASSWORD),
            "{page} shows the password"
        );
    }
    assert!(!ui.stdout.contains(PASSWORD));
    ui.stop();
}

/// A page whose read is stuck (here: on a table another transaction locked) stalls only
/// itself: the view reads through more than one connection, so the other pages answer while
/// it waits, and it answers once the table is free.
#[test]
fn a_stuck_read_stalls_only_its_own_page() {
    if crate::postgres::without_postgres("a_stuck_read_stalls_only_its_own_page") {
        return;
    }
    let (ws, db, _url) = pg_workspace_with(&Config::hooks("after_fail = ['true']"), "");
    ws.task_add("t1", "p1", "todo.ready").ok();
    ws.hookq(&["task", "move", "t1", "failed.x", "--no-run"])
        .ok();
    let ui = Served::start(&ws, &[]);
    assert_eq!(ui.get("history").status, 200);

    let mut locker = cluster().admin(&db);
    let mut held = locker.transaction().unwrap();
    held.batch_execute("LOCK TABLE hookq_hook_history IN ACCESS EXCLUSIVE MODE")
        .unwrap();
    let mut watcher = cluster().admin(&db);
    let mut waiting = || -> i64 {
        watcher
            .query_one(
                "SELECT count(*) FROM pg_stat_activity
                 WHERE wait_event_type = 'Lock' AND query LIKE '%hookq_hook_history%'",
                &[],
            )
            .unwrap()
            .get(0)
    };
    let history_done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let history = s.spawn(|| {
            let page = ui.get("history");
            history_done.store(true, std::sync::atomic::Ordering::SeqCst);
            page
        });
        ws.eventually("the history page's read waits for the locked table", || {
            waiting() > 0
        });
        // Meanwhile the pages that do not read that table answer.
        assert!(ui.get("pending").main().contains("after_fail"));
        let pending = ui.get("api/pending").json();
        assert_eq!(pending["pending"][0]["point"], "after_fail", "{pending}");
        assert!(
            !history_done.load(std::sync::atomic::Ordering::SeqCst) && waiting() > 0,
            "the history page answered before the table was free"
        );
        held.rollback().unwrap();
        let page = history.join().unwrap();
        assert_eq!(page.status, 200, "{}", page.body);
    });
    ui.stop();
}
