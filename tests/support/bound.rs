//! The one hang bound and the one loop under every wait of the tests, apart from the rest of
//! `support` so that the bench, which starts the tests' PostgreSQL cluster, waits for it the
//! same way.

use std::time::{Duration, Instant};

/// How long anything a test waits for may take before the test calls it a hang: one `hookq`
/// invocation, a process to end, a condition `eventually` polls for, a browser's page. Only
/// there to turn a hang into a failure: nothing is asserted about how fast things are.
pub const HANG: Duration = Duration::from_secs(180);

/// The loop every wait of the tests runs: calls `f` every `every` until it gives `Some`; `None`
/// once `limit` has passed, for a caller that has more to do than fail (kill what hung, say
/// what it showed). `poll` is this with [`HANG`] and a failure; a caller passes a limit other
/// than [`HANG`] only with the reason beside it.
pub fn within<T>(limit: Duration, every: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let started = Instant::now();
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if started.elapsed() >= limit {
            return None;
        }
        std::thread::sleep(every);
    }
}
