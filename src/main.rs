use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = hookq::cli::Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("HOOKQ_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .without_time()
        .init();
    match hookq::cli::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => e.report(),
    }
}
