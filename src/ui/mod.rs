//! The web view of a workspace's queue (`hookq ui`): server-rendered pages of what is pending,
//! what ran and what it printed, live, with JSON beside each listing and Prometheus metrics.
//! Behind the `ui` feature.

pub mod live;
