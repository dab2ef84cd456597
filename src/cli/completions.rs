//! `hookq completions <SHELL>`: the shell completion script, made from the same clap definitions
//! that parse the command line, so it never names a subcommand or flag hookq does not have.

use clap::CommandFactory;

use crate::cli::error::Error;

use super::app::Cli;

/// Print the completion script for SHELL on stdout.
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// The shell the script is for.
    #[arg(value_enum)]
    shell: Shell,
}

/// The shells hookq writes completions for.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Shell {
    Bash,
    Zsh,
    Fish,
}

pub(super) fn run(args: Args) -> Result<(), Error> {
    let shell = match args.shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    let mut cmd = Cli::command();
    let name = cmd.get_name().to_string();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, name, &mut script);
    super::output::raw(&script);
    Ok(())
}
