//! A queue's hook logs kept from filling the disk, on SQLite: removed with a task's last history
//! rows, trimmed to whole newest runs past `queue.max_log_file_bytes`, never cut while a hook
//! writes (the scenarios are `support/logs.rs`, which the PostgreSQL binary runs too).

use crate::support::logs::{self, HOOKS, QUEUE};
use crate::support::queue::{Config, Ws};

/// A workspace whose config has `hooks` and the scenarios' `[queue]` lines.
fn workspace(hooks: &str) -> Ws {
    let ws = Ws::init();
    write(&ws, hooks);
    ws
}

fn write(ws: &Ws, hooks: &str) {
    let text = Config::hooks(hooks)
        .text()
        .replacen("[queue]\n", &format!("[queue]\n{QUEUE}"), 1);
    ws.write_config_text(text.as_bytes());
}

#[test]
fn pruned_tasks_lose_exactly_their_logs() {
    let ws = workspace(HOOKS);
    logs::pruned_tasks_lose_their_logs(&ws, &|task, point, ms| {
        let n = ws
            .db()
            .execute(
                "UPDATE hook_history SET finished_ms = ?1 WHERE task = ?2 AND point = ?3",
                rusqlite::params![ms, task, point],
            )
            .unwrap();
        assert!(n > 0, "{task}'s {point} rows");
    });
}

#[test]
fn a_file_past_its_cap_keeps_whole_newest_runs() {
    logs::a_file_past_its_cap_keeps_whole_newest_runs(&workspace(HOOKS));
}

#[test]
fn a_running_hooks_log_is_never_cut() {
    let ws = Ws::init();
    logs::a_running_hooks_log_is_never_cut(&ws, &|hooks| write(&ws, hooks));
}
