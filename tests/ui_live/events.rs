//! `GET /events`: a page hears of a task move, a hook starting and a hook ending, and fifty
//! pages cost the database what one does.

use std::time::Instant;

use hookq::Workspace;
use hookq::queue::watch::SQLITE_POLL;
use hookq::ui::live::Live;

use crate::live::client::Server;
use crate::support::queue::Ws;

/// `PRAGMA data_version` on a connection of the test's own: it moves when another commits.
fn data_version(conn: &rusqlite::Connection) -> i64 {
    conn.query_row("PRAGMA data_version", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn an_open_page_hears_of_a_move_a_start_and_an_end() {
    let ws = Ws::init();
    let started = ws.base().join("started");
    let go = ws.base().join("go");
    ws.write_config(&format!(
        "after_proposed = ['touch {}; n=0; while [ ! -e {} ] && [ $n -lt 2400 ]; do sleep 0.05; n=$((n + 1)); done']",
        started.display(),
        go.display()
    ));
    ws.settle_config();
    let live = Live::start(Workspace::at(ws.root())).unwrap();
    let server = Server::start(live.clone());
    let page = server.events("/events");
    let hello = page.hello();

    // A task recorded with its point: one commit.
    ws.task_add("t1", "p", "todo.proposed").ok();
    let moved = page.change_after(hello, "task add");

    // The runner starts the point: the start goes to the start log, and the database is not
    // written until the point is cleared, so what the page hears of is the start alone.
    let quiet = page.caught_up(&live, moved);
    let conn = ws.db();
    let before = data_version(&conn);
    let runner = ws.spawn(&["run"]);
    ws.eventually("the hook to start", || started.exists());
    let start = page.change_after(quiet, "the hook's start");
    assert_eq!(
        data_version(&conn),
        before,
        "the runner committed before the hook ended: the change heard was not the start alone"
    );

    // The hook ends: its point is cleared.
    let running = page.caught_up(&live, start);
    std::fs::write(&go, "").unwrap();
    let ended = page.change_after(running, "the hook's end");
    runner.wait_within(crate::support::HANG).ok();
    assert!(ws.pending().is_empty());
    assert_ne!(data_version(&conn), before);
    assert!(live.generation() >= ended);

    // Paused and resumed: each heard of.
    let idle = page.caught_up(&live, ended);
    ws.hookq(&["queue", "pause"]).ok();
    let paused = page.change_after(idle, "queue pause");
    let idle = page.caught_up(&live, paused);
    ws.hookq(&["queue", "resume"]).ok();
    page.change_after(idle, "queue resume");
}

/// The watcher's reads over a window in which `pages` pages are open and three tasks are
/// recorded, each heard of by every page: (reads, polls the window had time for).
fn reads_with_pages(ws: &Ws, server: &Server, live: &Live, pages: usize, tag: &str) -> (u64, u64) {
    let open: Vec<_> = (0..pages).map(|_| server.events("/events")).collect();
    let mut seen: Vec<u64> = open.iter().map(|p| p.hello()).collect();
    let (reads, since) = (live.reads(), Instant::now());
    for i in 0..3 {
        ws.task_add(&format!("{tag}{i}"), "p", "todo.proposed").ok();
        for (page, seen) in open.iter().zip(&mut seen) {
            *seen = page.change_after(*seen, "task add");
        }
    }
    let reads = live.reads() - reads;
    let polls = since.elapsed().as_millis() / SQLITE_POLL.as_millis();
    (reads, u64::try_from(polls).unwrap())
}

#[test]
fn fifty_pages_cost_the_database_what_one_does() {
    let ws = Ws::init();
    let live = Live::start(Workspace::at(ws.root())).unwrap();
    let server = Server::start(live.clone());
    let (one, one_polls) = reads_with_pages(&ws, &server, &live, 1, "a");
    let (fifty, fifty_polls) = reads_with_pages(&ws, &server, &live, 50, "b");
    // One read a poll, whatever the pages: the watcher sleeps a poll between two reads, so
    // it cannot read more often than the window had polls (and one at its edge). Pages that
    // each read for themselves would read fifty times as often.
    assert!(
        one >= 1 && one <= one_polls + 1,
        "{one} reads in {one_polls} polls"
    );
    assert!(
        fifty <= fifty_polls + 1,
        "{fifty} reads in {fifty_polls} polls with 50 pages open"
    );
}

#[test]
fn stopping_the_view_ends_its_streams() {
    let ws = Ws::init();
    let live = Live::start(Workspace::at(ws.root())).unwrap();
    let server = Server::start(live.clone());
    let pages: Vec<_> = (0..3).map(|_| server.events("/events")).collect();
    for p in &pages {
        p.hello();
    }
    assert!(
        !open_under(ws.root()).is_empty(),
        "the watcher reads the workspace's database"
    );
    live.stop();
    for p in &pages {
        p.ended();
    }
    // A page opened after the stop is told it ended at once.
    let late = server.events("/events");
    late.hello();
    late.ended();
    // The watcher is gone with its connection: nothing of this process holds the workspace's
    // database (or anything else of the workspace) open, so nothing can read it any more.
    let open = open_under(ws.root());
    assert!(open.is_empty(), "still open after the stop: {open:?}");
}

/// The files under `dir` that a descriptor of this process has open.
fn open_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter(|target| target.starts_with(dir))
        .collect()
}
