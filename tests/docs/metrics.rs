//! docs/metrics.md against the library's catalog of metrics: every metric listed with its type
//! and labels, and none listed that hookq does not expose.

use std::collections::BTreeSet;

use hookq::metrics::{HUB_METRICS, MetricDoc, QUEUE_METRICS};

/// The table rows of docs/metrics.md: `(name, type, labels)`.
fn documented() -> Vec<(String, String, Vec<String>)> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/metrics.md"))
        .expect("docs/metrics.md");
    text.lines()
        .filter(|l| l.starts_with("| `hookq_"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let unquote = |s: &str| s.trim_matches('`').to_owned();
            let labels = cells[3]
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(unquote)
                .collect();
            (unquote(cells[1]), cells[2].to_owned(), labels)
        })
        .collect()
}

#[test]
fn every_metric_is_documented_with_its_type_and_labels() {
    let docs = documented();
    let catalog: Vec<&MetricDoc> = QUEUE_METRICS.iter().chain(HUB_METRICS).collect();
    assert!(catalog.len() >= 15, "the catalog lists the metrics");
    for m in &catalog {
        let row = docs
            .iter()
            .find(|(name, _, _)| name == m.name)
            .unwrap_or_else(|| panic!("docs/metrics.md does not list {}", m.name));
        assert_eq!(row.1, m.kind.as_str(), "{}'s type", m.name);
        assert_eq!(row.2, m.labels, "{}'s labels", m.name);
    }
    let names: BTreeSet<&str> = catalog.iter().map(|m| m.name).collect();
    for (name, _, _) in &docs {
        assert!(
            names.contains(name.as_str()),
            "docs/metrics.md lists {name}, which hookq does not expose"
        );
    }
    assert_eq!(docs.len(), names.len(), "each metric listed once");
}
