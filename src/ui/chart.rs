//! The overview's chart: the outcomes of the hook runs of the last 24 hours, an hour a bar,
//! drawn as inline SVG. Pure: rows and a time in, text out.

use std::fmt::Write as _;

/// One hour's runs, by how they ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Hour {
    /// The hour's start, unix ms.
    pub start_ms: i64,
    /// Exited 0.
    pub ok: u32,
    /// Exited non-zero, or could not be started.
    pub failed: u32,
    /// Killed after the command timeout.
    pub timed_out: u32,
    /// Ended by a signal.
    pub signalled: u32,
}

impl Hour {
    fn total(&self) -> u32 {
        self.ok + self.failed + self.timed_out + self.signalled
    }
}

/// An hour, in ms: the width of a bar.
pub const HOUR_MS: i64 = 3_600_000;

/// How many hours the chart spans.
pub const HOURS: usize = 24;

/// When the chart's first hour starts, for a chart drawn at `now_ms`: the last bar is the hour
/// now runs in.
pub fn since_ms(now_ms: i64) -> i64 {
    (now_ms.div_euclid(HOUR_MS) + 1 - HOURS as i64) * HOUR_MS
}

/// The runs `(finished_ms, outcome, count)` counted into the 24 hours up to `now_ms`, oldest
/// first. Runs outside them, and outcomes that are no run (dropped, parked, empty), are left
/// out.
pub fn hours<'a>(runs: impl IntoIterator<Item = (i64, &'a str, i64)>, now_ms: i64) -> Vec<Hour> {
    let since = since_ms(now_ms);
    let mut out: Vec<Hour> = (0..HOURS as i64)
        .map(|i| Hour {
            start_ms: since + i * HOUR_MS,
            ..Hour::default()
        })
        .collect();
    for (at, outcome, count) in runs {
        let n = u32::try_from(count).unwrap_or(u32::MAX);
        if at < since {
            continue;
        }
        let Some(h) = usize::try_from((at - since) / HOUR_MS)
            .ok()
            .and_then(|i| out.get_mut(i))
        else {
            continue;
        };
        match outcome {
            "ok" => h.ok = h.ok.saturating_add(n),
            "failed" | "spawn_failed" => h.failed = h.failed.saturating_add(n),
            "timed_out" => h.timed_out = h.timed_out.saturating_add(n),
            "signalled" => h.signalled = h.signalled.saturating_add(n),
            _ => {}
        }
    }
    out
}

const WIDTH: u32 = 720;
const HEIGHT: u32 = 160;
const TOP: u32 = 12;
const BOTTOM: u32 = 20;
const LEFT: u32 = 36;

/// The SVG of `hours`: a stacked bar per hour (ok at the bottom, then failed, timed out,
/// signalled), the scale's top on the left, every sixth hour named (UTC) below. Holds
/// numbers and fixed words only.
pub fn svg(hours: &[Hour]) -> String {
    let max = hours.iter().map(Hour::total).max().unwrap_or(0).max(1);
    let plot_h = HEIGHT - TOP - BOTTOM;
    let slot = (WIDTH - LEFT) / hours.len().max(1) as u32;
    let bar = slot.saturating_sub(4).max(1);
    let mut s = String::new();
    let total: u32 = hours.iter().map(Hour::total).sum();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="hook runs per hour over the last 24 hours: {total} in all">"#
    );
    let base = TOP + plot_h;
    let _ = write!(
        s,
        r#"<line class="axis" x1="{LEFT}" y1="{base}" x2="{WIDTH}" y2="{base}"/><text class="label" x="{}" y="{}" text-anchor="end">{max}</text><text class="label" x="{}" y="{base}" text-anchor="end">0</text>"#,
        LEFT - 4,
        TOP + 8,
        LEFT - 4
    );
    for (i, h) in hours.iter().enumerate() {
        let x = LEFT + i as u32 * slot + 2;
        let mut y = base;
        let hour = hour_of(h.start_ms);
        let _ = write!(
            s,
            r#"<g><title>{hour:02}:00 UTC: {} ok, {} failed, {} timed out, {} signalled</title>"#,
            h.ok, h.failed, h.timed_out, h.signalled
        );
        for (class, n) in [
            ("ok", h.ok),
            ("failed", h.failed),
            ("timed_out", h.timed_out),
            ("signalled", h.signalled),
        ] {
            if n == 0 {
                continue;
            }
            let height = ((u64::from(n) * u64::from(plot_h)).div_ceil(u64::from(max))) as u32;
            let height = height.min(y - TOP).max(1);
            y -= height;
            let _ = write!(
                s,
                r#"<rect class="{class}" x="{x}" y="{y}" width="{bar}" height="{height}"/>"#
            );
        }
        // An empty hour still has a place to hover.
        if h.total() == 0 {
            let _ = write!(
                s,
                r#"<rect class="none" x="{x}" y="{}" width="{bar}" height="1"/>"#,
                base - 1
            );
        }
        s.push_str("</g>");
        if i % 6 == 0 {
            let _ = write!(
                s,
                r#"<text class="label" x="{x}" y="{}">{hour:02}:00</text>"#,
                HEIGHT - 4
            );
        }
    }
    s.push_str("</svg>");
    s
}

/// The hour of the day (UTC) of `ms`.
fn hour_of(ms: i64) -> i64 {
    ms.div_euclid(HOUR_MS).rem_euclid(24)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_700_000_000_000; // 22:13:20 UTC

    #[test]
    fn runs_fall_in_their_hour() {
        let since = since_ms(NOW);
        assert_eq!(since % HOUR_MS, 0);
        assert!(NOW - since < 24 * HOUR_MS && NOW - since >= 23 * HOUR_MS);
        let runs = [
            (NOW, "ok", 1),
            (NOW - 1, "failed", 1),
            (since, "timed_out", 1),
            (since - 1, "ok", 1),
            (since + HOUR_MS, "signalled", 1),
            (since + HOUR_MS + 5, "spawn_failed", 1),
            (NOW, "dropped", 1),
            (NOW + 2 * HOUR_MS, "ok", 1),
            (since + 2 * HOUR_MS, "ok", 40),
        ];
        let h = hours(runs, NOW);
        assert_eq!(h.len(), 24);
        assert_eq!(h[0].start_ms, since);
        assert_eq!(h[0].timed_out, 1);
        assert_eq!(h[0].total(), 1);
        assert_eq!((h[1].signalled, h[1].failed), (1, 1));
        assert_eq!((h[23].ok, h[23].failed), (1, 1));
        assert_eq!(h[2].ok, 40);
        let counted: u32 = h.iter().map(Hour::total).sum();
        assert_eq!(counted, 45);
    }

    #[test]
    fn bars_stack_within_the_plot() {
        let mut h = hours([], NOW);
        h[3].ok = 10;
        h[3].failed = 5;
        h[7].signalled = 1;
        let s = svg(&h);
        assert!(s.starts_with("<svg ") && s.ends_with("</svg>"));
        assert_eq!(s.matches("<g>").count(), 24);
        assert_eq!(s.matches(r#"class="ok""#).count(), 1);
        assert_eq!(s.matches(r#"class="failed""#).count(), 1);
        assert_eq!(s.matches(r#"class="signalled""#).count(), 1);
        assert_eq!(s.matches(r#"class="none""#).count(), 22);
        // The tallest bar fills the plot: ok 10 of 15 (85.33 -> 86), failed 5 (43, cut to fit).
        let plot = HEIGHT - TOP - BOTTOM;
        let heights: Vec<u32> = s
            .split(r#"height=""#)
            .skip(1)
            .map(|r| r.split('"').next().unwrap().parse().unwrap())
            .collect();
        assert!(heights.iter().all(|&x| x <= plot));
        assert!(s.contains(&format!(r#"height="{}""#, (10 * plot).div_ceil(15))));
        assert!(s.contains(">15</text>"), "the scale's top is the busiest hour");
        assert!(s.contains("aria-label=\"hook runs per hour over the last 24 hours: 16 in all\""));
        // Every sixth hour is named.
        assert_eq!(s.matches(":00</text>").count(), 4);
    }

    #[test]
    fn an_idle_day_draws_an_empty_chart() {
        let s = svg(&hours([], NOW));
        assert!(s.contains(">1</text>"));
        assert!(!s.contains(r#"class="ok""#));
    }
}
