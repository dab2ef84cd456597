//! Figure 3: flat at scale. `hookq queue` and `queue stats` with a million pending points against
//! ten, the drain's cost per point at a million against a thousand, `cancel_plan` of a big plan
//! against a batch insert, and history kept bounded by pruning.

use std::path::Path;
use std::time::{Duration, Instant};

use hookq::queue::model::now_ms;
use hookq::queue::record::cancel_plan;
use hookq::queue::store::Store;
use hookq::{Drainer, PlanId, QueueStore, RunnerLock, Stop, Wait, Workspace};
use rusqlite::{Connection, OpenFlags};

use super::fixture;
use super::floors::Bare;
use super::proc::{hookq, run_timed};
use super::report::{Row, Target};
use super::sizes::Sizes;
use super::stats::{median, ms, timed};

/// Points per task in the bulk-built databases.
const POINTS_PER_TASK: usize = 100;

/// What figure 3 measured.
pub struct Scale {
    /// Seconds to build the big database.
    pub build_secs: f64,
    /// Pending points in the big database.
    pub big: usize,
    /// `hookq queue --limit 50`, median ms, big and small.
    pub queue: (f64, f64),
    /// `hookq queue stats`, median ms, big and small.
    pub stats: (f64, f64),
    /// Drain per point (no commands), median ms, at the big and the small scale.
    pub drain: (f64, f64),
    /// Points drained per round.
    pub drained: usize,
    /// `cancel_plan` in one transaction, median ms; the batch-insert floor, median ms.
    pub cancel: (f64, f64),
    /// History database size in bytes after the first points and at the end; free pages at the
    /// end.
    pub history: (u64, u64, i64),
}

/// Measures figure 3.
pub fn measure(dir: &Path, sizes: &Sizes) -> Scale {
    let big = sizes.big_pending;
    let (ws_big, build_secs) = {
        let t = Instant::now();
        let ws = fixture::workspace(dir, "big", &[]);
        let mut c = fixture::bulk_conn(&ws);
        let tasks = big.div_ceil(POINTS_PER_TASK);
        fixture::add_tasks(&mut c, "t", "p1", "review.awaiting_human", tasks);
        fixture::add_points(&mut c, "t", tasks, big);
        fixture::leave_uncounted(&c, hookq::testing::counters::COUNT_EVERY);
        fixture::checkpoint(&c);
        assert_eq!(fixture::pending_count(&c), big as i64);
        (ws, t.elapsed().as_secs_f64())
    };
    let ws_ten = pending_workspace(dir, "ten", sizes.queue_small);
    let queue = interleaved(
        sizes.queue_runs,
        &ws_big,
        &ws_ten,
        &["queue", "--limit", "50"],
    );
    let stats = interleaved(sizes.queue_runs, &ws_big, &ws_ten, &["queue", "stats"]);
    let drain = drain_at_scale(dir, &ws_big, sizes);
    let cancel = cancel(dir, sizes);
    let history = history(dir, sizes);
    Scale {
        build_secs,
        big,
        queue,
        stats,
        drain,
        drained: sizes.scale_drain_points,
        cancel,
        history,
    }
}

/// A workspace with `n` pending points and no commands.
pub fn pending_workspace(dir: &Path, name: &str, n: usize) -> Workspace {
    let ws = fixture::workspace(dir, name, &[]);
    let mut c = fixture::bulk_conn(&ws);
    let tasks = n.div_ceil(POINTS_PER_TASK);
    fixture::add_tasks(&mut c, "t", "p1", "review.awaiting_human", tasks);
    fixture::add_points(&mut c, "t", tasks, n);
    fixture::leave_uncounted(&c, hookq::testing::counters::COUNT_EVERY);
    fixture::checkpoint(&c);
    ws
}

/// `hookq <args>` as a whole process on both workspaces, alternating which goes first; median
/// wall ms of each.
fn interleaved(runs: usize, big: &Workspace, small: &Workspace, args: &[&str]) -> (f64, f64) {
    let (mut b, mut s) = (Vec::new(), Vec::new());
    // One untimed run each: the first read of a file after writing it is not what is measured.
    run_timed(&mut hookq(big.root(), args));
    run_timed(&mut hookq(small.root(), args));
    for i in 0..runs {
        let one = |ws: &Workspace, into: &mut Vec<f64>| {
            into.push(ms(run_timed(&mut hookq(ws.root(), args)).wall))
        };
        if i % 2 == 0 {
            one(big, &mut b);
            one(small, &mut s);
        } else {
            one(small, &mut s);
            one(big, &mut b);
        }
    }
    (median(&b), median(&s))
}

/// Drains about `sizes.scale_drain_points` points (no commands) per round from the big database
/// and from one holding `sizes.drain_small`, topped up after each round; median ms per point of
/// each.
fn drain_at_scale(dir: &Path, ws_big: &Workspace, sizes: &Sizes) -> (f64, f64) {
    let ws_small = pending_workspace(dir, "thousand", sizes.drain_small);
    let small_tasks = sizes.drain_small.div_ceil(POINTS_PER_TASK);
    let mut big_store = Store::open(&ws_big.db_path()).expect("open the big store");
    let mut small_store = Store::open(&ws_small.db_path()).expect("open the small store");
    let (mut b, mut s) = (Vec::new(), Vec::new());
    let k = sizes.scale_drain_points;
    for round in 0..sizes.scale_drain_rounds {
        if round % 2 == 0 {
            b.push(drain_some(ws_big, &mut big_store, k));
            s.push(drain_some(&ws_small, &mut small_store, k));
        } else {
            s.push(drain_some(&ws_small, &mut small_store, k));
            b.push(drain_some(ws_big, &mut big_store, k));
        }
        let mut c = fixture::bulk_conn(&ws_small);
        let missing = sizes.drain_small as i64 - fixture::pending_count(&c);
        fixture::add_points(
            &mut c,
            "t",
            small_tasks,
            usize::try_from(missing).unwrap_or(0),
        );
    }
    (median(&b), median(&s))
}

/// One pass that a watcher stops once `k` points are cleared; ms per point cleared.
fn drain_some(ws: &Workspace, store: &mut Store, k: usize) -> f64 {
    let lock = RunnerLock::acquire(&ws.lock_path(), Wait::No, &|| true)
        .expect("lock file")
        .expect("the runner lock is free");
    let watch = Connection::open_with_flags(ws.db_path(), OpenFlags::SQLITE_OPEN_READ_ONLY)
        .expect("open a watcher");
    let before = fixture::pending_count(&watch);
    assert!(before >= k as i64, "only {before} pending, {k} wanted");
    let stop = Stop::new();
    let done = std::sync::atomic::AtomicBool::new(false);
    let (report, took) = std::thread::scope(|scope| {
        let (stop, done) = (&stop, &done);
        let watcher = scope.spawn(move || {
            // A graceful stop ends the pass after the point it is on; the count is exact either
            // way, since the cost is divided by the points the pass reports cleared.
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                if before - fixture::pending_count(&watch) >= k as i64 {
                    stop.request();
                    break;
                }
                std::thread::sleep(Duration::from_micros(200));
            }
        });
        let mut drainer =
            Drainer::with_warnings(ws.clone(), stop, |w| panic!("unexpected warning: {w}"));
        let out = timed(|| drainer.drain(store, &lock));
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        watcher.join().expect("watcher");
        out
    });
    let report = report.expect("drain");
    assert!(report.cleared > 0 && report.commands == 0);
    took / report.cleared as f64
}

/// `cancel_plan` of a plan of `sizes.cancel_tasks` unfinished tasks, one durable transaction,
/// against inserting two rows per task (a point is two rows) into a bare table in one durable
/// transaction; medians, ms, in that order. The two run in turn, the order alternated each
/// round. (The schema has no foreign key, so timing the same cancel with foreign key
/// enforcement off would time the same work.)
fn cancel(dir: &Path, sizes: &Sizes) -> (f64, f64) {
    let n = sizes.cancel_tasks;
    let ws = fixture::workspace(dir, "cancel", &[]);
    // Both are timed with their WAL in steady state (the bare one's is made so by
    // `Bare::create`), and each round starts them from a checkpoint that does not truncate it.
    fixture::steady_wal(&ws.db_path());
    let mut store = Store::open(&ws.db_path()).expect("open the store");
    let mut bare = Bare::create(dir, "bare-batch", super::floors::SQLITE_PAGE_SIZE);
    let mut times: [Vec<f64>; 2] = Default::default();
    for round in 0..sizes.cancel_rounds {
        let plan = format!("plan{round}");
        let mut bulk = fixture::bulk_conn(&ws);
        fixture::add_tasks(&mut bulk, &format!("c{round}-"), &plan, "running.gate", n);
        fixture::restart(&bulk);
        drop(bulk);
        bare.restart();
        let plan = PlanId::new(plan).expect("plan id");
        for k in 0..2 {
            let which = (round + k) % 2;
            let took = if which == 1 {
                bare.insert(2 * n)
            } else {
                let (moved, took) = timed(|| store.write(|tx| cancel_plan(tx, &plan)));
                let moved = moved.expect("cancel_plan");
                assert_eq!(moved.len(), n);
                assert!(moved.iter().all(|t| t.occurrence.is_some()));
                took
            };
            times[which].push(took);
        }
    }
    let [c, f] = times.map(|t| median(&t));
    (c, f)
}

/// Pushes `sizes.history_total` points through history in passes of `sizes.history_chunk`,
/// pruning after each pass with `Store::prune_history` as a pass does (at most a chunk of rows,
/// oldest first) with a retention of `sizes.history_keep_passes` passes. Returns the database
/// size after `sizes.history_first` points and at the end, and the free pages at the end.
///
/// Each pass records its points and clears them into history with the rows a drain writes for
/// one `true` command each (what `clear` inserts, including the log path), in one transaction
/// per pass: what is measured is how the file grows, not how fast the drain is (figures 2 and
/// 3c time that), and a drain of a million points would take minutes.
fn history(dir: &Path, sizes: &Sizes) -> (u64, u64, i64) {
    let chunk = sizes.history_chunk;
    let ws = fixture::workspace(dir, "history", &[]);
    let mut c = fixture::bulk_conn(&ws);
    fixture::add_tasks(&mut c, "h", "p1", "review.awaiting_human", chunk);
    let mut store = Store::open(&ws.db_path()).expect("open the store");
    let size = |store: &Store| {
        fixture::checkpoint(store.conn());
        std::fs::metadata(ws.db_path()).expect("db size").len()
    };
    let state_dir = ws.state_dir().display().to_string();
    let passes = sizes.history_total.div_ceil(chunk);
    let mut starts = Vec::with_capacity(passes);
    let mut first = None;
    for pass in 0..passes {
        fixture::add_points(&mut c, "h", chunk, chunk);
        // Passes a few ms apart, so a cutoff between two passes falls between their rows.
        std::thread::sleep(Duration::from_millis(2));
        let now = now_ms();
        starts.push(now);
        let tx = c.transaction().expect("begin");
        let cleared = tx
            .execute(
                r#"INSERT INTO hook_history (occurrence, task, point, state, recorded_ms, passes,
                       command_index, command, outcome, exit_code, signal, started_ms, duration_ms,
                       log_path, finished_ms)
                   SELECT h.id, h.task, h.point, s.state, h.recorded_ms, h.passes + 1, 1, 'true', 'ok',
                       0, NULL, ?1, 2, ?2 || '/runs/' || h.task || '/hooks/' || h.point || '-01.log', ?1
                   FROM pending_hooks h JOIN pending_hook_states s ON s.hook_id = h.id
                   ORDER BY h.id"#,
                rusqlite::params![now, state_dir],
            )
            .expect("write history");
        // The delete trigger takes the points off the counters, as for a drain's clears.
        let deleted = tx
            .execute("DELETE FROM pending_hooks", [])
            .expect("clear pending");
        tx.commit().expect("commit the pass");
        assert_eq!((cleared, deleted), (chunk, chunk));
        if let Some(keep_from) = (pass + 1).checked_sub(sizes.history_keep_passes) {
            store
                .prune_history(starts[keep_from], chunk, &mut |_| {})
                .expect("prune");
        }
        if first.is_none() && (pass + 1) * chunk >= sizes.history_first {
            first = Some(size(&store));
        }
    }
    // The fixture gives ids as `record` does: none twice, and the counters end at zero.
    let twice: i64 = store
        .conn()
        .query_row(
            "SELECT COUNT(*) - COUNT(DISTINCT occurrence) FROM hook_history",
            [],
            |r| r.get(0),
        )
        .expect("count occurrences");
    assert_eq!(twice, 0, "occurrence ids given twice");
    assert_eq!(fixture::pending_count(store.conn()), 0);
    let end = size(&store);
    let free: i64 = store
        .conn()
        .query_row("PRAGMA freelist_count", [], |r| r.get(0))
        .expect("freelist_count");
    (first.expect("the first size was taken"), end, free)
}

/// The floor row F5 and the rows of figure 3.
pub fn rows(s: &Scale, sizes: &Sizes) -> Vec<Row> {
    let big = count(s.big);
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    vec![
        Row::floor(
            "F5",
            format!("batch insert: {} rows into a bare table, one durable txn", count(2 * sizes.cancel_tasks)),
            s.cancel.1,
            "ms",
            None,
        )
        .note(format!("2 rows per point (a point is a pending_hooks and a pending_hook_states row); same pragmas as hookq, SQLite's default {}-byte pages", super::floors::SQLITE_PAGE_SIZE)),
        Row::new("3a", format!("`hookq queue --limit 50`, whole process, {big} pending"), s.queue.0, "ms")
            .vs(format!("{} pending", sizes.queue_small), s.queue.1)
            .target(Target::ratio_at_most(1.5))
            .note(format!(
                "median of {} runs each, interleaved; big db built by SQL in {:.1} s ({} points per task)",
                sizes.queue_runs, s.build_secs, POINTS_PER_TASK
            )),
        Row::new("3b", format!("`hookq queue stats`, whole process, {big} pending"), s.stats.0, "ms")
            .vs(format!("{} pending", sizes.queue_small), s.stats.1)
            .target(Target::ratio_at_most(1.5))
            .note(format!(
                "median of {} runs each, interleaved; in both, the newest {} points are left for stats to count (not yet in the counters), the most recording leaves",
                sizes.queue_runs,
                hookq::testing::counters::COUNT_EVERY
            )),
        Row::new("3c", format!("drain per point, no commands, {big} pending"), s.drain.0, "ms")
            .vs(format!("{} pending", count(sizes.drain_small)), s.drain.1)
            .target(Target::ratio_at_most(1.10))
            .note(format!(
                "points with no command configured (pure bookkeeping, the part that could grow); ~{} points per round, median of {} rounds",
                s.drained, sizes.scale_drain_rounds
            )),
        Row::new("3d", format!("cancel_plan of {} tasks, one durable txn", count(sizes.cancel_tasks)), s.cancel.0, "ms")
            .throughput_vs("batch-insert floor (F5)", s.cancel.1)
            .target(Target::ratio_at_least(0.50))
            .note("throughput ratio floor/cancel; a transition also reads and updates the task row, which the floor does not"),
        Row::new(
            "3e",
            format!("history: db size after {} points pushed through with pruning", count(sizes.history_total)),
            mib(s.history.1),
            "MiB",
        )
        .vs(format!("after the first {}", count(sizes.history_first)), mib(s.history.0))
        .target(Target::ratio_at_most(1.10))
        .note(format!(
            "passes of {} points cleared into history by SQL (rows as for one `true` command), each followed by prune_history(limit {}) keeping {} passes; {} free pages at the end; bound 1.10 is ours",
            count(sizes.history_chunk),
            count(sizes.history_chunk),
            sizes.history_keep_passes,
            s.history.2
        )),
    ]
}

/// `1000000` as `1M`, `100000` as `100k`.
pub fn count(n: usize) -> String {
    match n {
        n if n >= 1_000_000 && n % 1_000_000 == 0 => format!("{}M", n / 1_000_000),
        n if n >= 1_000 && n % 1_000 == 0 => format!("{}k", n / 1_000),
        n => n.to_string(),
    }
}
