//! The actions in the browser: none without `--actions`; with it, retry, drop, pause and
//! resume each work from their button and say what they did; and off loopback, a page without
//! the token is refused while `/?token=…` lets the browser in.

use serde_json::json;

use crate::browser::scenarios::{HOOKS, hookq_ok, populate};
use crate::browser::server::Ui;
use crate::support::HANG;
use crate::support::browser::Browser;
use crate::support::queue::Ws;

/// Clicks the submit button of the first `form.<class>` inside `scope` (a CSS selector) and
/// waits for the page it redirects to, a new document, to show its flash message; returns the
/// message.
#[track_caller]
fn act(b: &Browser, scope: &str, class: &str) -> String {
    let before = b.url();
    let form = b.find(&format!("{scope} form.{class}"));
    assert_eq!(form.attr("method").unwrap().to_lowercase(), "post");
    b.execute("window.__hookqActed = true;", vec![]);
    form.find("button, input[type=submit]").click();
    b.wait_for(
        &format!("the flash of {class} (from {before})"),
        HANG,
        |b| {
            let new_page = b.execute("return !window.__hookqActed;", vec![]) == json!(true);
            new_page
                .then(|| b.text_of("#flash"))
                .flatten()
                .map(|t| t.trim().to_owned())
                .filter(|t| !t.is_empty())
        },
    )
}

/// The texts of `td.task` on the pending page's rows.
fn pending_tasks(b: &Browser) -> Vec<String> {
    b.texts_of("table#pending tr[data-id] td.task")
}

/// Whether `hookq queue` says the queue is paused.
fn queue_paused(ws: &Ws) -> bool {
    ws.hookq(&["queue"])
        .ok()
        .stdout()
        .starts_with("queue: paused since ")
}

/// A POST to `url` with no token or CSRF field: its status.
fn post_status(url: &str) -> u16 {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    agent
        .post(url)
        .send_form([("csrf", "forged")])
        .unwrap()
        .status()
        .as_u16()
}

#[test]
fn actions_are_absent_without_the_flag() {
    let ws = Ws::init();
    ws.write_config(HOOKS);
    populate(&ws);
    let ui = Ui::start(&ws, &[], &[]);
    let Some(b) = Browser::start("actions_are_absent_without_the_flag") else {
        return;
    };
    for path in ["", "pending", "history", "task/t1", "task/t2"] {
        b.goto(&ui.url(path));
        assert!(b.count("main#main") == 1, "{path}");
        assert_eq!(b.count("form.action"), 0, "an action on /{path}");
        assert_eq!(
            b.count("form[method=post]"),
            0,
            "a form that posts on /{path}"
        );
    }
    b.assert_no_console_errors("the pages without actions");
    for path in [
        "action/pause",
        "action/resume",
        "action/drop/3",
        "action/retry/1",
    ] {
        assert_eq!(post_status(&ui.url(path)), 404, "{path}");
    }
    assert_eq!(ws.pending().len(), 1, "an action ran");
}

#[test]
fn with_actions_retry_drop_pause_and_resume_work() {
    let ws = Ws::init();
    ws.write_config(HOOKS);
    populate(&ws);
    let ui = Ui::start(&ws, &["--actions"], &[]);
    let Some(b) = Browser::start("with_actions_retry_drop_pause_and_resume_work") else {
        return;
    };
    // A forged form is refused.
    assert_eq!(post_status(&ui.url("action/pause")), 403);
    assert!(!queue_paused(&ws), "a forged pause paused the queue");

    // Pause, then resume, from the overview.
    b.goto(&ui.url(""));
    assert!(b.text_of("#paused").unwrap().contains("running"));
    let said = act(&b, "main#main", "action-pause");
    assert!(said.to_lowercase().contains("pause"), "{said:?}");
    b.screenshot("action-paused");
    let paused = b.text_of("#paused").unwrap();
    assert!(paused.contains("paused since"), "{paused:?}");
    assert!(queue_paused(&ws), "the queue is not paused");
    // The message stays while the live script swaps in the page anew after a change.
    b.execute("document.getElementById('lock').dataset.old = '1';", vec![]);
    hookq_ok(
        &ws,
        &[
            "task",
            "add",
            "probe",
            "--plan",
            "p",
            "--phase",
            "todo.ready",
        ],
    );
    b.wait_for("the overview swapped in anew", HANG, |b| {
        (b.count("#lock[data-old]") == 0).then_some(())
    });
    assert_eq!(b.text_of("#flash").map(|t| t.trim().to_owned()), Some(said));
    let said = act(&b, "main#main", "action-resume");
    assert!(said.contains("queue resumed"), "{said:?}");
    let paused = b.text_of("#paused").unwrap();
    assert!(paused.contains("running"), "{paused:?}");
    assert!(!queue_paused(&ws), "the queue is still paused");

    // Drop t2's pending point from the pending page.
    b.goto(&ui.url("pending"));
    assert_eq!(pending_tasks(&b), ["t2"]);
    let id = ws.pending()[0].id;
    let said = act(&b, &format!("tr[data-id=\"{id}\"]"), "action-drop");
    assert!(said.contains(&id.to_string()), "{said:?}");
    assert!(ws.pending().is_empty(), "the point is still pending");
    b.goto(&ui.url("pending"));
    assert!(pending_tasks(&b).is_empty());

    // Retry t1's failed after_fail from the history page: a new point for it.
    b.goto(&ui.url("history"));
    let failed = ws
        .history()
        .into_iter()
        .find(|h| h.outcome == "failed")
        .unwrap();
    let said = act(
        &b,
        &format!("table#history tr[data-id=\"{}\"]", failed.id),
        "action-retry",
    );
    assert!(!said.is_empty());
    let pending = ws.pending();
    assert_eq!(
        pending
            .iter()
            .map(|p| (p.task.as_str(), p.point.as_str()))
            .collect::<Vec<_>>(),
        [("t1", "after_fail")]
    );
    assert!(said.contains(&pending[0].id.to_string()), "{said:?}");
    b.goto(&ui.url("pending"));
    assert_eq!(pending_tasks(&b), ["t1"]);
    b.screenshot("action-retried");
    b.assert_no_console_errors("the pages with actions");
}

#[test]
fn off_loopback_a_page_needs_the_token() {
    const TOKEN: &str = "browser-test-token-0123456789abcdef";
    let ws = Ws::init();
    ws.write_config(HOOKS);
    populate(&ws);
    let ui = Ui::start(
        &ws,
        &["--listen", "0.0.0.0:0", "--actions"],
        &[("HOOKQ_UI_TOKEN", TOKEN)],
    );
    assert!(
        !ui.stdout().contains(TOKEN) && !ui.stderr().contains(TOKEN),
        "a token from the environment was printed"
    );
    let Some(b) = Browser::start("off_loopback_a_page_needs_the_token") else {
        return;
    };
    for path in ["", "pending", "task/t1", "?token=wrong-token"] {
        b.goto(&ui.url(path));
        assert_eq!(
            b.count("#lock, table#pending, #phase"),
            0,
            "/{path} without the token"
        );
    }
    assert_ne!(post_status(&ui.url("action/pause")), 303);

    // Once the token is given, the browser is let in, on every page.
    b.goto(&ui.url(&format!("?token={TOKEN}")));
    b.wait_for("the overview", HANG, |b| b.text_of("#lock"));
    b.goto(&ui.url("pending"));
    assert_eq!(pending_tasks(&b), ["t2"]);
    // And its actions work, token and CSRF together.
    b.goto(&ui.url(""));
    let said = act(&b, "main#main", "action-pause");
    assert!(said.to_lowercase().contains("pause"), "{said:?}");
    assert!(queue_paused(&ws), "the queue is not paused");
}
