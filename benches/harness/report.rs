//! The one table: every figure with its floor, ratio, target and verdict; and its JSON.

use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::sizes::Sizes;

/// Which way a target points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cmp {
    /// `≤ limit`.
    AtMost,
    /// `≥ limit`.
    AtLeast,
    /// `< limit`.
    Below,
}

/// What a target is stated on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum On {
    /// The ratio to the floor.
    Ratio,
    /// The value itself, in the row's unit.
    Value,
}

/// A target. Read back from a run's JSON by `--compare` (`compare.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Target {
    /// The ratio or the value.
    pub on: On,
    /// The direction.
    pub cmp: Cmp,
    /// The limit.
    pub limit: f64,
}

impl Target {
    /// `ratio ≤ limit`.
    pub fn ratio_at_most(limit: f64) -> Self {
        Self {
            on: On::Ratio,
            cmp: Cmp::AtMost,
            limit,
        }
    }

    /// `ratio ≥ limit`.
    pub fn ratio_at_least(limit: f64) -> Self {
        Self {
            on: On::Ratio,
            cmp: Cmp::AtLeast,
            limit,
        }
    }

    /// `value ≤ limit`.
    pub fn value_at_most(limit: f64) -> Self {
        Self {
            on: On::Value,
            cmp: Cmp::AtMost,
            limit,
        }
    }

    /// `value < limit`.
    pub fn value_below(limit: f64) -> Self {
        Self {
            on: On::Value,
            cmp: Cmp::Below,
            limit,
        }
    }

    /// What the target is read on: the ratio (none without a floor) or the value.
    pub fn reading(&self, ratio: Option<f64>, value: f64) -> Option<f64> {
        match self.on {
            On::Ratio => ratio,
            On::Value => Some(value),
        }
    }

    /// Whether `x`, read as [`Target::reading`] gives it, meets the target.
    pub fn met(&self, x: f64) -> bool {
        match self.cmp {
            Cmp::AtMost => x <= self.limit,
            Cmp::AtLeast => x >= self.limit,
            Cmp::Below => x < self.limit,
        }
    }

    fn text(&self, unit: &str) -> String {
        let op = match self.cmp {
            Cmp::AtMost => "<=",
            Cmp::AtLeast => ">=",
            Cmp::Below => "<",
        };
        match self.on {
            On::Ratio => format!("ratio {op} {}", num(self.limit)),
            On::Value => format!("{op} {} {unit}", num(self.limit)),
        }
    }
}

/// What a row's verdict is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Verdict {
    /// The target is met.
    #[serde(rename = "PASS")]
    Pass,
    /// The target is missed.
    #[serde(rename = "MISS")]
    Miss,
    /// A floor of this machine, measured in this run.
    #[serde(rename = "floor")]
    Floor,
    /// A breakdown row without a target.
    #[serde(rename = "info")]
    Info,
}

/// A floor a figure is compared against, in the figure's unit.
#[derive(Debug, Clone, Serialize)]
pub struct Floor {
    /// What the floor is.
    pub name: String,
    /// Its value.
    pub value: f64,
}

/// One row of the table.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// `F1`, `1a`, ...
    pub id: String,
    /// What is measured.
    pub figure: String,
    /// The measured value.
    pub value: f64,
    /// Its unit.
    pub unit: String,
    /// The floor it is compared against.
    pub floor: Option<Floor>,
    /// The ratio to the floor (see `ratio_is`).
    pub ratio: Option<f64>,
    /// How the ratio is formed: `value/floor` or `floor/value` (a throughput ratio).
    pub ratio_is: Option<&'static str>,
    /// The target.
    pub target: Option<Target>,
    /// The target as text.
    pub target_text: String,
    /// PASS, MISS, floor or info.
    pub verdict: Verdict,
    /// How it was measured, in a few words.
    pub note: String,
}

impl Row {
    /// A row with its value and unit, nothing else yet.
    pub fn new(id: &str, figure: impl Into<String>, value: f64, unit: &str) -> Self {
        Self {
            id: id.into(),
            figure: figure.into(),
            value,
            unit: unit.into(),
            floor: None,
            ratio: None,
            ratio_is: None,
            target: None,
            target_text: String::new(),
            verdict: Verdict::Info,
            note: String::new(),
        }
    }

    /// A floor row: a physical cost of this machine. `reference` is the figure measured on a
    /// 2-core machine of this kind when the targets were set, shown for comparison.
    pub fn floor(
        id: &str,
        figure: impl Into<String>,
        value: f64,
        unit: &str,
        reference: Option<f64>,
    ) -> Self {
        let mut row = Self::new(id, figure, value, unit);
        row.verdict = Verdict::Floor;
        if let Some(r) = reference {
            row.note = format!("reference machine: {} {unit}", num(r));
        }
        row
    }

    /// Compares the value with `floor`: ratio `value / floor` (lower is better).
    pub fn vs(mut self, name: impl Into<String>, floor: f64) -> Self {
        self.floor = Some(Floor {
            name: name.into(),
            value: floor,
        });
        self.ratio = Some(self.value / floor);
        self.ratio_is = Some("value/floor");
        self
    }

    /// Compares throughput with `floor`'s: ratio `floor / value` for per-item times (higher is
    /// better).
    pub fn throughput_vs(mut self, name: impl Into<String>, floor: f64) -> Self {
        self.floor = Some(Floor {
            name: name.into(),
            value: floor,
        });
        self.ratio = Some(floor / self.value);
        self.ratio_is = Some("floor/value");
        self
    }

    /// Sets the target and the verdict.
    pub fn target(mut self, t: Target) -> Self {
        let x = t
            .reading(self.ratio, self.value)
            .expect("a ratio target needs a floor");
        self.verdict = if t.met(x) {
            Verdict::Pass
        } else {
            Verdict::Miss
        };
        self.target_text = t.text(&self.unit);
        self.target = Some(t);
        self
    }

    /// Adds a note.
    pub fn note(mut self, note: impl Into<String>) -> Self {
        let note = note.into();
        if self.note.is_empty() {
            self.note = note;
        } else {
            self.note = format!("{}; {note}", self.note);
        }
        self
    }
}

/// The machine the run was on.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    /// `nproc`.
    pub cpus: usize,
    /// CPU model from /proc/cpuinfo.
    pub cpu_model: String,
    /// Total memory, MiB.
    pub mem_total_mib: u64,
    /// Kernel release.
    pub kernel: String,
    /// Where the databases and logs were.
    pub bench_dir: String,
    /// One `CPUID` instruction, microseconds (x86-64 only). glibc's loader runs dozens at every
    /// process start to learn the CPU's features and caches, and in a virtual machine each is
    /// an exit to the hypervisor: on the 2-core Intel VM measured (7-11 us each) they were about
    /// 0.7 ms of a `sh -c true`, the largest part of F1 and F2 (BENCHMARKS.md).
    pub cpuid_us: Option<f64>,
}

impl Machine {
    /// Reads the machine's facts.
    pub fn detect(bench_dir: &Path) -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| {
                l.strip_prefix("model name")
                    .map(|r| r.trim_start_matches([' ', '\t', ':']).to_owned())
            })
            .unwrap_or_else(|| "unknown".into());
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let mem_total_mib = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |kib| kib / 1024);
        Self {
            cpus: std::thread::available_parallelism().map_or(1, usize::from),
            cpu_model,
            mem_total_mib,
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .map(|s| s.trim().to_owned())
                .unwrap_or_default(),
            bench_dir: bench_dir.display().to_string(),
            cpuid_us: cpuid_us(),
        }
    }
}

/// The median of nine blocks of 200 `CPUID` (leaf 0), microseconds each.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
fn cpuid_us() -> Option<f64> {
    let mut blocks: Vec<f64> = (0..9)
        .map(|_| {
            let start = std::time::Instant::now();
            for _ in 0..200 {
                // SAFETY: every x86-64 CPU has CPUID. (Newer Rust makes it a safe function;
                // `unsafe` keeps this building with the older ones `rust-version` allows.)
                #[allow(unused_unsafe)]
                let leaf = unsafe { std::arch::x86_64::__cpuid(std::hint::black_box(0)) };
                std::hint::black_box(leaf);
            }
            start.elapsed().as_secs_f64() * 1e6 / 200.0
        })
        .collect();
    blocks.sort_by(f64::total_cmp);
    Some(blocks[blocks.len() / 2])
}

#[cfg(not(target_arch = "x86_64"))]
fn cpuid_us() -> Option<f64> {
    None
}

/// A whole run.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The machine.
    pub machine: Machine,
    /// The sizes used.
    pub sizes: Sizes,
    /// Wall time of the whole run, seconds.
    pub elapsed_secs: f64,
    /// /proc/loadavg when the run started and when it ended: other work on the machine skews
    /// every figure.
    pub loadavg: (String, String),
    /// Seconds from the end of the run before (when `target/hookq-bench.json` was written) to
    /// this run's start, when known: a run started within minutes of another creates its files
    /// slowly (BENCHMARKS.md, "Running it").
    pub after_last_run_secs: Option<f64>,
    /// The rows, floors first.
    pub rows: Vec<Row>,
}

impl Report {
    /// How many targets were met and how many there were.
    pub fn score(&self) -> (usize, usize) {
        let with = self.rows.iter().filter(|r| r.target.is_some());
        let met = with.clone().filter(|r| r.verdict == Verdict::Pass).count();
        (met, with.count())
    }

    /// The table as text.
    pub fn table(&self) -> String {
        let head = [
            "ID", "FIGURE", "VALUE", "FLOOR", "RATIO", "TARGET", "RESULT",
        ];
        let mut cells: Vec<Vec<String>> = vec![head.map(String::from).to_vec()];
        for r in &self.rows {
            cells.push(vec![
                r.id.clone(),
                r.figure.clone(),
                format!("{} {}", num(r.value), r.unit),
                r.floor.as_ref().map_or_else(
                    || "-".into(),
                    |f| format!("{} = {} {}", f.name, num(f.value), r.unit),
                ),
                r.ratio.map_or_else(|| "-".into(), num),
                if r.target_text.is_empty() {
                    "-".into()
                } else {
                    r.target_text.clone()
                },
                match r.verdict {
                    Verdict::Pass => "PASS",
                    Verdict::Miss => "MISS",
                    Verdict::Floor => "floor",
                    Verdict::Info => "info",
                }
                .into(),
            ]);
        }
        // Numbers read best right-aligned: the value and the ratio.
        let mut out = columns(&cells, &[2, 4]);
        let (met, of) = self.score();
        let _ = writeln!(
            out,
            "\n{met} of {of} targets met ({:?} sizes, {:.0} s). Notes per row:",
            self.sizes.mode, self.elapsed_secs
        );
        for r in self.rows.iter().filter(|r| !r.note.is_empty()) {
            let _ = writeln!(out, "  {:<3} {}", r.id, r.note);
        }
        let after = self.after_last_run_secs.map_or(String::new(), |s| {
            format!(", {s:.0} s after the last run ended")
        });
        let _ = writeln!(
            out,
            "load average: {} at the start{after}, {} at the end",
            self.loadavg.0, self.loadavg.1
        );
        let m = &self.machine;
        let cpuid = m.cpuid_us.map_or(String::new(), |us| {
            format!(" (CPUID {} us: dozens run at every process start)", num(us))
        });
        let _ = writeln!(
            out,
            "machine: {} CPUs, {}{cpuid}, {} MiB RAM, kernel {}, files in {}",
            m.cpus, m.cpu_model, m.mem_total_mib, m.kernel, m.bench_dir
        );
        out
    }

    /// Writes the JSON to `path`, creating its folder.
    pub fn write_json(&self, path: &Path) -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        std::fs::write(path, text + "\n")
    }
}

/// `lines` as aligned columns, two spaces apart, the columns in `right` right-aligned, and a
/// line of dashes under the first line (the head).
pub fn columns(lines: &[Vec<String>], right: &[usize]) -> String {
    let mut width: Vec<usize> = Vec::new();
    for line in lines {
        width.resize(width.len().max(line.len()), 0);
        for (w, c) in width.iter_mut().zip(line) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    let mut put = |line: &[String]| {
        let mut s = String::new();
        for (i, (c, &w)) in line.iter().zip(&width).enumerate() {
            if right.contains(&i) {
                let _ = write!(s, "{c:>w$}  ");
            } else {
                let _ = write!(s, "{c:<w$}  ");
            }
        }
        out.push_str(s.trim_end());
        out.push('\n');
    };
    for (i, line) in lines.iter().enumerate() {
        put(line);
        if i == 0 {
            put(&width.iter().map(|&w| "-".repeat(w)).collect::<Vec<_>>());
        }
    }
    out
}

/// The first three fields of /proc/loadavg and, where the kernel has them, the share of the
/// last 60 s some task waited for a CPU and for I/O (/proc/pressure).
pub fn loadavg() -> String {
    let load = std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    let psi = |what: &str| -> Option<String> {
        let text = std::fs::read_to_string(format!("/proc/pressure/{what}")).ok()?;
        let some = text.lines().find(|l| l.starts_with("some"))?;
        let avg60 = some
            .split_whitespace()
            .find_map(|f| f.strip_prefix("avg60="))?;
        Some(format!("{what} {avg60}%"))
    };
    match (psi("cpu"), psi("io")) {
        (Some(c), Some(i)) => format!("{load} (pressure avg60: {c}, {i})"),
        _ => load,
    }
}

/// A number with three significant digits (more for large ones), no exponent.
pub fn num(x: f64) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    let a = x.abs();
    if a >= 100.0 || a == 0.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else if a >= 0.1 {
        format!("{x:.3}")
    } else if a >= 0.01 {
        format!("{x:.4}")
    } else {
        format!("{x:.5}")
    }
}
