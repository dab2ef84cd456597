//! The benchmark harness at smoke size: compiles `benches/harness` into the test build and runs
//! every measurement once with tiny sizes, so the bench can never rot. Asserts only that every
//! figure was produced (finite and positive), never how fast anything was.

#[path = "../benches/harness/mod.rs"]
mod harness;

use harness::report::Verdict;

#[test]
fn every_figure_is_produced() {
    // The same entry the bench takes, forced to smoke size whatever the environment says.
    let sizes = harness::Sizes::from_env(&["--smoke".to_owned()]);
    assert_eq!(sizes.mode, harness::sizes::Mode::Smoke);
    let report = harness::run(sizes);
    let table = report.table();
    let finite_positive = |x: f64| x.is_finite() && x > 0.0;
    for id in [
        "F1", "F2", "F3", "F4", "F5", "1a", "1b", "1c", "1d", "2a", "2b", "2c", "2d", "2e", "2f",
        "3a", "3b", "3c", "3d", "3e", "4a", "4b", "4c", "5a", "5b", "6", "6b",
    ] {
        let row = report
            .rows
            .iter()
            .find(|r| r.id == id)
            .unwrap_or_else(|| panic!("figure {id} missing from the table:\n{table}"));
        assert!(
            finite_positive(row.value),
            "figure {id} value {}:\n{table}",
            row.value
        );
        if let Some(floor) = &row.floor {
            assert!(
                finite_positive(floor.value),
                "figure {id} floor {}:\n{table}",
                floor.value
            );
            let ratio = row.ratio.expect("a floor gives a ratio");
            assert!(
                finite_positive(ratio),
                "figure {id} ratio {ratio}:\n{table}"
            );
        }
        if row.target.is_some() {
            assert!(
                matches!(row.verdict, Verdict::Pass | Verdict::Miss),
                "figure {id} has a target but no verdict"
            );
        }
    }
    let (_, targets) = report.score();
    assert_eq!(targets, 15, "every target is in the table:\n{table}");

    // The JSON the bench writes parses back with every row.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.json");
    report.write_json(&path).unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(json["rows"].as_array().unwrap().len(), report.rows.len());
}
