//! Prometheus metrics, in the Prometheus text format (version 0.0.4): the queue's
//! ([`read_queue_metrics`], what the web view's `/metrics` serves) and a hub's own
//! ([`HubMetrics`], what `hookq hub --metrics ADDR` serves with [`serve`]). Every name is in
//! [`QUEUE_METRICS`] and [`HUB_METRICS`], and in docs/metrics.md.

mod catalog;
mod hub;
mod ordered;
mod queue;
mod serve;
#[cfg(test)]
mod tests;

pub use catalog::{CONTENT_TYPE, HUB_METRICS, Kind, MetricDoc, QUEUE_METRICS};
pub use hub::{DURATION_BUCKETS, HubMetrics, QueueMetrics};
pub use queue::{QueueSnapshot, queue_metrics, queues_metrics, read_queue_metrics};
pub use serve::{MetricsServer, ServeError, serve};
