//! The top-level parser, workspace resolution and dispatch.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::{Parser, Subcommand};

use crate::cli::error::Error;
use hookq::exec::Stop;
use hookq::queue::Options;
use hookq::queue::config::{Config, ConfigWarning};
use hookq::queue::workspace::Workspace;

/// hookq: hook commands for a durable task queue, agent tools and worktree lifecycles.
#[derive(Debug, Parser)]
#[command(name = "hookq", version, about, long_about = None)]
pub struct Cli {
    /// Start looking for the workspace (`.radian/arc`; for `worktree`, `.arashi/config.json` or
    /// the git repository) in DIR instead of the current directory; for `agent`, DIR is the
    /// workspace itself unless `--workspace` names one. `hookq hub` takes it more than once, to
    /// drain several workspaces, and `hookq ui`, to show several.
    #[arg(short = 'C', value_name = "DIR", global = true, action = clap::ArgAction::Append)]
    pub dir: Vec<PathBuf>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create the state dir, database and config.toml.
    Init(super::init::Args),
    /// Add, move and inspect tasks.
    #[command(subcommand)]
    Task(super::task::Command),
    /// Act on a whole plan.
    #[command(subcommand)]
    Plan(super::plan::Command),
    /// Drain every pending point once (for cron).
    Run(super::run::Args),
    /// Drain, then wait for the next commit, until SIGINT, SIGTERM or SIGHUP.
    Hub(super::hub::Args),
    /// Inspect and edit the queue (never takes the runner lock).
    Queue(super::queue::Args),
    /// Validate config.toml and print the hooks each point would run.
    Check(super::check::Args),
    /// Serve a web view of the queue (pending, history, tasks, live hook logs) until Ctrl-C.
    Ui(super::ui::Args),
    /// Create and remove git worktrees across a workspace's repositories, with lifecycle hooks.
    #[command(subcommand)]
    Worktree(super::worktree::Command),
    /// Agent tool hooks: fire an event, list what is loaded (needs no arc workspace).
    #[command(subcommand)]
    Agent(super::agent::Command),
    /// Print the completion script for bash, zsh or fish on stdout.
    ///
    /// bash: add `source <(hookq completions bash)` to ~/.bashrc. zsh: `hookq completions zsh >
    /// ~/.zfunc/_hookq`, with ~/.zfunc in `fpath` before `compinit`. fish: `hookq completions
    /// fish > ~/.config/fish/completions/hookq.fish`.
    Completions(super::completions::Args),
    /// Print the man page (roff) on stdout, hookq's or a subcommand's.
    ///
    /// `hookq man > hookq.1` writes hookq's page to a file: read it with `man -l hookq.1`, or
    /// install it by putting it in a man1 folder on the manual path
    /// (`~/.local/share/man/man1/hookq.1`). The page of a subcommand it lists, hookq-task(1) or
    /// hookq-task-move(1), is `hookq man task` or `hookq man task move`.
    Man(super::man::Args),
}

/// Where a command works.
pub(super) struct Ctx {
    start: PathBuf,
    /// Every `-C` given, in order (only `hookq hub` and `hookq ui` take more than one).
    dirs: Vec<PathBuf>,
}

impl Ctx {
    /// Every `-C DIR` given, in order.
    pub(super) fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// The directory the command starts from.
    pub(super) fn start(&self) -> &std::path::Path {
        &self.start
    }

    /// The workspace found from the start directory upward.
    pub(super) fn workspace(&self) -> Result<Workspace, Error> {
        Workspace::discover(&self.start).map_err(|e| Error::Queue(e.into()))
    }

    /// The queue's options as the environment sets them, read once here for every command:
    /// a value out of range is a usage error naming its variable.
    pub(super) fn options(&self) -> Result<Options, Error> {
        Options::from_env().map_err(|e| match e {
            hookq::queue::Error::Invalid(m) => Error::Usage(m),
            e => Error::Queue(e),
        })
    }

    /// The PostgreSQL queue `ws` asks for (`HOOKQ_DATABASE_URL`, or `[queue] database` in its
    /// config), `None` for its SQLite file.
    #[cfg(feature = "postgres")]
    pub(super) fn choice(
        &self,
        ws: &Workspace,
    ) -> Result<Option<hookq::queue::pg::PgChoice>, Error> {
        let options = self.options()?;
        Ok(hookq::queue::pg::choose(
            ws,
            options.database_url.as_deref(),
        )?)
    }
}

/// Prints the config's near-miss keys as `warning:` lines, the first time a command of this
/// process loaded it (a hub re-reads the config on every pass: once is enough).
pub(super) fn warn_config(cfg: &Config) {
    warn_config_lines(cfg.warnings());
}

/// [`warn_config`] of the near-miss keys a pass read.
pub(super) fn warn_config_lines(warnings: &[ConfigWarning]) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if warnings.is_empty() || WARNED.swap(true, Ordering::Relaxed) {
        return;
    }
    for w in warnings {
        errln!("warning: {w}");
    }
}

/// Runs the parsed command line.
pub fn run(cli: Cli) -> Result<(), Error> {
    let Cli { dir, command } = cli;
    match command {
        // These two print what the command line is: they need no workspace, nor even a folder.
        Command::Completions(a) => super::completions::run(a),
        Command::Man(a) => super::man::run(a),
        command => run_in(dir, command),
    }?;
    super::output::stdout_written()
}

/// Runs a command that works in a workspace, found from `dirs` (the first, for every command
/// but `hub` and `ui`) or the current directory.
fn run_in(dirs: Vec<PathBuf>, command: Command) -> Result<(), Error> {
    if dirs.len() > 1 && !matches!(command, Command::Hub(_) | Command::Ui(_)) {
        return Err(Error::Usage(
            "-C given more than once: only `hookq hub` and `hookq ui` take several workspaces"
                .to_owned(),
        ));
    }
    let start = match dirs.first().cloned() {
        Some(d) => d,
        None => std::env::current_dir().map_err(|source| Error::Io {
            what: "cannot read the current directory",
            path: ".".into(),
            source,
        })?,
    };
    let ctx = Ctx { start, dirs };
    match command {
        Command::Init(a) => super::init::run(&ctx, a),
        Command::Task(c) => super::task::run(&ctx, c),
        Command::Plan(c) => super::plan::run(&ctx, c),
        Command::Run(a) => super::run::run(&ctx, a),
        Command::Hub(a) => super::hub::run(&ctx, a),
        Command::Queue(a) => super::queue::run(&ctx, a),
        Command::Check(a) => super::check::run(&ctx, a),
        Command::Ui(a) => super::ui::run(&ctx, a),
        Command::Worktree(c) => super::worktree::run(&ctx, c),
        Command::Agent(c) => super::agent::run(&ctx, c),
        Command::Completions(a) => super::completions::run(a),
        Command::Man(a) => super::man::run(a),
    }
}

/// A stop token that SIGINT, SIGTERM and SIGHUP bump: the first asks to stop after the current
/// command, the second to stop at once. SIGHUP (the terminal of a `hookq hub` closed) would
/// otherwise end hookq at once, leaving its running hook command, which has a process group of
/// its own, running without a runner: the lock free, the next runner could start the same point
/// beside it.
///
/// SIGINT and SIGHUP that hookq was started with ignored stay ignored, as the shell's
/// convention is: `nohup hookq hub &` must outlive its terminal, and a hub a script started in
/// the background (for which sh ignores SIGINT) the script's Ctrl-C.
pub(super) fn stop_on_signals() -> &'static Stop {
    use hookq::exec::signal;
    static STOP: Stop = Stop::new();
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        if sig != libc::SIGTERM && signal::is_ignored(sig) {
            continue;
        }
        if let Err(e) = signal::stop_on(sig, &STOP) {
            tracing::warn!("cannot install a handler for signal {sig}: {e}");
        }
    }
    ring_on_stop(&STOP);
    &STOP
}

/// Starts, once a process, the thread that rings the queue watchers
/// ([`hookq::queue::watch::ring`]) when a signal bumps `stop`: a signal handler can only set
/// a flag, and a watcher waiting on a PostgreSQL listener would otherwise see it within a
/// second. It looks twenty times a second, which costs nothing measurable.
fn ring_on_stop(stop: &'static Stop) {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        let spawned = std::thread::Builder::new()
            .name("hookq-stop-bell".into())
            .spawn(move || {
                let mut rung = 0;
                loop {
                    let now = stop.counter().load(std::sync::atomic::Ordering::SeqCst);
                    if now != rung {
                        rung = now;
                        hookq::queue::watch::ring();
                    }
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("cannot start the thread that passes a stop on to the watchers: {e}");
        }
    });
}
