//! Figure 1: what recording a hook point adds to a transition, and a transition against a bare
//! durable commit.

use std::path::Path;

use hookq::queue::record::{MoveFacts, move_task};
use hookq::queue::store::{PAGE_SIZE, Store};
use hookq::{Phase, TaskId};

use super::fixture;
use super::floors::{Bare, SQLITE_PAGE_SIZE};
use super::report::{Row, Target};
use super::sizes::Sizes;
use super::stats::{median, timed};

/// Medians of the five interleaved variants, ms per durable transaction.
pub struct Transitions {
    /// A move into `review.awaiting_human`: records `after_awaiting_human`.
    pub with_point: f64,
    /// A move into `todo.ready`: records nothing.
    pub without_point: f64,
    /// One row into a bare table per durable commit, at SQLite's default page size (F3).
    pub bare_commit: f64,
    /// The outbox's least possible shape in bare tables: a task row updated, and a point row
    /// and a state row inserted in two more tables, per durable commit.
    pub bare_outbox: f64,
    /// The same task row update alone.
    pub bare_update: f64,
    /// Row 1d: the same rotation again with F3's table in a database at hookq's page size, its
    /// transition with a point and its bare commit.
    pub paged: (f64, f64),
}

/// Three bare tables shaped as the transactional outbox needs at the least (a task row, a point
/// row, a state row), nothing else: no foreign keys, counters, indexes or `AUTOINCREMENT`. Same
/// pragmas and page size as hookq's store (no table has a foreign key, so `foreign_keys=ON`
/// checks nothing).
struct BareOutbox {
    conn: rusqlite::Connection,
}

impl BareOutbox {
    fn create(dir: &Path, tasks: usize) -> Self {
        let conn = super::floors::bare_connection(dir, "bare-outbox", PAGE_SIZE);
        conn.execute_batch(&format!(
            "CREATE TABLE task (id TEXT PRIMARY KEY, phase TEXT NOT NULL) STRICT;
             CREATE TABLE point (id INTEGER PRIMARY KEY, task TEXT NOT NULL) STRICT;
             CREATE TABLE point_state (id INTEGER PRIMARY KEY, state TEXT NOT NULL) STRICT;
             INSERT INTO task (id, phase)
                 WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < {tasks})
                 SELECT printf('t%07d', i), 'running.gate' FROM n;"
        ))
        .expect("create the bare outbox");
        fixture::steady_wal(&dir.join("bare-outbox.db"));
        Self { conn }
    }

    /// Moves task `i` in one durable `BEGIN IMMEDIATE` transaction, with `point` also
    /// inserting its two rows; ms.
    fn transition(&mut self, i: usize, point: bool) -> f64 {
        let task = format!("t{i:07}");
        timed(|| {
            let tx = self
                .conn
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                .expect("begin");
            tx.prepare_cached("UPDATE task SET phase = ?2 WHERE id = ?1")
                .and_then(|mut st| st.execute(rusqlite::params![task, "review.awaiting_human"]))
                .expect("update");
            if point {
                tx.prepare_cached("INSERT INTO point (task) VALUES (?1)")
                    .and_then(|mut st| st.execute([&task]))
                    .expect("insert point");
                let id = tx.last_insert_rowid();
                tx.prepare_cached("INSERT INTO point_state (id, state) VALUES (?1, ?2)")
                    .and_then(|mut st| st.execute(rusqlite::params![id, "review.awaiting_human"]))
                    .expect("insert state");
            }
            tx.commit().expect("commit");
        })
        .1
    }
}

/// Times `sizes.transitions` of each variant, interleaved A to E with the order rotated every
/// round so drift and order effects fall on all of them alike; then, for row 1d, the same
/// rotation with F3's bare table at hookq's page size. Each rotation commits to three databases
/// (the store, the bare table's, the bare outbox's): a fourth file in the rotation makes every
/// commit dearer here (F3 read 0.325 ms with one, 0.134-0.226 ms without), which flatters 1b, so
/// 1d has a rotation of its own.
pub fn measure(dir: &Path, sizes: &Sizes) -> Transitions {
    let n = sizes.transitions;
    let ws = fixture::workspace(dir, "transitions", &[]);
    {
        let mut c = fixture::bulk_conn(&ws);
        for prefix in ["a", "b", "c", "d"] {
            fixture::add_tasks(&mut c, prefix, "p1", "running.gate", n);
        }
        fixture::checkpoint(&c);
    }
    // Every database of the figure is timed with its WAL in steady state, as in use.
    fixture::steady_wal(&ws.db_path());
    let mut store = Store::open(&ws.db_path()).expect("open the store");
    let mut outbox = BareOutbox::create(dir, 4 * n);
    let mut bare = Bare::create(dir, "bare-commit", SQLITE_PAGE_SIZE);
    let [
        with_point,
        without_point,
        bare_commit,
        bare_outbox,
        bare_update,
    ] = rotate(&mut store, ("a", "b"), &mut bare, &mut outbox, 0, n);
    drop(bare);
    let mut bare = Bare::create(dir, "bare-commit-paged", PAGE_SIZE);
    let [paged_point, _, paged_commit, _, _] =
        rotate(&mut store, ("c", "d"), &mut bare, &mut outbox, 2 * n, n);
    Transitions {
        with_point,
        without_point,
        bare_commit,
        bare_outbox,
        bare_update,
        paged: (paged_point, paged_commit),
    }
}

/// One rotation of figure 1's five variants over `n` rounds: the store's tasks `<p.0>NNNNNNN`
/// move into `review.awaiting_human`, its tasks `<p.1>NNNNNNN` into `todo.ready`, `bare` takes
/// one row a commit, and the outbox moves its tasks from `first` on. Medians, ms, in the order
/// of [`Transitions`]' fields.
fn rotate(
    store: &mut Store,
    prefixes: (&str, &str),
    bare: &mut Bare,
    outbox: &mut BareOutbox,
    first: usize,
    n: usize,
) -> [f64; 5] {
    let awaiting = Phase::new("review.awaiting_human").expect("phase");
    let ready = Phase::new("todo.ready").expect("phase");
    let facts = MoveFacts::default();
    let ids = |p: &str| -> Vec<TaskId> {
        (0..n)
            .map(|i| TaskId::new(format!("{p}{i:07}")).expect("id"))
            .collect()
    };
    let (a_ids, b_ids) = (ids(prefixes.0), ids(prefixes.1));
    let mut times: [Vec<f64>; 5] = Default::default();
    for i in 0..n {
        for k in 0..5 {
            let which = (i + k) % 5;
            let ms = match which {
                0 => {
                    let (t, ms) =
                        timed(|| store.write(|tx| move_task(tx, &a_ids[i], &awaiting, &facts)));
                    assert!(
                        t.expect("move into review.awaiting_human")
                            .occurrence
                            .is_some()
                    );
                    ms
                }
                1 => {
                    let (t, ms) =
                        timed(|| store.write(|tx| move_task(tx, &b_ids[i], &ready, &facts)));
                    assert!(t.expect("move into todo.ready").occurrence.is_none());
                    ms
                }
                2 => bare.insert(1),
                3 => outbox.transition(first + 2 * i, true),
                _ => outbox.transition(first + 2 * i + 1, false),
            };
            times[which].push(ms);
        }
    }
    times.map(|t| median(&t))
}

/// The figure's rows.
pub fn rows(t: &Transitions) -> Vec<Row> {
    vec![
        Row::new(
            "1a",
            "transition recording a point (-> review.awaiting_human), own durable txn",
            t.with_point,
            "ms",
        )
        .vs("same move, no point (-> todo.ready)", t.without_point)
        .target(Target::ratio_at_most(1.10))
        .note(format!("store.write + record::move_task, medians of the five variants of figure 1 interleaved (order rotated); hookq's database has {PAGE_SIZE}-byte pages")),
        Row::new(
            "1b",
            "transitions/s recording a point",
            1e3 / t.with_point,
            "/s",
        )
        .vs("bare 1-row durable commits/s", 1e3 / t.bare_commit)
        .target(Target::ratio_at_least(0.80))
        .note(format!("bare: own db and table, same pragmas (WAL, synchronous=FULL), BEGIN IMMEDIATE, SQLite's default {SQLITE_PAGE_SIZE}-byte pages")),
        Row::new(
            "1d",
            "  1b against a bare commit at hookq's page size",
            1e3 / t.paged.0,
            "/s",
        )
        .vs("bare 1-row durable commits/s, hookq's pages", 1e3 / t.paged.1)
        .note(format!("figure 1's rotation run again after the first, with 1b's bare table in a database with {PAGE_SIZE}-byte pages, as hookq creates its own; the transitions/s are that rotation's")),
        Row::new(
            "1c",
            "  floor of 1a's ratio: bare task update + point row + state row, durable",
            t.bare_outbox,
            "ms",
        )
        .vs("bare task update alone", t.bare_update)
        .note(format!("three bare tables, no foreign keys, counters, indexes or AUTOINCREMENT, {PAGE_SIZE}-byte pages as hookq's: the fewest B-trees the outbox can write (the task's, the point's, the state's)")),
    ]
}
