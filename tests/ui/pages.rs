//! Every page and its JSON, over real HTTP, show what the queue holds: a task moved by the real
//! binary, the hook that ran with its log, a point left pending; pages and filters page through
//! many rows.

use rusqlite::params;

use crate::server::{Served, attr_after, attrs};
use crate::support::queue::Ws;

/// A workspace whose `after_rework` hook printed a line and a green word for task t1, and with
/// a point of task t2 left pending.
pub fn moved() -> Ws {
    let ws = Ws::init();
    ws.write_config(
        r#"after_rework = ['echo hello from after_rework; printf "\033[32mgreen\033[0m\n"']"#,
    );
    ws.settle_config();
    ws.task_add("t1", "p1", "todo.ready").ok();
    ws.hookq(&["task", "move", "t1", "review.rework_pending"])
        .ok();
    ws.task_add("t2", "p2", "todo.ready").ok();
    ws.hookq(&["task", "move", "t2", "review.rework_pending", "--no-run"])
        .ok();
    ws
}

#[test]
fn every_page_shows_the_queue_and_sigterm_ends_it() {
    let ws = moved();
    let ui = Served::start(&ws, &[]);
    assert!(ui.url.starts_with("http://127.0.0.1:"), "{}", ui.url);
    assert!(
        ui.stdout
            .contains(&format!("serving {}", ws.db_path().display())),
        "{}",
        ui.stdout
    );
    assert!(!ui.stdout.contains("token"), "no token on loopback");

    let page = ui.get("");
    assert_eq!(
        page.content_type.as_deref(),
        Some("text/html; charset=utf-8")
    );
    let csp = page.csp.clone().expect("a content security policy");
    // How long the server took, for a browser's network panel and the benchmark.
    let timing = page.server_timing.clone().expect("a Server-Timing header");
    let ms: f64 = timing
        .strip_prefix("app;dur=")
        .and_then(|ms| ms.parse().ok())
        .unwrap_or_else(|| panic!("Server-Timing {timing:?}"));
    assert!(ms >= 0.0, "{timing}");
    assert!(csp.starts_with("default-src 'self'"), "{csp}");
    let body = page.ok();
    assert!(body.contains(r#"<script src="assets/live.js" defer></script>"#));
    assert!(body.contains(r#"<base href="./">"#));
    let main = &body[body.find(r#"<main id="main""#).unwrap()..];
    assert!(
        main.contains(r#"<p id="lock" class="free">free</p>"#),
        "{main}"
    );
    assert!(main.contains(r#"<p id="paused" class="running">running</p>"#));
    assert!(main.contains(
        r#"<a href="pending?point=after_rework">after_rework</a></td><td class="num">1</td>"#
    ));
    assert!(main.contains(r#"<p id="parked">0</p>"#));
    assert!(main.contains(r#"<p id="interrupted">0</p>"#));
    assert!(main.contains(r#"<p id="oldest"><time"#));
    let chart = &main[main.find(r#"<figure id="chart">"#).unwrap()..];
    assert!(chart.contains("<svg ") && chart.contains(r#"<rect class="ok""#));
    assert!(chart.contains("hook runs per hour over the last 24 hours: 1 in all"));
    let slowest = &main[main.find(r#"<table id="slowest">"#).unwrap()..];
    assert!(slowest.contains(r#"<a href="task/t1">t1</a>"#), "{slowest}");
    assert!(slowest.contains("after_rework-01"));

    let pending = ui.get("pending").main();
    let rows = attrs(&pending, "data-id");
    assert_eq!(rows.len(), 1, "{pending}");
    assert!(pending.contains(r#"<td class="task"><a href="task/t2">t2</a></td>"#));
    assert!(!pending.contains(r#"class="next""#));
    assert!(
        !pending.contains("<form method=\"post\""),
        "no actions by default"
    );

    let history = ui.get("history").main();
    assert_eq!(attrs(&history, "data-id").len(), 1, "{history}");
    assert!(history.contains(r#"<td class="outcome ok">ok</td>"#));
    let log_href = attr_after(&history, r#"<a class="log""#, "href");
    assert_eq!(log_href, "task/t1/log/after_rework-01.log");

    let task = ui.get("task/t1");
    let task = task.ok();
    assert!(task.contains(r#"<base href="../">"#));
    assert!(task.contains(r#"<dd id="phase">review.rework_pending</dd>"#));
    assert!(task.contains(r#"<dd id="plan">p1</dd>"#));
    assert!(task.contains(r#"<dd id="attempt">t1-1</dd>"#));
    assert!(task.contains(r#"<table id="pending">"#) && task.contains(r#"<table id="history">"#));
    let logs = &task[task.find(r#"<ul id="logs">"#).unwrap()..];
    assert!(
        logs.contains(r#"href="task/t1/log/after_rework-01.log""#),
        "{logs}"
    );

    let log = ui.get(&log_href);
    let log = log.ok();
    assert!(log.contains(r#"<base href="../../../">"#));
    let pre = &log[log.find(r#"<pre id="log""#).unwrap()..];
    assert!(pre.contains("hello from after_rework\n"), "{pre}");
    assert!(
        log.contains(r#"<pre id="log" data-tail="after_rework-01.log/tail" data-offset=""#),
        "{log}"
    );
    assert!(pre.contains(r#"<span class="fg-2">green</span>"#), "{pre}");
    assert!(!log.contains('\u{1b}'));
    let size = std::fs::metadata(ws.log_path("t1", "after_rework", 1))
        .unwrap()
        .len();
    assert_eq!(
        attr_after(&log, r#"<pre id="log""#, "data-offset"),
        size.to_string(),
        "a live tail reads on from the end of what the page shows"
    );
    for missing in [
        "task/t1/log/after_merge-01.log",
        "task/t2/log/after_rework-01.log",
        "task/t1/log/..%2F..%2F..%2Farc.db",
        "task/t1/log/%2Fetc%2Fpasswd",
        "task/..%2F..%2Farc/log/arc.db",
        "task/nope",
        "nope",
    ] {
        let page = ui.get(missing);
        assert_eq!(page.status, 404, "{missing}: {}", page.body);
        assert!(page.body.contains(r#"<main id="main" data-generation=""#));
    }
    assert_eq!(ui.get("pending?after=x").status, 400);
    let repeated = ui.get("pending?task=t1&task=t2&unknown=%ff").main();
    assert_eq!(
        attrs(&repeated, "data-id").len(),
        1,
        "the last task= counts"
    );
    assert_eq!(ui.get("history?point=after_mrge").status, 400);
    // A misspelt outcome is told, with the ones there are, rather than shown as no history.
    for path in ["history?outcome=bogus", "api/history?outcome=bogus"] {
        let bogus = ui.get(path);
        assert_eq!(bogus.status, 400, "{path}: {}", bogus.body);
        assert!(
            bogus.body.contains("ok, failed, timed_out, signalled"),
            "{path}: {}",
            bogus.body
        );
    }
    assert_eq!(ui.get("history?outcome=timed_out").status, 200);
    let css = ui.get("assets/style.css");
    assert_eq!(css.content_type.as_deref(), Some("text/css; charset=utf-8"));
    assert!(css.body.contains("prefers-color-scheme: dark"));

    // The JSON, in the shapes `--json` prints.
    let listing = ui.get("api/pending").json();
    assert_eq!(listing["pending"][0]["task"], "t2");
    assert_eq!(listing["pending"][0]["point"], "after_rework");
    assert_eq!(listing["more"], false);
    assert_eq!(listing["paused"], false);
    let rows = ui.get("api/history?task=t1").json();
    assert_eq!(rows[0]["outcome"], "ok");
    assert_eq!(rows[0]["command_index"], 1);
    assert_eq!(ui.get("api/history?task=t2").json(), serde_json::json!([]));
    let shown = ui.get("api/task/t1").json();
    assert_eq!(shown["task"]["attempt"], "t1-1");
    assert_eq!(shown["task"]["phase"], "review.rework_pending");
    assert_eq!(shown["more_pending"], false);
    let logs = ui.get("api/task/t1/logs").json();
    assert_eq!(logs[0]["point"], "after_rework");
    assert_eq!(logs[0]["index"], 1);
    let overview = ui.get("api/overview").json();
    assert_eq!(overview["stats"]["pending"], 1);
    assert_eq!(overview["lock"]["held"], false);
    assert_eq!(overview["hours"].as_array().unwrap().len(), 24);
    assert_eq!(overview["slowest"][0]["task"], "t1");

    // The queue's metrics, in Prometheus text format.
    let metrics = ui.get("metrics");
    assert!(
        metrics
            .content_type
            .as_deref()
            .is_some_and(|t| t.starts_with("text/plain; version=0.0.4")),
        "{:?}",
        metrics.content_type
    );
    let text = metrics.ok();
    for line in [
        "hookq_pending{point=\"after_rework\"} 1",
        "hookq_pending{point=\"after_merge\"} 0",
        "hookq_runner_lock_held 0",
        "hookq_paused 0",
        "hookq_parked 0",
    ] {
        assert!(text.lines().any(|l| l == line), "no {line:?} in:\n{text}");
    }
    let missing = ui.get("api/task/nope");
    assert_eq!(missing.status, 404);
    assert!(missing.body.contains("\"error\""));

    ui.stop();
}

#[test]
fn pending_and_history_page_through_and_filter() {
    let ws = Ws::init();
    ws.task_add("t9", "p", "todo.ready").ok();
    {
        let db = ws.db();
        let now = chrono::Utc::now().timestamp_millis();
        for i in 0..250 {
            let point = if i % 5 == 0 {
                "after_merge"
            } else {
                "after_fail"
            };
            db.execute(
                "INSERT INTO pending_hooks (task, point, recorded_ms) VALUES ('t9', ?1, ?2)",
                params![point, now],
            )
            .unwrap();
        }
        for i in 0..150 {
            let outcome = if i % 3 == 0 { "failed" } else { "ok" };
            db.execute(
                "INSERT INTO hook_history (occurrence, task, point, state, recorded_ms, passes, command_index, command, outcome, exit_code, started_ms, duration_ms, log_path, finished_ms)
                 VALUES (?1, 't9', 'after_merge', 'done.merged', ?2, 1, 1, 'true', ?3, 0, ?2, 5, NULL, ?2)",
                params![1000 + i, now, outcome],
            )
            .unwrap();
        }
    }
    let ui = Served::start(&ws, &[]);
    let mut seen = Vec::new();
    let mut href = "pending".to_owned();
    loop {
        let page = ui.get(&href).main();
        let ids: Vec<i64> = attrs(&page, "data-id")
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        assert!(ids.len() <= 100);
        seen.extend(ids);
        if !page.contains(r#"class="next""#) {
            break;
        }
        href = attr_after(&page, r#"class="next""#, "href").replace("&amp;", "&");
    }
    assert_eq!(seen.len(), 250);
    assert!(
        seen.windows(2).all(|w| w[0] < w[1]),
        "oldest first, no repeats"
    );

    let merges = ui.get("pending?point=after_merge").main();
    assert_eq!(attrs(&merges, "data-id").len(), 50);
    let other = ui.get("pending?task=t8").main();
    assert!(attrs(&other, "data-id").is_empty());
    assert!(other.contains("nothing pending"));

    let first = ui.get("history").main();
    let ids: Vec<i64> = attrs(&first, "data-id")
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
    assert_eq!(ids.len(), 100);
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "newest first");
    let next = attr_after(&first, r#"class="next""#, "href").replace("&amp;", "&");
    assert_eq!(next, format!("history?before={}", ids[99]));
    let second = ui.get(&next).main();
    assert_eq!(attrs(&second, "data-id").len(), 50);
    assert!(!second.contains(r#"class="next""#));
    let failed = ui.get("history?outcome=failed&point=after_merge").main();
    assert_eq!(attrs(&failed, "data-id").len(), 50);
    assert!(failed.contains(r#"<option value="failed" selected>failed</option>"#));
    assert!(failed.contains(r#"<option value="after_merge" selected>after_merge</option>"#));
    assert!(failed.contains(r#"<option value="ok">ok</option>"#));
    let failed = ui.get("api/history?outcome=failed&task=t9").json();
    assert_eq!(failed.as_array().unwrap().len(), 50);
    assert!(
        failed
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["outcome"] == "failed")
    );
    let api = ui.get("api/pending?point=after_fail").json();
    assert_eq!(api["pending"].as_array().unwrap().len(), 100);
    assert_eq!(api["more"], true);
    ui.stop();
}

/// Each page names the live view's generation it was read at, so that its live script asks
/// again for a change that came while it loaded; a later page names a later one.
#[test]
fn a_page_names_the_generation_it_was_read_at() {
    let ws = moved();
    let ui = Served::start(&ws, &[]);
    let generation = |path: &str| -> u64 {
        let body = ui.get(path).ok();
        attr_after(&body, r#"<main id="main""#, "data-generation")
            .parse()
            .unwrap()
    };
    let before = generation("");
    for path in ["pending", "history", "task/t1"] {
        assert!(generation(path) >= before, "{path}");
    }
    ws.hookq(&["task", "move", "t2", "failed.error", "--no-run"])
        .ok();
    crate::support::eventually("the page to name a later generation", || {
        generation("pending") > before
    });
    ui.stop();
}

/// A log the task's history names that is gone (pruned, or removed by hand) reads as pruned,
/// not as an error; a log no row names is still not found.
#[test]
fn a_pruned_log_reads_as_pruned() {
    let ws = moved();
    std::fs::remove_file(ws.log_path("t1", "after_rework", 1)).unwrap();
    let ui = Served::start(&ws, &[]);
    let page = ui.get("task/t1/log/after_rework-01.log");
    let body = page.ok();
    assert!(
        body.contains(r#"<p id="pruned" class="note">pruned"#),
        "{body}"
    );
    assert!(!body.contains(r#"<pre id="log""#), "{body}");
    assert_eq!(ui.get("task/t1/log/after_merge-01.log").status, 404);
}

/// `/api/pending` serves what `hookq queue --json` prints, as docs/ui.md says: the same page of
/// points, the runner lock's holder and the pause, in one shape.
#[test]
fn api_pending_is_what_queue_json_prints() {
    let ws = moved();
    ws.hookq(&["queue", "pause"]).ok();
    let cli: serde_json::Value = serde_json::from_str(
        &ws.hookq(&["queue", "--json", "--limit", "100"])
            .ok()
            .stdout(),
    )
    .unwrap();
    assert_eq!(cli["paused"], true, "{cli}");
    assert_eq!(cli["pending"][0]["task"], "t2", "{cli}");
    let ui = Served::start(&ws, &[]);
    assert_eq!(ui.get("api/pending").json(), cli);
}
