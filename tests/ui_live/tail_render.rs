//! The real log page in headless Chromium, tailing a hook as it writes: what the tail appends
//! looks as the page shows it after a reload, colours, a character cut between two writes,
//! control bytes, carriage returns and an unterminated escape before hookq's footer alike.

use hookq::Workspace;
use hookq::ui::{UiConfig, router};
use serde_json::Value;

use crate::support::browser::Browser;
use crate::support::queue::Ws;

/// The log's text as runs of one class each (`""` for plain text), neighbours of one class
/// joined: what a reader sees, whichever way its spans were cut.
fn runs(browser: &Browser) -> Vec<(String, String)> {
    let runs = browser.execute(
        "var pre = document.getElementById('log');
         var walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
         var runs = [];
         for (var n = walker.nextNode(); n; n = walker.nextNode()) {
           var cls = n.parentNode === pre ? '' : n.parentNode.className;
           var last = runs[runs.length - 1];
           if (last && last[0] === cls) { last[1] += n.data; }
           else if (n.data) { runs.push([cls, n.data]); }
         }
         return runs;",
        vec![],
    );
    let Value::Array(runs) = runs else {
        panic!("runs: {runs}");
    };
    runs.iter()
        .map(|r| {
            (
                r[0].as_str().unwrap().to_owned(),
                r[1].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_tailed_log_shows_what_a_reload_shows() {
    let Some(browser) = Browser::start("a_tailed_log_shows_what_a_reload_shows") else {
        return;
    };
    let ws = Ws::init();
    let go = ws.base().join("go");
    let hook = ws.base().join("hook.sh");
    // Colours; a character cut between two writes, the page loaded between them; control
    // bytes and carriage returns; an escape and a character each cut by a second's pause; and
    // output that ends in an unterminated escape, followed by hookq's footer.
    std::fs::write(
        &hook,
        format!(
            r"printf 'plain \033[1;32mgreen \303'
n=0; while [ ! -e {go} ] && [ $n -lt 2400 ]; do sleep 0.05; n=$((n + 1)); done
printf '\274 still green\033[0m\n'
printf 'ctl \000\007\010 end\n'
printf 'old\rnew\r\n'
printf '\033[3'
sleep 1
printf '4mblue\033[0m \342\202'
sleep 1
printf '\254 euro\n'
printf 'cut \033['
",
            go = go.display()
        ),
    )
    .unwrap();
    ws.write_config(&format!("after_proposed = ['sh {}']", hook.display()));
    ws.settle_config();
    ws.task_add("t1", "p", "todo.proposed").ok();

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let app = router(UiConfig::new(Workspace::at(ws.root()))).unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    runtime.spawn(async move { axum::serve(listener, app).await });

    let runner = ws.spawn(&["run"]);
    let log = ws.log_path("t1", "after_proposed", 1);
    ws.eventually("the first byte of the cut character", || {
        ws.read_bytes(&log).is_some_and(|b| b.ends_with(b"\xc3"))
    });
    let url = format!("http://{addr}/task/t1/log/after_proposed-01.log");
    browser.goto(&url);
    let page = browser.text_of("#log").unwrap_or_default();
    assert!(
        page.ends_with("plain green ") && !page.contains('\u{fffd}'),
        "the cut character is left for the tail: {page:?}"
    );

    std::fs::write(&go, "").unwrap();
    browser.wait_for("the run's footer", |b| {
        let t = b.text_of("#log").unwrap_or_default();
        (t.contains("\n--- hookq exit 0 after ") && t.ends_with(" ms\n")).then_some(())
    });
    let tailed = runs(&browser);
    runner.wait_within(crate::support::HANG).ok();
    let run = |class: &str, text: &str| (class.to_owned(), text.to_owned());
    assert!(
        tailed.contains(&run("fg-2 b", "green \u{fc} still green")),
        "the colour and the character go on from the page: {tailed:?}"
    );
    assert!(tailed.contains(&run("fg-4", "blue")), "{tailed:?}");
    let plain: String = tailed
        .iter()
        .filter(|(class, _)| class.is_empty())
        .map(|(_, text)| text.as_str())
        .collect();
    for shown in [
        "\nctl \u{2400}\u{2407}\u{2408} end\nold\nnew\n",
        " \u{20ac} euro\ncut \n--- hookq exit 0 after ",
    ] {
        assert!(plain.contains(shown), "{shown:?} in {plain:?}");
    }
    assert!(!plain.contains('\u{fffd}'), "{plain:?}");

    browser.goto(&url);
    assert_eq!(runs(&browser), tailed, "the page reloaded");
    let console = browser.console();
    assert!(console.is_empty(), "the console: {console:?}");
    drop(browser);
    runtime.shutdown_background();
}
