//! Actions: absent without `--actions` (no buttons, the POST routes 404); with it, retry, drop,
//! pause and resume work through their forms, each refused without the server's form token or
//! when sent from another site, each answering 303 back to its page, which says what was done.

use crate::pages::moved;
use crate::server::{Served, attr_after, attrs};

#[test]
fn without_actions_there_are_no_buttons_and_no_routes() {
    let ws = moved();
    let ui = Served::start(&ws, &[]);
    for page in ["", "pending", "history", "task/t1"] {
        let body = ui.get(page).ok();
        assert!(!body.contains(r#"class="action"#), "{page}: {body}");
        assert!(!body.contains(r#"name="csrf""#), "{page}");
    }
    for path in [
        "action/pause",
        "action/resume",
        "action/drop/2",
        "action/retry/1",
    ] {
        let page = ui.post(path, &[("csrf", "x")]);
        assert_eq!(page.status, 404, "{path}");
    }
    assert!(ui.get("").main().contains("running"));
    ui.stop();
}

#[test]
fn with_actions_each_one_works_and_says_what_it_did() {
    let ws = moved();
    let ui = Served::start(&ws, &["--actions"]);
    let overview = ui.get("").ok();
    let csrf = attr_after(&overview, r#"class="action action-pause""#, "value");
    assert_eq!(csrf.len(), 64);

    // GET never changes anything, and a form without this server's token is refused.
    assert_eq!(ui.get("action/pause").status, 405);
    assert_eq!(ui.post("action/pause", &[]).status, 403);
    assert_eq!(
        ui.post("action/pause", &[("csrf", "0".repeat(64).as_str())])
            .status,
        403
    );
    assert_eq!(
        ui.post("action/pause", &[("csrf", &csrf[..63])]).status,
        403
    );
    assert!(
        ui.get("")
            .main()
            .contains(r#"<p id="paused" class="running">running</p>"#)
    );

    // Pause, back to the overview, which says so.
    let done = ui.post("action/pause", &[("csrf", &csrf), ("back", "")]);
    assert_eq!(done.status, 303, "{}", done.body);
    let to = done.location.unwrap();
    assert!(to.starts_with("../?flash="), "{to}");
    let page = ui.get(&to[3..]).main();
    assert!(
        page.contains(r#"<p id="flash" role="status">queue paused: "#),
        "{page}"
    );
    assert!(page.contains(r#"<p id="paused" class="paused">paused since "#));
    assert!(page.contains(r#"class="action action-resume""#));
    // The message is shown once.
    assert!(!ui.get(&to[3..]).main().contains(r#"id="flash""#));
    let status = ws.hookq(&["queue", "stats", "--json"]).ok().stdout();
    assert!(!status.contains("\"paused_since_ms\": null"), "{status}");

    let done = ui.post("action/resume", &[("csrf", &csrf), ("back", "pending")]);
    let to = done.location.unwrap();
    assert!(to.starts_with("../pending?flash="), "{to}");
    let page = ui.get(&to[3..]).main();
    assert!(
        page.contains("queue resumed: ") && page.contains(" (paused since "),
        "{page}"
    );

    // Drop the pending point of t2, from the pending page.
    let pending = ui.get("pending").main();
    let occurrence = attrs(&pending, "data-id").remove(0);
    let form = attr_after(&pending, r#"class="action action-drop""#, "action");
    assert_eq!(form, format!("action/drop/{occurrence}"));
    let done = ui.post(&form, &[("csrf", &csrf), ("back", "pending?task=t2")]);
    let to = done.location.unwrap();
    assert!(to.starts_with("../../pending?task=t2&flash="), "{to}");
    let page = ui.get(&to[6..]).main();
    assert!(
        page.contains(&format!(
            "dropped occurrence {occurrence} (after_rework for task t2); kept in history as dropped"
        )),
        "{page}"
    );
    assert!(attrs(&page, "data-id").is_empty());
    // Dropping it again says why it could not.
    let again = ui.post(&form, &[("csrf", &csrf), ("back", "pending")]);
    let page = ui.get(&again.location.unwrap()[6..]).main();
    assert!(
        page.contains(&format!("could not drop occurrence {occurrence}: ")),
        "{page}"
    );

    // Retry t1's hook from the history page: its point is pending again.
    let history = ui.get("history?task=t1").main();
    let row = attrs(&history, "data-id").remove(0);
    let done = ui.post(
        &format!("action/retry/{row}"),
        &[("csrf", &csrf), ("back", "history?task=t1")],
    );
    let to = done.location.unwrap();
    assert!(to.starts_with("../../history?task=t1&flash="), "{to}");
    let page = ui.get(&to[6..]).main();
    assert!(
        page.contains("queued after_rework again as occurrence "),
        "{page}"
    );
    let pending = ui.get("api/pending?task=t1").json();
    assert_eq!(pending["pending"][0]["point"], "after_rework");

    // A `back` that is not one of the view's pages sends to the overview.
    for evil in [
        "https://evil.example/",
        "//evil.example/x",
        "/etc",
        "task/../../x",
    ] {
        let done = ui.post("action/pause", &[("csrf", &csrf), ("back", evil)]);
        assert!(done.location.unwrap().starts_with("../?flash="), "{evil}");
    }
    // A body over the limit is refused before anything is done.
    let big = "x".repeat(64 * 1024);
    let page = ui.post("action/resume", &[("csrf", &csrf), ("back", &big)]);
    assert_eq!(page.status, 413);
    ui.stop();
}

/// A form posted from another site is refused, whatever token it carries: its `Origin`, or
/// without one its `Referer`, must name this server. The view's own pages send `Origin: null`
/// (they ask for no referrer), which the token alone then vouches for.
#[test]
fn a_form_posted_from_another_site_is_refused() {
    let ws = moved();
    let ui = Served::start(&ws, &["--actions"]);
    let csrf = attr_after(&ui.get("").ok(), r#"class="action action-pause""#, "value");
    let own = ui.url.trim_end_matches('/').to_owned();
    let paused = || ui.get("").main().contains(r#"class="paused""#);
    for headers in [
        vec![("origin", "http://evil.example")],
        vec![("origin", "http://127.0.0.1:1")],
        vec![("referer", "http://evil.example/pending")],
    ] {
        let page = ui.post_with("action/pause", &[("csrf", &csrf)], &headers);
        assert_eq!(page.status, 403, "{headers:?}: {}", page.body);
        assert!(
            page.body.contains("sent from another site"),
            "{}",
            page.body
        );
        assert!(!paused(), "{headers:?} paused the queue");
    }
    for from in [
        vec![("origin", own.as_str())],
        vec![("origin", "null")],
        vec![("referer", &format!("{own}/pending"))],
    ] {
        let page = ui.post_with("action/pause", &[("csrf", &csrf)], &from);
        assert_eq!(page.status, 303, "{from:?}: {}", page.body);
        assert!(paused());
        ui.post("action/resume", &[("csrf", &csrf)]);
    }
    // The token is checked all the same.
    let page = ui.post_with(
        "action/pause",
        &[("csrf", "x")],
        &[("origin", own.as_str())],
    );
    assert_eq!(page.status, 403);
    ui.stop();
}

/// `hookq ui` opens the queue with the busy timeout `HOOKQ_BUSY_TIMEOUT_MS` sets, as every
/// other command does: an action that meets another writer holding the SQLite file says so
/// after that wait, not the default one.
#[test]
fn an_action_waits_for_another_writer_as_long_as_the_busy_timeout() {
    let ws = moved();
    let ui = Served::start_env(&ws, &["--actions"], &[("HOOKQ_BUSY_TIMEOUT_MS", "300")]);
    let overview = ui.get("").ok();
    let csrf = attr_after(&overview, r#"class="action action-pause""#, "value");
    let holder = ws.db();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let page = ui.post("action/pause", &[("csrf", &csrf), ("back", "")]);
    holder.execute_batch("ROLLBACK").unwrap();
    let said = match page.location {
        Some(to) => ui.get(&to[3..]).main(),
        None => page.body,
    };
    assert!(
        said.contains("database is locked by another writer (waited 300 ms)"),
        "{said}"
    );
    ui.stop();
}
