//! The worktree lifecycle bench at smoke size, so its every line is compiled and run by the
//! tests: its figures are positive and its table names both targets.

#[path = "../benches/harness/lifecycle.rs"]
mod lifecycle;

#[test]
fn the_lifecycle_bench_runs_and_reports_both_targets() {
    let base = tempfile::tempdir().unwrap();
    let f = lifecycle::run(base.path(), 2, 20);
    for (name, v) in [
        ("create", f.create_ms),
        ("bare", f.bare_ms),
        ("small", f.small_ms),
        ("hooked", f.hooked_ms),
        ("bash", f.bash_ms),
    ] {
        assert!(v > 0.0, "{name}: {v}");
    }
    let table = f.table();
    assert!(
        table.contains("target <= 1.15") && table.contains("target <= 1.2"),
        "{table}"
    );
}
