//! Agent tool hooks through the real binary and the library surface a host embeds.

// Each binary uses a different part of the shared helpers.
#[allow(dead_code)]
#[path = "../support/mod.rs"]
mod support;

mod agent_cli;
mod agent_hostile;
mod agent_import;
mod agent_intent_stop;
mod agent_lib;
mod agent_props;
