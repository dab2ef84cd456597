//! The benchmark harness at smoke size: compiles `benches/harness` into the test build and runs
//! every measurement once with tiny sizes, so the bench can never rot. Asserts only that every
//! figure was produced and is finite, never its sign or size: at smoke size, on a loaded machine,
//! a timing may read anything (an idle hub's tick-sampled CPU reads 0). Then the comparison
//! of several runs' JSON (`--compare`), on runs made up here.

#[path = "../../benches/harness/mod.rs"]
mod harness;

use std::path::PathBuf;

use harness::compare::{self, Run, kept_runs};
use harness::report::Verdict;
use serde_json::Value;

#[test]
fn every_figure_is_produced() {
    // The P figures start a PostgreSQL: without its server binaries this test says SKIPPED and
    // passes, but under CI, as every PostgreSQL test does.
    #[cfg(feature = "postgres")]
    if let Some(why) = harness::postgres::server_missing() {
        crate::support::skipped("every_figure_is_produced", &why);
        return;
    }
    // The same entry the bench takes, forced to smoke size whatever the environment says.
    let sizes = harness::Sizes::from_env(&["--smoke".to_owned()]);
    assert_eq!(sizes.mode, harness::sizes::Mode::Smoke);
    let report = harness::run(sizes);
    let table = report.table();
    let finite = |x: f64| x.is_finite();
    for id in [
        "F1", "F2", "F3", "F4", "F5", "1a", "1b", "1c", "1d", "2a", "2b", "2c", "2d", "2e", "2f",
        "3a", "3b", "3c", "3d", "3e", "4a", "4b", "4c", "5a", "5b", "6", "6b", "7a", "7b", "7c",
        "L1", "L2", "P0", "P1", "P1b", "P1c", "P2", "P3a", "P3b", "P4", "P5a", "P5b", "P6", "P6c",
        "P8a", "P8b", "Q1a", "Q1b", "Q1c", "Q1d", "Q1e", "Q2a", "Q2b", "Q3a", "Q3b", "Q4",
    ] {
        let row = report
            .rows
            .iter()
            .find(|r| r.id == id)
            .unwrap_or_else(|| panic!("figure {id} missing from the table:\n{table}"));
        assert!(
            finite(row.value),
            "figure {id} value {}:\n{table}",
            row.value
        );
        if let Some(floor) = &row.floor {
            assert!(
                finite(floor.value),
                "figure {id} floor {}:\n{table}",
                floor.value
            );
            let ratio = row.ratio.expect("a floor gives a ratio");
            assert!(finite(ratio), "figure {id} ratio {ratio}:\n{table}");
        }
        if row.target.is_some() {
            assert!(
                matches!(row.verdict, Verdict::Pass | Verdict::Miss),
                "figure {id} has a target but no verdict"
            );
        }
    }
    let (_, targets) = report.score();
    assert_eq!(targets, 49, "every target is in the table:\n{table}");
    // The cost of one CPUID, which the machine line gives on x86-64.
    let cpuid = report.machine.cpuid_us;
    assert_eq!(cpuid.is_some(), cfg!(target_arch = "x86_64"), "{cpuid:?}");
    assert!(cpuid.is_none_or(finite), "{cpuid:?}");
    assert_eq!(
        table.contains("(CPUID "),
        cpuid.is_some(),
        "the machine line:\n{table}"
    );

    // The JSON the bench writes parses back with every row.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.json");
    report.write_json(&path).unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(json["rows"].as_array().unwrap().len(), report.rows.len());

    // And `--compare` reads it back: the same run twice, every target met by both or by neither.
    let twice = [Run::read(&path).unwrap(), Run::read(&path).unwrap()];
    let compared = compare::table(&twice).unwrap();
    let (met, _) = report.score();
    assert!(
        compared.contains(&format!("meets {met} of 49 targets")),
        "{compared}"
    );
    for row in report.rows.iter().filter(|r| r.target.is_some()) {
        let line = compared
            .lines()
            .find(|l| l.split_whitespace().next() == Some(row.id.as_str()))
            .unwrap_or_else(|| panic!("target {} missing from:\n{compared}", row.id));
        let count = if row.verdict == Verdict::Pass {
            "2 of 2"
        } else {
            "0 of 2"
        };
        assert!(line.contains(count), "{line}");
    }
}

fn run(name: &str, mode: &str, readings: &[(&str, &str, f64)]) -> Run {
    let rows: Vec<Value> = readings
        .iter()
        .map(|&(id, cmp, x)| {
            serde_json::json!({
                "id": id,
                "value": x * 2.0,
                "ratio": x,
                "target": {"on": "ratio", "cmp": cmp, "limit": 1.15},
                "target_text": format!("ratio {cmp} 1.15"),
            })
        })
        .chain([serde_json::json!({"id": "F2", "value": 1.2, "ratio": null, "target": null})])
        .collect();
    Run {
        path: PathBuf::from(name),
        json: serde_json::json!({"sizes": {"mode": mode}, "rows": rows}),
    }
}

fn line<'a>(table: &'a str, id: &str) -> Vec<&'a str> {
    table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(id))
        .unwrap_or_else(|| panic!("no line for {id} in:\n{table}"))
        .split_whitespace()
        .collect()
}

#[test]
fn each_target_is_read_in_every_run_with_its_median_and_count() {
    let runs = [
        run(
            "a.json",
            "Full",
            &[("2b", "at_most", 1.20), ("6", "at_least", 1.9)],
        ),
        run(
            "b.json",
            "Full",
            &[("2b", "at_most", 1.10), ("6", "at_least", 1.5)],
        ),
        run(
            "c.json",
            "Full",
            &[("2b", "at_most", 1.14), ("6", "at_least", 1.7)],
        ),
    ];
    let t = compare::table(&runs).unwrap();
    // ID, the target's three words ("ratio at_most 1.15" here), three runs, median, "k", "of",
    // "n", verdict on the median.
    assert_eq!(
        line(&t, "2b")[4..],
        ["1.20*", "1.10", "1.14", "1.14", "2", "of", "3", "yes"]
    );
    assert_eq!(
        line(&t, "6")[4..],
        ["1.90", "1.50", "1.70", "1.70", "3", "of", "3", "yes"]
    );
    assert!(t.contains("meets 2 of 2 targets"), "{t}");
    assert!(
        !t.lines().any(|l| l.starts_with("F2")),
        "rows without a target are left out"
    );
}

#[test]
fn a_median_beyond_the_bound_is_not_met_however_many_runs_were() {
    let runs = [
        run("a.json", "Full", &[("1a", "at_most", 1.16)]),
        run("b.json", "Full", &[("1a", "at_most", 1.09)]),
        run("c.json", "Full", &[("1a", "at_most", 1.18)]),
        run("d.json", "Full", &[("1a", "at_most", 1.20)]),
    ];
    let t = compare::table(&runs).unwrap();
    assert_eq!(
        line(&t, "1a")[4..],
        [
            "1.16*", "1.09", "1.18*", "1.20*", "1.17", "1", "of", "4", "no"
        ]
    );
    assert!(t.contains("meets 0 of 1 targets"), "{t}");
}

#[test]
fn a_target_missing_from_a_run_is_shown_as_missing_and_not_counted() {
    let runs = [
        run("a.json", "Full", &[("2a", "at_most", 1.10)]),
        run("b.json", "Full", &[]),
    ];
    let t = compare::table(&runs).unwrap();
    assert_eq!(
        line(&t, "2a")[4..],
        ["1.10", "-", "1.10", "1", "of", "1", "yes"]
    );
}

#[test]
fn runs_of_different_sizes_are_refused() {
    let runs = [
        run("full.json", "Full", &[("2a", "at_most", 1.1)]),
        run("smoke.json", "Smoke", &[("2a", "at_most", 1.1)]),
    ];
    let e = compare::table(&runs).unwrap_err();
    assert!(
        e.contains("smoke.json") && e.contains("do not compare"),
        "{e}"
    );
}

#[test]
fn a_file_that_is_not_a_run_says_which_and_why() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"rows\": 3}").unwrap();
    let e = Run::read(&bad).err().unwrap();
    assert!(
        e.contains("bad.json") && e.contains("no \"rows\" list"),
        "{e}"
    );
    std::fs::write(&bad, "not json").unwrap();
    let e = Run::read(&bad).err().unwrap();
    assert!(e.contains("is not a bench run's JSON"), "{e}");
    let e = Run::read(&dir.path().join("none.json")).err().unwrap();
    assert!(e.contains("cannot read") && e.contains("none.json"), "{e}");
}

#[test]
fn kept_runs_are_the_json_files_of_their_folder_oldest_first() {
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "2026-12-01T063500Z.json",
        "2026-11-30T235900Z.json",
        "notes.txt",
    ] {
        std::fs::write(dir.path().join(name), "{}").unwrap();
    }
    let names: Vec<_> = kept_runs(dir.path())
        .unwrap()
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        ["2026-11-30T235900Z.json", "2026-12-01T063500Z.json"]
    );
    let e = kept_runs(&dir.path().join("none")).unwrap_err();
    assert!(e.contains("no runs to compare"), "{e}");
}

#[test]
fn temp_dirs_left_by_runs_that_did_not_finish_are_found() {
    let base = tempfile::tempdir().unwrap();
    let dir = |name: &str, owner: Option<String>| {
        let path = base.path().join(name);
        std::fs::create_dir(&path).unwrap();
        if let Some(text) = owner {
            std::fs::write(path.join("owner"), text).unwrap();
        }
        path
    };
    // A run in progress: this process made it and holds its lock.
    let live = harness::fixture::bench_root_in(base.path());
    // Another process's run, in progress and then killed: a shell takes the lock as a run
    // does (`flock(1)` on its descriptor) and becomes `sleep`, and the kernel lets go of the
    // lock when that process dies.
    let gone = dir("hookq-bench-gone", None);
    let mut holder = std::process::Command::new("/bin/sh")
        .args(["-c", r#"exec 9>"$1" && flock 9 && exec sleep 600"#, "sh"])
        .arg(gone.join("owner"))
        .spawn()
        .unwrap();
    crate::support::eventually("flock to take the lock", || {
        !harness::fixture::stale_roots(base.path()).contains(&gone)
    });
    holder.kill().unwrap();
    holder.wait().unwrap();
    // The lock's description is also `flock(1)`'s, which the shell started: on a busy machine
    // that child may still be exiting when the shell is reaped. The lock goes when it has.
    crate::support::eventually("the killed holder's lock to be released", || {
        harness::fixture::stale_roots(base.path()).contains(&gone)
    });
    // Owner files nobody locks, whatever they say: a pid and start time (this process's pid,
    // as a run before the lock would have named it), or nothing that parses.
    let reused = dir(
        "hookq-bench-reused",
        Some(format!("{} 1\n", std::process::id())),
    );
    let garbled = dir("hookq-bench-garbled", Some("not a pid\n".into()));
    // Made before runs had an owner file.
    let unknown = dir("hookq-bench-unknown", None);
    // Not a run's: another prefix, and a file with the prefix.
    dir("other-bench", None);
    std::fs::write(base.path().join("hookq-bench-file"), "").unwrap();

    let stale = harness::fixture::stale_roots(base.path());
    assert_eq!(stale, [garbled, gone, reused, unknown]);
    assert!(!stale.contains(&live.path().to_path_buf()));
    // A run that ends removes its own.
    let live_path = live.path().to_path_buf();
    drop(live);
    assert!(!live_path.exists());
    // A folder that cannot be read has none to report.
    assert!(harness::fixture::stale_roots(&base.path().join("missing")).is_empty());
}
