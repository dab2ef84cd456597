//! `cargo bench --bench hookq`: the price of durability against this machine's floors, as one
//! table on stdout and as JSON in `target/hookq-bench.json`.
//!
//! `--smoke` or `HOOKQ_BENCH=smoke` runs tiny sizes (what `tests/bench_smoke.rs` does);
//! `HOOKQ_BENCH_SCALE=0.1` scales the full sizes; `HOOKQ_BENCH_DIR` picks where the databases
//! and logs go (default: the system temp dir).

mod harness;

use std::path::PathBuf;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sizes = harness::Sizes::from_env(&args);
    let report = harness::run(sizes);
    print!("{}", report.table());
    let json = target_dir().join("hookq-bench.json");
    match report.write_json(&json) {
        Ok(()) => println!("JSON: {}", json.display()),
        Err(e) => eprintln!("error: cannot write {}: {e}", json.display()),
    }
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
