//! A hub's own metrics: what its passes ran, how long the hooks took, and on PostgreSQL its
//! takeovers of the runner lock and its reconnections. A hub of many queues labels each series
//! with its `queue`.

use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use prometheus_client::encoding::{EncodeLabelSet, LabelSetEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::queue::drain::{DrainEvent, PassReport};
use crate::queue::fleet::QueueEvent;
use crate::queue::hub::HubEvent;
use crate::queue::phase::Point;
use crate::queue::model::Outcome;

use super::catalog::{HUB_METRICS, help};
use super::ordered::Ordered;

/// The upper bounds of [`HubMetrics`]' hook duration buckets, in seconds: from a command
/// that only records something (a few milliseconds) to one that builds or deploys (an hour).
pub const DURATION_BUCKETS: [f64; 16] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0,
];

/// The outcomes a command that ran can have (the others are of points cleared unrun).
const COMMAND_OUTCOMES: [Outcome; 5] = [
    Outcome::Ok,
    Outcome::Failed,
    Outcome::Signalled,
    Outcome::TimedOut,
    Outcome::SpawnFailed,
];

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HookLabels {
    point: &'static str,
    outcome: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PointLabel {
    point: &'static str,
}

/// The `queue` label of a hub of many queues (the workspace's directory), none for a hub of
/// one.
#[derive(Debug, Clone, Hash, PartialEq, Eq)]
pub(super) struct QueueLabel(pub(super) Option<Arc<str>>);

impl EncodeLabelSet for QueueLabel {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> Result<(), std::fmt::Error> {
        match &self.0 {
            Some(queue) => [("queue", &**queue)].encode(encoder),
            None => Ok(()),
        }
    }
}

/// The `how` of a takeover.
const TAKEOVERS: [&str; 2] = ["released", "lease_expired"];

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HowLabel {
    how: &'static str,
}

/// A new duration histogram (a [`Family`] needs a constructor it can name).
fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

/// The name to register `name` of [`HUB_METRICS`] under (a counter's without `_total`, which
/// the encoder appends), and its help text.
fn named(name: &'static str) -> (&'static str, &'static str) {
    (
        name.strip_suffix("_total").unwrap_or(name),
        help(HUB_METRICS, name),
    )
}

/// A hub's counters, shared by the thread that drains (which counts) and the one that serves
/// them (which renders): every method takes `&self`. A hub of one queue counts with the methods
/// of `HubMetrics` itself; a hub of many ([`HubMetrics::for_queues`]) counts each queue's with
/// the methods of [`HubMetrics::queue`], its series labelled `queue`.
#[derive(Debug)]
pub struct HubMetrics {
    registry: Registry,
    /// The queues counted, in the order their series are exposed.
    queues: Arc<RwLock<Vec<QueueLabel>>>,
    hooks: Family<(QueueLabel, HookLabels), Counter>,
    durations: Family<(QueueLabel, PointLabel), Histogram, fn() -> Histogram>,
    passes: Family<(QueueLabel, NoLabels), Counter>,
    pass_failures: Family<(QueueLabel, NoLabels), Counter>,
    cleared: Family<(QueueLabel, NoLabels), Counter>,
    parked: Family<(QueueLabel, NoLabels), Counter>,
    takeovers: Family<(QueueLabel, HowLabel), Counter>,
    reconnects: Family<(QueueLabel, NoLabels), Counter>,
}

impl Default for HubMetrics {
    fn default() -> Self {
        Self::new()
    }
}

/// Registers `family` as `name` of [`HUB_METRICS`], its series exposed queue by queue, each
/// queue's in the order of `each`.
fn register<S, M, C>(
    registry: &mut Registry,
    name: &'static str,
    family: &Family<(QueueLabel, S), M, C>,
    queues: &Arc<RwLock<Vec<QueueLabel>>>,
    each: Vec<S>,
) where
    S: EncodeLabelSet + Clone + std::hash::Hash + Eq + std::fmt::Debug + Send + Sync + 'static,
    M: prometheus_client::encoding::EncodeMetric
        + prometheus_client::metrics::TypedMetric
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
    C: prometheus_client::metrics::family::MetricConstructor<M>
        + Clone
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let (name, help) = named(name);
    let queues = Arc::clone(queues);
    registry.register_collector(Box::new(Ordered {
        name,
        help,
        family: family.clone(),
        order: Box::new(move || {
            let queues = queues.read().unwrap_or_else(PoisonError::into_inner);
            queues
                .iter()
                .flat_map(|q| each.iter().map(move |l| (q.clone(), l.clone())))
                .collect()
        }),
    }));
}

/// No labels besides the queue's.
#[derive(Debug, Clone, Hash, PartialEq, Eq)]
pub(super) struct NoLabels;

impl EncodeLabelSet for NoLabels {
    fn encode(&self, _: &mut LabelSetEncoder) -> Result<(), std::fmt::Error> {
        Ok(())
    }
}

impl HubMetrics {
    /// The metrics of a hub of one queue: every metric of [`HUB_METRICS`] at 0, without a
    /// `queue` label.
    pub fn new() -> Self {
        let m = Self::for_queues();
        m.add(QueueLabel(None));
        m
    }

    /// The metrics of a hub of many queues, each series labelled `queue`: a queue's series
    /// appear, at 0, the first time [`HubMetrics::queue`] names it.
    pub fn for_queues() -> Self {
        let queues = Arc::new(RwLock::new(Vec::new()));
        let hooks = Family::default();
        let durations: Family<(QueueLabel, PointLabel), Histogram, fn() -> Histogram> =
            Family::new_with_constructor(duration_histogram);
        let takeovers = Family::default();
        let plain = Family::<(QueueLabel, NoLabels), Counter>::default;
        let (passes, pass_failures, cleared, parked, reconnects) =
            (plain(), plain(), plain(), plain(), plain());
        let mut registry = Registry::default();
        let hook_order = Point::ALL
            .into_iter()
            .flat_map(|p| {
                COMMAND_OUTCOMES.map(|o| HookLabels {
                    point: p.as_str(),
                    outcome: o.as_str(),
                })
            })
            .collect();
        register(
            &mut registry,
            "hookq_hub_hooks_total",
            &hooks,
            &queues,
            hook_order,
        );
        let point_order = Point::ALL
            .into_iter()
            .map(|p| PointLabel { point: p.as_str() })
            .collect();
        register(
            &mut registry,
            "hookq_hub_hook_duration_seconds",
            &durations,
            &queues,
            point_order,
        );
        for (name, family) in [
            ("hookq_hub_passes_total", &passes),
            ("hookq_hub_pass_failures_total", &pass_failures),
            ("hookq_hub_points_cleared_total", &cleared),
            ("hookq_hub_points_parked_total", &parked),
        ] {
            register(&mut registry, name, family, &queues, vec![NoLabels]);
        }
        register(
            &mut registry,
            "hookq_hub_lock_takeovers_total",
            &takeovers,
            &queues,
            TAKEOVERS.map(|how| HowLabel { how }).to_vec(),
        );
        register(
            &mut registry,
            "hookq_hub_reconnects_total",
            &reconnects,
            &queues,
            vec![NoLabels],
        );
        Self {
            registry,
            queues,
            hooks,
            durations,
            passes,
            pass_failures,
            cleared,
            parked,
            takeovers,
            reconnects,
        }
    }

    /// Adds `queue`'s series, at 0, unless it has them.
    fn add(&self, queue: QueueLabel) {
        if self
            .queues
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&queue)
        {
            return;
        }
        let mut queues = self.queues.write().unwrap_or_else(PoisonError::into_inner);
        if queues.contains(&queue) {
            return;
        }
        // Every series exists from the start, at 0, so that none appears from nothing.
        for p in Point::ALL {
            let point = p.as_str();
            for o in COMMAND_OUTCOMES {
                let outcome = o.as_str();
                drop(
                    self.hooks
                        .get_or_create(&(queue.clone(), HookLabels { point, outcome })),
                );
            }
            drop(
                self.durations
                    .get_or_create(&(queue.clone(), PointLabel { point })),
            );
        }
        for how in TAKEOVERS {
            drop(
                self.takeovers
                    .get_or_create(&(queue.clone(), HowLabel { how })),
            );
        }
        for family in [
            &self.passes,
            &self.pass_failures,
            &self.cleared,
            &self.parked,
            &self.reconnects,
        ] {
            drop(family.get_or_create(&(queue.clone(), NoLabels)));
        }
        queues.push(queue);
    }

    /// The counters of `queue` in a hub of many queues ([`HubMetrics::for_queues`]), its series
    /// labelled `queue="<queue>"`; they appear, at 0, the first time it is named.
    pub fn queue(&self, queue: &str) -> QueueMetrics<'_> {
        let label = QueueLabel(Some(Arc::from(queue)));
        self.add(label.clone());
        QueueMetrics {
            metrics: self,
            label,
        }
    }

    /// The counters of the one queue of a hub made with [`HubMetrics::new`].
    fn only(&self) -> QueueMetrics<'_> {
        QueueMetrics {
            metrics: self,
            label: QueueLabel(None),
        }
    }

    /// Counts a hook command that ran to its end.
    pub fn hook_ran(&self, point: Point, outcome: Outcome, duration: Duration) {
        self.only().hook_ran(point, outcome, duration);
    }

    /// Counts a pass: what it cleared and parked, or that it failed.
    pub fn pass_ended(&self, report: Option<&PassReport>) {
        self.only().pass_ended(report);
    }

    /// Counts what a drain observer ([`Drainer::observe`](crate::queue::Drainer::observe))
    /// is told.
    pub fn drain_event(&self, event: DrainEvent<'_>) {
        self.only().drain_event(event);
    }

    /// Counts a takeover of the runner lock from another holder: `ended_expired` when the hub
    /// ended that holder's session, its lease having run out.
    pub fn took_over(&self, ended_expired: bool) {
        self.only().took_over(ended_expired);
    }

    /// Counts a reconnection after the database was lost.
    pub fn reconnected(&self) {
        self.only().reconnected();
    }

    /// Counts what a hub tells its host ([`crate::queue::hub::run_queue`]): takeovers of the
    /// runner lock and reconnections. A failed pass is counted by [`drain_event`](Self::drain_event).
    pub fn observe(&self, event: &HubEvent) {
        self.only().observe(event);
    }

    /// The metrics in the Prometheus text format ([`CONTENT_TYPE`](super::CONTENT_TYPE)).
    pub fn render(&self) -> String {
        let mut text = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut text, &self.registry)
            .expect("writing to a String cannot fail");
        text
    }
}

/// The counters of one queue of a hub ([`HubMetrics::queue`]).
#[derive(Debug)]
pub struct QueueMetrics<'m> {
    metrics: &'m HubMetrics,
    label: QueueLabel,
}

impl QueueMetrics<'_> {
    /// Counts a hook command that ran to its end.
    pub fn hook_ran(&self, point: Point, outcome: Outcome, duration: Duration) {
        let (m, queue) = (self.metrics, &self.label);
        let point = point.as_str();
        let outcome = outcome.as_str();
        m.hooks
            .get_or_create(&(queue.clone(), HookLabels { point, outcome }))
            .inc();
        m.durations
            .get_or_create(&(queue.clone(), PointLabel { point }))
            .observe(duration.as_secs_f64());
    }

    /// Counts a pass: what it cleared and parked, or that it failed.
    pub fn pass_ended(&self, report: Option<&PassReport>) {
        let (m, queue) = (self.metrics, &(self.label.clone(), NoLabels));
        m.passes.get_or_create(queue).inc();
        match report {
            Some(r) => {
                m.cleared.get_or_create(queue).inc_by(r.cleared as u64);
                m.parked.get_or_create(queue).inc_by(r.parked as u64);
            }
            None => {
                m.pass_failures.get_or_create(queue).inc();
            }
        }
    }

    /// Counts what a drain observer ([`Drainer::observe`](crate::queue::Drainer::observe))
    /// is told.
    pub fn drain_event(&self, event: DrainEvent<'_>) {
        match event {
            DrainEvent::Command {
                point,
                outcome,
                duration,
            } => self.hook_ran(point, outcome, duration),
            DrainEvent::Pass(passed) => self.pass_ended(passed.ok()),
        }
    }

    /// Counts a takeover of the runner lock from another holder: `ended_expired` when the hub
    /// ended that holder's session, its lease having run out.
    pub fn took_over(&self, ended_expired: bool) {
        let how = if ended_expired {
            "lease_expired"
        } else {
            "released"
        };
        self.metrics
            .takeovers
            .get_or_create(&(self.label.clone(), HowLabel { how }))
            .inc();
    }

    /// Counts a reconnection after the database was lost.
    pub fn reconnected(&self) {
        self.metrics
            .reconnects
            .get_or_create(&(self.label.clone(), NoLabels))
            .inc();
    }

    /// Counts what a hub tells its host ([`crate::queue::hub::run_queue`]): takeovers of the
    /// runner lock and reconnections. A failed pass is counted by
    /// [`drain_event`](Self::drain_event).
    pub fn observe(&self, event: &HubEvent) {
        match event {
            HubEvent::TookOver { ended_expired } => self.took_over(*ended_expired),
            HubEvent::Connected { again: true, .. } => self.reconnected(),
            HubEvent::PassFailed(_)
            | HubEvent::CannotReachYet { .. }
            | HubEvent::Lost { .. }
            | HubEvent::Connected { again: false, .. }
            | HubEvent::Attached => {}
        }
    }

    /// Counts what a fleet tells its host of this queue
    /// ([`crate::queue::fleet::run`]): its hub's events, the hooks it ran and its passes.
    pub fn fleet_event(&self, event: &QueueEvent) {
        match event {
            QueueEvent::Hub(e) => self.observe(e),
            QueueEvent::Command {
                point,
                outcome,
                duration,
            } => self.hook_ran(*point, *outcome, *duration),
            QueueEvent::Pass(report) => self.pass_ended(report.as_ref()),
            QueueEvent::Warning(_) | QueueEvent::Failed { .. } | QueueEvent::Detached => {}
        }
    }
}
