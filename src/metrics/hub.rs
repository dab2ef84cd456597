//! A hub's own metrics: what its passes ran, how long the hooks took, and on PostgreSQL its
//! takeovers of the runner lock and its reconnections.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::queue::drain::{DrainEvent, PassReport};
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
/// them (which renders): every method takes `&self`.
#[derive(Debug)]
pub struct HubMetrics {
    registry: Registry,
    hooks: Family<HookLabels, Counter>,
    durations: Family<PointLabel, Histogram, fn() -> Histogram>,
    passes: Counter,
    pass_failures: Counter,
    cleared: Counter,
    parked: Counter,
    takeovers: Family<HowLabel, Counter>,
    reconnects: Counter,
}

impl Default for HubMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl HubMetrics {
    /// Every metric of [`HUB_METRICS`] at 0.
    pub fn new() -> Self {
        let hooks = Family::<HookLabels, Counter>::default();
        let durations: Family<PointLabel, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(duration_histogram);
        let (passes, pass_failures) = (Counter::default(), Counter::default());
        let (cleared, parked) = (Counter::default(), Counter::default());
        let takeovers = Family::<HowLabel, Counter>::default();
        let reconnects = Counter::default();
        // Every series exists from the start, at 0, so that none appears from nothing.
        for p in Point::ALL {
            let point = p.as_str();
            for o in COMMAND_OUTCOMES {
                let outcome = o.as_str();
                drop(hooks.get_or_create(&HookLabels { point, outcome }));
            }
            drop(durations.get_or_create(&PointLabel { point }));
        }
        for how in TAKEOVERS {
            drop(takeovers.get_or_create(&HowLabel { how }));
        }
        let mut registry = Registry::default();
        let (r, h) = named("hookq_hub_hooks_total");
        let order = Point::ALL
            .into_iter()
            .flat_map(|p| {
                COMMAND_OUTCOMES.map(|o| HookLabels {
                    point: p.as_str(),
                    outcome: o.as_str(),
                })
            })
            .collect();
        registry.register_collector(Box::new(Ordered {
            name: r,
            help: h,
            family: hooks.clone(),
            order,
        }));
        let (r, h) = named("hookq_hub_hook_duration_seconds");
        let order = Point::ALL
            .into_iter()
            .map(|p| PointLabel { point: p.as_str() })
            .collect();
        registry.register_collector(Box::new(Ordered {
            name: r,
            help: h,
            family: durations.clone(),
            order,
        }));
        let (r, h) = named("hookq_hub_passes_total");
        registry.register(r, h, passes.clone());
        let (r, h) = named("hookq_hub_pass_failures_total");
        registry.register(r, h, pass_failures.clone());
        let (r, h) = named("hookq_hub_points_cleared_total");
        registry.register(r, h, cleared.clone());
        let (r, h) = named("hookq_hub_points_parked_total");
        registry.register(r, h, parked.clone());
        let (r, h) = named("hookq_hub_lock_takeovers_total");
        registry.register_collector(Box::new(Ordered {
            name: r,
            help: h,
            family: takeovers.clone(),
            order: TAKEOVERS.map(|how| HowLabel { how }).to_vec(),
        }));
        let (r, h) = named("hookq_hub_reconnects_total");
        registry.register(r, h, reconnects.clone());
        Self {
            registry,
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

    /// Counts a hook command that ran to its end.
    pub fn hook_ran(&self, point: Point, outcome: Outcome, duration: Duration) {
        self.hooks
            .get_or_create(&HookLabels {
                point: point.as_str(),
                outcome: outcome.as_str(),
            })
            .inc();
        self.durations
            .get_or_create(&PointLabel {
                point: point.as_str(),
            })
            .observe(duration.as_secs_f64());
    }

    /// Counts a pass: what it cleared and parked, or that it failed.
    pub fn pass_ended(&self, report: Option<&PassReport>) {
        self.passes.inc();
        match report {
            Some(r) => {
                self.cleared.inc_by(r.cleared as u64);
                self.parked.inc_by(r.parked as u64);
            }
            None => {
                self.pass_failures.inc();
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
        self.takeovers.get_or_create(&HowLabel { how }).inc();
    }

    /// Counts a reconnection after the database was lost.
    pub fn reconnected(&self) {
        self.reconnects.inc();
    }

    /// Counts what a hub tells its host ([`crate::queue::hub::run_queue`]): takeovers of the
    /// runner lock and reconnections. A failed pass is counted by [`drain_event`](Self::drain_event).
    pub fn observe(&self, event: &HubEvent) {
        match event {
            HubEvent::TookOver { ended_expired } => self.took_over(*ended_expired),
            HubEvent::Connected { again: true, .. } => self.reconnected(),
            HubEvent::PassFailed(_)
            | HubEvent::CannotReachYet { .. }
            | HubEvent::Lost { .. }
            | HubEvent::Connected { again: false, .. } => {}
        }
    }

    /// The metrics in the Prometheus text format ([`CONTENT_TYPE`](super::CONTENT_TYPE)).
    pub fn render(&self) -> String {
        let mut text = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut text, &self.registry)
            .expect("writing to a String cannot fail");
        text
    }
}
