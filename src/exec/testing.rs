//! What the executor's unit tests share.

use std::path::Path;
use std::time::Duration;

/// Calls `attempt` with a timeout of 300 ms, then 3 s, then 30 s, until its command made
/// `ready` (which it does once its traps are set) before its timeout came, and returns that
/// attempt's result. A timeout starts with the spawn: on a loaded machine a shell may not
/// have set its traps by a short one, and the test would prove nothing.
pub(crate) fn ready_in_time<T>(ready: &Path, mut attempt: impl FnMut(Duration) -> T) -> T {
    for ms in [300, 3_000, 30_000] {
        let _ = std::fs::remove_file(ready);
        let got = attempt(Duration::from_millis(ms));
        if ready.exists() {
            return got;
        }
    }
    panic!("the command never set its traps before a 30 s timeout");
}
