//! Figures P0 and P1: recording one transition through the library, inside a transaction of
//! the host's, against the bare rows a point must write and a bare one-row commit on the same
//! server; and what waking the hubs after the commit costs.

use hookq::queue::MoveFacts;
use hookq::queue::pg::record::move_task;
use hookq::queue::pg::{Recorder, notify_hubs};
use hookq::{Phase, TaskId};

use super::super::report::{Row, Target};
use super::super::sizes::Sizes;
use super::super::stats::{median, timed};
use super::{Server, fixture};

/// Medians of the interleaved variants, ms per committed transaction.
pub struct Recording {
    /// `BEGIN`, one prepared `INSERT` of one row into a bare table, `COMMIT` (P0).
    pub bare_commit: f64,
    /// A transaction of the host's: a `Recorder`'s `move_task` into `review.awaiting_human`
    /// (the phase written and `after_awaiting_human` recorded) and the commit (P1).
    pub with_point: f64,
    /// The same through `record::move_task`, its call planned anew each time (P1e).
    pub unprepared: f64,
    /// `notify_hubs` after such a commit, alone (P1d).
    pub notify: f64,
    /// The same into `todo.ready`: the phase written, nothing recorded.
    pub without_point: f64,
    /// The outbox's least possible shape in bare tables: a task row updated, a point row and a
    /// state row inserted, by one prepared statement in one durable transaction (P1c).
    pub bare_outbox: f64,
    /// Transitions per variant.
    pub n: usize,
}

/// Times `sizes.transitions` of each variant, interleaved with the order rotated every round,
/// each on a connection of its own to one database of a durable server.
pub fn measure(server: &Server, sizes: &Sizes) -> Recording {
    let n = sizes.transitions;
    let url = server.database();
    let mut store = fixture::open(&url);
    let mut setup = fixture::client(&url);
    fixture::add_tasks(&mut setup, "a", "running.gate", n);
    fixture::add_tasks(&mut setup, "b", "running.gate", n);
    fixture::add_tasks(&mut setup, "e", "running.gate", n);
    setup
        .batch_execute(
            "CREATE TABLE bare_commit (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v TEXT NOT NULL);
             CREATE TABLE bare_task (id TEXT PRIMARY KEY, phase TEXT NOT NULL);
             CREATE TABLE bare_point (id BIGINT PRIMARY KEY, task TEXT NOT NULL);
             CREATE TABLE bare_state (id BIGINT PRIMARY KEY, state TEXT NOT NULL);
             INSERT INTO bare_task (id, phase)
                 SELECT 'c' || lpad(i::text, 7, '0'), 'running.gate' FROM generate_series(0, 99999) AS i",
        )
        .expect("the bare tables");
    setup
        .batch_execute("VACUUM (ANALYZE) bare_task")
        .expect("vacuum");
    setup
        .batch_execute("VACUUM (ANALYZE) hookq_tasks")
        .expect("vacuum");
    server.checkpoint();
    let mut bare = fixture::client(&url);
    let insert = bare
        .prepare("INSERT INTO bare_commit (v) VALUES ($1)")
        .expect("prepare the bare insert");
    let outbox = bare
        .prepare(
            "WITH moved AS (UPDATE bare_task SET phase = $2 WHERE id = $1 RETURNING id),
                  point AS (INSERT INTO bare_point (id, task) SELECT $3, id FROM moved)
             INSERT INTO bare_state (id, state) VALUES ($3, $2)",
        )
        .expect("prepare the bare outbox");
    let awaiting = Phase::new("review.awaiting_human").expect("phase");
    let ready = Phase::new("todo.ready").expect("phase");
    let recorder = Recorder::prepare(store.client()).expect("prepare the recording call");
    let mut per: [Vec<f64>; 6] = Default::default();
    for i in 0..n {
        for k in 0..6 {
            let which = (i + k) % 6;
            let ms = match which {
                3 => {
                    let task = format!("c{:07}", i % 100_000);
                    timed(|| {
                        let mut tx = bare.transaction().expect("begin");
                        tx.execute(&outbox, &[&task, &"review.awaiting_human", &(i as i64)])
                            .expect("the outbox's rows");
                        tx.commit().expect("commit");
                    })
                    .1
                }
                4 => {
                    let queue = store.queue().clone();
                    timed(|| notify_hubs(store.client(), &queue).expect("notify")).1
                }
                0 => {
                    timed(|| {
                        let mut tx = bare.transaction().expect("begin");
                        tx.execute(&insert, &[&"review.awaiting_human"])
                            .expect("insert");
                        tx.commit().expect("commit");
                    })
                    .1
                }
                _ => {
                    let (prefix, to) = match which {
                        1 => ("a", &awaiting),
                        2 => ("b", &ready),
                        _ => ("e", &awaiting),
                    };
                    let task = TaskId::new(format!("{prefix}{i:07}")).expect("id");
                    let queue = store.queue().clone();
                    let facts = MoveFacts::default();
                    let (t, ms) = timed(|| {
                        let mut tx = store.client().transaction().expect("begin");
                        let t = if which == 5 {
                            move_task(&mut tx, &queue, &task, to, &facts)
                        } else {
                            recorder.move_task(&mut tx, &queue, &task, to, &facts)
                        };
                        tx.commit().expect("commit");
                        t
                    });
                    let t = t.expect("record a transition");
                    assert_eq!(t.occurrence.is_some(), which != 2);
                    ms
                }
            };
            per[which].push(ms);
        }
    }
    Recording {
        bare_commit: median(&per[0]),
        with_point: median(&per[1]),
        unprepared: median(&per[5]),
        without_point: median(&per[2]),
        bare_outbox: median(&per[3]),
        notify: median(&per[4]),
        n,
    }
}

/// Rows P0 and P1, and the transition without a point.
pub fn rows(r: &Recording, version: &str) -> Vec<Row> {
    let floor = "bare 1-row PostgreSQL commit (P0)";
    vec![
        Row::floor(
            "P0",
            "durable PostgreSQL commit, 1 row (BEGIN, INSERT, COMMIT over loopback TCP)",
            r.bare_commit,
            "ms",
            None,
        )
        .note(format!(
            "median of {}, interleaved with P1; PostgreSQL {version}, fsync and synchronous_commit on, a server of the bench's own on the bench dir's file system",
            r.n
        )),
        Row::new("P1", "PostgreSQL: transition recording a hook point, durable", r.with_point, "ms")
            .vs("bare rows of a point (P1c)", r.bare_outbox)
            .target(Target::ratio_at_most(1.3))
            .note("a transaction of the host's: a pg::Recorder's move_task, prepared once on the connection (the task's row locked and rewritten, the point and its state recorded, the id from a sequence) and one commit"),
        Row::new("P1a", "  PostgreSQL: the same transition against a bare commit", r.with_point, "ms")
            .vs(floor, r.bare_commit)
            .note("P1 against P0: what the outbox's three rows, the task's row lock and the function call add to a one-row commit"),
        Row::new("P1b", "  PostgreSQL: the same transition, no point to record", r.without_point, "ms")
            .vs(floor, r.bare_commit)
            .note("a move into todo.ready: the phase written and nothing recorded"),
        Row::new("P1c", "  floor of P1's ratio: bare task update + point row + state row, durable", r.bare_outbox, "ms")
            .vs(floor, r.bare_commit)
            .note("three bare tables, a primary key each, no foreign key, lock, sequence or function; one prepared statement, so the round trips of P0 and P1: the least the outbox writes"),
        Row::new("P1e", "  PostgreSQL: the same transition through record::move_task", r.unprepared, "ms")
            .vs("bare rows of a point (P1c)", r.bare_outbox)
            .note("the free function a host calls on any connection: a call of the schema's hookq_move_task, parsed and planned by the server each time, which then runs the move as P1 does"),
        Row::new("P1d", "  PostgreSQL: notify_hubs after the commit", r.notify, "ms")
            .vs(floor, r.bare_commit)
            .note("the hubs woken after the host's commit (PgStore::write, and so hookq's commands, does it after every write): one round trip, a transaction of its own committed without waiting for the disk"),
    ]
}
