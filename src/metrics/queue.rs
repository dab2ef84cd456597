//! The queue's metrics, rendered from one snapshot of it.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

use crate::queue::error::Error;
use crate::queue::handle::Queue;
use crate::queue::phase::Point;
use crate::queue::model::{Outcome, Stats, now_ms};

use super::catalog::{QUEUE_METRICS, help};
use super::ordered::Ordered;

/// What the queue's metrics are read from: its counts, whether its runner lock is held, and
/// the time they are read at.
#[derive(Debug, Clone, Copy)]
pub struct QueueSnapshot<'a> {
    /// The queue's counts (`hookq queue stats`), pause included.
    pub stats: &'a Stats,
    /// Whether a runner holds the queue's runner lock.
    pub lock_held: bool,
    /// Now, unix ms: the oldest pending point's age is counted to it.
    pub now_ms: i64,
}

/// Every outcome a history row can have, so that each is exposed, at 0 when there is none.
const OUTCOMES: [Outcome; 8] = [
    Outcome::Ok,
    Outcome::Failed,
    Outcome::Signalled,
    Outcome::TimedOut,
    Outcome::SpawnFailed,
    Outcome::Empty,
    Outcome::Abandoned,
    Outcome::Dropped,
];

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PointLabel {
    point: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabel {
    outcome: String,
}

/// The queue's metrics in the Prometheus text format ([`CONTENT_TYPE`](super::CONTENT_TYPE)),
/// as the names of [`QUEUE_METRICS`] say. Every hook point and every outcome is listed, at 0
/// when it has none, so that a series does not vanish when its count falls to nothing.
pub fn queue_metrics(snapshot: &QueueSnapshot<'_>) -> String {
    let s = snapshot.stats;
    let mut registry = Registry::default();
    let mut gauge = |name: &'static str, value: i64| {
        let g: Gauge = Gauge::default();
        g.set(value);
        registry.register(name, help(QUEUE_METRICS, name), g);
    };
    gauge("hookq_pending_points", s.pending);
    gauge("hookq_interrupted", s.interrupted);
    gauge("hookq_parked", count_of(&s.history_by_outcome, "abandoned"));
    gauge("hookq_runner_lock_held", i64::from(snapshot.lock_held));
    gauge("hookq_paused", i64::from(s.paused_since_ms.is_some()));
    gauge("hookq_tasks", s.tasks);

    let seconds = |name: &'static str, ms: i64| {
        let g: Gauge<f64, AtomicU64> = Gauge::default();
        g.set(ms as f64 / 1000.0);
        (name, g)
    };
    let age_ms = s
        .oldest_recorded_ms
        .map_or(0, |t| snapshot.now_ms.saturating_sub(t).max(0));
    for (name, g) in [
        seconds("hookq_oldest_pending_age_seconds", age_ms),
        seconds(
            "hookq_paused_since_timestamp_seconds",
            s.paused_since_ms.unwrap_or(0),
        ),
    ] {
        registry.register(name, help(QUEUE_METRICS, name), g);
    }

    let pending = Family::<PointLabel, Gauge>::default();
    let names = Point::ALL.map(Point::as_str);
    // A point name no hookq records (SQL written by hand) is shown as it is stored, after them.
    let unknown = s.pending_by_point.iter().map(|(p, _)| p.as_str());
    let mut order = Vec::new();
    for point in names.into_iter().chain(unknown.filter(|p| !names.contains(p))) {
        let labels = PointLabel {
            point: point.to_owned(),
        };
        pending
            .get_or_create(&labels)
            .set(count_of(&s.pending_by_point, point));
        order.push(labels);
    }
    registry.register_collector(Box::new(Ordered {
        name: "hookq_pending",
        help: help(QUEUE_METRICS, "hookq_pending"),
        family: pending,
        order: Box::new(move || order.clone()),
    }));

    let history = Family::<OutcomeLabel, Gauge>::default();
    let names = OUTCOMES.map(Outcome::as_str);
    let unknown = s.history_by_outcome.iter().map(|(o, _)| o.as_str());
    let mut order = Vec::new();
    for outcome in names.into_iter().chain(unknown.filter(|o| !names.contains(o))) {
        let labels = OutcomeLabel {
            outcome: outcome.to_owned(),
        };
        history
            .get_or_create(&labels)
            .set(count_of(&s.history_by_outcome, outcome));
        order.push(labels);
    }
    registry.register_collector(Box::new(Ordered {
        name: "hookq_history",
        help: help(QUEUE_METRICS, "hookq_history"),
        family: history,
        order: Box::new(move || order.clone()),
    }));

    let mut text = String::new();
    prometheus_client::encoding::prometheus_text::encode(&mut text, &registry)
        .expect("writing to a String cannot fail");
    text
}

/// Reads `queue`'s counts and its runner lock now and renders its metrics ([`queue_metrics`]):
/// what the web view's `/metrics` serves, and what a host serving its own metrics calls. Two
/// reads, cheap at any queue size (the counts are kept as points are recorded and cleared).
pub fn read_queue_metrics(queue: &mut Queue) -> Result<String, Error> {
    let stats = queue.stats()?;
    let lock = queue.lock()?;
    Ok(queue_metrics(&QueueSnapshot {
        stats: &stats,
        lock_held: lock.held,
        now_ms: now_ms(),
    }))
}

/// The count beside `key` in `(name, count)` pairs, 0 when absent.
fn count_of(pairs: &[(String, i64)], key: &str) -> i64 {
    pairs
        .iter()
        .filter(|(k, _)| k == key)
        .map(|(_, n)| n)
        .sum()
}
