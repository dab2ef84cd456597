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
    // SIGCHLD at its default and SIGXFSZ caught: hook commands' endings are hookq's to collect,
    // and a write past a file-size limit fails like a full disk instead of killing hookq.
    let _ = hookq::exec::signal::prepare_process();
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
