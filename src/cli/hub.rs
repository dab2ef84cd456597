//! `hookq hub`: the long-running drain.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::cli::error::Error;
use hookq::exec::Stop;
use hookq::metrics::{self, HubMetrics, MetricsServer};
use hookq::queue::Options;
use hookq::queue::drain::Drainer;
use hookq::queue::fleet::{self, FleetEvent, FleetOptions, Listing, QueueEvent};
use hookq::queue::hub::{self, HubEvent, HubOptions};
use hookq::queue::workspace::Workspace;

use super::app::{Ctx, stop_on_signals};

/// Drain, release the lock, wait for the next commit; repeat until SIGINT or SIGTERM. The first
/// signal lets the running command finish (its point stays pending if commands were left) and
/// exits 0; a second kills the running command's process group and exits at once.
///
/// `-C DIR` more than once, or `--workspaces FILE`, drains several workspaces in one process,
/// each with its own config, hooks and runner lock; a workspace that fails is reported on a
/// line naming it and tried again with backoff while the others go on. Once every workspace is
/// attached, the hub prints `hookq hub: ready, N queues attached`.
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Run up to N points of different tasks at the same time (each task's points still run in
    /// recorded order, each point's commands one after another); with several workspaces, at
    /// most N points in all, shared fairly among them.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    jobs: u16,
    /// How often to look for new commits, in milliseconds. On SQLite a write to the queue's
    /// files wakes the hub at once (an inotify watch), and it looks once a second without one,
    /// or every N ms if longer, in case a wake-up was missed; every N ms (50 by default) where
    /// the kernel cannot tell of writes. On PostgreSQL 1000 by default: hookq's own commits
    /// (and a host that calls `notify_hubs` after its own) wake the hub at once, and the poll
    /// only bounds how long a commit nobody announced waits.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=60_000))]
    poll_ms: Option<u64>,
    /// Serve the hub's own Prometheus metrics at `http://ADDR/metrics` (hooks run by point and
    /// outcome, their durations, passes, and on PostgreSQL takeovers of the runner lock and
    /// reconnections; docs/metrics.md lists them). Port 0 takes a free port; the address is
    /// printed on stdout either way.
    #[arg(long, value_name = "ADDR")]
    metrics: Option<SocketAddr>,
    /// Drain the workspaces FILE lists, one directory a line (blank lines and `#` comments
    /// ignored, a relative path taken from FILE's folder). A change to FILE is picked up as the
    /// hub runs: a new line attaches its workspace, a removed line stops that workspace's hub
    /// after its running command.
    #[arg(long, value_name = "FILE")]
    workspaces: Option<PathBuf>,
}

/// The hub's metrics and their server, with `--metrics`: the server stops when it is dropped,
/// as the hub ends.
fn serve_metrics(
    addr: Option<SocketAddr>,
    counts: impl FnOnce() -> HubMetrics,
) -> Result<Option<(Arc<HubMetrics>, MetricsServer)>, Error> {
    let Some(addr) = addr else {
        return Ok(None);
    };
    let counts = Arc::new(counts());
    let server = metrics::serve(addr, {
        let counts = Arc::clone(&counts);
        move || counts.render()
    })?;
    outln!(
        "hookq hub: serving metrics at http://{}/metrics",
        server.local_addr()
    );
    Ok(Some((counts, server)))
}

/// A drainer for the hub, counting into `counts` when there are metrics.
fn drainer<'a>(
    ws: &Workspace,
    stop: &'a Stop,
    jobs: u16,
    counts: Option<&Arc<HubMetrics>>,
) -> Drainer<'a> {
    let drainer = Drainer::new(ws.clone(), stop).jobs(usize::from(jobs));
    match counts {
        Some(counts) => {
            let counts = Arc::clone(counts);
            drainer.observe(move |event| counts.drain_event(event))
        }
        None => drainer,
    }
}

pub(super) fn run(ctx: &Ctx, args: Args) -> Result<(), Error> {
    let listing = match (&args.workspaces, ctx.dirs()) {
        (Some(_), [_, ..]) => {
            return Err(Error::Usage(
                "--workspaces lists the workspaces to drain: -C cannot add to them".to_owned(),
            ));
        }
        (Some(file), []) => {
            Listing::File(std::path::absolute(file).map_err(|source| Error::Io {
                what: "cannot read the current directory",
                path: ".".into(),
                source,
            })?)
        }
        (None, dirs @ [_, _, ..]) => Listing::Dirs(dirs.to_vec()),
        (None, _) => return run_one(ctx, args),
    };
    let stop = stop_on_signals();
    let options = Options {
        poll: args.poll_ms.map(Duration::from_millis),
        ..ctx.options()?
    };
    let served = serve_metrics(args.metrics, HubMetrics::for_queues)?;
    let counts = served.as_ref().map(|(counts, _)| counts);
    let fleet_options = FleetOptions {
        jobs: usize::from(args.jobs),
        ..FleetOptions::default()
    };
    let mut on_event = |event: FleetEvent| match event {
        FleetEvent::Ready { queues } => outln!("{}", ready_line(queues)),
        FleetEvent::ListingFailed(e) => {
            errln!("warning: {e}; the workspaces it listed before go on")
        }
        FleetEvent::Queue { workspace, event } => {
            let name = workspace.display().to_string();
            let queue = counts.map(|c| c.queue(&name));
            if let Some(q) = &queue {
                q.fleet_event(&event);
            }
            said(&name, event);
        }
    };
    fleet::run(&listing, &options, fleet_options, stop, &mut on_event).map_err(|e| Error::Io {
        what: "cannot read the workspace listing",
        path: e.path,
        source: e.source,
    })
}

/// The line that says every workspace is attached.
fn ready_line(queues: usize) -> String {
    let s = if queues == 1 { "" } else { "s" };
    format!("hookq hub: ready, {queues} queue{s} attached")
}

/// Prints what happened to the queue of `workspace` in a hub of several, on a line that names
/// it.
fn said(workspace: &str, event: QueueEvent) {
    match event {
        QueueEvent::Hub(HubEvent::PassFailed(e)) => errln!("hookq hub: {workspace}: error: {e}"),
        QueueEvent::Hub(HubEvent::CannotReachYet { database, error }) => errln!(
            "hookq hub: {workspace}: warning: cannot reach the queue's database {database} yet; trying again with backoff: {error}"
        ),
        QueueEvent::Hub(HubEvent::Lost { database, error }) => errln!(
            "hookq hub: {workspace}: warning: lost the queue's database {database}; connecting again with backoff: {error}"
        ),
        QueueEvent::Hub(HubEvent::Connected { database, .. }) => {
            tracing::info!("{workspace}: the hub is connected again to {database}")
        }
        QueueEvent::Hub(HubEvent::TookOver { .. }) => tracing::info!(
            "{workspace}: the hub took the queue's runner lock over from another holder"
        ),
        QueueEvent::Hub(HubEvent::Attached) => tracing::info!("{workspace}: attached"),
        QueueEvent::Warning(line) => errln!("hookq hub: {workspace}: {line}"),
        QueueEvent::Failed { error, retry_in } => errln!(
            "hookq hub: {workspace}: error: {error} (trying again in {}s)",
            retry_in.as_secs().max(1)
        ),
        QueueEvent::Detached => tracing::info!("{workspace}: detached, its line removed"),
        QueueEvent::Command { .. } | QueueEvent::Pass(_) => {}
    }
}

/// The hub of one workspace, the one `-C` names or the current directory's: a failure that
/// waiting does not mend ends it.
fn run_one(ctx: &Ctx, args: Args) -> Result<(), Error> {
    let stop = stop_on_signals();
    let ws = ctx.workspace()?;
    let options = Options {
        poll: args.poll_ms.map(Duration::from_millis),
        ..ctx.options()?
    };
    let served = serve_metrics(args.metrics, HubMetrics::new)?;
    let counts = served.as_ref().map(|(counts, _)| counts);
    let mut drainer = drainer(&ws, stop, args.jobs, counts);
    if let Ok(cfg) = drainer.config() {
        super::app::warn_config(&cfg);
    }
    let mut on_event = |event: HubEvent| {
        if let Some(c) = counts {
            c.observe(&event);
        }
        match event {
            HubEvent::PassFailed(e) => errln!("error: {e}"),
            HubEvent::CannotReachYet { database, error } => errln!(
                "warning: hub cannot reach the queue's database {database} yet; trying again with backoff: {error}"
            ),
            HubEvent::Lost { database, error } => errln!(
                "warning: hub lost the queue's database {database}; connecting again with backoff: {error}"
            ),
            HubEvent::Connected { database, .. } => {
                tracing::info!("the hub is connected again to {database}")
            }
            HubEvent::TookOver { .. } => {
                tracing::info!("the hub took the queue's runner lock over from another holder")
            }
            HubEvent::Attached => outln!("{}", ready_line(1)),
        }
    };
    Ok(hub::run_queue(
        &ws,
        &options,
        &mut drainer,
        stop,
        HubOptions::default(),
        &mut on_event,
    )?)
}
