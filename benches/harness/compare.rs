//! Several runs side by side (`cargo bench --bench hookq -- --compare [FILE...]`): each target's
//! reading in every run, their median, and how many runs met it. A target whose bound lies
//! inside the spread of one machine's runs is read here, over several of them, rather than from
//! any single run.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::report::{Target, columns, num};
use super::stats::median;

/// One run's JSON, as `write_json` wrote it, with the file it came from.
pub struct Run {
    /// Where it was read from.
    pub path: PathBuf,
    /// The parsed JSON.
    pub json: Value,
}

impl Run {
    /// Reads and parses `path`.
    pub fn read(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let json: Value = serde_json::from_str(&text)
            .map_err(|e| format!("{} is not a bench run's JSON: {e}", path.display()))?;
        if !json["rows"].is_array() {
            return Err(format!(
                "{} is not a bench run's JSON: it has no \"rows\" list",
                path.display()
            ));
        }
        Ok(Self {
            path: path.to_path_buf(),
            json,
        })
    }

    fn mode(&self) -> &str {
        self.json["sizes"]["mode"].as_str().unwrap_or("?")
    }
}

/// The full runs kept in `dir` (`target/hookq-bench-runs/`), oldest first: their names begin
/// with the time each run ended.
pub fn kept_runs(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        format!(
            "no runs to compare in {}: {e} (a full run keeps its JSON there)",
            dir.display()
        )
    })?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    Ok(paths)
}

/// A row's target as the run wrote it, if it has one.
fn target_of(row: &Value) -> Option<Target> {
    serde_json::from_value(row.get("target")?.clone()).ok()
}

/// What `target` is read on in `row`: its ratio or its value.
fn reading(target: &Target, row: &Value) -> Option<f64> {
    target.reading(row["ratio"].as_f64(), row["value"].as_f64()?)
}

/// The table comparing `runs`: one line per target, in the order of the first run's rows. Runs
/// of different sizes (a smoke run among full ones) do not compare, and are refused.
pub fn table(runs: &[Run]) -> Result<String, String> {
    let first = runs.first().ok_or("no runs to compare")?;
    if let Some(other) = runs.iter().find(|r| r.mode() != first.mode()) {
        return Err(format!(
            "{} is a {} run and {} a {} run: runs of different sizes do not compare",
            first.path.display(),
            first.mode(),
            other.path.display(),
            other.mode()
        ));
    }
    let mut out = String::new();
    for (i, run) in runs.iter().enumerate() {
        let _ = writeln!(out, "run {}: {}", i + 1, run.path.display());
    }
    out.push('\n');
    let mut head = vec!["ID".to_owned(), "TARGET".to_owned()];
    head.extend((1..=runs.len()).map(|i| format!("RUN {i}")));
    head.extend(["MEDIAN", "MET", "MEDIAN MEETS"].map(String::from));
    let mut lines = vec![head];
    let (mut medians_met, mut targets) = (0, 0);
    let rows = first.json["rows"].as_array().expect("checked on reading");
    for row in rows {
        let Some(target) = target_of(row) else {
            continue;
        };
        let id = row["id"].as_str().unwrap_or("?");
        targets += 1;
        let mut line = vec![
            id.to_owned(),
            row["target_text"].as_str().unwrap_or("").to_owned(),
        ];
        let mut readings = Vec::new();
        for run in runs {
            let found = run.json["rows"]
                .as_array()
                .and_then(|rs| rs.iter().find(|r| r["id"] == row["id"]))
                .and_then(|r| reading(&target, r));
            match found {
                Some(x) => {
                    readings.push(x);
                    line.push(format!(
                        "{}{}",
                        num(x),
                        if target.met(x) { "" } else { "*" }
                    ));
                }
                None => line.push("-".into()),
            }
        }
        if readings.is_empty() {
            line.extend(["-", "-", "-"].map(String::from));
        } else {
            let m = median(&readings);
            let met = readings.iter().filter(|&&x| target.met(x)).count();
            medians_met += usize::from(target.met(m));
            line.push(num(m));
            line.push(format!("{met} of {}", readings.len()));
            line.push(if target.met(m) { "yes" } else { "no" }.into());
        }
        lines.push(line);
    }
    out.push_str(&columns(&lines, &[]));
    let _ = writeln!(
        out,
        "\n* a run that missed the target. The median of the {} runs meets {medians_met} of {targets} targets.",
        runs.len()
    );
    Ok(out)
}
