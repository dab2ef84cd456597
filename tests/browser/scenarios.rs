//! The scenarios of the pages in the browser, written once for both backends, each on a
//! workspace the real binary recorded into: every page renders what the queue holds with no
//! console error (screenshots of each, light and dark, under target/ui-screens), a `task move`
//! shows on an open overview and pending page within a second without a reload, so do a hook
//! starting and ending, and the log page tails a running hook. The SQLite tests run them in
//! `pages`, the PostgreSQL tests on a workspace whose queue is on the tests' own cluster.

use serde_json::json;

use super::server::{Ui, mark, now_ms, record_first, seen};
use crate::support::browser::Browser;
use crate::support::queue::{Out, Ws};

/// The hooks of the scenarios: one that fails with colour, markup, a control byte and a byte
/// that is no UTF-8 in its output, the others printing a line.
pub const HOOKS: &str = r#"after_fail = ['echo "failing $ARC_TASK"; printf "\033[31mred\033[0m <b>bold</b> \001\377 end\n"; exit 3']
after_rework = ['echo "rework $ARC_TASK"']
after_awaiting_human = ['echo "waiting $ARC_TASK"']
after_merge = ['echo "merged $ARC_TASK"']
after_proposed = ['echo "proposed $ARC_TASK"']
"#;

/// Runs `hookq ARGS` and asserts it exited 0 (a failing hook's warning aside).
#[track_caller]
pub fn hookq_ok(ws: &Ws, args: &[&str]) -> Out {
    let out = ws.hookq(args);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    out
}

/// Records into a workspace configured with [`HOOKS`]: task `t1`'s `after_fail` ran and failed,
/// its `after_rework` ran, and `t2`'s `after_awaiting_human` waits, not run.
pub fn populate(ws: &Ws) {
    hookq_ok(
        ws,
        &["task", "add", "t1", "--plan", "p", "--phase", "todo.ready"],
    );
    hookq_ok(ws, &["task", "move", "t1", "failed.x"]);
    hookq_ok(ws, &["task", "move", "t1", "review.rework_pending"]);
    hookq_ok(
        ws,
        &["task", "add", "t2", "--plan", "p", "--phase", "todo.ready"],
    );
    hookq_ok(
        ws,
        &["task", "move", "t2", "review.awaiting_human", "--no-run"],
    );
}

/// The page's background colour, as computed.
fn background(b: &Browser) -> String {
    b.execute(
        "return getComputedStyle(document.body).backgroundColor;",
        vec![],
    )
    .as_str()
    .unwrap()
    .to_owned()
}

/// Asserts that every selector matches on the open page.
#[track_caller]
fn has_all(b: &Browser, page: &str, selectors: &[&str]) {
    for css in selectors {
        assert!(b.count(css) > 0, "no {css:?} on the {page} page");
    }
}

/// Opens every page of a [`populate`]d workspace, checks what each shows and that none logged a
/// console error, and saves a screenshot of each as `<prefix><page>.png`, light, then
/// `<prefix><page>-dark.png` with the dark scheme, which must look different.
pub fn every_page_renders(test: &str, ws: &Ws, prefix: &str) {
    let ui = Ui::start(ws, &[], &[]);
    let Some(b) = Browser::start(test) else {
        return;
    };

    let overview = ui.url("");
    let pages = [
        (
            "overview",
            overview.clone(),
            &[
                "main#main",
                "#lock",
                "#paused",
                "#pending-by-point",
                "#oldest",
                "#parked",
                "#interrupted",
                "#chart",
                "#slowest",
            ][..],
        ),
        (
            "pending",
            ui.url("pending"),
            &["main#main", "table#pending", "tr[data-id] td.task"][..],
        ),
        (
            "history",
            ui.url("history"),
            &["main#main", "table#history", "tr[data-id] a.log"][..],
        ),
        (
            "task",
            ui.url("task/t1"),
            &[
                "main#main",
                "#phase",
                "#plan",
                "#attempt",
                "table#pending",
                "table#history",
                "ul#logs a",
            ][..],
        ),
    ];
    for (name, url, selectors) in &pages {
        b.goto(url);
        has_all(&b, name, selectors);
        b.assert_no_console_errors(&format!("the {name} page"));
        b.screenshot(&format!("{prefix}{name}"));
    }

    // What a reader checks on each.
    b.goto(&overview);
    // The screenshots show the header: no temp dir's random name in it.
    let place = b.text_of("header .place").unwrap();
    assert!(!place.contains("hookq-it-"), "{place:?}");
    let lock = b.text_of("#lock").unwrap();
    assert!(lock.contains("free"), "{lock:?}");
    let paused = b.text_of("#paused").unwrap();
    assert!(paused.contains("running"), "{paused:?}");
    let by_point = b.text_of("#pending-by-point").unwrap();
    assert!(by_point.contains("after_awaiting_human"), "{by_point:?}");
    // The chart is SVG drawn in the page, nothing fetched.
    assert_eq!(
        b.execute(
            "const c = document.querySelector('#chart');
             return c.tagName.toLowerCase() === 'svg' || c.querySelector('svg') !== null;",
            vec![]
        ),
        json!(true)
    );

    b.goto(&ui.url("pending"));
    let tasks = b.texts_of("table#pending tr[data-id] td.task");
    assert_eq!(tasks, ["t2"]);

    b.goto(&ui.url("history"));
    assert_eq!(b.count("table#history tr[data-id]"), 2);
    let history = b.text_of("table#history").unwrap();
    assert!(
        history.contains("failed") && history.contains("after_fail"),
        "{history:?}"
    );

    b.goto(&ui.url("task/t1"));
    let phase = b.text_of("#phase").unwrap();
    assert!(phase.contains("review.rework_pending"), "{phase:?}");
    assert_eq!(b.text_of("#plan").unwrap().trim(), "p");

    // The log page, reached by its link: the text as the hook printed it, its colour codes
    // rendered or stripped, its markup shown as text.
    let link = b
        .find_all("ul#logs a")
        .into_iter()
        .find(|a| a.text().contains("after_fail"))
        .expect("a link to the after_fail log");
    link.click();
    b.wait_for("the log page", |b| b.text_of("pre#log"));
    let log = b.text_of("pre#log").unwrap();
    assert!(log.contains("failing t1"), "{log:?}");
    assert!(log.contains("red <b>bold</b>"), "{log:?}");
    assert!(
        log.contains(" end"),
        "the log's text after the odd bytes: {log:?}"
    );
    assert!(
        !log.contains('\u{1b}'),
        "an escape code reached the page: {log:?}"
    );
    assert_eq!(
        b.count("pre#log b, pre#log script"),
        0,
        "markup from the log"
    );
    b.assert_no_console_errors("the log page");
    b.screenshot(&format!("{prefix}log"));
    let log_url = b.url();

    // Dark, by the reader's choice of scheme.
    let light = background(&b);
    b.prefer_dark(true);
    let dark = background(&b);
    assert_ne!(light, dark, "the dark scheme changes nothing");
    b.screenshot(&format!("{prefix}log-dark"));
    for (name, url, _) in &pages {
        b.goto(url);
        assert_eq!(background(&b), dark, "the {name} page in the dark scheme");
        b.assert_no_console_errors(&format!("the {name} page, dark"));
        b.screenshot(&format!("{prefix}{name}-dark"));
    }
    b.goto(&log_url);
    b.assert_no_console_errors("the log page, dark");
    assert!(
        ui.stderr().is_empty(),
        "`hookq ui` complained: {}",
        ui.stderr()
    );
}

/// With the overview and the pending page open in two windows, a `task move` shows on both
/// within a second of its end, without a reload. The time is the one the page's own recorder
/// notes when the new point first shows, against the moment the move's process ended. Its
/// browser runs alone, so that no other test's browser weighs on the time.
pub fn a_move_shows_live(test: &str, ws: &Ws) {
    let ui = Ui::start(ws, &[], &[]);
    let Some(b) = Browser::start_alone(test) else {
        return;
    };
    hookq_ok(
        ws,
        &[
            "task",
            "add",
            "live",
            "--plan",
            "p",
            "--phase",
            "todo.ready",
        ],
    );

    b.goto(&ui.url(""));
    let overview = b.command("GET", "/window", json!({}));
    b.command("POST", "/window/new", json!({ "type": "window" }));
    let handles = b.command("GET", "/window/handles", json!({}));
    let pending = handles
        .as_array()
        .unwrap()
        .iter()
        .find(|h| **h != overview)
        .unwrap()
        .clone();
    let switch = |handle: &serde_json::Value| {
        b.command("POST", "/window", json!({ "handle": handle }));
    };
    switch(&pending);
    b.goto(&ui.url("pending"));
    // Both pages are live before the measured move: a first move shows on each (however long
    // the page takes to open its stream on a loaded machine).
    hookq_ok(
        ws,
        &[
            "task",
            "add",
            "warm",
            "--plan",
            "p",
            "--phase",
            "todo.ready",
        ],
    );
    hookq_ok(ws, &["task", "move", "warm", "todo.proposed", "--no-run"]);
    for (handle, css, text) in [
        (&pending, "table#pending td.task", "warm"),
        (&overview, "#pending-by-point", "after_proposed"),
    ] {
        switch(handle);
        b.wait_for("the first move on an open page", |b| {
            b.any_text(css, text).then_some(())
        });
    }
    for (handle, css, text) in [
        (&pending, "table#pending td.task", "live"),
        (&overview, "#pending-by-point", "after_merge"),
    ] {
        switch(handle);
        record_first(&b, "moved", css, text);
        assert_eq!(seen(&b, "moved"), None, "{text} shows before the move");
    }
    let marks: Vec<Option<String>> = [&overview, &pending]
        .iter()
        .map(|h| {
            switch(h);
            mark(&b)
        })
        .collect();

    let started = now_ms();
    hookq_ok(ws, &["task", "move", "live", "done.merged", "--no-run"]);
    let ended = now_ms();

    for ((handle, page), before) in [(&overview, "overview"), (&pending, "pending")]
        .into_iter()
        .zip(marks)
    {
        switch(handle);
        let at = b.wait_for(&format!("the move on the {page} page"), |b| {
            seen(b, "moved")
        });
        assert_eq!(mark(&b), before, "the {page} page was reloaded");
        let after_end = at - ended;
        println!(
            "the move showed on the {page} page {after_end} ms after it ended ({} ms after it began)",
            at - started
        );
        assert!(
            at >= started,
            "it showed on the {page} page before the move"
        );
        assert!(
            after_end <= 1000,
            "the move showed on the {page} page {after_end} ms after it ended"
        );
        b.assert_no_console_errors(&format!("the live {page} page"));
    }
    // The new point is on the pending page as the server renders it.
    switch(&pending);
    let tasks = b.texts_of("table#pending tr[data-id] td.task");
    assert!(tasks.contains(&"live".to_owned()), "{tasks:?}");
}

/// The log page of a running hook shows what it printed so far, and what it prints next
/// without a reload. The hook prints a line, waits for a file the test makes, prints another
/// (each computed, so that the command's own text in the log's header does not hold it). The
/// hook waits two minutes at most, so that a failed test leaves no hook waiting for ever.
/// `write_hooks` writes the workspace's config with a `[hooks]` body.
pub fn the_log_page_tails_a_running_hook(test: &str, ws: &Ws, write_hooks: impl Fn(&Ws, &str)) {
    let go = ws.base().join("go");
    write_hooks(
        ws,
        &format!(
            "after_fail = ['echo \"tail $((40 + 2))\"; n=0; while [ ! -e {go} ] && [ $n -lt 1200 ]; do sleep 0.1; n=$((n + 1)); done; echo \"tail $((50 + 1))\"']\n",
            go = go.display()
        ),
    );
    hookq_ok(
        ws,
        &[
            "task",
            "add",
            "tail",
            "--plan",
            "p",
            "--phase",
            "todo.ready",
        ],
    );
    let ui = Ui::start(ws, &[], &[]);
    let Some(b) = Browser::start(test) else {
        return;
    };
    let mover = ws.spawn(&["task", "move", "tail", "failed.x"]);
    let log = ws.log_path("tail", "after_fail", 1);
    ws.eventually("the hook's first line", || {
        std::fs::read_to_string(&log).is_ok_and(|t| t.contains("tail 42"))
    });

    b.goto(&ui.url("task/tail"));
    // Read by a script: the page is live, and the hook's start swaps its `#main`.
    let href = b.wait_for("a link to the running hook's log", |b| {
        b.href_of("ul#logs a", "after_fail")
    });
    b.goto(&href);
    let text = b.text_of("pre#log").expect("pre#log");
    assert!(text.contains("tail 42"), "{text:?}");
    assert!(!text.contains("tail 51"), "{text:?}");
    record_first(&b, "second", "pre#log", "tail 51");
    let before = mark(&b);

    std::fs::write(&go, "").unwrap();
    b.wait_for("the second line on the log page", |b| seen(b, "second"));
    assert_eq!(mark(&b), before, "the log page was reloaded");
    let text = b.text_of("pre#log").unwrap();
    assert_eq!(
        text.matches("tail 42").count(),
        1,
        "the tail repeated what was shown: {text:?}"
    );
    let out = mover.wait_within(crate::support::HANG);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    b.assert_no_console_errors("the tailed log page");
}

/// With the overview open, a hook starting shows the runner lock held, and its end shows it
/// free again, each within a second of the moment the hook itself noted (its first and last
/// commands write the time, in milliseconds, on the clock the page's recorder reads). The hook
/// waits between them for a file the test makes.
pub fn a_hook_starting_and_ending_shows_live(test: &str, ws: &Ws, write_hooks: impl Fn(&Ws, &str)) {
    let (go, began, ended) = (
        ws.base().join("go"),
        ws.base().join("began"),
        ws.base().join("ended"),
    );
    write_hooks(
        ws,
        &format!(
            "after_fail = ['date +%s%3N > {began}; n=0; while [ ! -e {go} ] && [ $n -lt 1200 ]; do sleep 0.1; n=$((n + 1)); done; date +%s%3N > {ended}']\n",
            began = began.display(),
            go = go.display(),
            ended = ended.display(),
        ),
    );
    hookq_ok(
        ws,
        &[
            "task",
            "add",
            "hook",
            "--plan",
            "p",
            "--phase",
            "todo.ready",
        ],
    );
    let ui = Ui::start(ws, &[], &[]);
    let Some(b) = Browser::start_alone(test) else {
        return;
    };
    b.goto(&ui.url(""));
    // The page is live before the measured hook: a first move shows on it.
    hookq_ok(
        ws,
        &[
            "task",
            "add",
            "warm",
            "--plan",
            "p",
            "--phase",
            "todo.ready",
        ],
    );
    hookq_ok(ws, &["task", "move", "warm", "todo.proposed", "--no-run"]);
    b.wait_for("the first move on the open overview", |b| {
        b.any_text("#pending-by-point", "after_proposed")
            .then_some(())
    });
    assert_eq!(b.count("#lock.free"), 1, "the runner lock is not free");
    record_first(&b, "started", "#lock.held", "");
    let before = mark(&b);

    let stamp = |path: &std::path::Path| -> i64 {
        std::fs::read_to_string(path)
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    let mover = ws.spawn(&["task", "move", "hook", "failed.x"]);
    ws.eventually("the hook to start", || {
        std::fs::read_to_string(&began).is_ok_and(|t| t.ends_with('\n'))
    });
    let at = b.wait_for("the hook's start on the overview", |b| seen(b, "started"));
    let after_start = at - stamp(&began);
    println!("the hook's start showed {after_start} ms after it began");
    assert!(
        after_start <= 1000,
        "the hook's start showed {after_start} ms after it began"
    );

    record_first(&b, "ended", "#lock.free", "");
    assert_eq!(
        seen(&b, "ended"),
        None,
        "the lock shows free while the hook runs"
    );
    std::fs::write(&go, "").unwrap();
    let out = mover.wait_within(crate::support::HANG);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    let at = b.wait_for("the hook's end on the overview", |b| seen(b, "ended"));
    let after_end = at - stamp(&ended);
    println!("the hook's end showed {after_end} ms after its last command");
    assert!(
        after_end <= 1000,
        "the hook's end showed {after_end} ms after its last command"
    );
    assert_eq!(mark(&b), before, "the overview was reloaded");
    b.assert_no_console_errors("the live overview");
}
