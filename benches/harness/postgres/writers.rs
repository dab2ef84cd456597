//! Figures P6 and P7: many writers on one queue. P6, eight connections recording points at once
//! (each its own tasks) against eight connections of bare one-row updates; P6c, the same writers
//! while idle `hookq hub` processes of other queues listen, against the writers alone; P7, what a
//! recording waits while another connection holds a recording transaction of another task open.

use std::path::Path;
use std::process::Child;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use hookq::queue::MoveFacts;
use hookq::queue::pg::record::move_task;
use hookq::queue::pg::{Notifier, Recorder};
use hookq::{Phase, TaskId};

use super::super::report::{Row, Target};
use super::super::sizes::{Mode, Sizes};
use super::super::stats::{median, timed};
use super::{Server, fixture};

/// Connections writing at once in P6.
pub const CONNECTIONS: usize = 8;
/// Tasks each P6 connection cycles through.
const TASKS_EACH: usize = 16;
/// Idle hubs of other queues listening while P6c's writers record (at full sizes).
pub const IDLE_HUBS: usize = 60;

/// What P6 and P7 measured.
pub struct Writers {
    /// Medians over rounds, ms of wall time per committed transition, all connections together:
    /// bare one-row task updates (P6's floor).
    pub bare_ms: f64,
    /// The same with every transaction a transition recording a point, the hubs woken through
    /// one `Notifier` the connections share (P6).
    pub recording_ms: f64,
    /// The same, the hubs woken by `notify_hubs` on each writer's own connection (P6b).
    pub notify_each_ms: f64,
    /// P6's writers while `idle_hubs` idle hubs of other queues listen (P6c).
    pub beside_hubs_ms: f64,
    /// The same writers alone, each round just before one of P6c's (its floor).
    pub p6c_alone_ms: f64,
    /// Hubs running during P6c.
    pub idle_hubs: usize,
    /// Transitions per connection per round, and rounds.
    pub per_connection: usize,
    pub rounds: usize,
    /// P7: medians, ms, of one recording with no other transaction open, and with another
    /// connection's recording transaction (another task) held open meanwhile.
    pub alone_ms: f64,
    pub beside_open_ms: f64,
    /// Recordings timed in P7, each way.
    pub p7_n: usize,
}

/// Measures P6 and P7 on one database of `server`, P6c's hubs' workspaces in `dir`.
pub fn measure(server: &Server, dir: &Path, sizes: &Sizes) -> Writers {
    let url = server.database();
    let (per_connection, rounds) = (per_connection(sizes), rounds(sizes));
    setup(&url, sizes);
    server.checkpoint();

    let (mut bare, mut recording, mut notify_each) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        bare.push(round(&url, per_connection, Writer::Bare));
        recording.push(round(&url, per_connection, Writer::Notifier));
        notify_each.push(round(&url, per_connection, Writer::NotifyEach));
    }

    let idle_hubs = idle_hubs(sizes);
    let (p6c_alone, beside_hubs) = beside_idle_hubs(&url, dir, sizes);

    // P7: one connection's recordings, alone and beside another's open recording transaction.
    let p7_n = (sizes.transitions / 4).max(2);
    let mut holder = fixture::open(&url);
    let mut writer = fixture::open(&url);
    let queue = writer.queue().clone();
    let (mut alone, mut beside) = (Vec::new(), Vec::new());
    let phases = [
        Phase::new("failed.a").expect("phase"),
        Phase::new("failed.b").expect("phase"),
    ];
    for i in 0..2 * p7_n {
        let task = TaskId::new(format!("p7-{i:07}")).expect("id");
        let held_task = TaskId::new(format!("p7-{:07}", sizes.transitions + 1)).expect("id");
        let hold = i % 2 == 1;
        let mut open_tx = None;
        if hold {
            let hq = holder.queue().clone();
            let mut tx = holder.client().transaction().expect("begin");
            move_task(
                &mut tx,
                &hq,
                &held_task,
                &phases[i / 2 % 2],
                &MoveFacts::default(),
            )
            .expect("the held recording");
            open_tx = Some(tx);
        }
        let ms = timed(|| {
            let mut tx = writer.client().transaction().expect("begin");
            move_task(&mut tx, &queue, &task, &phases[0], &MoveFacts::default()).expect("record");
            tx.commit().expect("commit");
        })
        .1;
        if let Some(tx) = open_tx {
            tx.rollback().expect("rollback the held transaction");
        }
        if hold { &mut beside } else { &mut alone }.push(ms);
    }
    Writers {
        bare_ms: median(&bare),
        recording_ms: median(&recording),
        notify_each_ms: median(&notify_each),
        beside_hubs_ms: beside_hubs,
        p6c_alone_ms: p6c_alone,
        idle_hubs,
        per_connection,
        rounds,
        alone_ms: median(&alone),
        beside_open_ms: median(&beside),
        p7_n,
    }
}

/// Transitions each P6 connection commits in a round.
pub fn per_connection(sizes: &Sizes) -> usize {
    (sizes.transitions / 2).max(4)
}

/// Rounds of P6 and of P6c.
pub fn rounds(sizes: &Sizes) -> usize {
    if sizes.mode == Mode::Full { 5 } else { 1 }
}

/// Idle hubs beside P6c's writers.
pub fn idle_hubs(sizes: &Sizes) -> usize {
    if sizes.mode == Mode::Full {
        IDLE_HUBS
    } else {
        2
    }
}

/// The tasks P6's and P7's writers move on the queue [`fixture::QUEUE`] of `url`, and P6's
/// bare table.
pub fn setup(url: &str, sizes: &Sizes) {
    // Opening a store creates the schema the setup writes into.
    drop(fixture::open(url));
    let mut setup = fixture::client(url);
    for c in 0..CONNECTIONS {
        fixture::add_tasks(&mut setup, &format!("w{c}-"), "todo.ready", TASKS_EACH);
    }
    fixture::add_tasks(&mut setup, "p7-", "todo.ready", sizes.transitions + 2);
    setup
        .batch_execute(
            "CREATE TABLE bare_task (id TEXT PRIMARY KEY, phase TEXT NOT NULL);
             INSERT INTO bare_task (id, phase)
                 SELECT 'w' || c || '-' || i, 'todo.ready'
                 FROM generate_series(0, 7) AS c, generate_series(0, 15) AS i",
        )
        .expect("the bare table");
    setup
        .batch_execute("VACUUM (ANALYZE) bare_task, hookq_tasks")
        .expect("vacuum");
}

/// P6c (and Q2a, the same measurement): P6's writers while [`idle_hubs`] idle hubs of other
/// queues listen, each a `hookq hub` process with its connections, as the hubs of many queues
/// sharing a server are; against the same writers alone. Each round with hubs beside one
/// without, the hubs started anew for it: the machine's load drifts over the minute this
/// takes. Medians, ms per transition: (alone, beside the hubs). `url` is [`setup`].
pub fn beside_idle_hubs(url: &str, dir: &Path, sizes: &Sizes) -> (f64, f64) {
    let (mut alone, mut beside) = (Vec::new(), Vec::new());
    for _ in 0..rounds(sizes) {
        alone.push(round(url, per_connection(sizes), Writer::Notifier));
        let mut hubs = start_idle_hubs(url, dir, idle_hubs(sizes));
        beside.push(round(url, per_connection(sizes), Writer::Notifier));
        for hub in &mut hubs {
            super::hub::stop(hub);
        }
    }
    (median(&alone), median(&beside))
}

/// Starts `n` `hookq hub` processes on `url`, each of a queue of its own (`idle-<i>`, no hooks),
/// and waits until every one listens: it holds its queue's runner lock, and its lock's
/// connection ran a statement a second after the lock was taken: the check of the hub's first
/// poll (or its lease's renewal), which comes after its first wait began with its `LISTEN`; the
/// only check before it, its first pass's on the empty queue, follows the lock within
/// milliseconds.
fn start_idle_hubs(url: &str, dir: &Path, n: usize) -> Vec<Child> {
    let hubs: Vec<Child> = (0..n)
        .map(|i| {
            let name = format!("p6c-hub-{i}");
            let ws = super::super::fixture::workspace(dir, &name, &[]);
            std::fs::write(ws.config_path(), format!("[queue]\nname = \"idle-{i}\"\n"))
                .expect("write config.toml");
            super::hub::start_hub(&ws, url, dir, &name)
        })
        .collect();
    let mut watch = fixture::client(url);
    let until = Instant::now() + Duration::from_secs(120);
    loop {
        let listening: i64 = watch
            .query_one(
                "SELECT count(*) FROM hookq_runners r JOIN pg_stat_activity a
                     ON a.pid = r.backend_pid
                 WHERE r.queue LIKE 'idle-%'
                   AND a.query_start >= to_timestamp(r.since_ms / 1000.0) + interval '1 s'",
                &[],
            )
            .expect("read pg_stat_activity")
            .get(0);
        if listening as usize >= n {
            return hubs;
        }
        assert!(
            Instant::now() < until,
            "{listening} of {n} idle hubs listening after 120 s (see p6c-hub-*.stderr in the bench dir)"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// What the writers of a round commit.
#[derive(Clone, Copy, PartialEq)]
pub enum Writer {
    /// Bare one-row updates.
    Bare,
    /// Transitions recording a point through `PgStore::write`, the hubs woken through one
    /// `Notifier` the writers share.
    Notifier,
    /// The same, the hubs woken by `notify_hubs` on each writer's connection after its commit.
    NotifyEach,
}

/// One round: [`CONNECTIONS`] threads, each on its own connection, commit `n` transactions as
/// fast as they can, all started together; ms of wall time per transaction.
pub fn round(url: &str, n: usize, writer: Writer) -> f64 {
    let start = Barrier::new(CONNECTIONS + 1);
    // Only the round that shares one starts a notifier (and its thread).
    let notifier = (writer == Writer::Notifier)
        .then(|| Notifier::new(&hookq::queue::pg::Target::parse(url).expect("a bench URL")));
    let elapsed = std::thread::scope(|scope| {
        for c in 0..CONNECTIONS {
            let start = &start;
            let notifier = notifier.as_ref();
            scope.spawn(move || {
                let phases = [
                    Phase::new("failed.a").expect("phase"),
                    Phase::new("failed.b").expect("phase"),
                ];
                let tasks: Vec<String> = (0..TASKS_EACH).map(|i| format!("w{c}-{i:07}")).collect();
                if writer != Writer::Bare {
                    let mut store = fixture::open(url);
                    if let Some(notifier) = notifier {
                        store = store.with_notifier(notifier.clone());
                    }
                    let recorder = Recorder::prepare(store.client()).expect("prepare");
                    start.wait();
                    for i in 0..n {
                        let task = TaskId::new(tasks[i % TASKS_EACH].clone()).expect("id");
                        // Each pass over the tasks moves them to the other phase: every move
                        // records a point.
                        let to = &phases[(i / TASKS_EACH) % 2];
                        store
                            .write(|tx, q| {
                                recorder.move_task(tx, q, &task, to, &MoveFacts::default())
                            })
                            .expect("record");
                    }
                } else {
                    let mut client = fixture::client(url);
                    let update = client
                        .prepare("UPDATE bare_task SET phase = $2 WHERE id = $1")
                        .expect("prepare");
                    let bare_tasks: Vec<String> =
                        (0..TASKS_EACH).map(|i| format!("w{c}-{i}")).collect();
                    start.wait();
                    for i in 0..n {
                        let to = ["failed.a", "failed.b"][(i / TASKS_EACH) % 2];
                        let mut tx = client.transaction().expect("begin");
                        let updated = tx
                            .execute(&update, &[&bare_tasks[i % TASKS_EACH], &to])
                            .expect("update");
                        assert_eq!(updated, 1);
                        tx.commit().expect("commit");
                    }
                }
                start.wait();
            });
        }
        start.wait();
        let began = Instant::now();
        start.wait();
        began.elapsed()
    });
    elapsed.as_secs_f64() * 1000.0 / (CONNECTIONS * n) as f64
}

/// Rows P6 and P7.
pub fn rows(w: &Writers) -> Vec<Row> {
    let per_s = |ms: f64| 1000.0 / ms;
    vec![
        Row::new(
            "P6",
            "PostgreSQL: 8 connections recording points at once (per transition)",
            w.recording_ms,
            "ms",
        )
        .throughput_vs("8 connections of bare 1-row updates", w.bare_ms)
        .target(Target::ratio_at_least(0.7))
        .note(format!(
            "{CONNECTIONS} connections of one process, each moving its own {TASKS_EACH} tasks (every move records a point) with a Recorder through PgStore::write, the hubs woken after each commit through one Notifier the writers share, {} each per round, median of {} rounds interleaved with the floor's: {:.0} transitions/s against {:.0} bare one-row update commits/s",
            w.per_connection,
            w.rounds,
            per_s(w.recording_ms),
            per_s(w.bare_ms)
        )),
        Row::new(
            "P6b",
            "  PostgreSQL: the same, notify_hubs on each writer's connection after its commit",
            w.notify_each_ms,
            "ms",
        )
        .throughput_vs("8 connections of bare 1-row updates", w.bare_ms)
        .note(format!(
            "as P6, each writer waking the hubs itself with notify_hubs (one round trip after its commit, folded with the other writers'): {:.0} transitions/s",
            per_s(w.notify_each_ms)
        )),
        Row::new(
            "P6c",
            format!("  PostgreSQL: P6's writers while {} idle hubs of other queues listen", w.idle_hubs),
            w.beside_hubs_ms,
            "ms",
        )
        .throughput_vs("the same writers alone", w.p6c_alone_ms)
        .target(Target::ratio_at_least(0.8))
        .note(format!(
            "as P6, while {} `hookq hub` processes, each of another queue of the same database, wait on LISTEN (each queue notified on its own channel, so no commit of the writers' queue wakes them): {:.0} transitions/s against {:.0} alone, medians of {} rounds, each beside one alone just before it, the hubs started anew for each",
            w.idle_hubs,
            per_s(w.beside_hubs_ms),
            per_s(w.p6c_alone_ms),
            w.rounds
        )),
        Row::new(
            "P7",
            "PostgreSQL: a recording beside another task's open recording transaction, added delay",
            (w.beside_open_ms - w.alone_ms).max(0.0),
            "ms",
        )
        .target(Target::value_at_most(50.0))
        .note(format!(
            "median of {} recordings with another connection holding a transaction that recorded a point for another task open, {:.3} ms, less the median of {} alone, {:.3} ms (interleaved; a negative difference reads 0)",
            w.p7_n, w.beside_open_ms, w.p7_n, w.alone_ms
        )),
    ]
}
