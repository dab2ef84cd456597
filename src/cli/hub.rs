//! `hookq hub`: the long-running drain.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::cli::error::Error;
use hookq::exec::Stop;
use hookq::metrics::{self, HubMetrics, MetricsServer};
use hookq::queue::Options;
use hookq::queue::drain::Drainer;
use hookq::queue::hub::{self, HubEvent, HubOptions};
use hookq::queue::workspace::Workspace;

use super::app::{Ctx, stop_on_signals};

/// Drain, release the lock, wait for the next commit; repeat until SIGINT or SIGTERM. The first
/// signal lets the running command finish (its point stays pending if commands were left) and
/// exits 0; a second kills the running command's process group and exits at once.
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Run up to N points of different tasks at the same time (each task's points still run in
    /// recorded order, each point's commands one after another).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    jobs: u16,
    /// How often to look for new commits, in milliseconds: 50 by default on SQLite (a read of
    /// the file's change counter); 1000 on PostgreSQL, where hookq's own commits (and a host
    /// that calls `notify_hubs` after its own) wake the hub at once, and the poll only bounds
    /// how long a commit nobody announced waits.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=60_000))]
    poll_ms: Option<u64>,
    /// Serve the hub's own Prometheus metrics at `http://ADDR/metrics` (hooks run by point and
    /// outcome, their durations, passes, and on PostgreSQL takeovers of the runner lock and
    /// reconnections; docs/metrics.md lists them). Port 0 takes a free port; the address is
    /// printed on stdout either way.
    #[arg(long, value_name = "ADDR")]
    metrics: Option<SocketAddr>,
}

/// The hub's metrics and their server, with `--metrics`: the server stops when it is dropped,
/// as the hub ends.
fn serve_metrics(
    addr: Option<SocketAddr>,
) -> Result<Option<(Arc<HubMetrics>, MetricsServer)>, Error> {
    let Some(addr) = addr else {
        return Ok(None);
    };
    let counts = Arc::new(HubMetrics::new());
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
    let stop = stop_on_signals();
    let ws = ctx.workspace()?;
    let options = Options {
        poll: args.poll_ms.map(Duration::from_millis),
        ..ctx.options()?
    };
    let served = serve_metrics(args.metrics)?;
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
