//! What the integration-test binaries share: the binary under test, and the workspaces each model
//! tests in with the real `hookq` binary run with a pinned environment (`queue`, `agent`,
//! `lifecycle`), a pseudo-terminal (`pty`) and the JSON Schema checker for the lifecycle's
//! fixtures (`schema`).

pub mod agent;
pub mod lifecycle;
pub mod pty;
pub mod queue;
pub mod schema;

/// The name the test harness gives test `name` of the module whose `module_path!()` is `module`:
/// the module path without the binary's crate name. What `--exact` selects when a test runs its
/// own binary again as a child.
pub fn test_path(module: &str, name: &str) -> String {
    let within = module.split_once("::").map_or("", |(_, rest)| rest);
    if within.is_empty() {
        name.to_owned()
    } else {
        format!("{within}::{name}")
    }
}
