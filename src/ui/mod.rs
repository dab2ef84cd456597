//! The web view of a workspace's queue (`hookq ui`): server-rendered pages of what is pending,
//! what ran and what it printed, live, with JSON beside each listing and Prometheus metrics.
//! Behind the `ui` feature.
//!
//! A host serves [`router`] itself, or nests it under a prefix of its own server; `hookq ui`
//! serves it with [`serve`]. [`Fleet`] serves many queues: a list of them, and each one's view
//! under `q/<slug>/`.

mod actions;
mod ansi;
mod api;
mod app;
mod assets;
mod auth;
mod chart;
mod db;
mod error;
mod fleet;
mod fmt;
pub mod live;
mod model;
mod pages;
mod params;
mod queues;
mod serve;

pub use app::{Ui, UiConfig, router};
pub use error::UiError;
pub use fleet::{Fleet, FleetConfig};
pub use serve::{serve, token_for};
