//! The tests' WebDriver client (`support::browser`) itself, against a page served by the test from a plain listener on 127.0.0.1:
//! finding, reading, clicking and submitting, scripts, alerts, the console's errors, the dark
//! scheme, screenshots, and no process left behind once the browser drops.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};

use serde_json::json;

use crate::support::browser::Browser;

const PAGE: &str = r#"<!doctype html>
<html><head><meta charset="utf-8"><title>own page</title>
<link rel="icon" href="data:,">
<style>
body { background: rgb(255, 255, 255); color: rgb(0, 0, 0); }
@media (prefers-color-scheme: dark) { body { background: rgb(0, 0, 0); color: rgb(255, 255, 255); } }
</style></head>
<body><main id="main">
<p id="t">hello</p>
<button id="b" onclick="document.getElementById('t').textContent = 'clicked'">click</button>
<form method="post" action="/posted"><input name="x" value="1"><button id="s">send</button></form>
</main>
<script>
console.error("own-page marker error");
setTimeout(function () { throw new Error("own-page uncaught"); }, 0);
</script>
</body></html>"#;

/// Serves [`PAGE`] at `/` and echoes a posted form at `/posted`, on a free port of 127.0.0.1,
/// for as long as the test runs; returns the base URL.
fn serve() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || answer(stream));
        }
    });
    url
}

fn answer(stream: TcpStream) {
    stream.set_read_timeout(Some(crate::support::HANG)).unwrap();
    let mut reader = BufReader::new(stream);
    let mut request = String::new();
    if reader.read_line(&mut request).is_err() {
        return;
    }
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some((k, v)) = line.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    let (status, text) = match request.split_whitespace().take(2).collect::<Vec<_>>()[..] {
        ["GET", "/"] => ("200 OK", PAGE.to_owned()),
        ["POST", "/posted"] => (
            "200 OK",
            format!(
                "<!doctype html><title>posted</title><link rel=\"icon\" href=\"data:,\">\
                 <p id=\"posted\">posted {}</p>",
                String::from_utf8_lossy(&body)
            ),
        ),
        _ => ("404 Not Found", String::new()),
    };
    let mut stream = reader.into_inner();
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n{text}",
        text.len()
    );
}

/// Every process whose command line names `needle`, but zombies (dead already, waiting for a
/// reaper that the test cannot be).
fn processes_naming(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if !cmdline.contains(needle) {
            continue;
        }
        let pid: i32 = match entry.file_name().to_string_lossy().parse() {
            Ok(pid) => pid,
            Err(_) => continue,
        };
        if !crate::support::queue::process_gone(pid) {
            found.push(format!("{pid}: {cmdline}"));
        }
    }
    found
}

#[test]
fn the_harness_drives_a_page_and_catches_its_console_errors() {
    let Some(b) = Browser::start("the_harness_drives_a_page_and_catches_its_console_errors") else {
        return;
    };
    let url = serve();
    b.goto(&format!("{url}/"));
    assert_eq!(b.title(), "own page");
    assert_eq!(b.find("#t").text(), "hello");
    assert_eq!(b.find("#main").tag(), "main");
    assert!(b.try_find("#absent").is_none());
    assert_eq!(b.count("button"), 2);

    // A click runs the page's handler.
    b.find("#b").click();
    assert_eq!(b.text_of("#t").as_deref(), Some("clicked"));

    // Scripts get their arguments, elements among them, and return values.
    assert_eq!(
        b.execute("return arguments[0] + 2;", vec![json!(2)]),
        json!(4)
    );
    let t = b.find("#t");
    assert_eq!(
        b.execute("return arguments[0].id;", vec![t.as_arg()]),
        json!("t")
    );

    // Both the page's console.error and its uncaught exception are caught.
    let errors = b.wait_for("the uncaught exception", |b| {
        let errors = b.console_errors();
        errors
            .iter()
            .any(|e| e.contains("own-page uncaught"))
            .then_some(errors)
    });
    assert!(
        errors.iter().any(|e| e.contains("own-page marker error")),
        "{errors:#?}"
    );
    assert_eq!(errors.len(), 2, "{errors:#?}");
    // Read again, the console keeps what it had.
    assert_eq!(b.console_errors(), errors);

    // An alert is seen, and none once dismissed.
    assert_eq!(b.alert_text(), None);
    b.execute("setTimeout(function () { alert('hi'); }, 0);", vec![]);
    let said = b.wait_for("the alert", |b| b.alert_text());
    assert_eq!(said, "hi");
    b.dismiss_alert();
    assert_eq!(b.alert_text(), None);

    // The dark scheme is the reader's choice, emulated.
    let background = |b: &Browser| {
        b.execute(
            "return getComputedStyle(document.body).backgroundColor;",
            vec![],
        )
    };
    assert_eq!(background(&b), json!("rgb(255, 255, 255)"));
    b.prefer_dark(true);
    assert_eq!(background(&b), json!("rgb(0, 0, 0)"));
    let png = b.screenshot_png();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    b.prefer_dark(false);
    assert_eq!(background(&b), json!("rgb(255, 255, 255)"));

    // A screenshot is a PNG file under target/ui-screens.
    let path = b.screenshot("harness-own-page");
    let saved = std::fs::read(&path).unwrap();
    assert_eq!(&saved[..8], b"\x89PNG\r\n\x1a\n");
    assert!(saved.len() > 1000, "{} bytes", saved.len());

    // A form is posted by its button, and the browser follows.
    b.find("#s").click();
    b.wait_for("the posted page", |b| {
        b.text_of("#posted").filter(|t| t == "posted x=1")
    });
    assert!(b.url().ends_with("/posted"), "{}", b.url());

    // Dropped, the browser leaves no process behind.
    let profile = b.profile_dir().display().to_string();
    let driver = b.driver_pid();
    assert!(!processes_naming(&profile).is_empty(), "the browser runs");
    drop(b);
    assert!(crate::support::queue::process_gone(driver));
    crate::support::eventually("the browser's processes to end", || {
        processes_naming(&profile).is_empty()
    });
}
