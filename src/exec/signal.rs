//! The signal dispositions a process that runs hook commands needs, and signals as stop
//! requests. A host that runs hooks calls [`prepare_process`] early; the `hookq` binary also
//! turns SIGINT, SIGTERM and SIGHUP into a [`Stop`] with [`stop_on`].

use std::io;

use super::sys;
use super::types::Stop;

/// Sets the two dispositions running hook commands relies on, whatever hookq was started with:
///
/// - SIGCHLD at its default. An ignored SIGCHLD survives `execve`: a parent that ignores it
///   would have the kernel reap hookq's hook commands itself, and hookq could not learn how
///   they ended.
/// - SIGXFSZ caught by a handler that does nothing. With a file-size limit (`RLIMIT_FSIZE`) in
///   force, writing past it raises SIGXFSZ, whose default action kills the process mid-write;
///   caught, the write fails with `EFBIG`, reported like a full disk. A caught signal resets
///   to its default in the commands hookq starts, which is what they expect.
///
/// Both are tried; the first failure is returned.
pub fn prepare_process() -> io::Result<()> {
    let xfsz = sys::catch_and_ignore(libc::SIGXFSZ);
    let chld = sys::set_default(libc::SIGCHLD);
    xfsz.and(chld)
}

/// Whether signal `sig` is ignored now (a shell starts a background job with SIGINT ignored,
/// `nohup` a command with SIGHUP ignored).
pub fn is_ignored(sig: i32) -> bool {
    sys::is_ignored(sig)
}

/// Makes signal `sig` ask `stop` to stop ([`Stop::request`]: the first signal after the current
/// command, the second at once). System calls it interrupts are restarted. A later call for the
/// same signal replaces the `Stop` it asks.
pub fn stop_on(sig: i32, stop: &'static Stop) -> io::Result<()> {
    sys::stop_on(sig, stop)
}
