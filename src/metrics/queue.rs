//! The queue's metrics, rendered from one snapshot of it.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use crate::queue::error::Error;
use crate::queue::handle::Queue;
use crate::queue::phase::Point;
use crate::queue::model::{Outcome, Stats, now_ms};

use super::catalog::{QUEUE_METRICS, help};
use super::hub::{NoLabels, QueueLabel};
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
    render(&[(QueueLabel(None), snapshot)])
}

/// The metrics of many queues ([`queue_metrics`] of each), every series labelled with its
/// queue (`queue="<name>"`, the name beside its snapshot), queue by queue in the order given:
/// what the web view of many queues serves.
pub fn queues_metrics(queues: &[(&str, QueueSnapshot<'_>)]) -> String {
    let labelled: Vec<_> = queues
        .iter()
        .map(|(name, snapshot)| (QueueLabel(Some(Arc::from(*name))), snapshot))
        .collect();
    render(&labelled)
}

/// Registers `family` as `name` of [`QUEUE_METRICS`], exposed in the order of `order`.
fn register<S, M>(registry: &mut Registry, name: &'static str, family: Family<S, M>, order: Vec<S>)
where
    S: EncodeLabelSet + Clone + std::hash::Hash + Eq + std::fmt::Debug + Send + Sync + 'static,
    M: prometheus_client::encoding::EncodeMetric
        + prometheus_client::metrics::TypedMetric
        + std::fmt::Debug
        + Default
        + Send
        + Sync
        + 'static,
{
    registry.register_collector(Box::new(Ordered {
        name,
        help: help(QUEUE_METRICS, name),
        family,
        order: Box::new(move || order.clone()),
    }));
}

/// How a metric's value is read from a queue's snapshot.
type Read = dyn Fn(&QueueSnapshot<'_>) -> i64;

fn render(queues: &[(QueueLabel, &QueueSnapshot<'_>)]) -> String {
    let mut registry = Registry::default();
    let gauges = |value: &Read| {
        let family = Family::<(QueueLabel, NoLabels), Gauge>::default();
        let mut order = Vec::new();
        for (queue, snapshot) in queues {
            let labels = (queue.clone(), NoLabels);
            family.get_or_create(&labels).set(value(snapshot));
            order.push(labels);
        }
        (family, order)
    };
    let plain: [(&'static str, &Read); 6] = [
        ("hookq_pending_points", &|q| q.stats.pending),
        ("hookq_interrupted", &|q| q.stats.interrupted),
        ("hookq_parked", &|q| count_of(&q.stats.history_by_outcome, "abandoned")),
        ("hookq_runner_lock_held", &|q| i64::from(q.lock_held)),
        ("hookq_paused", &|q| i64::from(q.stats.paused_since_ms.is_some())),
        ("hookq_tasks", &|q| q.stats.tasks),
    ];
    for (name, value) in plain {
        let (family, order) = gauges(value);
        register(&mut registry, name, family, order);
    }

    let seconds = |value: &Read| {
        let family = Family::<(QueueLabel, NoLabels), Gauge<f64, AtomicU64>>::default();
        let mut order = Vec::new();
        for (queue, snapshot) in queues {
            let labels = (queue.clone(), NoLabels);
            family
                .get_or_create(&labels)
                .set(value(snapshot) as f64 / 1000.0);
            order.push(labels);
        }
        (family, order)
    };
    let timed: [(&'static str, &Read); 2] = [
        ("hookq_oldest_pending_age_seconds", &|q| {
            q.stats
                .oldest_recorded_ms
                .map_or(0, |t| q.now_ms.saturating_sub(t).max(0))
        }),
        ("hookq_paused_since_timestamp_seconds", &|q| {
            q.stats.paused_since_ms.unwrap_or(0)
        }),
    ];
    for (name, value) in timed {
        let (family, order) = seconds(value);
        register(&mut registry, name, family, order);
    }

    let pending = Family::<(QueueLabel, PointLabel), Gauge>::default();
    let names = Point::ALL.map(Point::as_str);
    let mut order = Vec::new();
    for (queue, snapshot) in queues {
        let s = snapshot.stats;
        // A point name no hookq records (SQL written by hand) is shown as it is stored, after
        // them.
        let unknown = s.pending_by_point.iter().map(|(p, _)| p.as_str());
        for point in names.into_iter().chain(unknown.filter(|p| !names.contains(p))) {
            let labels = (
                queue.clone(),
                PointLabel {
                    point: point.to_owned(),
                },
            );
            pending
                .get_or_create(&labels)
                .set(count_of(&s.pending_by_point, point));
            order.push(labels);
        }
    }
    register(&mut registry, "hookq_pending", pending, order);

    let history = Family::<(QueueLabel, OutcomeLabel), Gauge>::default();
    let names = OUTCOMES.map(Outcome::as_str);
    let mut order = Vec::new();
    for (queue, snapshot) in queues {
        let s = snapshot.stats;
        let unknown = s.history_by_outcome.iter().map(|(o, _)| o.as_str());
        for outcome in names.into_iter().chain(unknown.filter(|o| !names.contains(o))) {
            let labels = (
                queue.clone(),
                OutcomeLabel {
                    outcome: outcome.to_owned(),
                },
            );
            history
                .get_or_create(&labels)
                .set(count_of(&s.history_by_outcome, outcome));
            order.push(labels);
        }
    }
    register(&mut registry, "hookq_history", history, order);

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
