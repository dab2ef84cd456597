//! A reader clicking through the view, as people do: more pages in a row than a browser opens
//! connections to one server (six), each page with its live stream. None waits for a
//! connection a page left behind, and a page the browser brings back from its back/forward
//! cache is live again.

use std::time::{Duration, Instant};

use crate::browser::scenarios::{HOOKS, hookq_ok, populate};
use crate::browser::server::{Ui, mark, record_first, seen};
use crate::support::HANG;
use crate::support::browser::Browser;
use crate::support::queue::Ws;

/// Longer than any page of the view takes to load on a loaded machine, far shorter than the
/// minute a browser out of connections waits before it gives one up.
const PROMPT: Duration = Duration::from_secs(20);

#[test]
fn clicking_through_many_pages_never_waits_for_a_connection() {
    let ws = Ws::init();
    ws.write_config(HOOKS);
    populate(&ws);
    let ui = Ui::start(&ws, &[], &[]);
    let Some(b) = Browser::start("clicking_through_many_pages_never_waits_for_a_connection") else {
        return;
    };
    let pages = [
        "",
        "pending",
        "history",
        "task/t1",
        "task/t2",
        "history?task=t1",
        "pending?point=after_awaiting_human",
        "",
        "history",
        "task/t1",
        "pending",
    ];
    for path in pages {
        let began = Instant::now();
        b.goto(&ui.url(path));
        let took = began.elapsed();
        assert!(
            took < PROMPT,
            "/{path} took {took:?} to load: the pages before it hold the browser's connections"
        );
        assert_eq!(b.count("main#main"), 1, "/{path}");
    }
    b.assert_no_console_errors("the pages clicked through");

    // The last page, left and brought back from the browser's cache, hears of a move again.
    b.execute(
        "window.__hookqShown = []; \
         addEventListener('pageshow', e => window.__hookqShown.push(e.persisted));",
        vec![],
    );
    let before = mark(&b);
    b.goto(&ui.url(""));
    b.command("POST", "/back", serde_json::json!({}));
    b.wait_for("the pending page again", HANG, |b| {
        b.url().ends_with("/pending").then_some(())
    });
    assert_eq!(
        b.execute("return window.__hookqShown || null;", vec![]),
        serde_json::json!([true]),
        "the pending page was loaded again, not brought back from the browser's cache"
    );
    record_first(&b, "back", "table#pending td.task", "nav");
    let after = mark(&b);
    assert!(before.is_none() && after.is_some());
    hookq_ok(
        &ws,
        &["task", "add", "nav", "--plan", "p", "--phase", "todo.ready"],
    );
    hookq_ok(&ws, &["task", "move", "nav", "failed.x", "--no-run"]);
    b.wait_for("the move on the page brought back", HANG, |b| {
        seen(b, "back")
    });
    assert_eq!(mark(&b), after, "the page was reloaded");
    b.assert_no_console_errors("the page brought back");
}
