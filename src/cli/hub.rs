//! `hookq hub`: the long-running drain.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::cli::error::Error;
use hookq::exec::Stop;
use hookq::metrics::{self, HubMetrics, MetricsServer};
use hookq::queue::drain::Drainer;
use hookq::queue::hub::{self, HubOptions};
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

/// `--poll-ms` on SQLite when not given.
const SQLITE_POLL: Duration = Duration::from_millis(50);

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
    let served = serve_metrics(args.metrics)?;
    let counts = served.as_ref().map(|(counts, _)| counts);
    let poll = args.poll_ms.map(Duration::from_millis);
    let opts = HubOptions {
        poll: poll.unwrap_or(SQLITE_POLL),
        ..HubOptions::default()
    };
    #[cfg(feature = "postgres")]
    {
        let ws = ctx.workspace()?;
        if let Some(choice) = super::pg::choice(&ws)? {
            let mut drainer = drainer(&ws, stop, args.jobs, counts);
            if let Ok(cfg) = drainer.config() {
                super::app::warn_config(&cfg);
            }
            tracing::info!(
                "hub draining queue {} on {} (pid {})",
                choice.queue,
                choice.target,
                std::process::id()
            );
            // The wait for a notification is cut in slices of SQLite's poll, so that a stop
            // is seen at once; the queue is read every `poll`.
            let opts = HubOptions {
                poll: SQLITE_POLL,
                ..opts
            };
            let poll = poll.unwrap_or(hookq::queue::pg::queue::DEFAULT_POLL_INTERVAL);
            let counts = counts.map(|c| &**c);
            return super::pg::hub(&ws, &choice, &mut drainer, stop, opts, poll, counts);
        }
    }
    let (ws, mut store) = ctx.open()?;
    let mut drainer = drainer(&ws, stop, args.jobs, counts);
    if let Ok(cfg) = drainer.config() {
        super::app::warn_config(&cfg);
    }
    tracing::info!(
        "hub draining {} (pid {})",
        ws.root().display(),
        std::process::id()
    );
    let mut on_error = |e| errln!("error: {e}");
    Ok(hub::run(
        &ws,
        &mut store,
        &mut drainer,
        stop,
        opts,
        &mut on_error,
    )?)
}
