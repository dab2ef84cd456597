//! The web view (`hookq ui`, `hookq::ui`): the real binary serving a scratch workspace's queue
//! over HTTP on 127.0.0.1, its pages, JSON, actions and token; hostile values shown as text; the
//! library router nested under a prefix; arbitrary requests through the router; the live
//! updates (`live`); and every page in a real headless Chromium (`browser`).

// Each binary uses a different part of the shared helpers.
#[allow(dead_code)]
#[path = "../support/mod.rs"]
mod support;

mod actions;
#[path = "../browser/mod.rs"]
mod browser;
mod cli;
mod fleet;
mod fuzz;
mod hostile;
#[path = "../ui_live/mod.rs"]
mod live;
mod log_page;
mod nest;
mod pages;
mod server;
mod token;
