//! `hookq ui` over many workspaces (`-C a -C b`, `--workspaces FILE`): the list of their queues
//! and its JSON, each queue's own pages under `q/<slug>/` linking only within it, `/metrics`
//! labelled by queue, a workspace that cannot be opened listed with its error, and the list
//! following changes.

use crate::pages::moved;
use crate::server::{Served, attr_after, attrs};
use crate::support::eventually;
use crate::support::queue::Ws;

/// A workspace whose `after_fail` hook failed once for task f1, and with nothing pending.
fn failed_once() -> Ws {
    let ws = Ws::init();
    ws.write_config("after_fail = ['echo broken; exit 3']");
    ws.settle_config();
    ws.task_add("f1", "p", "todo.ready").ok();
    ws.hookq(&["task", "move", "f1", "failed.x"]);
    ws
}

/// The row of `/api/queues` whose workspace is `dir`.
fn row<'a>(rows: &'a serde_json::Value, dir: &std::path::Path) -> &'a serde_json::Value {
    let dir = dir.display().to_string();
    rows.as_array()
        .unwrap()
        .iter()
        .find(|r| r["workspace"] == dir.as_str())
        .unwrap_or_else(|| panic!("no row of {dir} in {rows:#}"))
}

/// `reference` resolved as a browser does against `from`, an absolute path (a page's, or its
/// `<base href>` resolved): the absolute path it leads to, without its query.
fn resolve(from: &str, reference: &str) -> String {
    let reference = reference.split(['?', '#']).next().unwrap();
    if reference.starts_with('/') {
        return reference.to_owned();
    }
    let joined = format!("{}{reference}", &from[..=from.rfind('/').unwrap()]);
    let segments: Vec<&str> = joined.split('/').skip(1).collect();
    let last = segments.len() - 1;
    let mut out: Vec<&str> = Vec::new();
    for (i, s) in segments.iter().enumerate() {
        match *s {
            "." if i == last => out.push(""),
            "." => {}
            ".." => {
                out.pop();
                if i == last {
                    out.push("");
                }
            }
            s => out.push(s),
        }
    }
    format!("/{}", out.join("/"))
}

#[test]
fn a_reference_resolves_as_a_browser_resolves_it() {
    assert_eq!(resolve("/q/a/pending", "history"), "/q/a/history");
    assert_eq!(resolve("/q/a/task/t1", "../"), "/q/a/");
    assert_eq!(resolve("/q/a/", "../a"), "/q/a");
    assert_eq!(resolve("/q/a/pending", "./"), "/q/a/");
    assert_eq!(resolve("/q/a", "a/"), "/q/a/");
    assert_eq!(resolve("/q/a/", "task/t%201?x=1"), "/q/a/task/t%201");
}

/// Every link, form and script of the page at `path` (under `prefix`) stays under `prefix`.
#[track_caller]
fn links_stay_within(ui: &Served, path: &str, prefix: &str) {
    let body = ui.get(path).ok();
    let page = format!("/{path}");
    let base = resolve(&page, &attr_after(&body, "<base", "href"));
    // What follows `<base>`: the references it is the base of.
    let at = body.find("<base").unwrap();
    let body = &body[at + body[at..].find('>').unwrap()..];
    let mut refs = attrs(body, "href");
    refs.extend(attrs(body, "action"));
    refs.extend(attrs(body, "src"));
    refs.retain(|r| !r.starts_with("data:"));
    assert!(refs.len() > 3, "{body}");
    for r in refs {
        let to = resolve(&base, &r);
        assert!(
            to == prefix.trim_end_matches('/') || to.starts_with(prefix),
            "{r} on /{path} leads to {to}, out of {prefix}"
        );
    }
}

#[test]
fn many_workspaces_list_their_queues_and_serve_each_ones_pages() {
    let a = moved();
    let b = failed_once();
    let gone = b.base().join("gone");
    let (da, db, dg) = (
        a.root().display().to_string(),
        b.root().display().to_string(),
        gone.display().to_string(),
    );
    let ui = Served::start(&a, &["-C", &da, "-C", &db, "-C", &dg, "--actions"]);
    assert!(ui.stdout.contains("serving 3 queues at "), "{}", ui.stdout);

    let rows = ui.get("api/queues").json();
    assert_eq!(rows.as_array().unwrap().len(), 3, "{rows:#}");
    let (ra, rb, rg) = (
        row(&rows, a.root()),
        row(&rows, b.root()),
        row(&rows, &gone),
    );
    assert_eq!(ra["backend"], "sqlite");
    assert_eq!(ra["place"], a.db_path().display().to_string());
    assert_eq!(ra["live"], true);
    assert_eq!(ra["summary"]["pending"], 1, "{ra:#}");
    assert!(ra["summary"]["oldest_pending_ms"].is_i64(), "{ra:#}");
    assert_eq!(ra["summary"]["paused"], false);
    assert_eq!(ra["summary"]["lock"]["held"], false);
    assert_eq!(ra["summary"]["failures_last_hour"], 0);
    assert_eq!(rb["summary"]["pending"], 0, "{rb:#}");
    assert_eq!(rb["summary"]["failures_last_hour"], 1, "{rb:#}");
    assert_eq!(rg["live"], false);
    assert!(rg["summary"].is_null(), "{rg:#}");
    let error = rg["error"]
        .as_str()
        .expect("the error of a queue that cannot be opened");
    assert!(error.contains("gone"), "{error}");
    let slug = |r: &serde_json::Value| r["slug"].as_str().unwrap().to_owned();
    let (sa, sb, sg) = (slug(ra), slug(rb), slug(rg));
    assert!(sa != sb && sb != sg && sa != sg, "{rows:#}");
    assert_eq!(ra["url"], format!("q/{sa}/"));

    // The list shows what the JSON says, each row linked to its queue's pages.
    let main = ui.get("").main();
    let tr = |slug: &str| {
        let start = main
            .find(&format!(r#"<tr data-slug="{slug}">"#))
            .unwrap_or_else(|| panic!("no row {slug} in {main}"));
        main[start..][..main[start..].find("</tr>").unwrap()].to_owned()
    };
    let (ta, tb, tg) = (tr(&sa), tr(&sb), tr(&sg));
    assert!(
        ta.contains(&format!(r#"<a class="overview" href="q/{sa}/">{da}</a>"#)),
        "{ta}"
    );
    assert!(
        ta.contains(&format!(r#"<a href="q/{sa}/pending">1</a>"#)),
        "{ta}"
    );
    assert!(ta.contains(">SQLite<") && ta.contains("ago</time>"), "{ta}");
    assert!(
        ta.contains(r#"<td class="state running">running</td>"#),
        "{ta}"
    );
    assert!(ta.contains(r#"<td class="lock free">free</td>"#), "{ta}");
    assert!(ta.contains(r#"class="live on""#), "{ta}");
    assert!(
        tb.contains(&format!(r#"<a href="q/{sb}/history?outcome=failed">1</a>"#)),
        "{tb}"
    );
    assert!(tb.contains("<td class=\"oldest\">none</td>"), "{tb}");
    assert!(
        tg.contains(r#"class="live off""#) && tg.contains(r#"<td class="error""#),
        "{tg}"
    );
    assert!(tg.contains("gone"), "{tg}");

    // Each queue's own pages, under its prefix, every link within it.
    let pending = ui.get(&format!("q/{sa}/pending")).main();
    assert!(pending.contains("t2"), "{pending}");
    assert!(!ui.get(&format!("q/{sb}/pending")).main().contains("t2"));
    let history = ui.get(&format!("q/{sb}/history")).main();
    assert!(
        history.contains("f1") && history.contains("failed"),
        "{history}"
    );
    for path in ["pending", "", "history", "task/t1"] {
        links_stay_within(&ui, &format!("q/{sa}/{path}"), &format!("/q/{sa}/"));
    }
    let log = attr_after(
        &ui.get(&format!("q/{sa}/task/t1")).ok(),
        "class=\"log\"",
        "href",
    );
    links_stay_within(&ui, &format!("q/{sa}/{log}"), &format!("/q/{sa}/"));
    links_stay_within(&ui, &format!("q/{sa}"), &format!("/q/{sa}/"));
    let api = ui.get(&format!("q/{sa}/api/pending")).json();
    assert_eq!(api["pending"].as_array().unwrap().len(), 1, "{api:#}");
    assert_eq!(ui.get(&format!("q/{sg}/")).status, 503);
    assert_eq!(ui.get("q/nosuchqueue/pending").status, 404);

    // Every series names its queue.
    let metrics = ui.get("metrics").ok();
    for (dir, pending) in [(&da, 1), (&db, 0)] {
        let line = format!("hookq_pending_points{{queue=\"{dir}\"}} {pending}\n");
        assert!(metrics.contains(&line), "{line} in {metrics}");
    }
    assert!(
        metrics.contains(&format!(
            "hookq_history{{queue=\"{db}\",outcome=\"failed\"}} 1\n"
        )),
        "{metrics}"
    );
    for line in metrics.lines().filter(|l| !l.starts_with('#')) {
        assert!(line.contains("{queue=\""), "{line}");
    }
    assert!(
        !metrics.contains(&dg),
        "a queue that cannot be opened has no series"
    );

    // A change in one queue reaches the list.
    let generation = |ui: &Served| {
        attr_after(&ui.get("").ok(), r#"<main id="main""#, "data-generation")
            .parse::<u64>()
            .unwrap()
    };
    let before = generation(&ui);
    b.task_add("n1", "p", "todo.ready").ok();
    b.hookq(&["task", "move", "n1", "failed.x", "--no-run"])
        .ok();
    eventually("the list to hear of b's new point", || {
        generation(&ui) > before && ui.get("api/queues").json()[1]["summary"]["pending"] == 1
    });
    ui.stop();
}

#[test]
fn a_listing_file_is_followed_as_it_changes() {
    let a = Ws::init();
    let b = Ws::init();
    let listing = a.base().join("queues.txt");
    std::fs::write(&listing, format!("# the queues\n{}\n", a.root().display())).unwrap();
    let ui = Served::start(&a, &["--workspaces", listing.to_str().unwrap()]);
    assert!(ui.stdout.contains("serving 1 queue at "), "{}", ui.stdout);
    assert_eq!(ui.get("api/queues").json().as_array().unwrap().len(), 1);
    std::fs::write(
        &listing,
        format!("{}\n{}\n", a.root().display(), b.root().display()),
    )
    .unwrap();
    eventually("the new line's queue on the list", || {
        ui.get("").main().matches("<tr data-slug=").count() == 2
    });
    std::fs::write(&listing, format!("{}\n", b.root().display())).unwrap();
    eventually("the removed line's queue off the list", || {
        let rows = ui.get("api/queues").json();
        rows.as_array().unwrap().len() == 1
            && rows[0]["workspace"] == b.root().display().to_string()
    });
    ui.stop();
}

#[test]
fn only_hub_and_ui_take_several_workspaces() {
    let a = Ws::init();
    let root = a.root().display().to_string();
    let out = a.hookq(&["-C", &root, "-C", &root, "queue"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.code(), Some(2), "{stderr}");
    assert!(stderr.contains("`hookq hub` and `hookq ui`"), "{stderr}");
    let listing = a.base().join("l.txt");
    std::fs::write(&listing, "").unwrap();
    let out = a.hookq(&["ui", "-C", &root, "--workspaces", listing.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.code(), Some(2), "{stderr}");
    assert!(stderr.contains("-C cannot add to them"), "{stderr}");
}
