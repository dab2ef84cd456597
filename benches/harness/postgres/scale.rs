//! Figure P5: a PostgreSQL queue with a million pending points against one with a thousand, on
//! the same server: the drain's next batch and a transition that records a point.

use hookq::queue::pg::PgQueue;
use hookq::queue::pg::record::move_task;
use hookq::queue::{MoveFacts, QueueStore, Wait};
use hookq::{Phase, TaskId};

use super::super::report::{Row, Target};
use super::super::sizes::Sizes;
use super::super::stats::{median, timed};
use super::{Server, fixture};

/// How many points the drain reads in one batch.
const BATCH: usize = 256;

/// Medians, ms: (at the big size, at the small one).
pub struct PgScale {
    /// Pending points in the big queue and the small one.
    pub pending: (usize, usize),
    /// The drain's next batch (`QueueStore::next_batch` of a `PgQueue`, the first [`BATCH`]).
    pub batch: (f64, f64),
    /// A durable transition that records a point.
    pub record: (f64, f64),
    /// Samples of each.
    pub samples: usize,
}

/// One side: a database whose queue holds `points` pending points over `points / 10` tasks
/// (at least two batches' worth, so that on either side a batch's points are of as many
/// distinct tasks, each task row looked up once), plus tasks to move; drained by this process
/// (the queue's runner lock held).
fn side(server: &Server, points: usize, moves: usize) -> PgQueue {
    let url = server.database();
    let mut store = fixture::open(&url);
    let tasks = (points / 10).max(2 * BATCH);
    fixture::add_tasks(store.client(), "t", "review.awaiting_human", tasks);
    fixture::add_tasks(store.client(), "m", "running.gate", moves);
    fixture::add_points(store.client(), "t", tasks, points);
    let lock = store
        .lock(Wait::No)
        .expect("the queue's runner lock")
        .expect("the queue's runner lock is free");
    PgQueue::new(store, lock).expect("the queue")
}

/// Times `sizes.transitions / 4` samples of each variant on each side, interleaved with the
/// order rotated every round.
pub fn measure(server: &Server, sizes: &Sizes) -> PgScale {
    let samples = (sizes.transitions / 4).max(2);
    let pending = (sizes.big_pending, sizes.drain_small);
    let mut sides = [
        side(server, pending.0, samples),
        side(server, pending.1, samples),
    ];
    server.checkpoint();
    let awaiting = Phase::new("review.awaiting_human").expect("phase");
    let mut per: [Vec<f64>; 4] = Default::default();
    for i in 0..samples {
        for k in 0..4 {
            let which = (i + k) % 4;
            let s = &mut sides[which % 2];
            let ms = if which < 2 {
                let (rows, ms) = timed(|| s.next_batch(0, BATCH));
                let got = rows.expect("the next batch").len();
                assert!(
                    got >= BATCH.min(pending.1) && got <= BATCH,
                    "a batch of {got}"
                );
                ms
            } else {
                let task = TaskId::new(format!("m{i:07}")).expect("id");
                let (t, ms) = timed(|| {
                    s.store()
                        .write(|tx, q| move_task(tx, q, &task, &awaiting, &MoveFacts::default()))
                });
                assert!(t.expect("record a transition").occurrence.is_some());
                ms
            };
            per[which].push(ms);
        }
    }
    PgScale {
        pending,
        batch: (median(&per[0]), median(&per[1])),
        record: (median(&per[2]), median(&per[3])),
        samples,
    }
}

/// Rows P5a and P5b.
pub fn rows(s: &PgScale, _sizes: &Sizes) -> Vec<Row> {
    let count = super::super::scale::count;
    let (big, small) = (count(s.pending.0), count(s.pending.1));
    vec![
        Row::new("P5a", format!("PostgreSQL: the drain's next batch of {BATCH}, {big} pending"), s.batch.0, "ms")
            .vs(format!("the same, {small} pending"), s.batch.1)
            .target(Target::ratio_at_most(1.5))
            .note("bounded at 1.5, not 1.2: each point of a batch is three B-tree lookups (the point, its task, its state), each one level deeper at 1M rows than at 1k")
            .note(format!("PgQueue::next_batch (a statement prepared once per connection) from the queue's start, median of {} each, interleaved; the two queues in two databases of one server", s.samples)),
        Row::new("P5b", format!("PostgreSQL: durable transition recording a point, {big} pending"), s.record.0, "ms")
            .vs(format!("the same, {small} pending"), s.record.1)
            .target(Target::ratio_at_most(1.2))
            .note(format!("PgStore::write + pg::record::move_task, median of {} each, interleaved", s.samples)),
    ]
}
