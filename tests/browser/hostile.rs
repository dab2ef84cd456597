//! Hostile values from the queue (a plan, state and command holding markup and quotes, as only
//! SQL written by hand can record them) show as text on every page that lists them, and a task
//! id hookq would never write is refused where it is read, the refusal shown as text: no
//! alert, no element they inject.

use rusqlite::params;

use crate::browser::scenarios::{HOOKS, hookq_ok, populate};
use crate::browser::server::Ui;
use crate::support::browser::Browser;
use crate::support::queue::Ws;

/// A task id hookq takes, for the rows whose other values are hostile.
const TASK: &str = "t-hostile";
/// A task id hookq would never write.
const HOSTILE_TASK: &str = r#"<script>alert("task")</script>'"&amp;"#;
const PLAN: &str = r#"<img src=x onerror=alert("plan")>"#;
const STATE: &str = r#""><svg onload=alert("state")>"#;
const COMMAND: &str = r#"</pre></table><script>alert("command")</script>"#;

/// Writes a task with a hostile plan, a pending point with a hostile state and a history row
/// with a hostile command straight into the workspace's database.
fn record_hostile(ws: &Ws) {
    let now = crate::browser::server::now_ms();
    let db = ws.db();
    db.execute(
        "INSERT INTO tasks (id, plan, phase, attempt, created_ms, updated_ms)
         VALUES (?1, ?2, 'failed.x', 1, ?3, ?3)",
        params![TASK, PLAN, now],
    )
    .unwrap();
    db.execute(
        "INSERT INTO pending_hooks (task, point, recorded_ms) VALUES (?1, 'after_fail', ?2)",
        params![TASK, now],
    )
    .unwrap();
    db.execute(
        "INSERT INTO pending_hook_states (hook_id, state) VALUES (last_insert_rowid(), ?1)",
        params![STATE],
    )
    .unwrap();
    db.execute(
        "INSERT INTO hook_history (occurrence, task, point, state, recorded_ms, passes,
             command_index, command, outcome, exit_code, started_ms, duration_ms, finished_ms)
         VALUES (1000000, ?1, 'after_fail', ?2, ?3, 1, 1, ?4, 'failed', 3, ?3, 5000, ?3)",
        params![TASK, STATE, now, COMMAND],
    )
    .unwrap();
}

/// Fails the test if the open page shows an alert or holds an element or attribute one of the
/// hostile values would have made.
#[track_caller]
fn nothing_injected(b: &Browser, page: &str) {
    assert_eq!(b.alert_text(), None, "an alert on the {page} page");
    let injected = b.execute(
        r#"const found = [];
for (const e of document.querySelectorAll('*')) {
  if (e.tagName === 'SCRIPT' && e.textContent.includes('alert(')) found.push(e.outerHTML);
  if (e.tagName === 'IMG' && e.getAttribute('src') === 'x') found.push(e.outerHTML);
  for (const a of e.attributes) {
    if (a.name.startsWith('on') && a.value.includes('alert(')) found.push(e.outerHTML);
  }
}
return found;"#,
        vec![],
    );
    assert_eq!(
        injected,
        serde_json::json!([]),
        "injected on the {page} page"
    );
}

#[test]
fn hostile_values_show_as_text() {
    let ws = Ws::init();
    ws.write_config(HOOKS);
    populate(&ws);
    record_hostile(&ws);
    // The CLI lists what the view will, so the rows are there to show.
    let listed = hookq_ok(&ws, &["queue", "--json"]).stdout();
    assert!(
        listed.contains("svg onload=alert(\\\"state\\\")"),
        "{listed}"
    );

    let ui = Ui::start(&ws, &["--actions"], &[]);
    let Some(b) = Browser::start("hostile_values_show_as_text") else {
        return;
    };
    let body = |b: &Browser| b.text_of("body").unwrap_or_default();

    b.goto(&ui.url("pending"));
    nothing_injected(&b, "pending");
    let tasks = b.texts_of("table#pending tr[data-id] td.task");
    assert!(tasks.iter().any(|t| t == TASK), "{tasks:?}");
    assert!(body(&b).contains(STATE), "the state as text");
    b.screenshot("hostile-pending");

    b.goto(&ui.url("history"));
    nothing_injected(&b, "history");
    let history = b.text_of("table#history").unwrap();
    assert!(history.contains(TASK), "{history:?}");

    b.goto(&ui.url(""));
    nothing_injected(&b, "overview");

    b.assert_no_console_errors("the pages listing a hostile task");

    // The task's own page, by the link the pending page gives it: the task with its values as
    // text, or (an id no command could have recorded) a page saying there is no such task,
    // which names it as text too.
    b.goto(&ui.url("pending"));
    let link = b
        .find_all("table#pending tr[data-id] a")
        .into_iter()
        .find(|a| a.text() == TASK)
        .expect("a link to the hostile task's page");
    link.click();
    let shown = b.wait_for("the task page", crate::support::HANG, |b| {
        b.text_of("#phase")
            .map(|_| true)
            .or_else(|| b.text_of("#error").map(|_| false))
    });
    nothing_injected(&b, "task");
    let page = body(&b);
    if shown {
        for value in [TASK, PLAN, STATE] {
            assert!(page.contains(value), "{value:?} not shown as text");
        }
    } else {
        let error = b.text_of("#error").unwrap();
        assert!(error.contains("<script>alert("), "{error:?}");
    }
    b.screenshot("hostile-task");

    // A task id no command could have recorded, written by hand: the pending page refuses the
    // stored value and says which, as text.
    ws.db()
        .execute(
            "INSERT INTO pending_hooks (task, point, recorded_ms) VALUES (?1, 'after_fail', ?2)",
            params![HOSTILE_TASK, crate::browser::server::now_ms()],
        )
        .unwrap();
    b.goto(&ui.url("pending"));
    nothing_injected(&b, "pending, refusing a hostile task id");
    let error = b.text_of("#error").expect("the refusal, as the error page");
    assert!(error.contains("invalid task id"), "{error:?}");
    assert!(
        error.contains("<script>alert("),
        "the value named as text: {error:?}"
    );
}
