//! `hookq man [COMMAND]...`: a man page, made from the same clap definitions that parse the
//! command line (and give `--help`), so the two never disagree.

use clap::CommandFactory;

use crate::cli::error::Error;

use super::app::Cli;

/// Print hookq's man page, or one subcommand's, (roff) on stdout.
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// The subcommand whose page to print (`hookq man task move` for hookq-task-move(1)).
    #[arg(value_name = "COMMAND")]
    command: Vec<String>,
}

pub(super) fn run(args: Args) -> Result<(), Error> {
    let mut cmd = Cli::command();
    // Gives each subcommand the names its page goes by (`hookq-task`, synopsis `hookq task`).
    cmd.build();
    let mut page_of = &cmd;
    for (i, name) in args.command.iter().enumerate() {
        page_of = page_of.find_subcommand(name).ok_or_else(|| {
            let so_far = std::iter::once("hookq")
                .chain(args.command[..i].iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" ");
            Error::Usage(format!("man: {so_far} has no subcommand {name:?}"))
        })?;
    }
    let mut page = Vec::new();
    // Every page's footer names hookq and its version, a subcommand's too (clap_mangen would
    // name the subcommand alone, with no version).
    clap_mangen::Man::new(page_of.clone())
        .source(format!("hookq {}", env!("CARGO_PKG_VERSION")))
        .render(&mut page)
        .map_err(|source| Error::Io {
            what: "cannot render the man page to",
            path: "memory".into(),
            source,
        })?;
    super::output::raw(&page);
    Ok(())
}
