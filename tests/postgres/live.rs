//! The web view's live updates on a queue in PostgreSQL: the watcher's mark moves with every
//! change a page shows, a start (an `UPDATE` that notifies no one) too, and an open page
//! hears of a task move, a hook's start and its end.

use std::time::{Duration, Instant};

use hookq::Workspace;
use hookq::exec::Stop;
use hookq::queue::model::{Cleared, NewHistory, Outcome};
use hookq::queue::pg::postgres::Transaction;
use hookq::queue::pg::{PgStore, record, store};
use hookq::queue::watch::{PG_GAP, PG_POLL, Watcher};
use hookq::queue::{Mark, MoveFacts, Phase, PlanId, TaskId, Wait};
use hookq::ui::live::Live;

use crate::postgres::cli::{open, pg_workspace_with};
use crate::postgres::cluster::cluster;
use crate::postgres::live_client::Server;
use crate::support::queue::{Config, Ws};

#[test]
fn the_view_mark_moves_with_every_change_a_page_shows() {
    if crate::postgres::without_postgres("the_view_mark_moves_with_every_change_a_page_shows") {
        return;
    }
    let db = cluster().database();
    let url = cluster().url(&db, "");
    let s = open(&url, "q");
    let mut runner = open(&url, "q");
    let q = s.queue().clone();
    // No change below notifies anyone, and the watcher reads its mark at every step: only the
    // mark tells it.
    let mut watcher = Watcher::postgres(s.target().clone(), q.clone()).unwrap();
    watcher.set_poll(Duration::ZERO);
    let never = Stop::new();
    let mut changed = || watcher.step(&never);
    let moved = |what: &str, changed: bool| assert!(changed, "{what} left the mark as it was");
    assert!(!changed(), "nothing changed");
    let (t, p) = (TaskId::new("t1").unwrap(), PlanId::new("p").unwrap());
    let quietly = |runner: &mut PgStore, f: &dyn Fn(&mut Transaction<'_>)| {
        let mut tx = runner.client().transaction().unwrap();
        f(&mut tx);
        tx.commit().unwrap();
    };

    quietly(&mut runner, &|tx| {
        record::add_task(tx, &q, &t, &p, &Phase::new("failed.x").unwrap()).unwrap();
    });
    moved("a point recorded", changed());

    let mut lock = runner.lock(Wait::No).unwrap().unwrap();
    moved("the runner lock taken", changed());

    let entry = runner.pending(0, 10, None).unwrap().remove(0);
    assert_eq!(
        store::mark_started(&mut lock, &entry).unwrap(),
        Mark::Started
    );
    moved("a start", changed());

    let entry = runner.pending_occurrence(entry.id).unwrap().unwrap();
    store::clear_all(
        &mut lock,
        &[Cleared {
            entry,
            rows: vec![NewHistory::bare(Outcome::Ok)],
        }],
    )
    .unwrap();
    moved("a clear", changed());

    quietly(&mut runner, &|tx| {
        let moving = record::move_task(
            tx,
            &q,
            &t,
            &Phase::new("failed.y").unwrap(),
            &MoveFacts::default(),
        );
        moving.unwrap();
    });
    moved("a second point", changed());
    let dropped = runner.pending(0, 10, None).unwrap()[0].id;
    runner.drop_occurrence(dropped).unwrap();
    moved("a drop", changed());

    quietly(&mut runner, &|tx| {
        store::pause(tx, &q).unwrap();
    });
    moved("a pause", changed());
    quietly(&mut runner, &|tx| {
        store::resume(tx, &q).unwrap();
    });
    moved("a resume", changed());

    // Another queue of the same database changes nothing of this one's.
    let mut other = open(&url, "other");
    other
        .write(|tx, q| record::add_task(tx, q, &t, &p, &Phase::new("failed.x").unwrap()))
        .unwrap();
    assert!(!changed(), "another queue's commit");
}

#[test]
fn an_open_page_hears_of_a_move_a_start_and_an_end() {
    if crate::postgres::without_postgres("an_open_page_hears_of_a_move_a_start_and_an_end") {
        return;
    }
    let scratch = tempfile::tempdir().unwrap();
    let (started, go) = (scratch.path().join("started"), scratch.path().join("go"));
    let hooks = format!(
        "after_proposed = ['touch {}; n=0; while [ ! -e {} ] && [ $n -lt 2400 ]; do sleep 0.05; n=$((n + 1)); done']\n",
        started.display(),
        go.display()
    );
    let (ws, _db, _url) = pg_workspace_with(&Config::hooks(&hooks), "");
    ws.settle_config();
    let live = Live::start(Workspace::at(ws.root())).unwrap();
    let server = Server::start(live.clone());
    let page = server.events("/events");
    let hello = page.hello();

    ws.task_add("t1", "p", "todo.proposed").ok();
    let moved = page.change_after(hello, "task add");

    let quiet = page.settle(moved);
    let runner = ws.spawn(&["run"]);
    ws.eventually("the hook to start", || started.exists());
    let start = page.change_after(quiet, "the hook's start");

    let running = page.settle(start);
    std::fs::write(&go, "").unwrap();
    page.change_after(running, "the hook's end");
    runner.wait_within(Duration::from_secs(120)).ok();

    let idle = page.settle(live.generation());
    ws.hookq(&["queue", "pause"]).ok();
    page.change_after(idle, "queue pause");
}

#[test]
fn fifty_pages_cost_the_database_what_one_does() {
    if crate::postgres::without_postgres("fifty_pages_cost_the_database_what_one_does") {
        return;
    }
    let (ws, _db, _url) = pg_workspace_with(&Config::default(), "");
    let live = Live::start(Workspace::at(ws.root())).unwrap();
    let server = Server::start(live.clone());
    for (pages, tag) in [(1, "a"), (50, "b")] {
        let (reads, polls) = reads_with_pages(&ws, &server, &live, pages, tag);
        // A read a poll, and one for each of the three notifications: whatever the pages.
        assert!(
            reads <= polls + 1 + 3,
            "{reads} reads in {polls} polls with {pages} page(s) open"
        );
    }
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
    let polls = since.elapsed().as_millis() / PG_POLL.as_millis();
    (reads, u64::try_from(polls).unwrap())
}

#[test]
fn a_burst_of_notified_commits_costs_a_read_a_gap_at_most() {
    if crate::postgres::without_postgres("a_burst_of_notified_commits_costs_a_read_a_gap_at_most") {
        return;
    }
    let (ws, _db, url) = pg_workspace_with(&Config::default(), "");
    let live = Live::start(Workspace::at(ws.root())).unwrap();
    let server = Server::start(live.clone());
    let page = server.events("/events");
    let hello = page.hello();
    let mut s = open(&url, "q");
    let (reads, since) = (live.reads(), Instant::now());
    // Each commit notifies the queue's listeners once it is in.
    for i in 0..300 {
        let t = TaskId::new(format!("t{i}")).unwrap();
        s.write(|tx, q| {
            record::add_task(
                tx,
                q,
                &t,
                &PlanId::new("p").unwrap(),
                &Phase::new("failed.x").unwrap(),
            )
        })
        .unwrap();
    }
    page.change_after(hello, "the burst");
    let reads = live.reads() - reads;
    let gaps = since.elapsed().as_millis() / PG_GAP.as_millis();
    assert!(
        reads <= u64::try_from(gaps).unwrap() + 1,
        "{reads} reads for 300 notifications in {gaps} gaps"
    );
}
