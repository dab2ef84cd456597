//! `hookq ui` as a command: `--open` hands the address to the desktop's opener, a missing
//! opener is a warning; Ctrl-C ends it cleanly; outside a workspace it says so.

use rustix::process::Signal;

use crate::pages::moved;
use crate::server::Served;
use crate::support::queue::Ws;

/// A `PATH` of `bin` and the test's own.
fn path_with(bin: &std::path::Path) -> String {
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into())
    )
}

#[test]
fn open_hands_the_address_to_the_opener() {
    let mut ws = moved();
    let bin = ws.base().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let opened = ws.base().join("opened");
    let script = bin.join("xdg-open");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$1\" > '{}'\n",
            opened.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    ws.set_env("PATH", path_with(&bin));
    let ui = Served::start(&ws, &["--open"]);
    crate::support::eventually("the opener to run", || {
        opened.is_file() && !std::fs::read_to_string(&opened).unwrap().is_empty()
    });
    assert_eq!(std::fs::read_to_string(&opened).unwrap().trim_end(), ui.url);
    ui.stop();
}

#[test]
fn a_missing_opener_is_a_warning_and_ctrl_c_ends_it() {
    let mut ws = moved();
    let empty = ws.base().join("empty-bin");
    std::fs::create_dir_all(&empty).unwrap();
    ws.set_env("PATH", empty.display().to_string());
    let ui = Served::start(&ws, &["--open"]);
    assert_eq!(ui.get("").status, 200, "it serves all the same");
    let out = ui.stop_with(Signal::INT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    let warnings = out.warnings();
    assert_eq!(warnings.len(), 1, "{}", out.describe());
    assert!(
        warnings[0].starts_with("warning: cannot open a browser (xdg-open): "),
        "{warnings:?}"
    );
}

#[test]
fn outside_a_workspace_it_says_so() {
    let ws = Ws::new();
    let out = ws.hookq(&["ui"]);
    assert_ne!(out.code(), Some(0));
    assert!(out.stdout().is_empty(), "{}", out.describe());
    assert_eq!(out.errors().len(), 1, "{}", out.describe());
}

/// An open page's streams (the live view's events, a log's tail) end at once when `hookq ui`
/// is told to stop: each ends as a complete response, with HTTP's last chunk, rather than being
/// cut off when the process exits after the grace the server gives the requests under way.
#[test]
fn sigterm_ends_an_open_pages_streams_at_once() {
    use std::io::{Read, Write};
    let ws = moved();
    let ui = Served::start(&ws, &[]);
    let host = ui.url.trim_start_matches("http://").trim_end_matches('/');
    let open = |path: &str, first: &str| {
        let mut s = std::net::TcpStream::connect(host).unwrap();
        s.set_read_timeout(Some(crate::support::HANG)).unwrap();
        write!(
            s,
            "GET /{path} HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\n\r\n"
        )
        .unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&got).contains(first) {
            let n = s.read(&mut buf).unwrap();
            assert!(
                n > 0,
                "{path} ended early: {}",
                String::from_utf8_lossy(&got)
            );
            got.extend_from_slice(&buf[..n]);
        }
        (s, got)
    };
    let streams = [
        open("events", "event: hello"),
        open(
            "task/t1/log/after_rework-01.log/tail?from=0",
            "hello from after_rework",
        ),
    ];
    ui.stop();
    for (mut s, mut got) in streams {
        s.read_to_end(&mut got).unwrap();
        let text = String::from_utf8_lossy(&got);
        assert!(
            text.starts_with("HTTP/1.1 200") && text.contains("transfer-encoding: chunked"),
            "{text}"
        );
        assert!(
            text.ends_with("\r\n0\r\n\r\n"),
            "the stream was cut off, not ended: {text:?}"
        );
    }
}
