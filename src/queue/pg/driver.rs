//! The PostgreSQL driver: [`Driver`] over one queue of a PostgreSQL database, many hosts
//! draining it under the queue's advisory runner lock.

use crate::exec::Stop;
use crate::queue::driver::{Driver, LockHolder, LockState, Place};
use crate::queue::error::Error;
use crate::queue::options::Options;
use crate::queue::pass::{Attempt, Deadline, PassOptions, QueueLock};
use crate::queue::ids::{PlanId, TaskId};
use crate::queue::model::{
    HistoryFilter, HistoryRow, OutcomeCount, Paused, PendingFilter, PendingRow, Stats, TaskRow,
};
use crate::queue::pg::{
    Lease, PgChoice, PgError, PgQueue, PgRunnerLock, PgStore, connect, lock, record,
};
use crate::queue::phase::Phase;
use crate::queue::record::{MoveFacts, Occurrence, Transition};
use crate::queue::workspace::Workspace;

/// One queue in a PostgreSQL database, on a connection of its own.
#[derive(Debug)]
pub struct PostgresDriver {
    store: PgStore,
    place: Place,
    host: String,
}

impl PostgresDriver {
    /// The driver over `store`, connected and with its schema up to date.
    pub fn new(store: PgStore) -> Self {
        Self {
            place: store.place(),
            host: lock::host_name(),
            store,
        }
    }

    /// Connects to the queue `choice` names, creating or upgrading the schema. The session gets
    /// a runner's statement and lock timeouts, so a call stuck behind a server that stopped
    /// answering, or a host's open transaction, fails instead of hanging.
    pub fn open(choice: &PgChoice) -> Result<Self, Error> {
        let at = |source| Error::Postgres {
            place: Box::new(choice.place()),
            source,
        };
        let mut store = PgStore::open(&choice.target, choice.queue.clone()).map_err(at)?;
        connect::guard_session(store.client(), &choice.target).map_err(at)?;
        Ok(Self::new(store))
    }

    /// `source`, placed in this queue.
    fn at(&self) -> impl Fn(PgError) -> Error + use<> {
        let place = self.place.clone();
        move |source| Error::Postgres {
            place: Box::new(place.clone()),
            source,
        }
    }

    /// A read on the store's client, its failure placed in this queue.
    fn read<T>(
        &mut self,
        f: impl FnOnce(&mut postgres::Client, &crate::queue::pg::QueueName) -> Result<T, PgError>,
    ) -> Result<T, Error> {
        let at = self.at();
        let queue = self.store.queue().clone();
        f(self.store.client(), &queue).map_err(at)
    }
}

impl Driver for PostgresDriver {
    fn place(&self) -> &Place {
        &self.place
    }

    fn shared(&self) -> bool {
        true
    }

    fn log_is_here(&self, row: &HistoryRow) -> bool {
        row.host.as_ref().is_none_or(|h| *h == self.host)
    }

    fn lock(&mut self) -> Result<LockState, Error> {
        let queue = self.store.queue().clone();
        let holder = self.read(lock::holder)?;
        let line = match &holder {
            Some(h) => format!("runner lock of queue {queue}: held by {h}"),
            None => format!("runner lock of queue {queue}: free"),
        };
        Ok(LockState {
            held: holder.is_some(),
            holder: holder.map(LockHolder::Queue),
            line,
        })
    }

    fn dropped_note(&mut self, entry: &PendingRow) -> Option<String> {
        let started = entry.last_started_ms?;
        let h = self.read(lock::holder).ok()??;
        let since = h.since.as_deref().is_some_and(|s| {
            chrono::DateTime::parse_from_rfc3339(s).is_ok_and(|t| started >= t.timestamp_millis())
        });
        since.then(|| {
            format!(
                "note: the runner holding the lock ({h}) started it at {} and has not cleared it; if its commands are running, they finish, and only the drop is kept in history",
                crate::queue::times::rfc3339(started)
            )
        })
    }

    fn pending(&mut self, filter: &PendingFilter) -> Result<Vec<PendingRow>, Error> {
        self.store.pending_where(filter).map_err(self.at())
    }

    fn pending_occurrence(&mut self, id: i64) -> Result<Option<PendingRow>, Error> {
        self.store.pending_occurrence(id).map_err(self.at())
    }

    fn history(&mut self, filter: &HistoryFilter) -> Result<Vec<HistoryRow>, Error> {
        self.store.history_where(filter).map_err(self.at())
    }

    fn history_row(&mut self, id: i64) -> Result<Option<HistoryRow>, Error> {
        self.store.history_row(id).map_err(self.at())
    }

    fn outcomes(&mut self, since_ms: i64, bucket_ms: i64) -> Result<Vec<OutcomeCount>, Error> {
        self.store.outcomes(since_ms, bucket_ms).map_err(self.at())
    }

    fn slowest(&mut self, since_ms: i64, limit: usize) -> Result<Vec<HistoryRow>, Error> {
        self.store.slowest(since_ms, limit).map_err(self.at())
    }

    fn task(&mut self, task: &TaskId) -> Result<Option<TaskRow>, Error> {
        self.store.task(task.as_str()).map_err(self.at())
    }

    fn tasks(&mut self, plan: Option<&str>) -> Result<Vec<TaskRow>, Error> {
        self.store.tasks(plan).map_err(self.at())
    }

    fn stats(&mut self) -> Result<Stats, Error> {
        self.store.stats().map_err(self.at())
    }

    fn paused(&mut self) -> Result<Option<i64>, Error> {
        self.store.paused().map_err(self.at())
    }

    fn pause(&mut self) -> Result<Paused, Error> {
        let at = self.at();
        self.store.pause().map_err(at)
    }

    fn resume(&mut self) -> Result<Option<Paused>, Error> {
        // The write notifies the queue's hubs after it commits.
        let at = self.at();
        self.store.resume().map_err(at)
    }

    fn drop_occurrence(&mut self, id: i64) -> Result<PendingRow, Error> {
        let place = self.place.clone();
        self.store.drop_occurrence(id).map_err(self.at())
            .map_err(|e| match e {
                Error::Postgres {
                    source: PgError::Row(crate::queue::row_error::RowError::NoOccurrence(id)),
                    ..
                } => Error::NoOccurrence { id, place },
                e => e,
            })
    }

    fn retry(&mut self, history_id: i64) -> Result<Occurrence, Error> {
        let at = self.at();
        self.store
            .write(|tx, q| record::retry(tx, q, history_id))
            .map_err(at)
    }

    fn add_task(
        &mut self,
        task: &TaskId,
        plan: &PlanId,
        phase: &Phase,
    ) -> Result<Transition, Error> {
        let at = self.at();
        self.store
            .write(|tx, q| record::add_task(tx, q, task, plan, phase))
            .map_err(at)
    }

    fn move_task(
        &mut self,
        task: &TaskId,
        phase: &Phase,
        facts: &MoveFacts,
    ) -> Result<Transition, Error> {
        let at = self.at();
        self.store
            .write(|tx, q| record::move_task(tx, q, task, phase, facts))
            .map_err(at)
    }

    fn cancel_plan(&mut self, plan: &PlanId) -> Result<Vec<Transition>, Error> {
        let at = self.at();
        self.store
            .write(|tx, q| record::cancel_plan(tx, q, plan))
            .map_err(at)
    }

    fn watcher(&self) -> Result<crate::queue::watch::Watcher, Error> {
        crate::queue::watch::Watcher::postgres(self.store.target().clone(), self.store.queue().clone())
    }

    /// The queue's runner lock, then the workspace's, both within `pass.wait`.
    fn pass(
        self: Box<Self>,
        ws: &Workspace,
        options: &Options,
        pass: PassOptions,
        stop: &Stop,
    ) -> Attempt {
        crate::queue::pass::over(ws, *self, options, pass, stop)
    }
}

/// The queue's own lock is its advisory runner lock, held with the lease `options` set; the
/// store that holds it is a [`PgQueue`].
impl QueueLock for PostgresDriver {
    type Held = PgQueue;

    fn take(
        self,
        ws: &Workspace,
        options: &Options,
        deadline: &Deadline,
        stop: &Stop,
    ) -> Result<PgQueue, Box<Attempt>> {
        let at = self.at();
        let mut store = self.store;
        let lease = Lease {
            duration: options.lease,
        };
        let queue = store.queue().clone();
        let taken = PgRunnerLock::acquire_with(
            store.target(),
            &queue,
            deadline.left(),
            &|| !stop.graceful(),
            lease,
        );
        let lock = match taken {
            Ok(Some(lock)) => lock,
            Ok(None) if stop.graceful() => {
                let path = ws.lock_path();
                return Err(Box::new(Attempt::NotTaken(Error::Stopped { path })));
            }
            Ok(None) => {
                let holder = lock::holder(store.client(), &queue)
                    .ok()
                    .flatten()
                    .map(|h| h.to_string());
                return Err(Box::new(Attempt::NotTaken(at(PgError::Locked { holder }))));
            }
            Err(e) => return Err(Box::new(at(e).into())),
        };
        PgQueue::new(store, lock).map_err(|e| Box::new(at(e).into()))
    }

    fn left(held: &mut PgQueue) -> Option<i64> {
        held.store().stats().ok().map(|s| s.pending)
    }

    fn release(mut held: PgQueue) -> Result<(), Error> {
        let place = held.store().place();
        held.release().map(drop).map_err(|source| Error::Postgres {
            place: Box::new(place),
            source,
        })
    }
}
