//! The web view's live updates (`hookq::ui::live`) against a real workspace: its routes served
//! on 127.0.0.1, read by plain HTTP clients, while the real `hookq` binary records and runs.

// Each binary uses a different part of the shared helpers.
#[allow(dead_code)]
#[path = "../support/mod.rs"]
mod support;

mod client;
mod events;
mod tail;
