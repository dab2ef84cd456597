//! `GET /task/{id}/log/{file}/tail`: a running hook's log, streamed as it is written, rendered
//! as the log page renders it; a character or escape sequence cut by a write held back until
//! its rest comes; only a log the task has.

use std::io::Write as _;

use hookq::Workspace;
use hookq::ui::live::{LIVE_JS, Live};

use crate::live::client::Server;
use crate::support::queue::Ws;

#[test]
fn a_running_hooks_log_is_streamed_as_it_is_written() {
    let ws = Ws::init();
    let go = ws.base().join("go");
    ws.write_config(&format!(
        r#"after_proposed = ['echo first line; n=0; while [ ! -e {} ] && [ $n -lt 2400 ]; do sleep 0.05; n=$((n + 1)); done; printf "\033[31msecond\033[0m <b>&\r\n"']"#,
        go.display()
    ));
    ws.settle_config();
    ws.task_add("t1", "p", "todo.proposed").ok();
    let live = Live::start(Workspace::at(ws.root())).unwrap();
    let server = Server::start(live.clone());
    let runner = ws.spawn(&["run"]);
    let log = ws.log_path("t1", "after_proposed", 1);
    ws.eventually("the hook's first line", || {
        ws.read_bytes(&log)
            .is_some_and(|b| String::from_utf8_lossy(&b).contains("first line\n"))
    });

    let from_start = server.events("/task/t1/log/after_proposed-01.log/tail?from=0");
    let head = from_start.text_until("first line\n");
    assert!(head.starts_with("--- hookq "), "{head:?}");
    // Another page, rendered with what the log held so far, asks for the rest only.
    let written = std::fs::metadata(&log).unwrap().len();
    let rest = server.events(&format!(
        "/task/t1/log/after_proposed-01.log/tail?from={written}"
    ));

    std::fs::write(&go, "").unwrap();
    // The hook's output, then the runner's footer.
    let footer = "--- hookq exit 0";
    let tail = from_start.text_until(footer);
    assert!(
        tail.starts_with("<span class=\"fg-1\">second</span> &#60;b&#62;&#38;\n--- hookq exit 0 "),
        "{tail:?}"
    );
    let later = rest.text_until(footer);
    assert_eq!(later, tail, "only what came after the offset, rendered");
    runner.wait_within(crate::support::HANG).ok();

    // A browser connecting again says where its last event ended: it is sent the rest only.
    let again = server.events_with(
        "/task/t1/log/after_proposed-01.log/tail?from=0",
        &format!("Last-Event-ID: {written}\r\n"),
    );
    let resumed = again.text_until(footer);
    assert_eq!(resumed, tail);
    // The colour codes went whole, not just their ESC, into the spans (the header shows the
    // command's text, which spells them out).
    assert!(!tail.contains("[31m") && !tail.contains("[0m"), "{tail:?}");
    for text in [&head, &tail] {
        assert!(!text.contains('\u{1b}') && !text.contains('\r'), "{text:?}");
    }

    // Emptied (as `logrotate` with copytruncate does) or replaced by another file: the page
    // is told to start again, and sent the new file's text.
    std::fs::write(&log, "emptied\n").unwrap();
    let e = again.next().unwrap();
    assert_eq!((e.event.as_str(), e.id.as_deref()), ("reset", Some("0")));
    assert_eq!(again.text_until("emptied\n"), "emptied\n");
    let moved = ws.base().join("rotated.log");
    std::fs::rename(&log, &moved).unwrap();
    std::fs::write(&log, "a new file, longer than the last\n").unwrap();
    let e = again.next().unwrap();
    assert_eq!(e.event, "reset");
    again.text_until("a new file, longer than the last\n");

    // Stopping the view ends the streams.
    live.stop();
    from_start.ended();
    again.ended();
}

#[test]
fn a_character_or_escape_cut_by_a_write_waits_for_its_rest() {
    let ws = Ws::init();
    ws.write_config("after_proposed = ['echo ran']");
    ws.settle_config();
    ws.task_add("t1", "p", "todo.proposed").ok();
    ws.hookq(&["run"]).ok();
    let log = ws.log_path("t1", "after_proposed", 1);
    let ran = std::fs::metadata(&log).unwrap().len();
    let live = Live::start(Workspace::at(ws.root())).unwrap();
    let server = Server::start(live);
    let tail = server.events(&format!(
        "/task/t1/log/after_proposed-01.log/tail?from={ran}"
    ));
    // The log written as a hook writes it: in pieces, cut anywhere.
    let append = |bytes: &[u8]| {
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        f.write_all(bytes).unwrap();
    };

    append(b"\x1b[1;32mgreen \xc3");
    let (text, id) = tail.appended_until("green");
    assert_eq!(text, r#"<span class="fg-2 b">green </span>"#);
    // Up to the character's first byte, in the style in effect there.
    let green = ran + 13;
    assert_eq!(id, Some(format!("{green} fg-2 b")));
    append(b"\xbc \x1b[3");
    let (text, _) = tail.appended_until("\u{fc}");
    assert_eq!(
        text, "<span class=\"fg-2 b\">\u{fc} </span>",
        "\\xc3\\xbc is one ü"
    );
    append(b"4mblue\x1b[0m\x07\x08 old\rnew\r");
    let (text, _) = tail.appended_until("new");
    assert_eq!(
        text, "<span class=\"fg-4 b\">blue</span>\u{2407}\u{2408} old\nnew",
        "the escape's rest, control bytes as pictures, a carriage return as a line break"
    );
    // Output that ends in an unterminated escape, then the footer hookq writes after it.
    append(b"\n\x1b[\n--- hookq exit 0 after 2 ms\n");
    let (text, end) = tail.appended_until("after 2 ms");
    assert_eq!(
        text, "\n\n--- hookq exit 0 after 2 ms\n",
        "the footer whole"
    );
    let end: u64 = end.unwrap().parse().unwrap();
    assert_eq!(end, std::fs::metadata(&log).unwrap().len());

    // A page rendered up to the cut character, or a browser connecting again after the event
    // that ended there, is sent the same text from there, in the same colour.
    let expected = "<span class=\"fg-2 b\">\u{fc} </span><span class=\"fg-4 b\">blue</span>";
    let from_page = server.events(&format!(
        "/task/t1/log/after_proposed-01.log/tail?from={green}&style=fg-2+b"
    ));
    assert!(from_page.text_until("blue").starts_with(expected));
    let resumed = server.events_with(
        "/task/t1/log/after_proposed-01.log/tail?from=0",
        &format!("Last-Event-ID: {green} fg-2 b\r\n"),
    );
    assert!(resumed.text_until("blue").starts_with(expected));
    let (status, _, _) =
        server.get("/task/t1/log/after_proposed-01.log/tail?from=0&style=fg-1+%3Cb%3E");
    assert_eq!(status, 400, "a style that is not one");
}

#[test]
fn a_log_the_task_does_not_list_is_not_found() {
    let ws = Ws::init();
    ws.write_config("after_proposed = ['echo ran']");
    ws.settle_config();
    ws.task_add("t1", "p", "todo.proposed").ok();
    ws.hookq(&["run"]).ok();
    assert!(ws.log_path("t1", "after_proposed", 1).is_file());
    let live = Live::start(Workspace::at(ws.root())).unwrap();
    let server = Server::start(live);
    // The log it has is streamed.
    let listed = server.events("/task/t1/log/after_proposed-01.log/tail?from=0");
    listed.text_until("ran\n");
    for path in [
        "/task/t1/log/after_proposed-02.log/tail",
        "/task/t1/log/after_fail-01.log/tail",
        "/task/t2/log/after_proposed-01.log/tail",
        "/task/t1/log/..%2F..%2F..%2Farc.db/tail",
        "/task/t1/log/..%2Fhooks%2Fafter_proposed-01.log/tail",
        "/task/..%2Ft1/log/after_proposed-01.log/tail",
        "/task/%2E%2E/log/after_proposed-01.log/tail",
        "/task/t1/log/%00/tail",
        "/task/t1/log/config.toml/tail",
    ] {
        let (status, _, _) = server.get(path);
        assert_eq!(status, 404, "{path}");
    }
    let (status, _, _) = server.get("/task/t1/log/after_proposed-01.log/tail?from=x");
    assert_eq!(status, 400, "a bad offset");
}

#[test]
fn the_script_is_served_as_javascript() {
    let ws = Ws::init();
    let live = Live::start(Workspace::at(ws.root())).unwrap();
    let server = Server::start(live);
    let (status, headers, body) = server.get("/assets/live.js");
    assert_eq!(status, 200);
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(
        header("content-type"),
        Some("text/javascript; charset=utf-8")
    );
    assert!(header("cache-control").is_some_and(|v| v.contains("max-age")));
    assert_eq!(body, LIVE_JS.as_bytes());
    assert!(LIVE_JS.contains("EventSource"));
}

/// A log pruned while a page tails it: the stream says `pruned` once and ends.
#[test]
fn a_log_pruned_while_tailed_says_so() {
    let ws = Ws::init();
    ws.write_config("after_proposed = ['echo ran']");
    ws.settle_config();
    ws.task_add("t1", "p", "todo.proposed").ok();
    ws.hookq(&["run"]).ok();
    let live = Live::start(Workspace::at(ws.root())).unwrap();
    let server = Server::start(live);
    let tail = server.events("/task/t1/log/after_proposed-01.log/tail?from=0");
    tail.text_until("ran\n");
    std::fs::remove_file(ws.log_path("t1", "after_proposed", 1)).unwrap();
    let e = tail.next().unwrap();
    assert_eq!(e.event, "pruned");
    assert!(e.data.starts_with("pruned"), "{:?}", e.data);
    tail.ended();
}
