//! What the integration-test binaries share: the binary under test, a scratch workspace with a
//! home of its own (`workspace`), running a command with a bounded wait (`run`), real git
//! repositories (`git`), a pseudo-terminal (`pty`) and the JSON Schema checker (`schema`); and
//! on top of them each model's own workspace (`queue`, `agent`, `lifecycle`), which runs the real
//! `hookq` binary with a pinned environment and reads what that model leaves behind.

pub mod agent;
pub mod git;
pub mod lifecycle;
pub mod logs;
pub mod merged;
pub mod pty;
pub mod queue;
pub mod run;
pub mod schema;
pub mod workspace;

use std::path::{Path, PathBuf};
use std::time::Duration;

/// The binary under test.
pub const HOOKQ: &str = env!("CARGO_BIN_EXE_hookq");

/// How long any one `hookq` invocation may take before the test calls it a hang. Only there to
/// turn a hang into a failure: nothing is asserted about how fast things are.
pub const HANG: Duration = Duration::from_secs(180);

/// `fixtures/` in the repository.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

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
