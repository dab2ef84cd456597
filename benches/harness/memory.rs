//! Figure 5: the peak RSS of `hookq run` draining many points against few.

use std::path::Path;

use super::fixture;
use super::proc::{hookq, run_peak_rss};
use super::report::{Row, Target};
use super::scale::count;
use super::sizes::Sizes;

/// Peak RSS, KiB, of `hookq run` draining the large and the small number of points.
pub fn measure(dir: &Path, sizes: &Sizes) -> (u64, u64) {
    let rss = |name: &str, n: usize| {
        let ws = fixture::workspace(dir, name, &[]);
        {
            let mut c = fixture::bulk_conn(&ws);
            let tasks = n.div_ceil(100);
            fixture::add_tasks(&mut c, "m", "p1", "review.awaiting_human", tasks);
            fixture::add_points(&mut c, "m", tasks, n);
            fixture::checkpoint(&c);
        }
        let exit = run_peak_rss(&mut hookq(ws.root(), &["run"]));
        let c = fixture::bulk_conn(&ws);
        assert_eq!(
            fixture::pending_count(&c),
            0,
            "hookq run left points pending"
        );
        exit.peak_kib
    };
    let small = rss("mem-small", sizes.memory_small);
    let large = rss("mem-large", sizes.memory_large);
    (large, small)
}

/// The row of figure 5 for `hookq run`.
pub fn rows(large: u64, small: u64, sizes: &Sizes) -> Vec<Row> {
    let mib = |k: u64| k as f64 / 1024.0;
    vec![
        Row::new(
            "5a",
            format!(
                "peak RSS of `hookq run` draining {} points",
                count(sizes.memory_large)
            ),
            mib(large),
            "MiB",
        )
        .vs(
            format!("draining {}", count(sizes.memory_small)),
            mib(small),
        )
        .target(Target::ratio_at_most(1.2))
        .note(
            "points with no commands configured (keeps the 100k run short); VmHWM of the child sampled every 1 ms (not ru_maxrss: after posix_spawn it carries the parent's peak)",
        ),
    ]
}
