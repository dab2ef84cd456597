//! `live.js` in headless Chromium (Debian's `chromium` and `chromium-driver`, driven by the
//! tests' WebDriver client, which skips the test without them), on stand-in pages that render what the database holds: a change swaps `#main` without a
//! reload, a form being filled in waits for its field to lose focus, a running hook's log is
//! tailed, and nothing reaches the console.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::response::Html;
use axum::routing::get;
use hookq::Workspace;
use hookq::ui::live::{Live, routes};
use serde_json::{Value, json};

use crate::support::browser::Browser;
use crate::support::queue::Ws;

/// What the stand-in pages read.
#[derive(Clone)]
struct Pages {
    db: PathBuf,
    log: PathBuf,
    live: Arc<Live>,
}

const HEAD: &str = r#"<!doctype html><html><head><meta charset="utf-8"><title>live</title>
<link rel="icon" href="data:,"><base href="/"><script src="assets/live.js" defer></script></head>"#;

/// `/`: how many points are pending, and a filter form.
async fn overview(State(p): State<Pages>) -> Html<String> {
    // Read before the database: a change while the page renders is a later generation.
    let generation = p.live.generation();
    let pending: i64 = rusqlite::Connection::open(&p.db)
        .unwrap()
        .query_row("SELECT COUNT(*) FROM pending_hooks", [], |r| r.get(0))
        .unwrap();
    Html(format!(
        r#"{HEAD}<body><main id="main" data-generation="{generation}"><p id="pending">pending {pending}</p>
<form><input id="task" name="task"></form></main></body></html>"#
    ))
}

/// `/task/t1/log/after_proposed-01.log`: the log as it is, tailed from its end.
async fn log(State(p): State<Pages>) -> Html<String> {
    let bytes = std::fs::read(&p.log).unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('\u{1b}', "");
    Html(format!(
        r#"{HEAD}<body><main id="main"><pre id="log" data-tail="after_proposed-01.log/tail" data-offset="{}">{text}</pre></main></body></html>"#,
        bytes.len()
    ))
}

/// The text of the element whose id is `id`, empty when there is none.
fn text(browser: &Browser, id: &str) -> String {
    browser.text_of(&format!("#{id}")).unwrap_or_default()
}

/// Polls the text of `#id` until `wanted` holds; fails the test, naming `what`, after a bound
/// that only catches a hang.
fn eventually(browser: &Browser, id: &str, what: &str, wanted: impl Fn(&str) -> bool) -> String {
    browser.wait_for(what, |b| Some(text(b, id)).filter(|t| wanted(t)))
}

/// Runs `script` in the page and returns what it returns.
fn run(browser: &Browser, script: &str) -> Value {
    browser.execute(script, vec![])
}

/// The stand-in pages and the live routes, served on 127.0.0.1.
fn serve(pages: Pages, runtime: &tokio::runtime::Runtime) -> SocketAddr {
    let live = Arc::clone(&pages.live);
    let app = Router::new()
        .route("/", get(overview))
        .route("/task/t1/log/after_proposed-01.log", get(log))
        .with_state(pages)
        .merge(routes(live));
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    runtime.spawn(async move { axum::serve(listener, app).await });
    addr
}

#[test]
fn a_page_is_kept_current_and_a_log_tailed_in_a_real_browser() {
    let Some(browser) = Browser::start("a_page_is_kept_current_and_a_log_tailed_in_a_real_browser")
    else {
        return;
    };
    let ws = Ws::init();
    let go = ws.base().join("go");
    ws.write_config(&format!(
        r#"after_proposed = ['echo first; n=0; while [ ! -e {} ] && [ $n -lt 2400 ]; do sleep 0.05; n=$((n + 1)); done; printf "\033[31m<i>second</i>\033[0m\n"']"#,
        go.display()
    ));
    ws.settle_config();
    let live = Live::start(Workspace::at(ws.root())).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let addr = serve(
        Pages {
            db: ws.db_path(),
            log: ws.log_path("t1", "after_proposed", 1),
            live: Arc::clone(&live),
        },
        &runtime,
    );
    browser.goto(&format!("http://{addr}/"));
    assert_eq!(text(&browser, "pending"), "pending 0");
    // The script is listening once the page it rendered is current.
    run(
        &browser,
        "document.getElementById('main').dataset.marker = 'kept'; return 1",
    );
    ws.task_add("t1", "p", "todo.proposed").ok();
    eventually(&browser, "pending", "the move on the open page", |t| {
        t == "pending 1"
    });
    assert_eq!(
        run(&browser, "return location.href"),
        json!(format!("http://{addr}/")),
    );
    assert_eq!(
        run(
            &browser,
            "return document.getElementById('main').dataset.marker"
        ),
        json!("kept"),
        "the page was reloaded, not its main swapped"
    );

    // A field being filled in is not swapped away; the change shows once it loses focus. The
    // page says when it heard the change and held the swap back: each hold arms a retry a
    // second later (`setTimeout(.., 1000)`), which the test counts.
    run(
        &browser,
        "var f = document.getElementById('task'); f.focus(); f.value = 'typ'; \
         var st = window.setTimeout; window.__held = 0; \
         window.setTimeout = function (fn, ms) { if (ms === 1000) { window.__held++; } \
         return st.apply(window, arguments); }; return 1",
    );
    let before = live.generation();
    ws.task_add("t2", "p", "todo.proposed").ok();
    crate::support::eventually("the watcher to see the change", || {
        live.generation() != before
    });
    // Held back twice: heard, and still held back on the retry.
    browser.wait_for("the page to hold the swap back twice", |b| {
        (b.execute("return window.__held", vec![]).as_i64() >= Some(2)).then_some(())
    });
    assert_eq!(text(&browser, "pending"), "pending 1");
    assert_eq!(
        run(&browser, "return document.getElementById('task').value"),
        json!("typ")
    );
    run(&browser, "document.getElementById('task').blur(); return 1");
    eventually(
        &browser,
        "pending",
        "the change after the field's blur",
        |t| t == "pending 2",
    );

    // A running hook's log page, then the hook's last lines appended as they are written.
    let runner = ws.spawn(&["run"]);
    let log = ws.log_path("t1", "after_proposed", 1);
    ws.eventually("the hook's first line", || {
        ws.read_bytes(&log)
            .is_some_and(|b| String::from_utf8_lossy(&b).contains("first\n"))
    });
    browser.goto(&format!("http://{addr}/task/t1/log/after_proposed-01.log"));
    assert!(text(&browser, "log").ends_with("first\n"));
    std::fs::write(&go, "").unwrap();
    let tail = eventually(&browser, "log", "the tail", |t| {
        t.contains("--- hookq exit 0")
    });
    assert!(
        tail.contains("first\n<i>second</i>\n--- hookq exit 0"),
        "{tail:?}"
    );
    assert_eq!(
        run(
            &browser,
            "return document.querySelectorAll('#log i').length"
        ),
        json!(0),
        "log text became markup"
    );
    runner.wait_within(crate::support::HANG).ok();

    let console = browser.console();
    assert!(console.is_empty(), "the console: {console:?}");
    drop(browser);
    live.stop();
    runtime.shutdown_background();
}
