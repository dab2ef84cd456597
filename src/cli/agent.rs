//! `hookq agent fire` and `hookq agent list`: agent tool hooks for hosts in any language and for
//! people. Neither needs an arc workspace: the agent's workspace is `--workspace` (default the
//! directory `-C` names, else the current one).

use std::io::Read as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::cli::error::Error;
use hookq::agent::{
    Agent, Error as AgentError, Event, HookEnv, HostPayload, Layer, Options, Source, SourceState,
    Turn, default_user_config,
};

use super::app::Ctx;
use super::output;

/// Agent tool hooks.
#[derive(Debug, clap::Subcommand)]
pub(super) enum Command {
    /// Fire one event: the payload (a JSON object) on stdin, the decision (one JSON object) on
    /// stdout, warnings on stderr. Exits 0 whenever a decision was printed.
    Fire(FireArgs),
    /// Show every loaded entry by event and layer, its matcher and whether it compiles, its
    /// commands and timeouts, and every warning from loading.
    List(ListArgs),
    /// Translate a Claude Code settings file (.claude/settings.json) into a project file: the
    /// equivalent .radian/hooks.json on stdout, one line on stderr for each change.
    Import(ImportArgs),
}

/// Where the hooks come from.
#[derive(Debug, clap::Args)]
struct Load {
    /// The workspace: hooks run there, and its .radian/hooks.json is the project layer
    /// [default: the -C directory, else the current directory].
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// The user config (TOML; its [hooks] table is the user layer) [default:
    /// $XDG_CONFIG_HOME/radian/config.toml, else ~/.config/radian/config.toml].
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The workspace is trusted: load its project layer (.radian/hooks.json).
    #[arg(long)]
    trusted: bool,
}

/// `hookq agent fire EVENT`.
#[derive(Debug, clap::Args)]
pub(super) struct FireArgs {
    /// PreToolUse, PostToolUse or Stop (case-sensitive).
    #[arg(value_name = "EVENT")]
    event: String,
    #[command(flatten)]
    load: Load,
    /// A sandbox is enforced: hooks see only these variables of hookq's environment.
    #[arg(long, value_name = "NAME[,NAME...]", value_delimiter = ',')]
    sandbox_env: Option<Vec<String>>,
    /// Stop: how many consecutive continuations this turn has had since the last user message
    /// (the wake budget is 2).
    #[arg(long, value_name = "N")]
    continuations: Option<u32>,
    /// Stop: a goal owns the turn end (intent_stop stays quiet).
    #[arg(long)]
    goal_active: bool,
    /// Stop: a loop owns the turn end (intent_stop stays quiet).
    #[arg(long)]
    loop_active: bool,
    /// Stop: how many background jobs are running (intent_stop stays quiet while any is).
    #[arg(long, value_name = "N")]
    background_jobs: Option<u32>,
}

/// `hookq agent list`.
#[derive(Debug, clap::Args)]
pub(super) struct ListArgs {
    #[command(flatten)]
    load: Load,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// `hookq agent import PATH`.
#[derive(Debug, clap::Args)]
pub(super) struct ImportArgs {
    /// The Claude Code settings file (its "hooks" object is read; the rest is not).
    #[arg(value_name = "PATH")]
    path: PathBuf,
}

pub(super) fn run(ctx: &Ctx, command: Command) -> Result<(), Error> {
    match command {
        Command::Fire(a) => fire(ctx, a),
        Command::List(a) => list(ctx, a),
        Command::Import(a) => import(a),
    }
}

fn import(args: ImportArgs) -> Result<(), Error> {
    let import = hookq::agent::import(&args.path)?;
    for note in &import.notes {
        errln!("warning: {}: {note}", args.path.display());
    }
    output::json(&import.hooks)
}

fn options(ctx: &Ctx, load: &Load) -> Result<Options, Error> {
    let (workspace, named_by) = match &load.workspace {
        Some(dir) => (dir.as_path(), "--workspace"),
        None => (ctx.start(), "the workspace"),
    };
    let not_usable = |source| AgentError::Workspace {
        named_by,
        path: workspace.to_path_buf(),
        source,
    };
    let meta = std::fs::metadata(workspace).map_err(not_usable)?;
    if !meta.is_dir() {
        return Err(not_usable(std::io::ErrorKind::NotADirectory.into()).into());
    }
    let mut opts = Options::new(workspace);
    opts.trusted = load.trusted;
    if let Some(config) = &load.config {
        opts.user_config = Some(config.clone());
        opts.user_config_named = true;
    } else {
        opts.user_config = default_user_config();
    }
    Ok(opts)
}

fn fire(ctx: &Ctx, args: FireArgs) -> Result<(), Error> {
    let event: Event = args.event.parse().map_err(AgentError::from)?;
    if event != Event::Stop {
        let stop_only = [
            (args.continuations.is_some(), "--continuations"),
            (args.goal_active, "--goal-active"),
            (args.loop_active, "--loop-active"),
            (args.background_jobs.is_some(), "--background-jobs"),
        ];
        if let Some(&(_, option)) = stop_only.iter().find(|(set, _)| *set) {
            return Err(AgentError::StopOnly { option, event }.into());
        }
    }
    let mut opts = options(ctx, &args.load)?;
    if let Some(names) = args.sandbox_env {
        if let Some(bad) = names.iter().find(|n| n.contains('=')) {
            return Err(AgentError::VariableName {
                option: "--sandbox-env",
                name: bad.clone(),
            }
            .into());
        }
        opts.env = HookEnv::Only(names.into_iter().filter(|n| !n.is_empty()).collect());
    }
    let mut input = Vec::new();
    std::io::stdin()
        .lock()
        .read_to_end(&mut input)
        .map_err(|source| AgentError::ReadPayload {
            from: "stdin",
            source,
        })?;
    let payload = HostPayload::from_json(event, &input, "stdin")?;
    let agent = Agent::load(&opts);
    let mut decision = match payload {
        HostPayload::Tool {
            call,
            tool_response: None,
        } => agent.pre_tool_use(&call),
        HostPayload::Tool {
            call,
            tool_response: Some(response),
        } => agent.post_tool_use(&call, &response),
        HostPayload::Stop {
            session_id,
            last_assistant_message,
        } => agent.stop(&Turn {
            session_id,
            last_assistant_message,
            continuations: args.continuations.unwrap_or(0),
            goal_active: args.goal_active,
            loop_active: args.loop_active,
            background_jobs: args.background_jobs.unwrap_or(0),
        }),
    };
    let mut warnings = agent.warnings().to_vec();
    warnings.append(&mut decision.warnings);
    for w in &warnings {
        errln!("warning: {w}");
    }
    decision.warnings = warnings;
    let line = serde_json::to_string(&decision).map_err(|e| Error::Io {
        what: "cannot write JSON to",
        path: "stdout".into(),
        source: e.into(),
    })?;
    outln!("{line}");
    Ok(())
}

#[derive(Serialize)]
struct Listing<'a> {
    workspace: &'a Path,
    trusted: bool,
    sources: &'a [Source],
    intent_stop: bool,
    entries: Vec<ListedEntry<'a>>,
    warnings: &'a [String],
}

#[derive(Serialize)]
struct ListedEntry<'a> {
    event: Event,
    layer: Layer,
    entry: usize,
    matcher: Option<&'a str>,
    matcher_compiles: bool,
    matcher_error: Option<&'a str>,
    matcher_ignored: bool,
    handlers: Vec<ListedHandler<'a>>,
}

#[derive(Serialize)]
struct ListedHandler<'a> {
    handler: usize,
    command: &'a str,
    timeout_secs: u64,
}

fn list(ctx: &Ctx, args: ListArgs) -> Result<(), Error> {
    let opts = options(ctx, &args.load)?;
    let agent = Agent::load(&opts);
    let listing = Listing {
        workspace: agent.workspace(),
        trusted: opts.trusted,
        sources: agent.sources(),
        intent_stop: agent.intent_stop(),
        entries: agent
            .entries()
            .iter()
            .map(|e| ListedEntry {
                event: e.event,
                layer: e.layer,
                entry: e.index,
                matcher: e.matcher.source(),
                matcher_compiles: e.matcher.error().is_none(),
                matcher_error: e.matcher.error(),
                matcher_ignored: e.event == Event::Stop,
                handlers: e
                    .handlers
                    .iter()
                    .map(|h| ListedHandler {
                        handler: h.index,
                        command: &h.command,
                        timeout_secs: h.timeout.as_secs(),
                    })
                    .collect(),
            })
            .collect(),
        warnings: agent.warnings(),
    };
    if args.json {
        return output::json(&listing);
    }
    outln!(
        "workspace {} ({})",
        listing.workspace.display(),
        if listing.trusted {
            "trusted"
        } else {
            "not trusted"
        }
    );
    for s in listing.sources {
        let path = s
            .path
            .as_ref()
            .map_or_else(|| "(no path)".into(), |p| p.display().to_string());
        let state = match s.state {
            SourceState::Loaded => "loaded",
            SourceState::LoadedWrapped => "loaded (wrapped settings shape)",
            SourceState::Missing => "missing (no hooks)",
            SourceState::Untrusted => "not loaded: the workspace is not trusted",
            SourceState::Failed => "not loaded: see the warnings",
            SourceState::NoPath => "none: neither XDG_CONFIG_HOME nor HOME is set",
        };
        outln!("{:<8} {path}: {state}", s.layer.name());
    }
    outln!(
        "intent_stop: {}",
        if listing.intent_stop { "on" } else { "off" }
    );
    for event in Event::ALL {
        let entries: Vec<&ListedEntry> = listing
            .entries
            .iter()
            .filter(|e| e.event == event)
            .collect();
        outln!();
        outln!(
            "{event}: {} entr{}{}",
            entries.len(),
            if entries.len() == 1 { "y" } else { "ies" },
            if event == Event::Stop {
                " (matchers are ignored)"
            } else {
                ""
            }
        );
        for e in entries {
            let matcher = match (e.matcher, e.matcher_error) {
                (Some(m), _) if e.matcher_ignored => {
                    format!("matcher {m:?} ignored: Stop runs every entry")
                }
                (_, Some(err)) => format!(
                    "matcher {:?} does not compile, matches no tool ({err})",
                    e.matcher.unwrap_or_default()
                ),
                (None, None) => "no matcher: every tool".into(),
                (Some(m), None) if m == "*" || m.trim().is_empty() => {
                    format!("matcher {m:?}: every tool")
                }
                (Some(m), None) => format!("matcher {m:?} compiles"),
            };
            outln!("  {} entry {}: {matcher}", e.layer.name(), e.entry);
            for h in &e.handlers {
                outln!(
                    "    handler {}  timeout {}s  {}",
                    h.handler,
                    h.timeout_secs,
                    h.command
                );
            }
        }
    }
    outln!();
    outln!("warnings: {}", listing.warnings.len());
    for w in listing.warnings {
        outln!("  {w}");
    }
    Ok(())
}
