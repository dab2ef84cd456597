//! The documents and what cuts across the models: README.md and docs/ against the code and
//! the command line, completions and the man page, the queue's schema fixture, the benchmark
//! harness at smoke size, the layout of tests/ itself, and the rule of tests that need an
//! optional program (`skips`).

/// The binary's command-line definition, compiled into this test binary so the documents can be
/// checked against every command and flag (the library does not export the CLI).
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        $crate::cli::output::stdout_wrote(writeln!(std::io::stdout().lock(), $($arg)*));
    }};
}
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}
#[allow(dead_code, unused_imports)]
#[path = "../../src/cli/mod.rs"]
mod cli;

// Each binary uses a different part of the shared helpers.
#[allow(dead_code)]
#[path = "../support/mod.rs"]
mod support;

mod bench_smoke;
mod cli_docs;
mod layout;
mod metrics;
mod readme;
mod schema;
mod skips;
