//! The web view's live updates (`hookq::ui::live`) against a real workspace: its routes served
//! on 127.0.0.1, read by plain HTTP clients and by headless Chromium, while the real `hookq`
//! binary records and runs.

// Each binary uses a different part of the shared helpers.
#[allow(dead_code)]
#[path = "../support/mod.rs"]
mod support;

mod browser;
mod client;
mod events;
mod tail;
mod tail_render;
