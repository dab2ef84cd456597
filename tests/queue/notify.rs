//! The documented notification lines (ntfy and Bark), taken from docs/queue.md itself and run
//! for real by `hookq run` against a local HTTP listener: exactly one request, carrying the
//! repository name, the task id and the phase, and nothing else.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::mpsc;

use crate::support::HANG;

const QUEUE_DOC: &str = include_str!("../../docs/queue.md");

/// A directory name with a space and form metacharacters, so a value pasted into a URL or form
/// unescaped would show up as a wrong or extra field.
const REPO: &str = "demo repo&x=1";
const TASK: &str = "t-42.a";
const PHASE: &str = "review.awaiting_human";

/// One HTTP request as the listener received it.
#[derive(Debug)]
struct Request {
    method: String,
    target: String,
    /// Names lowercased, in the order sent.
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn header_names(&self) -> BTreeSet<&str> {
        self.headers.iter().map(|(n, _)| n.as_str()).collect()
    }
}

/// The `after_awaiting_human = [...]` block between `<!-- notify:NAME -->` markers in
/// docs/queue.md.
fn documented_block(name: &str) -> String {
    let begin = format!("<!-- notify:{name} -->\n");
    let end = format!("<!-- /notify:{name} -->");
    let start = QUEUE_DOC
        .find(&begin)
        .unwrap_or_else(|| panic!("docs/queue.md has no {begin:?} marker"))
        + begin.len();
    let len = QUEUE_DOC[start..]
        .find(&end)
        .unwrap_or_else(|| panic!("docs/queue.md has no {end:?} marker"));
    let fenced = &QUEUE_DOC[start..start + len];
    let block = fenced
        .strip_prefix("```toml\n")
        .and_then(|b| b.strip_suffix("```\n"))
        .unwrap_or_else(|| panic!("the {name} block is not one ```toml fence:\n{fenced}"));
    assert!(
        block.starts_with("after_awaiting_human = [\n") && block.ends_with("]\n"),
        "the {name} block is not an after_awaiting_human array:\n{block}"
    );
    block.to_owned()
}

/// A listener on 127.0.0.1:0 answering every request with 200; each request is sent on the
/// channel as it arrives (or the reason it could not be read), before the client hears back or
/// sees the connection close: once a hook's `curl` has ended, what it sent is on the channel.
fn listen() -> (String, mpsc::Receiver<Result<Request, String>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local addr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let sent = match stream {
                Err(e) => tx.send(Err(e.to_string())),
                Ok(stream) => {
                    // Open until a failure is on the channel.
                    let _held = stream.try_clone();
                    match serve(stream, &tx) {
                        Ok(()) => Ok(()),
                        Err(e) => tx.send(Err(e)),
                    }
                }
            };
            if sent.is_err() {
                break;
            }
        }
    });
    (format!("http://{addr}"), rx)
}

/// Minimal HTTP/1.1: request line, headers, a `Content-Length` body; sends the request on `tx`,
/// then replies 200.
fn serve(stream: TcpStream, tx: &mpsc::Sender<Result<Request, String>>) -> Result<(), String> {
    let io = |e: std::io::Error| e.to_string();
    stream.set_read_timeout(Some(HANG)).map_err(io)?;
    let mut writer = stream.try_clone().map_err(io)?;
    let mut reader = BufReader::new(stream);
    let mut line = Vec::new();
    let mut read_line = |reader: &mut BufReader<TcpStream>| -> Result<String, String> {
        line.clear();
        reader.read_until(b'\n', &mut line).map_err(io)?;
        let text = String::from_utf8(line.clone()).map_err(|e| format!("not UTF-8: {e}"))?;
        text.strip_suffix("\r\n")
            .map(str::to_owned)
            .ok_or_else(|| format!("line not ended by CRLF: {text:?}"))
    };
    let request_line = read_line(&mut reader)?;
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some("HTTP/1.1"), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(format!("bad request line {request_line:?}"));
    };
    let mut headers = Vec::new();
    loop {
        let h = read_line(&mut reader)?;
        if h.is_empty() {
            break;
        }
        let (name, value) = h
            .split_once(':')
            .ok_or_else(|| format!("bad header {h:?}"))?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let mut req = Request {
        method: method.to_owned(),
        target: target.to_owned(),
        headers,
        body: Vec::new(),
    };
    if req.header("transfer-encoding").is_some() {
        return Err("chunked bodies are not expected".into());
    }
    if req
        .header("expect")
        .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
    {
        writer
            .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
            .map_err(io)?;
    }
    let len: usize = match req.header("content-length") {
        Some(v) => v
            .parse()
            .map_err(|e| format!("bad content-length {v:?}: {e}"))?,
        None => 0,
    };
    req.body = vec![0; len];
    reader.read_exact(&mut req.body).map_err(io)?;
    tx.send(Ok(req))
        .map_err(|_| "the test no longer listens".to_owned())?;
    writer
        .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n")
        .map_err(io)?;
    Ok(())
}

/// `application/x-www-form-urlencoded` pairs, in order.
fn form_decode(body: &[u8]) -> Vec<(String, String)> {
    fn decode(s: &str) -> String {
        let bytes = s.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'+' => out.push(b' '),
                b'%' => {
                    let hex = s.get(i + 1..i + 3).expect("a % escape has two hex digits");
                    out.push(u8::from_str_radix(hex, 16).expect("a % escape has two hex digits"));
                    i += 2;
                }
                b => out.push(b),
            }
            i += 1;
        }
        String::from_utf8(out).expect("a form value is UTF-8")
    }
    let body = std::str::from_utf8(body).expect("a form body is ASCII");
    body.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

/// A temp dir holding a workspace named [`REPO`], with `block` as its `after_awaiting_human`.
struct Workspace {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
}

impl Workspace {
    fn new(block: &str) -> Self {
        let tmp = tempfile::tempdir().expect("temp dir");
        let root = tmp.path().join(REPO);
        let home = tmp.path().join("home");
        std::fs::create_dir(&root).unwrap();
        std::fs::create_dir(&home).unwrap();
        let ws = Self {
            _tmp: tmp,
            root,
            home,
        };
        ws.ok(&["init"], &[]);
        let path = ws.root.join(".radian/arc/config.toml");
        let config = std::fs::read_to_string(&path).unwrap();
        let empty = "after_awaiting_human = []\n";
        assert_eq!(
            config.matches(empty).count(),
            1,
            "init's config has one {empty:?}:\n{config}"
        );
        std::fs::write(&path, config.replace(empty, block)).unwrap();
        ws.ok(&["check"], &[]);
        ws
    }

    /// Runs `hookq args` in the workspace with a pinned environment; fails the test on a hang.
    fn hookq(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hookq"));
        cmd.args(args).current_dir(&self.root);
        // Nothing from the developer's environment may steer curl or the hook lines.
        for var in [
            "NTFY_URL",
            "NTFY_TOPIC",
            "BARK_URL",
            "BARK_KEY",
            "http_proxy",
            "HTTP_PROXY",
            "https_proxy",
            "HTTPS_PROXY",
            "all_proxy",
            "ALL_PROXY",
            "CURL_HOME",
            "CURL_CA_BUNDLE",
            "SSLKEYLOGFILE",
            "HOOKQ_LOG",
        ] {
            cmd.env_remove(var);
        }
        cmd.env("HOME", &self.home)
            .env("NO_PROXY", "*")
            .env("no_proxy", "*");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(cmd.output());
        });
        match rx.recv_timeout(HANG) {
            Ok(out) => out.expect("start hookq"),
            Err(_) => panic!("hookq {args:?} did not finish within {HANG:?}"),
        }
    }

    fn ok(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let out = self.hookq(args, env);
        assert!(
            out.status.success(),
            "hookq {args:?} failed: {}\nstdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Moves a task into `review.awaiting_human` (recording only), then runs one pass.
    fn notify(&self, env: &[(&str, &str)]) -> Output {
        self.ok(&["task", "add", TASK, "--plan", "p1"], &[]);
        self.ok(&["task", "move", TASK, PHASE, "--no-run"], &[]);
        self.ok(&["run"], env)
    }

    /// The outcomes of the history rows, oldest first.
    fn outcomes(&self) -> Vec<String> {
        let out = self.ok(&["queue", "history", "--json"], &[]);
        let rows: serde_json::Value = serde_json::from_slice(&out.stdout).expect("history JSON");
        let mut outcomes: Vec<String> = rows
            .as_array()
            .expect("a JSON array")
            .iter()
            .map(|r| r["outcome"].as_str().expect("an outcome").to_owned())
            .collect();
        outcomes.reverse();
        outcomes
    }

    fn log(&self) -> String {
        let path = self
            .root
            .join(".radian/arc/runs")
            .join(TASK)
            .join("hooks/after_awaiting_human-01.log");
        std::fs::read_to_string(Path::new(&path)).unwrap_or_default()
    }
}

fn require_curl() {
    let found = Command::new("curl")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "these tests run the documented curl lines: install curl (`.ci/run` does)"
    );
}

/// The single request a pass sent; fails if none arrives or a second one follows.
fn one_request(rx: &mpsc::Receiver<Result<Request, String>>, ws: &Workspace) -> Request {
    // The pass has ended, and with it the hook's `curl`: what it sent is on the channel.
    let req = match rx.try_recv() {
        Ok(r) => r.unwrap_or_else(|e| panic!("the request could not be read: {e}")),
        Err(_) => panic!("no request arrived; hook log:\n{}", ws.log()),
    };
    if let Ok(extra) = rx.try_recv() {
        panic!("a second request arrived: {extra:?}");
    }
    req
}

fn no_warnings(out: &Output, ws: &Workspace) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("warning:"),
        "stderr: {stderr}\nhook log:\n{}",
        ws.log()
    );
    assert_eq!(ws.outcomes(), ["ok"], "hook log:\n{}", ws.log());
}

/// Headers curl sends on its own for a POST with a body.
const CURL_HEADERS: [&str; 5] = [
    "host",
    "user-agent",
    "accept",
    "content-length",
    "content-type",
];

#[test]
fn ntfy_line_sends_repository_task_and_phase_only() {
    require_curl();
    let (url, rx) = listen();
    let ws = Workspace::new(&documented_block("ntfy"));
    let out = ws.notify(&[("NTFY_URL", &url), ("NTFY_TOPIC", "hookq-test-topic")]);
    let req = one_request(&rx, &ws);
    no_warnings(&out, &ws);

    assert_eq!(req.method, "POST");
    assert_eq!(req.target, "/hookq-test-topic");
    assert_eq!(req.header("title"), Some(REPO), "{req:?}");
    assert_eq!(
        String::from_utf8_lossy(&req.body),
        format!("{TASK} {PHASE}")
    );
    let extra: Vec<&str> = req
        .header_names()
        .into_iter()
        .filter(|n| !CURL_HEADERS.contains(n) && *n != "title")
        .collect();
    assert!(extra.is_empty(), "unexpected headers {extra:?} in {req:?}");
}

#[test]
fn bark_line_sends_repository_task_and_phase_only() {
    require_curl();
    let (url, rx) = listen();
    let ws = Workspace::new(&documented_block("bark"));
    let out = ws.notify(&[("BARK_URL", &url), ("BARK_KEY", "DeviceKey123")]);
    let req = one_request(&rx, &ws);
    no_warnings(&out, &ws);

    assert_eq!(req.method, "POST");
    assert_eq!(req.target, "/DeviceKey123");
    assert_eq!(
        req.header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    let fields = form_decode(&req.body);
    assert_eq!(
        fields,
        [
            ("title".to_owned(), REPO.to_owned()),
            ("body".to_owned(), format!("{TASK} {PHASE}"))
        ],
        "body: {}",
        String::from_utf8_lossy(&req.body)
    );
    let extra: Vec<&str> = req
        .header_names()
        .into_iter()
        .filter(|n| !CURL_HEADERS.contains(n))
        .collect();
    assert!(extra.is_empty(), "unexpected headers {extra:?} in {req:?}");
}

#[test]
fn a_missing_topic_sends_nothing_and_warns_once() {
    require_curl();
    let (url, rx) = listen();
    let ws = Workspace::new(&documented_block("ntfy"));
    let out = ws.notify(&[("NTFY_URL", &url)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.lines().filter(|l| l.starts_with("warning:")).count(),
        1,
        "stderr: {stderr}"
    );
    assert!(
        stderr.contains("after_awaiting_human-01"),
        "stderr: {stderr}"
    );
    assert_eq!(ws.outcomes(), ["failed"]);
    assert!(
        ws.log().contains("set NTFY_TOPIC"),
        "hook log:\n{}",
        ws.log()
    );
    // The pass has ended: a request its hook sent would be on the channel.
    if let Ok(req) = rx.try_recv() {
        panic!("a request was sent without a topic: {req:?}");
    }
}
