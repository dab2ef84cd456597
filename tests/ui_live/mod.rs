//! The web view's live updates (`hookq::ui::live`) against a real workspace: its routes served
//! on 127.0.0.1, read by plain HTTP clients and by headless Chromium, while the real `hookq`
//! binary records and runs.

mod browser;
// Shared with the queue binary's PostgreSQL live tests, which use parts this binary does not.
#[allow(dead_code)]
mod client;
mod events;
mod tail;
mod tail_render;
