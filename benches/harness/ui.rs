//! Figure U: the web view (`hookq ui`). Its overview and pending pages with a million pending
//! points against a thousand (server time, from the `Server-Timing` header each response
//! carries), the CPU the server spends with ten pages open and nothing changing, and its peak
//! RSS after it all.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hookq::Workspace;

use super::proc::{cpu, hookq_bin, status_kib};
use super::report::{Row, Target};
use super::scale::{count, pending_workspace};
use super::sizes::Sizes;
use super::stats::median;

/// Pages open at once in the idle figure.
const OPEN_PAGES: usize = 10;

/// What figure U measured.
pub struct Ui {
    /// Pending points in the big workspace.
    pub big: usize,
    /// Pending points in the small one.
    pub small: usize,
    /// Overview, median server ms, big and small.
    pub overview: (f64, f64),
    /// Pending page, median server ms, big and small.
    pub pending: (f64, f64),
    /// Share of one core the server used while idle with [`OPEN_PAGES`] pages open, percent.
    pub idle_cpu_pct: f64,
    /// How long the idle server was watched.
    pub idle: Duration,
    /// The server's peak RSS (`VmHWM`) at the end, KiB.
    pub peak_kib: u64,
}

/// A `hookq ui` serving a workspace, ended on drop.
struct Server {
    child: Child,
    base: String,
}

impl Server {
    fn start(ws: &Workspace) -> Self {
        let mut child = Command::new(hookq_bin())
            .arg("-C")
            .arg(ws.root())
            .args(["ui", "--listen", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start hookq ui");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("its stdout"))
            .read_line(&mut line)
            .expect("read the line hookq ui prints");
        let base = line
            .split(" at ")
            .nth(1)
            .map(|u| u.trim().trim_end_matches('/').to_owned())
            .unwrap_or_else(|| panic!("hookq ui printed no URL: {line:?}"));
        Self { child, base }
    }

    /// GETs `path`; the server's own time for it, ms, from `Server-Timing: app;dur=MS`.
    fn server_ms(&self, path: &str) -> f64 {
        let mut resp = ureq::get(format!("{}/{path}", self.base))
            .call()
            .unwrap_or_else(|e| panic!("GET /{path}: {e}"));
        let timing = resp
            .headers()
            .get("server-timing")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split("dur=").nth(1))
            .and_then(|v| v.split([',', ';']).next())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .unwrap_or_else(|| panic!("GET /{path}: no Server-Timing duration"));
        // The whole body, as a browser reads it.
        resp.body_mut()
            .read_to_vec()
            .unwrap_or_else(|e| panic!("GET /{path}: {e}"));
        timing
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Measures figure U.
pub fn measure(dir: &Path, sizes: &Sizes) -> Ui {
    let big_ws = pending_workspace(dir, "ui-big", sizes.big_pending);
    let small_ws = pending_workspace(dir, "ui-small", sizes.ui_small);
    let big = Server::start(&big_ws);
    let small = Server::start(&small_ws);
    let page = |path: &str| {
        let (mut b, mut s) = (Vec::new(), Vec::new());
        // One untimed request each: the first read of a file after writing it is not measured.
        big.server_ms(path);
        small.server_ms(path);
        for i in 0..sizes.ui_runs {
            if i % 2 == 0 {
                b.push(big.server_ms(path));
                s.push(small.server_ms(path));
            } else {
                s.push(small.server_ms(path));
                b.push(big.server_ms(path));
            }
        }
        (median(&b), median(&s))
    };
    let overview = page("");
    let pending = page("pending");
    drop(small);

    // Ten open pages: each loaded once and holding its live stream, as a browser tab does.
    let streams: Vec<_> = (0..OPEN_PAGES)
        .map(|_| {
            big.server_ms("");
            let resp = ureq::get(format!("{}/events", big.base))
                .call()
                .expect("open /events");
            let mut body = resp.into_body().into_reader();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while matches!(body.read(&mut buf), Ok(n) if n > 0) {}
            })
        })
        .collect();
    // Let the server settle after the page loads before watching it.
    std::thread::sleep(Duration::from_millis(500));
    let start = (cpu(big.pid()), Instant::now());
    std::thread::sleep(sizes.ui_idle);
    let end = (cpu(big.pid()), Instant::now());
    let wall = end.1 - start.1;
    let busy = match (start.0.sched_ns, end.0.sched_ns) {
        (Some(a), Some(b)) => Duration::from_nanos(b - a),
        _ => Duration::from_secs_f64(
            (end.0.ticks - start.0.ticks) as f64 / super::proc::clock_ticks() as f64,
        ),
    };
    let idle_cpu_pct = 100.0 * busy.as_secs_f64() / wall.as_secs_f64();
    let peak_kib = status_kib(big.pid(), "VmHWM");
    drop(big);
    for s in streams {
        let _ = s.join();
    }
    Ui {
        big: sizes.big_pending,
        small: sizes.ui_small,
        overview,
        pending,
        idle_cpu_pct,
        idle: wall,
        peak_kib,
    }
}

/// The rows of figure U.
pub fn rows(u: &Ui, sizes: &Sizes) -> Vec<Row> {
    let (big, small) = (count(u.big), count(u.small));
    let runs = format!(
        "median of {} requests each, interleaved; server time from Server-Timing",
        sizes.ui_runs
    );
    vec![
        Row::new(
            "U1a",
            format!("hookq ui overview page, {big} pending"),
            u.overview.0,
            "ms",
        )
        .target(Target::value_at_most(100.0))
        .note(runs.clone()),
        Row::new(
            "U1b",
            format!("hookq ui overview page, {big} pending vs {small}"),
            u.overview.0,
            "ms",
        )
        .vs(format!("the same at {small}"), u.overview.1)
        .target(Target::ratio_at_most(1.5))
        .note(runs.clone()),
        Row::new(
            "U2a",
            format!("hookq ui pending page, {big} pending"),
            u.pending.0,
            "ms",
        )
        .target(Target::value_at_most(100.0))
        .note(runs.clone()),
        Row::new(
            "U2b",
            format!("hookq ui pending page, {big} pending vs {small}"),
            u.pending.0,
            "ms",
        )
        .vs(format!("the same at {small}"), u.pending.1)
        .target(Target::ratio_at_most(1.5))
        .note(runs),
        Row::new(
            "U3",
            format!("hookq ui with {OPEN_PAGES} pages open, nothing changing: CPU"),
            u.idle_cpu_pct,
            "% of a core",
        )
        .target(Target::value_below(1.0))
        .note(format!(
            "over {:.0} s, {big} pending, each page holding its live stream",
            u.idle.as_secs_f64()
        )),
        Row::new(
            "U4",
            "hookq ui peak RSS after the pages above",
            u.peak_kib as f64 / 1024.0,
            "MiB",
        )
        .target(Target::value_at_most(30.0))
        .note(format!("VmHWM of the server with {big} pending")),
    ]
}
