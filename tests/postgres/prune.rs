//! A pass prunes only its own queue's history: another queue's old rows in the same database
//! stay until a pass of that queue. (Pruning itself, the same on both databases, is
//! `conformance::drain::old_history_is_pruned`.)

use hookq::queue::pg::PgStore;

use crate::postgres::cli::{no_password, open, pg_config, pg_workspace_with};
use crate::support::queue::{Config, Ws};

const DAY_MS: i64 = 86_400_000;
const KEEP_TWO_DAYS: &str = "keep_history_days = 2\n";

/// The tasks of the queue's history rows, oldest first.
fn tasks(s: &mut PgStore) -> Vec<String> {
    let q = s.queue().as_str().to_owned();
    s.client()
        .query(
            "SELECT task FROM hookq_hook_history WHERE queue = $1 ORDER BY id",
            &[&q],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

#[test]
fn a_pass_prunes_only_its_own_queues_history() {
    if crate::postgres::without_postgres("a_pass_prunes_only_its_own_queues_history") {
        return;
    }
    let cfg = Config::hooks("after_fail = ['true']");
    let (ws, _db, url) = pg_workspace_with(&cfg, KEEP_TWO_DAYS);
    let other = Ws::init();
    other.write_config_text(pg_config(&cfg, &url, "other", KEEP_TWO_DAYS).as_bytes());
    other.settle_config();
    ws.settle_config();
    other.task_add("o1", "p", "failed.x").ok();
    other.hookq(&["run"]).ok();
    let mut theirs = open(&url, "other");
    let old = chrono::Utc::now().timestamp_millis() - 10 * DAY_MS;
    let n = theirs
        .client()
        .execute(
            "UPDATE hookq_hook_history SET finished_ms = $1 WHERE queue = 'other'",
            &[&old],
        )
        .unwrap();
    assert_eq!(n, 1);

    // A pass of queue q, which prunes its own old rows, leaves the other queue's.
    no_password(&ws.hookq(&["run"]).ok());
    assert_eq!(
        tasks(&mut theirs),
        ["o1"],
        "another queue's history was pruned"
    );
    no_password(&other.hookq(&["run"]).ok());
    assert!(tasks(&mut theirs).is_empty(), "its own pass prunes it");
}
