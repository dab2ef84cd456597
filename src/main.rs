//! The `hookq` binary: parses the command line, sets up tracing, runs, and maps the error to an
//! exit code. Everything it does is the library's; `cli` is only its view.

use std::process::ExitCode;

use clap::Parser;

/// `println!` that ignores a closed stdout (`hookq queue | head -1`) instead of panicking, and
/// keeps any other failure (`> /dev/full`) for the command's exit status.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        $crate::cli::output::stdout_wrote(writeln!(std::io::stdout().lock(), $($arg)*));
    }};
}

/// `eprintln!` that ignores a closed stderr instead of panicking.
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

mod cli;

fn main() -> ExitCode {
    // With a file-size limit (RLIMIT_FSIZE) in force, writing past it raises SIGXFSZ, whose
    // default action kills the process mid-write. A no-op handler turns that into an EFBIG
    // error that is reported like a full disk. Handled signals reset to their default in hook
    // commands, which is what they expect.
    // SAFETY: the handler does nothing, which is async-signal-safe.
    let _ = unsafe { signal_hook::low_level::register(signal_hook::consts::SIGXFSZ, || {}) };
    // An ignored SIGCHLD survives `execve`: a parent that ignores it would have the kernel reap
    // hookq's hook commands itself, and hookq could not learn how they ended. Its default is
    // what waiting for a child needs.
    // SAFETY: called before any thread is started; SIG_DFL installs no handler.
    unsafe { libc::signal(libc::SIGCHLD, libc::SIG_DFL) };
    let cli = cli::Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("HOOKQ_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .without_time()
        .init();
    match cli::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => e.report(),
    }
}
