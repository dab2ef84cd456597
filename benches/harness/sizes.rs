//! How big each measurement is: full for `cargo bench`, tiny for the smoke test.

use std::time::Duration;

use serde::Serialize;

/// Which sizes a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// The sizes the targets are stated for.
    Full,
    /// Tiny sizes: every figure is produced, none is meaningful.
    Smoke,
}

/// Every size the suite uses.
#[derive(Debug, Clone, Serialize)]
pub struct Sizes {
    /// Full or smoke.
    pub mode: Mode,
    /// Factor applied to the full sizes (`HOOKQ_BENCH_SCALE`), 1 for a real run.
    pub scale: f64,
    /// Spawns timed for the bare spawn floor.
    pub spawn_samples: usize,
    /// fdatasync calls timed for the fdatasync floor.
    pub fsync_samples: usize,
    /// Transitions timed per variant (with a point, without, bare insert).
    pub transitions: usize,
    /// Points per drain (and spawns per floor loop).
    pub drain_points: usize,
    /// Rounds of the drain comparison (floor loop, the drains, exec alone, bookkeeping).
    pub drain_rounds: usize,
    /// Pending points in the big database.
    pub big_pending: usize,
    /// Pending points in the small database `queue` is compared against.
    pub queue_small: usize,
    /// Whole-process `hookq queue` runs timed per database.
    pub queue_runs: usize,
    /// Pending points in the database the big one's drain is compared against.
    pub drain_small: usize,
    /// Points drained per round at each scale.
    pub scale_drain_points: usize,
    /// Rounds of the drain-at-scale comparison.
    pub scale_drain_rounds: usize,
    /// Tasks in the plan `cancel_plan` ends in one transaction.
    pub cancel_tasks: usize,
    /// Rounds of the cancel comparison.
    pub cancel_rounds: usize,
    /// Points pushed through history with pruning.
    pub history_total: usize,
    /// Points per pass of the history run (and the most a pass prunes).
    pub history_chunk: usize,
    /// After how many points the first size is taken.
    pub history_first: usize,
    /// How many passes' worth of history the pruning keeps.
    pub history_keep_passes: usize,
    /// Transitions the hub is timed on.
    pub hub_transitions: usize,
    /// How long the idle hub is watched.
    pub hub_idle: Duration,
    /// Points the big memory run drains.
    pub memory_large: usize,
    /// Points the small memory run drains.
    pub memory_small: usize,
    /// Rounds of the worktree lifecycle comparison.
    pub lifecycle_rounds: usize,
    /// Files in each repository a worktree is created of.
    pub lifecycle_files: usize,
    /// Pending points in the small workspace the web view's pages are compared against.
    pub ui_small: usize,
    /// Requests timed per page and workspace.
    pub ui_runs: usize,
    /// How long the idle web view is watched.
    pub ui_idle: Duration,
    /// PostgreSQL queues one hub of many workspaces serves in Q1.
    pub fleet_pg_queues: usize,
    /// Queues whose listeners one hub holds while Q2's writers commit.
    pub fleet_listeners: usize,
    /// SQLite workspaces one hub serves in Q3.
    pub fleet_sqlite: usize,
    /// Commits timed from commit to hook start in Q1 and Q3.
    pub fleet_commits: usize,
    /// How long an idle hub of many queues (and its server) is watched.
    pub fleet_idle: Duration,
    /// Points of the long queue in Q4.
    pub fleet_points: usize,
    /// How long each hook of Q4 sleeps.
    pub fleet_hook: Duration,
}

impl Sizes {
    /// The sizes the targets are stated for.
    pub fn full() -> Self {
        Self {
            mode: Mode::Full,
            scale: 1.0,
            spawn_samples: 300,
            fsync_samples: 500,
            transitions: 2_000,
            drain_points: 2_000,
            drain_rounds: 5,
            big_pending: 1_000_000,
            queue_small: 10,
            queue_runs: 15,
            drain_small: 1_000,
            scale_drain_points: 500,
            scale_drain_rounds: 7,
            cancel_tasks: 10_000,
            cancel_rounds: 9,
            history_total: 1_000_000,
            history_chunk: 10_000,
            history_first: 100_000,
            history_keep_passes: 3,
            hub_transitions: 500,
            hub_idle: Duration::from_secs(5),
            memory_large: 100_000,
            memory_small: 1_000,
            lifecycle_rounds: 21,
            lifecycle_files: 1_000,
            ui_small: 1_000,
            ui_runs: 31,
            ui_idle: Duration::from_secs(20),
            fleet_pg_queues: 500,
            fleet_listeners: 1_000,
            fleet_sqlite: 100,
            fleet_commits: 200,
            fleet_idle: Duration::from_secs(10),
            fleet_points: 1_000,
            fleet_hook: Duration::from_millis(100),
        }
    }

    /// Tiny sizes for the smoke test: seconds in a debug build.
    pub fn smoke() -> Self {
        Self {
            mode: Mode::Smoke,
            scale: 0.0,
            spawn_samples: 5,
            fsync_samples: 5,
            transitions: 10,
            drain_points: 8,
            drain_rounds: 1,
            big_pending: 2_000,
            queue_small: 10,
            queue_runs: 2,
            drain_small: 100,
            scale_drain_points: 20,
            scale_drain_rounds: 1,
            cancel_tasks: 50,
            cancel_rounds: 1,
            history_total: 600,
            history_chunk: 100,
            history_first: 300,
            history_keep_passes: 1,
            hub_transitions: 3,
            hub_idle: Duration::from_millis(300),
            memory_large: 500,
            memory_small: 50,
            lifecycle_rounds: 2,
            lifecycle_files: 20,
            ui_small: 10,
            ui_runs: 2,
            ui_idle: Duration::from_millis(300),
            fleet_pg_queues: 10,
            fleet_listeners: 10,
            fleet_sqlite: 3,
            fleet_commits: 3,
            fleet_idle: Duration::from_millis(300),
            fleet_points: 100,
            fleet_hook: Duration::from_millis(50),
        }
    }

    /// The full sizes times `f` (for a quicker look; the targets are stated for `f = 1`). Ratios
    /// between sizes keep their meaning only roughly.
    pub fn scaled(f: f64) -> Self {
        let full = Self::full();
        let small = Self::smoke();
        let s = |full: usize, small: usize| ((full as f64 * f).round() as usize).max(small);
        Self {
            mode: Mode::Full,
            scale: f,
            spawn_samples: s(full.spawn_samples, small.spawn_samples),
            fsync_samples: s(full.fsync_samples, small.fsync_samples),
            transitions: s(full.transitions, small.transitions),
            drain_points: s(full.drain_points, small.drain_points),
            drain_rounds: full.drain_rounds,
            big_pending: s(full.big_pending, small.big_pending),
            queue_small: full.queue_small,
            queue_runs: full.queue_runs,
            drain_small: full.drain_small,
            scale_drain_points: full.scale_drain_points,
            scale_drain_rounds: full.scale_drain_rounds,
            cancel_tasks: s(full.cancel_tasks, small.cancel_tasks),
            cancel_rounds: full.cancel_rounds,
            history_total: s(full.history_total, small.history_total),
            history_chunk: full.history_chunk,
            history_first: s(full.history_first, small.history_first),
            history_keep_passes: full.history_keep_passes,
            hub_transitions: s(full.hub_transitions, small.hub_transitions),
            hub_idle: full.hub_idle,
            memory_large: s(full.memory_large, small.memory_large),
            memory_small: full.memory_small,
            lifecycle_rounds: full.lifecycle_rounds,
            lifecycle_files: s(full.lifecycle_files, small.lifecycle_files),
            ui_small: full.ui_small,
            ui_runs: full.ui_runs,
            ui_idle: full.ui_idle,
            fleet_pg_queues: s(full.fleet_pg_queues, small.fleet_pg_queues),
            fleet_listeners: s(full.fleet_listeners, small.fleet_listeners),
            fleet_sqlite: s(full.fleet_sqlite, small.fleet_sqlite),
            fleet_commits: s(full.fleet_commits, small.fleet_commits),
            fleet_idle: full.fleet_idle,
            fleet_points: s(full.fleet_points, small.fleet_points),
            fleet_hook: full.fleet_hook,
        }
    }

    /// Sizes from the environment and arguments: `--smoke` or `HOOKQ_BENCH=smoke` for the smoke
    /// sizes, `HOOKQ_BENCH_SCALE=<f>` to scale the full ones, full otherwise.
    pub fn from_env(args: &[String]) -> Self {
        let smoke = args.iter().any(|a| a == "--smoke")
            || std::env::var("HOOKQ_BENCH").is_ok_and(|v| v == "smoke");
        if smoke {
            return Self::smoke();
        }
        match std::env::var("HOOKQ_BENCH_SCALE")
            .ok()
            .and_then(|v| v.parse::<f64>().ok())
        {
            Some(f) if f > 0.0 && f != 1.0 => Self::scaled(f),
            _ => Self::full(),
        }
    }
}
