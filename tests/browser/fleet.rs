//! `hookq ui -C a -C b` in the browser: the list shows both queues, live, and a row's link
//! opens that queue's own pending page.

use crate::browser::scenarios::{HOOKS, hookq_ok, populate};
use crate::browser::server::Ui;
use crate::support::browser::Browser;
use crate::support::queue::Ws;

#[test]
fn the_list_of_queues_opens_one_queues_pending_page() {
    let a = Ws::init();
    a.write_config(HOOKS);
    populate(&a);
    let b = Ws::init();
    let (da, db) = (
        a.root().display().to_string(),
        b.root().display().to_string(),
    );
    let ui = Ui::start(&a, &["-C", &da, "-C", &db], &[]);
    let Some(br) = Browser::start("the_list_of_queues_opens_one_queues_pending_page") else {
        return;
    };
    br.goto(&ui.url(""));
    let names = br.texts_of("table#queues td.queue a.overview");
    assert_eq!(names, [da.clone(), db.clone()], "{}", br.source());
    assert_eq!(br.count("table#queues td.live.on"), 2);
    br.screenshot("queues");

    // The list is live: a point recorded in b shows on its row without a reload.
    let pending_of_b = || {
        br.text_of("table#queues tr:nth-child(2) td.pending")
            .unwrap_or_default()
    };
    assert_eq!(pending_of_b(), "0");
    hookq_ok(
        &b,
        &["task", "add", "n1", "--plan", "p", "--phase", "todo.ready"],
    );
    hookq_ok(&b, &["task", "move", "n1", "failed.x", "--no-run"]);
    br.wait_for("b's new point on the list", |_| {
        (pending_of_b() == "1").then_some(())
    });

    // A's pending count leads to a's own pending page, whose links stay with a.
    br.find("table#queues tr:nth-child(1) td.pending a").click();
    br.wait_for("a's pending page", |b| {
        b.url().ends_with("/pending").then_some(())
    });
    let url = br.url();
    let prefix = url.trim_end_matches("pending").to_owned();
    assert!(prefix.ends_with("/q/ws/"), "{url}");
    assert!(br.count("table#pending td.task") > 0, "{}", br.source());
    let history = br
        .href_of("header nav a", "history")
        .expect("a link to the history");
    assert_eq!(history, format!("{prefix}history"));
    br.assert_no_console_errors("the list and a queue's pending page");
}
