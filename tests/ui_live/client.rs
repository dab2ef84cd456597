//! The live routes served on 127.0.0.1 by a runtime of the test's own, and a plain HTTP client
//! that reads Server-Sent Events as a browser's `EventSource` parses them.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use hookq::ui::live::{Live, routes};

use crate::support::HANG;

/// How long a stream must stay silent to count as settled.
const SILENCE: Duration = Duration::from_millis(500);

/// The live routes of `live`, served on a free port of 127.0.0.1.
pub struct Server {
    /// Where it listens.
    pub addr: SocketAddr,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Server {
    pub fn start(live: Arc<Live>) -> Server {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        runtime.spawn(async move { axum::serve(listener, routes(live)).await });
        Server {
            addr,
            runtime: Some(runtime),
        }
    }

    /// `GET path`: the status, the headers (lowercase names) and the body.
    pub fn get(&self, path: &str) -> (u16, Vec<(String, String)>, Vec<u8>) {
        let mut reader = BufReader::new(self.request(path));
        let (status, headers) = head(&mut reader);
        let mut body = Vec::new();
        reader.read_to_end(&mut body).unwrap();
        (status, headers, body)
    }

    /// `GET path` as an `EventSource` would, read on a thread of its own.
    pub fn events(&self, path: &str) -> Events {
        self.events_with(path, "")
    }

    /// [`Server::events`] with extra header lines (`"Last-Event-ID: 10\r\n"`).
    pub fn events_with(&self, path: &str, headers: &str) -> Events {
        let stream = self.request_with(path, headers);
        let reader_stream = stream.try_clone().unwrap();
        let (tx, rx) = mpsc::channel();
        let (status_tx, status_rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(reader_stream);
            let _ = status_tx.send(head(&mut reader));
            let mut event = Event::default();
            let mut line = String::new();
            loop {
                line.clear();
                match reader.read_line(&mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                let line = line.trim_end_matches(['\n', '\r']);
                if line.is_empty() {
                    let done = std::mem::take(&mut event);
                    if (!done.data.is_empty() || !done.event.is_empty()) && tx.send(done).is_err() {
                        return;
                    }
                    continue;
                }
                if line.starts_with(':') {
                    continue;
                }
                let (field, value) = line.split_once(':').unwrap_or((line, ""));
                let value = value.strip_prefix(' ').unwrap_or(value);
                match field {
                    "event" => event.event = value.to_owned(),
                    "data" => {
                        if event.has_data {
                            event.data.push('\n');
                        }
                        event.data.push_str(value);
                        event.has_data = true;
                    }
                    "id" => event.id = Some(value.to_owned()),
                    _ => {}
                }
            }
        });
        let (status, headers) = status_rx.recv_timeout(HANG).unwrap();
        assert_eq!(status, 200, "GET {path}");
        let header = |name: &str| headers.iter().find(|(k, _)| k == name).map(|(_, v)| v);
        assert_eq!(
            header("content-type").map(String::as_str),
            Some("text/event-stream"),
            "GET {path}"
        );
        // Not cached, not held back by a proxy.
        assert_eq!(
            header("cache-control").map(String::as_str),
            Some("no-cache")
        );
        assert_eq!(header("x-accel-buffering").map(String::as_str), Some("no"));
        Events { rx, stream }
    }

    fn request(&self, path: &str) -> TcpStream {
        self.request_with(path, "")
    }

    fn request_with(&self, path: &str, headers: &str) -> TcpStream {
        let mut stream = TcpStream::connect(self.addr).unwrap();
        stream.set_read_timeout(Some(HANG * 2)).unwrap();
        // HTTP/1.0: the body ends when the connection closes, with no chunks to take apart.
        write!(
            stream,
            "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n{headers}\r\n"
        )
        .unwrap();
        stream
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// The status line's code and the headers.
fn head(reader: &mut impl BufRead) -> (u16, Vec<(String, String)>) {
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("status line {line:?}"));
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            return (status, headers);
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
}

/// One event as `EventSource` dispatches it.
#[derive(Debug, Default, Clone)]
pub struct Event {
    pub event: String,
    pub data: String,
    pub id: Option<String>,
    has_data: bool,
}

/// An open event stream.
pub struct Events {
    rx: Receiver<Event>,
    stream: TcpStream,
}

impl Events {
    /// The next event, or `None` once the stream ended; fails the test after [`HANG`].
    pub fn next(&self) -> Option<Event> {
        match self.rx.recv_timeout(HANG) {
            Ok(e) => Some(e),
            Err(RecvTimeoutError::Disconnected) => None,
            Err(RecvTimeoutError::Timeout) => panic!("no event within {HANG:?}"),
        }
    }

    /// The first event, `hello`: its generation.
    pub fn hello(&self) -> u64 {
        let e = self.next().expect("an open stream");
        assert_eq!(e.event, "hello", "{e:?}");
        e.data.parse().unwrap()
    }

    /// Waits for a `change` to a generation after `seen`; returns it.
    pub fn change_after(&self, seen: u64, what: &str) -> u64 {
        let started = Instant::now();
        loop {
            let left = HANG.saturating_sub(started.elapsed());
            let e = match self.rx.recv_timeout(left) {
                Ok(e) => e,
                Err(e) => panic!("no change after {what}: {e:?}"),
            };
            assert_eq!(e.event, "change", "{e:?}");
            let g: u64 = e.data.parse().unwrap();
            if g > seen {
                return g;
            }
        }
    }

    /// The generation this page has heard of once it caught up with all that was committed
    /// before the call (`seen` when nothing new was): waits for the watcher of `live` to read
    /// three times more, so that one read began after the call and the change it found is
    /// published (a read counts itself after looking at the start log, and the watcher
    /// publishes a change before it reads again), then for the page to hear of it.
    pub fn caught_up(&self, live: &Live, mut seen: u64) -> u64 {
        let reads = live.reads();
        crate::support::eventually("the watcher to read the database again", || {
            live.reads() >= reads + 3
        });
        let now = live.generation();
        while seen < now {
            seen = self.change_after(seen, "a change already published");
        }
        seen
    }

    /// The last generation `change` events named once the stream has been silent for a while
    /// (`seen` when none came).
    pub fn settle(&self, mut seen: u64) -> u64 {
        while let Ok(e) = self.rx.recv_timeout(SILENCE) {
            assert_eq!(e.event, "change", "{e:?}");
            seen = seen.max(e.data.parse().unwrap());
        }
        seen
    }

    /// Appended text until it holds `needle`; all of it.
    pub fn text_until(&self, needle: &str) -> String {
        self.appended_until(needle).0
    }

    /// Appended text until it holds `needle`: all of it, and the last event's id.
    pub fn appended_until(&self, needle: &str) -> (String, Option<String>) {
        let mut text = String::new();
        let mut id = None;
        while !text.contains(needle) {
            let e = self
                .next()
                .unwrap_or_else(|| panic!("stream ended before {needle:?}: {text:?}"));
            assert_eq!(e.event, "append", "{e:?}");
            text.push_str(&e.data);
            id = e.id;
        }
        (text, id)
    }

    /// Waits for the server to end the stream, passing over what it still sends.
    pub fn ended(&self) {
        while self.next().is_some() {}
    }
}

impl Drop for Events {
    fn drop(&mut self) {
        let _ = self.stream.shutdown(Shutdown::Both);
    }
}
