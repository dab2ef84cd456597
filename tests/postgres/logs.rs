//! Hook logs on a queue in PostgreSQL: the scenarios SQLite runs (`support/logs.rs`), and each
//! host removing only the logs it wrote.

use hookq::queue::pg::PgStore;

use crate::postgres::cli::{no_password, open, pg_config, pg_workspace_with};
use crate::support::logs::{self, HOOKS, QUEUE, log_names};
use crate::support::queue::{Config, Ws};

/// A workspace whose queue `q` is in a fresh database, with `hooks` and the scenarios'
/// `[queue]` lines; the database's URL.
fn workspace(hooks: &str) -> (Ws, String) {
    let (ws, _db, url) = pg_workspace_with(&Config::hooks(hooks), QUEUE);
    (ws, url)
}

/// Sets the finish time of `task`'s `point` rows in `s`'s queue.
fn age(s: &mut PgStore, task: &str, point: &str, ms: i64) {
    let q = s.queue().as_str().to_owned();
    let n = s
        .client()
        .execute(
            "UPDATE hookq_hook_history SET finished_ms = $1 WHERE queue = $2 AND task = $3 AND point = $4",
            &[&ms, &q, &task, &point],
        )
        .unwrap();
    assert!(n > 0, "{task}'s {point} rows");
}

#[test]
fn pruned_tasks_lose_exactly_their_logs() {
    if crate::postgres::without_postgres("pruned_tasks_lose_exactly_their_logs") {
        return;
    }
    let (ws, url) = workspace(HOOKS);
    let s = std::cell::RefCell::new(open(&url, "q"));
    logs::pruned_tasks_lose_their_logs(&ws, &|task, point, ms| {
        age(&mut s.borrow_mut(), task, point, ms);
    });
    no_password(&ws.hookq(&["run"]).ok());
}

#[test]
fn a_file_past_its_cap_keeps_whole_newest_runs() {
    if crate::postgres::without_postgres("a_file_past_its_cap_keeps_whole_newest_runs") {
        return;
    }
    logs::a_file_past_its_cap_keeps_whole_newest_runs(&workspace(HOOKS).0);
}

#[test]
fn a_running_hooks_log_is_never_cut() {
    if crate::postgres::without_postgres("a_running_hooks_log_is_never_cut") {
        return;
    }
    let (ws, url) = workspace(HOOKS);
    logs::a_running_hooks_log_is_never_cut(&ws, &|hooks| {
        ws.write_config_text(pg_config(&Config::hooks(hooks), &url, "q", QUEUE).as_bytes());
    });
}

/// Each host removes only the logs it wrote: a task whose last rows of another host are pruned
/// is left to that host, whose pass removes its logs unless the task is pending or ran there
/// again; a task this host still has a recent row of keeps its logs here.
#[test]
fn each_host_prunes_the_logs_it_wrote() {
    if crate::postgres::without_postgres("each_host_prunes_the_logs_it_wrote") {
        return;
    }
    let (ws, url) = workspace(HOOKS);
    let mut s = open(&url, "q");
    let q = s.queue().as_str().to_owned();
    let here = hookq::queue::pg::lock::host_name();
    ws.settle_config();
    ws.task_add("t1", "p", "failed.x").ok();
    ws.hookq(&["run"]).ok();
    assert_eq!(log_names(&ws, "t1"), ["after_fail-01.log"]);
    // Rows another host wrote long ago: of o1, whose logs are there alone, and of t1.
    let old = chrono::Utc::now().timestamp_millis() - 3 * 86_400_000;
    for task in ["o1", "t1"] {
        s.client()
            .execute(
                "INSERT INTO hookq_hook_history (queue, occurrence, task, point, state, recorded_ms,
                     passes, command_index, command, outcome, log_path, finished_ms, host)
                 VALUES ($1, 999, $2, 'after_fail', 'failed.x', $3, 1, 1, 'true', 'ok',
                     '/elsewhere/after_fail-01.log', $3, 'elsewhere')",
                &[&q, &task, &old],
            )
            .unwrap();
    }
    // Tasks another host's pass handed to this one: h1's logs are here alone; h2 is pending.
    let runs = ws.state_dir().join("runs");
    for task in ["h1", "h2"] {
        std::fs::create_dir_all(runs.join(task).join("hooks")).unwrap();
        std::fs::write(runs.join(task).join("hooks/after_fail-01.log"), "x\n").unwrap();
        s.client()
            .execute(
                "INSERT INTO hookq_pruned_logs (queue, host, task) VALUES ($1, $2, $3)",
                &[&q, &here, &task],
            )
            .unwrap();
    }
    ws.task_add("h2", "p", "failed.x").ok();
    ws.hookq(&["queue", "pause"]).ok();
    let out = ws.hookq(&["run"]).expect_code(0);
    assert!(out.warnings().is_empty(), "{}", out.describe());

    let handed = |s: &mut PgStore| -> Vec<(String, String)> {
        s.client()
            .query(
                "SELECT host, task FROM hookq_pruned_logs WHERE queue = $1 ORDER BY host, task",
                &[&q],
            )
            .unwrap()
            .into_iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect()
    };
    assert_eq!(
        handed(&mut s),
        [
            ("elsewhere".to_owned(), "o1".to_owned()),
            ("elsewhere".to_owned(), "t1".to_owned())
        ],
        "left to the host that wrote them; this host's own are done"
    );
    assert_eq!(
        log_names(&ws, "t1"),
        ["after_fail-01.log"],
        "its row here is recent"
    );
    assert!(
        !runs.join("h1").exists(),
        "handed over, and nothing refers to it"
    );
    assert_eq!(log_names(&ws, "h2"), ["after_fail-01.log"], "pending: kept");
    let rows: i64 = s
        .client()
        .query_one(
            "SELECT COUNT(*) FROM hookq_hook_history WHERE queue = $1 AND host = 'elsewhere'",
            &[&q],
        )
        .unwrap()
        .get(0);
    assert_eq!(rows, 0, "the old rows went, whichever host wrote them");
}
