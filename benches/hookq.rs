//! `cargo bench --bench hookq`: the price of durability against this machine's floors, as one
//! table on stdout and as JSON in `target/hookq-bench.json`.
//!
//! `--smoke` or `HOOKQ_BENCH=smoke` runs tiny sizes (what `tests/docs/bench_smoke.rs` does), and
//! writes its JSON to `target/hookq-bench-smoke.json`, leaving the last full run's in place;
//! `-- --compare [FILE...]` prints, instead of measuring, each target in every run named (by
//! default every full run kept in `target/hookq-bench-runs/`), their median and how many met
//! it; `HOOKQ_BENCH_SCALE=0.1` scales the full sizes; `HOOKQ_BENCH_DIR` picks where the databases
//! and logs go (default: the system temp dir); `HOOKQ_BENCH_WAIT` is how many seconds a full run
//! waits after the last one ended (default 360, see [`AFTER_THE_LAST_RUN`]). `-- --agent` measures
//! only the agent tool hook figures (7a-7c), which create few files and so do not wait;
//! `-- --lifecycle` only the worktree lifecycle figures (L1, L2), also the last of a full run;
//! `-- --ui` only the web view's figures (U1a-U4);
//! `-- --postgres` only the queue on PostgreSQL (P0-P5b, P8), on a server the bench starts;
//! `-- --takeover` only P8a and P8b (takeover of a frozen or cut-off holder); `-- --writers`
//! only P6 and P7 (many writers on one queue); `-- --fleet` only Q1-Q4 (one hub of many
//! queues).

mod harness;
// The tests' one bounded wait, with which the PostgreSQL cluster the bench shares with them
// waits.
#[cfg(feature = "postgres")]
#[path = "../tests/support/bound.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long after a run ended the next one waits, unless `HOOKQ_BENCH_WAIT` gives other seconds
/// (0: not at all). A run removes its tens of thousands of files when it ends, and ext4 without a
/// journal (as on the machines BENCHMARKS.md describes) does not reuse an inode within 60 s of
/// its deletion, 360 s while its inode table block is not written back yet: files created
/// meanwhile cost more, and the drain figures with them. Runs started 74 s and 99 s after
/// another still read slow file creation; one started 6 minutes after did not.
const AFTER_THE_LAST_RUN: Duration = Duration::from_secs(360);

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(at) = args.iter().position(|a| a == "--compare") {
        // cargo passes `--bench` to a bench; the rest are files.
        let files: Vec<PathBuf> = args[at + 1..]
            .iter()
            .filter(|a| !a.starts_with("--"))
            .map(PathBuf::from)
            .collect();
        std::process::exit(match compare(files) {
            Ok(table) => {
                print!("{table}");
                0
            }
            Err(e) => {
                eprintln!("error: {e}");
                2
            }
        });
    }
    let sizes = harness::Sizes::from_env(&args);
    if args.iter().any(|a| a == "--fleet") {
        alone(sizes, |dir, sizes| {
            let step = |what: &str| eprintln!("hookq-bench {what}");
            #[allow(unused_mut)]
            let mut rows = Vec::new();
            #[cfg(feature = "postgres")]
            rows.extend(harness::postgres::fleet::rows(
                &harness::postgres::fleet::measure(dir, sizes, None, &step),
            ));
            step("Q3, Q4: one hub of many SQLite queues");
            let q3 = harness::fleet::measure_sqlite(dir, sizes);
            let q4 = harness::fleet::measure_fairness(dir, sizes);
            rows.extend(harness::fleet::rows(&q3, &q4));
            rows
        });
        return;
    }
    if args.iter().any(|a| a == "--agent") {
        alone(sizes, |dir, sizes| {
            harness::agent::rows(&harness::agent::measure(dir, sizes))
        });
        return;
    }
    if args.iter().any(|a| a == "--ui") {
        alone(sizes, |dir, sizes| {
            harness::ui::rows(&harness::ui::measure(dir, sizes), sizes)
        });
        return;
    }
    if args.iter().any(|a| a == "--lifecycle") {
        alone(sizes, |dir, sizes| {
            harness::lifecycle::rows(&harness::lifecycle::measure(dir, sizes))
        });
        return;
    }
    #[cfg(feature = "postgres")]
    if args.iter().any(|a| a == "--takeover") {
        alone(sizes, |dir, sizes| {
            let step = |what: &str| eprintln!("hookq-bench {what}");
            harness::postgres::measure_takeover(dir, sizes, &step)
        });
        return;
    }
    #[cfg(feature = "postgres")]
    if args.iter().any(|a| a == "--writers") {
        alone(sizes, |dir, sizes| {
            let step = |what: &str| eprintln!("hookq-bench {what}");
            harness::postgres::measure_writers(dir, sizes, &step)
        });
        return;
    }
    #[cfg(feature = "postgres")]
    if args.iter().any(|a| a == "--postgres") {
        alone(sizes, |dir, sizes| {
            let step = |what: &str| eprintln!("hookq-bench {what}");
            let pg = harness::postgres::measure(dir, sizes, &step);
            harness::postgres::rows(&pg, sizes)
        });
        return;
    }
    let full = matches!(sizes.mode, harness::sizes::Mode::Full);
    for stale in harness::fixture::stale_roots(&harness::fixture::bench_base()) {
        eprintln!(
            "hookq-bench: warning: {} is left from a run that did not finish; remove it (rm -rf) when no run is due in the next {} s: its files take room, and removing them slows file creation meanwhile",
            stale.display(),
            AFTER_THE_LAST_RUN.as_secs()
        );
    }
    // A smoke run's JSON goes apart: written over the last full run's, it would lose the
    // figures to compare with and the time the next full run waits from.
    let json = target_dir().join(if full {
        "hookq-bench.json"
    } else {
        "hookq-bench-smoke.json"
    });
    if full {
        wait_for_the_last_run(&json);
    }
    let after_last_run = since_written(&json);
    let mut report = harness::run(sizes);
    report.after_last_run_secs = after_last_run.map(|d| d.as_secs_f64());
    print!("{}", report.table());
    if let Err(e) = report.write_json(&json) {
        eprintln!("error: cannot write {}: {e}", json.display());
        return;
    }
    println!("JSON: {}", json.display());
    if full {
        // Kept too, named by the time it ended, for `--compare`.
        let ended = chrono::Utc::now().format("%Y-%m-%dT%H%M%SZ");
        let runs = target_dir().join("hookq-bench-runs");
        let kept = runs.join(format!("{ended}.json"));
        match std::fs::create_dir_all(&runs).and_then(|()| std::fs::copy(&json, &kept)) {
            Ok(_) => println!("kept as {}", kept.display()),
            Err(e) => eprintln!("error: cannot write {}: {e}", kept.display()),
        }
    }
}

/// One group of figures alone (7a-7c, L1 and L2, or the P figures), as a table of their own.
fn alone(
    sizes: harness::Sizes,
    measure: impl FnOnce(&Path, &harness::Sizes) -> Vec<harness::report::Row>,
) {
    let start = std::time::Instant::now();
    let load_start = harness::report::loadavg();
    let root = harness::fixture::bench_root();
    let rows = measure(root.path(), &sizes);
    let report = harness::report::Report {
        machine: harness::report::Machine::detect(root.path()),
        sizes,
        elapsed_secs: start.elapsed().as_secs_f64(),
        loadavg: (load_start, harness::report::loadavg()),
        after_last_run_secs: None,
        rows,
    };
    print!("{}", report.table());
}

/// The comparison table of `files`, or of every run kept in `target/hookq-bench-runs/` when
/// none is named.
fn compare(files: Vec<PathBuf>) -> Result<String, String> {
    let files = if files.is_empty() {
        harness::compare::kept_runs(&target_dir().join("hookq-bench-runs"))?
    } else {
        files
    };
    let runs = files
        .iter()
        .map(|f| harness::compare::Run::read(f))
        .collect::<Result<Vec<_>, _>>()?;
    harness::compare::table(&runs)
}

/// `target/`: the bench executable lives in `target/<profile>/deps/`.
fn target_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(dir);
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.parent()?.to_path_buf()))
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"))
}

/// Waits until [`AFTER_THE_LAST_RUN`] has passed since the last full run wrote `json`, which it
/// does right after removing its files.
fn wait_for_the_last_run(json: &Path) {
    // A smoke run removes a few hundred files: only a full run's end counts, so a smoke run's
    // JSON found here does not start the wait.
    let full = std::fs::read_to_string(json)
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .is_some_and(|last| last["sizes"]["mode"] != "smoke");
    let Some(since) = since_written(json).filter(|_| full) else {
        return;
    };
    let wait = std::env::var("HOOKQ_BENCH_WAIT")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(AFTER_THE_LAST_RUN, Duration::from_secs);
    if let Some(left) = wait.checked_sub(since).filter(|d| !d.is_zero()) {
        eprintln!(
            "hookq-bench: the last run ended {} s ago; waiting {} s for the file system to reuse the files it removed (HOOKQ_BENCH_WAIT=0 skips this)",
            since.as_secs(),
            left.as_secs() + 1
        );
        std::thread::sleep(left);
    }
}

/// How long ago `path` was last written, if it exists.
fn since_written(path: &Path) -> Option<Duration> {
    let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok()?;
    Some(modified.elapsed().unwrap_or_default())
}
