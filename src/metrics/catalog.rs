//! The metrics' names, types, labels and meanings, as docs/metrics.md lists them: the
//! registries take their help texts from here, and a test checks each name against what is
//! rendered.

/// The `Content-Type` of what [`queue_metrics`](super::queue_metrics) and
/// [`HubMetrics::render`](super::HubMetrics::render) return: the Prometheus text format,
/// version 0.0.4.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// A metric's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A value that goes up and down.
    Gauge,
    /// A count that only goes up (from 0 when its process starts).
    Counter,
    /// Observations counted in buckets, with their sum and count.
    Histogram,
}

impl Kind {
    /// The name the exposition's `# TYPE` line gives it.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Gauge => "gauge",
            Kind::Counter => "counter",
            Kind::Histogram => "histogram",
        }
    }
}

/// One metric: its name as exposed, its type, its labels and what it says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricDoc {
    /// The name as exposed (a histogram's series add `_bucket`, `_sum` and `_count`).
    pub name: &'static str,
    /// Its type.
    pub kind: Kind,
    /// Its labels, besides a histogram's `le`.
    pub labels: &'static [&'static str],
    /// Its `# HELP` text.
    pub help: &'static str,
}

/// The queue's metrics, read from the database at each scrape: the web view's `/metrics`.
pub const QUEUE_METRICS: &[MetricDoc] = &[
    MetricDoc {
        name: "hookq_pending",
        kind: Kind::Gauge,
        labels: &["point"],
        help: "Points pending, by hook point",
    },
    MetricDoc {
        name: "hookq_pending_points",
        kind: Kind::Gauge,
        labels: &[],
        help: "Points pending, all hook points together",
    },
    MetricDoc {
        name: "hookq_oldest_pending_age_seconds",
        kind: Kind::Gauge,
        labels: &[],
        help: "How long ago the oldest pending point was recorded (0 when none is pending)",
    },
    MetricDoc {
        name: "hookq_interrupted",
        kind: Kind::Gauge,
        labels: &[],
        help: "Pending points that a pass started without clearing them (its runner stopped or died while they ran)",
    },
    MetricDoc {
        name: "hookq_parked",
        kind: Kind::Gauge,
        labels: &[],
        help: "Points parked as abandoned, in the history kept (started by too many passes that did not clear them)",
    },
    MetricDoc {
        name: "hookq_runner_lock_held",
        kind: Kind::Gauge,
        labels: &[],
        help: "Whether a runner holds the queue's runner lock (1) or it is free (0)",
    },
    MetricDoc {
        name: "hookq_paused",
        kind: Kind::Gauge,
        labels: &[],
        help: "Whether the queue is paused (1) or running (0)",
    },
    MetricDoc {
        name: "hookq_paused_since_timestamp_seconds",
        kind: Kind::Gauge,
        labels: &[],
        help: "When the queue was paused, in seconds since the Unix epoch (0 while it runs)",
    },
    MetricDoc {
        name: "hookq_history",
        kind: Kind::Gauge,
        labels: &["outcome"],
        help: "History rows kept, by outcome",
    },
    MetricDoc {
        name: "hookq_tasks",
        kind: Kind::Gauge,
        labels: &[],
        help: "Tasks the queue knows",
    },
];

/// A hub's own metrics, counted since it started: `hookq hub --metrics ADDR`.
pub const HUB_METRICS: &[MetricDoc] = &[
    MetricDoc {
        name: "hookq_hub_hooks_total",
        kind: Kind::Counter,
        labels: &["point", "outcome"],
        help: "Hook commands the hub ran to their end, by hook point and outcome",
    },
    MetricDoc {
        name: "hookq_hub_hook_duration_seconds",
        kind: Kind::Histogram,
        labels: &["point"],
        help: "How long the hub's hook commands ran, by hook point",
    },
    MetricDoc {
        name: "hookq_hub_passes_total",
        kind: Kind::Counter,
        labels: &[],
        help: "Passes over the queue the hub made, failed ones included",
    },
    MetricDoc {
        name: "hookq_hub_pass_failures_total",
        kind: Kind::Counter,
        labels: &[],
        help: "Passes that ended with an error (an invalid config, the database unusable)",
    },
    MetricDoc {
        name: "hookq_hub_points_cleared_total",
        kind: Kind::Counter,
        labels: &[],
        help: "Points the hub's passes cleared (their commands ran, or they had none)",
    },
    MetricDoc {
        name: "hookq_hub_points_parked_total",
        kind: Kind::Counter,
        labels: &[],
        help: "Points the hub's passes parked as abandoned",
    },
    MetricDoc {
        name: "hookq_hub_lock_takeovers_total",
        kind: Kind::Counter,
        labels: &["how"],
        help: "Times the hub took the queue's runner lock after waiting for another holder (PostgreSQL): how=released when the holder let go or died, how=lease_expired when the hub ended a holder whose lease ran out",
    },
    MetricDoc {
        name: "hookq_hub_reconnects_total",
        kind: Kind::Counter,
        labels: &[],
        help: "Times the hub connected again, holding the runner lock, after losing its database (PostgreSQL)",
    },
];

/// The entry of `name` in `list`; the registries' help texts come from here.
pub(super) fn help(list: &[MetricDoc], name: &str) -> &'static str {
    list.iter()
        .find(|m| m.name == name)
        .map_or("", |m| m.help)
}
