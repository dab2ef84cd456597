//! The web view in a real headless Chromium, driven over WebDriver (`harness`): the harness
//! against a page of its own, then the pages `hookq ui` serves.

// Each binary uses a different part of the shared helpers.
#[allow(dead_code)]
#[path = "../support/mod.rs"]
mod support;

// Each test uses a different part of the harness.
#[allow(dead_code)]
mod harness;

mod actions;
mod hostile;
mod navigation;
mod own_page;
mod pages;
mod scenarios;
mod server;
