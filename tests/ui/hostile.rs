//! Hostile values from the queue show as text on every page: a hook command and its log with
//! markup, quotes, escape sequences, control bytes and invalid UTF-8; a plan, state, command and
//! log path written straight into the database with markup in them; a task id and an outcome
//! hookq would never write, refused as text where they are read.

use rusqlite::params;

use crate::server::Served;
use crate::support::queue::Ws;

/// What a page must never hold: markup from the queue's values.
fn assert_inert(page: &str, what: &str) {
    for raw in [
        "<script>alert",
        "<img src=x",
        "<b>state",
        "<i>outcome",
        "onerror=alert(1)>",
    ] {
        assert!(
            !page.contains(raw),
            "{what}: {raw:?} passed through:\n{page}"
        );
    }
    assert!(
        !page.contains('\u{1b}'),
        "{what}: an escape byte passed through"
    );
    assert!(
        !page
            .chars()
            .any(|c| c.is_control() && !matches!(c, '\n' | '\t' | '\r')),
        "{what}: a control character passed through"
    );
}

/// `s` as the pages escape it.
fn esc(s: &str) -> String {
    s.replace('&', "&#38;")
        .replace('<', "&#60;")
        .replace('>', "&#62;")
        .replace('"', "&#34;")
        .replace('\'', "&#39;")
}

#[test]
fn hostile_values_show_as_text() {
    let ws = Ws::init();
    // The command line itself holds markup and quotes; what it prints adds escape sequences,
    // control bytes and bytes that are not UTF-8.
    ws.write_config(
        r#"after_rework = ['printf "<script>alert(1)</script> \"q\" \047 \033[31mred\033[0m \033]0;title\007 \001\002 \377\376 <img src=x onerror=alert(1)>\n" # "><script>alert(2)</script>']"#,
    );
    ws.settle_config();
    ws.task_add("t1", "p1", "todo.ready").ok();
    ws.hookq(&["task", "move", "t1", "review.rework_pending"])
        .ok();
    // A task, plan, state, command and log path written straight into the database: the
    // task's id is one hookq takes (ids and outcomes are checked where they are read), the rest
    // holds markup.
    let sql_task = "t2";
    {
        let db = rusqlite::Connection::open(ws.db_path()).unwrap();
        let now = chrono::Utc::now().timestamp_millis();
        db.execute(
            "INSERT INTO tasks (id, plan, phase, created_ms, updated_ms) VALUES (?1, ?2, 'todo.ready', ?3, ?3)",
            params![sql_task, "p\"><img src=x onerror=alert(1)>", now],
        )
        .unwrap();
        db.execute(
            "INSERT INTO pending_hooks (task, point, recorded_ms) VALUES (?1, 'after_merge', ?2)",
            params![sql_task, now],
        )
        .unwrap();
        db.execute(
            "INSERT INTO pending_hook_states (hook_id, state) VALUES (last_insert_rowid(), '<b>state</b>')",
            [],
        )
        .unwrap();
        db.execute(
            "INSERT INTO hook_history (occurrence, task, point, state, recorded_ms, passes, command_index, command, outcome, exit_code, started_ms, duration_ms, log_path, finished_ms)
             VALUES (99, ?1, 'after_merge', '<b>state</b>', ?2, 1, 1, ?3, 'failed', 1, ?2, 7000, ?4, ?2)",
            params![
                sql_task,
                now,
                "\"><script>alert(3)</script>\u{7}",
                "/tmp/\"><script>alert(4)</script>/after_merge-01.log"
            ],
        )
        .unwrap();
    }
    let ui = Served::start(&ws, &["--actions"]);
    let overview = ui.get("").ok();
    assert_inert(&overview, "overview");
    assert!(
        overview.contains(">t2<"),
        "the slowest run, of the task written by hand: {overview}"
    );

    let pending = ui.get("pending").ok();
    assert_inert(&pending, "pending");
    assert!(pending.contains(&esc("<b>state</b>")), "{pending}");

    let history = ui.get("history").ok();
    assert_inert(&history, "history");
    assert!(
        history.contains(&esc("\"><script>alert(3)</script>")),
        "the command written by hand, as a title: {history}"
    );
    assert!(
        history.contains(&esc("<script>alert(1)</script>")),
        "the command, as a title"
    );
    let hostile = ui.get("task/t2").ok();
    assert_inert(&hostile, "the hostile plan's task");
    assert!(
        hostile.contains(&esc("p\"><img src=x onerror=alert(1)>")),
        "{hostile}"
    );

    let task = ui.get("task/t1").ok();
    assert_inert(&task, "task");
    let log = ui.get("task/t1/log/after_rework-01.log").ok();
    assert_inert(&log, "log");
    let pre = &log[log.find(r#"<pre id="log""#).unwrap()..];
    assert!(
        pre.contains(&esc("<script>alert(1)</script> \"q\" ' ")),
        "{pre}"
    );
    assert!(pre.contains(r#"<span class="fg-1">red</span>"#), "{pre}");
    assert!(
        pre.contains("\u{2401}\u{2402}"),
        "control bytes show as pictures: {pre}"
    );
    assert!(
        pre.contains("\u{fffd}\u{fffd}"),
        "invalid UTF-8 shows replaced: {pre}"
    );
    let printed = pre.lines().find(|l| l.contains("fg-1")).unwrap();
    assert!(
        !printed.contains("title"),
        "an OSC sequence is dropped: {printed}"
    );

    // The hostile task has no page (its id is not one hookq takes), and says so as text.
    let missing = ui.get("task/%3Cscript%3Ealert%28%22t%22%29%3C%2Fscript%3E%27%26");
    assert_eq!(missing.status, 404);
    assert_inert(&missing.body, "the hostile task's page");

    // A task id and an outcome hookq would never write, written by hand: the pages that read
    // them refuse the stored value and say which, as text.
    {
        let db = rusqlite::Connection::open(ws.db_path()).unwrap();
        let now = chrono::Utc::now().timestamp_millis();
        db.execute(
            "INSERT INTO pending_hooks (task, point, recorded_ms) VALUES (?1, 'after_merge', ?2)",
            params!["<script>alert(\"t\")</script>'&", now],
        )
        .unwrap();
        db.execute(
            "INSERT INTO hook_history (occurrence, task, point, state, recorded_ms, passes, outcome, finished_ms)
             VALUES (100, 't1', 'after_merge', 'done.merged', ?1, 1, '<i>outcome</i>', ?1)",
            params![now],
        )
        .unwrap();
    }
    for (path, bad) in [
        ("pending", "invalid task id"),
        ("history", "unknown outcome"),
    ] {
        let refused = ui.get(path);
        assert_ne!(refused.status, 200, "{path}: {}", refused.body);
        assert_inert(&refused.body, path);
        assert!(refused.body.contains(bad), "{path}: {}", refused.body);
    }
    // The server says so in its log too, and ends as it should.
    let out = ui.stop_with(rustix::process::Signal::TERM);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    assert!(
        out.stderr()
            .contains("stored value is not valid: invalid task id"),
        "{}",
        out.describe()
    );
}
