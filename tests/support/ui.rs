//! `hookq ui` started in the background in a test's workspace: the one launcher the web view's
//! HTTP tests (`tests/ui/`) and browser tests (`tests/browser/`, and the PostgreSQL ones) share.

use std::io::{Read, Write};
use std::net::TcpStream;

use super::queue::{Running, Ws};
use super::{HANG, eventually};

/// A running `hookq ui` (killed when dropped, as any [`Running`]) and the URL it printed.
pub struct Launched {
    /// The process.
    pub running: Running,
    /// The URL it serves at, as printed (`http://127.0.0.1:PORT/`, or `0.0.0.0` when it listens
    /// on every address).
    pub url: String,
}

/// Starts `hookq ui ARGS` in `ws` with `env` added, and returns once it answers a request: by
/// then it has printed and flushed everything it prints before serving (the URL, and a token
/// line when it made one up), so the test reads its stdout whole.
pub fn launch(ws: &Ws, args: &[&str], env: &[(&str, &str)]) -> Launched {
    let mut all = vec!["ui"];
    all.extend_from_slice(args);
    let mut running = ws.spawn_env(&all, env);
    let mut url = None;
    eventually("`hookq ui` to print where it serves", || {
        let out = running.stdout_so_far();
        assert!(
            !running.exited(),
            "`hookq ui` ended before serving:\n{out}{}",
            running.stderr_so_far()
        );
        url = out
            .lines()
            .find_map(|l| l.strip_prefix("hookq ui: serving "))
            .and_then(|l| l.rsplit_once(" at "))
            .map(|(_, url)| url.trim().to_owned());
        url.is_some()
    });
    let url = url.unwrap();
    answers(&url.replace("://0.0.0.0:", "://127.0.0.1:"));
    Launched { running, url }
}

/// Waits for the server at `url` to answer a `HEAD /`, whatever its status: it serves only
/// after flushing what it printed, and a token it asks for does not matter here.
fn answers(url: &str) {
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let mut stream = TcpStream::connect(&addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    stream.set_read_timeout(Some(HANG)).unwrap();
    write!(
        stream,
        "HEAD / HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut first = [0u8; 12];
    stream
        .read_exact(&mut first)
        .unwrap_or_else(|e| panic!("`hookq ui` at {url} did not answer: {e}"));
    assert!(first.starts_with(b"HTTP/1.1 "), "{first:?}");
}
