//! Figure 1: what recording a hook point adds to a transition, and a transition against a bare
//! durable commit.

use std::path::Path;

use hookq::record::{MoveFacts, move_task};
use hookq::store::Store;
use hookq::{Phase, TaskId};

use super::fixture;
use super::floors::Bare;
use super::report::{Row, Target};
use super::sizes::Sizes;
use super::stats::{median, timed};

/// Medians of the three interleaved variants, ms per durable transaction.
pub struct Transitions {
    /// A move into `review.awaiting_human`: records `after_awaiting_human`.
    pub with_point: f64,
    /// A move into `todo.ready`: records nothing.
    pub without_point: f64,
    /// One row into a bare table per durable commit.
    pub bare_commit: f64,
}

/// Times `sizes.transitions` of each variant, interleaved A, B, C with the order rotated every
/// round so drift and order effects fall on all three alike.
pub fn measure(dir: &Path, sizes: &Sizes) -> Transitions {
    let n = sizes.transitions;
    let ws = fixture::workspace(dir, "transitions", &[]);
    {
        let mut c = fixture::bulk_conn(&ws);
        fixture::add_tasks(&mut c, "a", "p1", "running.gate", n);
        fixture::add_tasks(&mut c, "b", "p1", "running.gate", n);
        fixture::checkpoint(&c);
    }
    let mut store = Store::open(&ws.db_path()).expect("open the store");
    let mut bare = Bare::create(dir, "bare-commit");
    let awaiting = Phase::new("review.awaiting_human").expect("phase");
    let ready = Phase::new("todo.ready").expect("phase");
    let facts = MoveFacts::default();
    let ids = |p: &str| -> Vec<TaskId> {
        (0..n)
            .map(|i| TaskId::new(format!("{p}{i:07}")).expect("id"))
            .collect()
    };
    let (a_ids, b_ids) = (ids("a"), ids("b"));
    let (mut a, mut b, mut c) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for i in 0..n {
        for k in 0..3 {
            match (i + k) % 3 {
                0 => {
                    let (t, ms) =
                        timed(|| store.write(|tx| move_task(tx, &a_ids[i], &awaiting, &facts)));
                    assert!(
                        t.expect("move into review.awaiting_human")
                            .occurrence
                            .is_some()
                    );
                    a.push(ms);
                }
                1 => {
                    let (t, ms) =
                        timed(|| store.write(|tx| move_task(tx, &b_ids[i], &ready, &facts)));
                    assert!(t.expect("move into todo.ready").occurrence.is_none());
                    b.push(ms);
                }
                _ => c.push(bare.insert(1)),
            }
        }
    }
    Transitions {
        with_point: median(&a),
        without_point: median(&b),
        bare_commit: median(&c),
    }
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
        .note("store.write + record::move_task, medians of A,B,C interleaved (order rotated)"),
        Row::new(
            "1b",
            "transitions/s recording a point",
            1e3 / t.with_point,
            "/s",
        )
        .vs("bare 1-row durable commits/s", 1e3 / t.bare_commit)
        .target(Target::ratio_at_least(0.80))
        .note("bare: own db and table, same pragmas (WAL, synchronous=FULL), BEGIN IMMEDIATE"),
    ]
}
