//! The hub on PostgreSQL: [`crate::queue::hub::run`] on a [`PgQueue`], riding out outages of
//! the database; [`crate::queue::hub::run_queue`] runs it for a queue on PostgreSQL. It
//! opens the queue through the process's [`Server`] of its database, which every queue of the
//! process on that server shares (its runner lock on the server's one lock session, its reads
//! on the server's small pool), opens its [`Watcher`], which listens on the queue's channel,
//! takes the queue's runner lock and keeps it while it drains; when
//! the database goes away (a restart, a network drop, its session ended, a lease that ran
//! out) it connects again with a growing backoff, and it stops with one error on a failure
//! that waiting does not mend (see [`PgError::is_transient`]).

use std::time::{Duration, Instant};

use crate::exec::Stop;
use crate::queue::drain::Drainer;
use crate::queue::driver::Place;
use crate::queue::error::Error;
use crate::queue::hub::{self, HubEvent, HubOptions};
use crate::queue::pg::error::PgError;
use crate::queue::pg::lock::{Lease, Takeover};
use crate::queue::pg::name::QueueName;
use crate::queue::pg::queue::PgQueue;
use crate::queue::pg::server::{Server, ServerReads};
use crate::queue::pg::target::Target;
use crate::queue::watch::Watcher;
use crate::queue::workspace::Workspace;

/// `source`, a failure of `queue`'s database at `target`.
fn placed(queue: &QueueName, target: &Target, source: PgError) -> Error {
    Error::Postgres {
        place: Box::new(Place::postgres(queue, target)),
        source,
    }
}

/// Whether `e` is an outage that a hub waits out.
fn transient(e: &Error) -> bool {
    matches!(e, Error::Postgres { source, .. } if source.is_transient())
}

/// A queue held by a hub: drained through the server's lock session and pool, watched, and
/// whether its lock was taken from another holder.
type Attached = (PgQueue<ServerReads>, Watcher, Option<Takeover>);

/// Opens `queue` on `target` through the process's [`Server`] of it (creating or upgrading the
/// schema and the queue's row), takes its runner lock on the server's lock session (waiting
/// until it is free or `stop` is requested: `Ok(None)`), saying whether it was taken from
/// another holder, and opens the queue's watcher. Sets `reached` once the database answered.
fn connect(
    target: &Target,
    queue: &QueueName,
    stop: &Stop,
    lease: Lease,
    reached: &mut bool,
) -> Result<Option<Attached>, Error> {
    let at = |e| placed(queue, target, e);
    let server = Server::get(target, lease);
    server.open_queue(queue).map_err(at)?;
    *reached = true;
    let Some(lock) = server.take(queue, &|| !stop.graceful()).map_err(at)? else {
        return Ok(None);
    };
    let took_over = lock.took_over();
    let held = PgQueue::over(ServerReads::new(server, queue.clone()), lock).map_err(at)?;
    let watcher = Watcher::postgres(target.clone(), queue.clone())?;
    Ok(Some((held, watcher, took_over)))
}

/// Runs the hub of `queue` on `target` until `stop` is requested: takes the queue's runner
/// lock (held with `lease`), keeps it while it drains on every commit
/// ([`crate::queue::hub::run`], its watcher reading the queue every `opts.poll` when no
/// notification came), and outlives outages of the database. An outage (connection lost or refused, the
/// server shutting down or restarting, the lock's lease lost) is reported once through
/// `on_event` and waited out, connecting again after `opts.backoff_first`, then twice as long
/// each time up to `opts.backoff_max`. A failure that waiting does not mend ends the hub with
/// that one error: a refused password, a missing database or table, permission denied, a
/// schema from a newer hookq.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run(
    ws: &Workspace,
    target: &Target,
    queue: &QueueName,
    drainer: &mut Drainer<'_>,
    stop: &Stop,
    opts: HubOptions,
    lease: Lease,
    on_event: &mut dyn FnMut(HubEvent),
) -> Result<(), Error> {
    let database = target.to_string();
    let mut backoff = opts.backoff_first;
    let (mut down, mut connected_once, mut lost) = (false, false, false);
    let mut attached = false;
    loop {
        if stop.graceful() {
            return Ok(());
        }
        let failure = match connect(target, queue, stop, lease, &mut connected_once) {
            Ok(None) => return Ok(()),
            Ok(Some((mut held, mut watcher, took_over))) => {
                if down {
                    on_event(HubEvent::Connected {
                        database: database.clone(),
                        again: std::mem::take(&mut lost),
                    });
                }
                if let Some(Takeover { ended_expired }) = took_over {
                    on_event(HubEvent::TookOver { ended_expired });
                }
                if !std::mem::replace(&mut attached, true) {
                    on_event(HubEvent::Attached);
                }
                down = false;
                backoff = opts.backoff_first;
                let mut on_error = |e| on_event(HubEvent::PassFailed(e));
                let ran = hub::run(
                    ws,
                    &mut held,
                    &mut watcher,
                    drainer,
                    stop,
                    opts,
                    &mut on_error,
                );
                match ran {
                    Ok(()) => {
                        // A session that failed lets go of its locks as it closes.
                        let _ = held.let_go();
                        return Ok(());
                    }
                    Err(e) if transient(&e) => e,
                    Err(e) => return Err(e),
                }
            }
            Err(e) if transient(&e) => e,
            Err(e) => return Err(e),
        };
        if !down {
            let database = database.clone();
            on_event(if connected_once {
                lost = true;
                HubEvent::Lost {
                    database,
                    error: failure,
                }
            } else {
                HubEvent::CannotReachYet {
                    database,
                    error: failure,
                }
            });
            down = true;
        }
        let until = Instant::now() + backoff;
        while Instant::now() < until && !stop.graceful() {
            std::thread::sleep(Duration::from_millis(50));
        }
        backoff = (backoff * 2).min(opts.backoff_max);
    }
}
