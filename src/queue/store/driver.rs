//! The SQLite driver: [`Driver`] over a workspace's `arc.db` and its `runner.lock`.

use std::path::PathBuf;

use crate::exec::Stop;
use crate::queue::driver::{Driver, LockHolder, LockState, Place};
use crate::queue::error::Error;
use crate::queue::options::Options;
use crate::queue::pass::{Attempt, Deadline, PassOptions, QueueLock};
use crate::queue::ids::{PlanId, TaskId};
use crate::queue::lock;
use crate::queue::model::{
    HistoryFilter, HistoryRow, OutcomeCount, Paused, PendingFilter, PendingRow, Stats, TaskRow,
};
use crate::queue::phase::Phase;
use crate::queue::record::{self, MoveFacts, Occurrence, Transition};
use crate::queue::workspace::Workspace;

use super::{Store, StoreError};

/// A workspace's queue in its SQLite file: the store, and the workspace's runner lock file.
#[derive(Debug)]
pub struct SqliteDriver {
    store: Store,
    place: Place,
    lock_path: PathBuf,
}

impl SqliteDriver {
    /// The driver over `store`, `ws`'s SQLite file, already open.
    pub fn new(ws: &Workspace, store: Store) -> Self {
        Self {
            place: Place::Sqlite(store.path().to_path_buf()),
            lock_path: ws.lock_path(),
            store,
        }
    }

    fn at(&self) -> impl Fn(StoreError) -> Error + use<> {
        let path = self.store.path().to_path_buf();
        move |e| Error::store(&path, e)
    }
}

impl Driver for SqliteDriver {
    fn place(&self) -> &Place {
        &self.place
    }

    fn shared(&self) -> bool {
        false
    }

    fn log_is_here(&self, _row: &HistoryRow) -> bool {
        true
    }

    fn lock(&mut self) -> Result<LockState, Error> {
        let holder = lock::holder(&self.lock_path);
        let line = match &holder {
            Some(h) if h.alive => format!("runner lock: held by {h}"),
            Some(h) => format!("runner lock: free (last holder pid {} is gone)", h.pid),
            None => "runner lock: free".to_owned(),
        };
        Ok(LockState {
            held: holder.as_ref().is_some_and(|h| h.alive),
            holder: holder.map(LockHolder::File),
            line,
        })
    }

    fn dropped_note(&mut self, entry: &PendingRow) -> Option<String> {
        let started = entry.last_started_ms?;
        let h = lock::holder(&self.lock_path)?;
        let since = chrono::DateTime::parse_from_rfc3339(&h.started)
            .is_ok_and(|t| started >= t.timestamp_millis());
        (h.alive && since).then(|| {
            format!(
                "note: runner pid {} started it at {} and has not cleared it; if its commands are running, they finish and their runs are kept in history too",
                h.pid,
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
        Store::paused(&self.store).map_err(self.at())
    }

    fn pause(&mut self) -> Result<Paused, Error> {
        let at = self.at();
        self.store.pause().map_err(at)
    }

    fn resume(&mut self) -> Result<Option<Paused>, Error> {
        // A hub sees the commit as it sees a recording: the file's data version changes.
        let at = self.at();
        self.store.resume().map_err(at)
    }

    fn drop_occurrence(&mut self, id: i64) -> Result<PendingRow, Error> {
        let at = self.at();
        self.store.drop_occurrence(id).map_err(at)
    }

    fn retry(&mut self, history_id: i64) -> Result<Occurrence, Error> {
        let at = self.at();
        self.store
            .write(|tx| record::retry(tx, history_id))
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
            .write(|tx| record::add_task(tx, task, plan, phase))
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
            .write(|tx| record::move_task(tx, task, phase, facts))
            .map_err(at)
    }

    fn cancel_plan(&mut self, plan: &PlanId) -> Result<Vec<Transition>, Error> {
        let at = self.at();
        self.store
            .write(|tx| record::cancel_plan(tx, plan))
            .map_err(at)
    }

    fn watcher(&self) -> Result<crate::queue::watch::Watcher, Error> {
        crate::queue::watch::Watcher::sqlite(self.store.path().to_path_buf(), self.store.options())
    }

    fn pass(
        self: Box<Self>,
        ws: &Workspace,
        options: &Options,
        pass: PassOptions,
        stop: &Stop,
    ) -> Attempt {
        crate::queue::pass::over(ws, *self, options, pass, stop)
    }

    fn sqlite_store(&mut self) -> Option<&mut Store> {
        Some(&mut self.store)
    }
}

/// On SQLite the runner lock is the workspace's `runner.lock` alone: the queue has no lock of
/// its own to take first.
impl QueueLock for SqliteDriver {
    type Held = Store;

    fn take(
        self,
        _ws: &Workspace,
        _options: &Options,
        _deadline: &Deadline,
        _stop: &Stop,
    ) -> Result<Store, Box<Attempt>> {
        Ok(self.store)
    }

    fn left(held: &mut Store) -> Option<i64> {
        held.stats().ok().map(|s| s.pending)
    }

    fn release(_held: Store) -> Result<(), Error> {
        Ok(())
    }
}
