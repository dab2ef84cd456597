//! The queue as the view reads and changes it: the workspace's queue opened once, behind a
//! mutex, every call on tokio's blocking pool (the queue's calls are synchronous).

use std::sync::{Arc, Mutex, PoisonError};

use crate::queue::Error;
use crate::queue::ids::TaskId;
use crate::queue::lock::{self, Holder};
use crate::queue::logs::{self, LogFile};
use crate::queue::phase::Point;
use crate::queue::record::{self, Occurrence};
use crate::queue::store::{HistoryRow, Paused, PendingRow, Stats, Store, TaskRow};
use crate::queue::workspace::Workspace;

use super::error::UiError;

/// Which pending points to list.
#[derive(Debug, Clone, Default)]
pub(crate) struct PendingQuery {
    pub(crate) task: Option<String>,
    pub(crate) point: Option<String>,
    /// Only occurrences after this one (keyset paging).
    pub(crate) after: i64,
    pub(crate) limit: usize,
}

/// Which history rows to list.
#[derive(Debug, Clone, Default)]
pub(crate) struct HistoryQuery {
    pub(crate) task: Option<String>,
    pub(crate) point: Option<String>,
    pub(crate) outcome: Option<String>,
    pub(crate) host: Option<String>,
    /// Only rows older than this one (keyset paging).
    pub(crate) before: Option<i64>,
    pub(crate) limit: usize,
}

/// The runner lock: its holder, whether it is held now, and the listing's line naming it.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct LockView {
    pub(crate) holder: Option<Holder>,
    pub(crate) held: bool,
    pub(crate) line: String,
}

/// The workspace's queue.
pub(crate) struct Db {
    ws: Workspace,
    store: Store,
    place: String,
}

/// How many rows a filtered read looks through at most to fill a page.
const SCAN: usize = 20_000;

impl Db {
    /// Opens the workspace's queue.
    pub(crate) fn open(ws: &Workspace) -> Result<Db, Error> {
        let db = ws.db_path();
        let store = Store::open(&db).map_err(|e| Error::store(&db, e))?;
        Ok(Db {
            ws: ws.clone(),
            store,
            place: db.display().to_string(),
        })
    }

    fn err(&self) -> impl Fn(crate::queue::StoreError) -> Error + use<> {
        let db = self.ws.db_path();
        move |e| Error::store(&db, e)
    }

    /// Where the queue is, its password masked.
    pub(crate) fn place(&self) -> &str {
        &self.place
    }

    /// Whether the queue is on PostgreSQL (logs then live on the host that ran each hook).
    pub(crate) fn is_postgres(&self) -> bool {
        false
    }

    /// For a queue other hosts drain too: where the logs of the hooks they ran are.
    pub(crate) fn shared_logs(&self) -> Option<&'static str> {
        None
    }

    /// The runner lock.
    pub(crate) fn lock(&mut self) -> Result<LockView, Error> {
        let holder = lock::holder(&self.ws.lock_path());
        let held = holder.as_ref().is_some_and(|h| h.alive);
        let line = match &holder {
            Some(h) if h.alive => format!("held by {h}"),
            Some(h) => format!("free (last holder pid {} is gone)", h.pid),
            None => "free".to_owned(),
        };
        Ok(LockView { holder, held, line })
    }

    /// Pending points, oldest first.
    pub(crate) fn pending(&mut self, q: &PendingQuery) -> Result<Vec<PendingRow>, Error> {
        let mut out = Vec::new();
        let mut after = q.after;
        let mut scanned = 0;
        while out.len() < q.limit && scanned < SCAN {
            let rows = self
                .store
                .pending(after, 500, q.task.as_deref())
                .map_err(self.err())?;
            let Some(last) = rows.last() else { break };
            after = last.id;
            scanned += rows.len();
            let n = rows.len();
            out.extend(
                rows.into_iter()
                    .filter(|r| q.point.as_ref().is_none_or(|p| *p == r.point)),
            );
            if n < 500 {
                break;
            }
        }
        out.truncate(q.limit);
        Ok(out)
    }

    /// History rows, newest first.
    pub(crate) fn history(&mut self, q: &HistoryQuery) -> Result<Vec<HistoryRow>, Error> {
        // The host is a PostgreSQL queue's: on SQLite no row has one.
        if q.host.is_some() {
            return Ok(Vec::new());
        }
        let rows = self
            .store
            .history(q.task.as_deref(), None, SCAN)
            .map_err(self.err())?;
        Ok(rows
            .into_iter()
            .filter(|r| q.before.is_none_or(|b| r.id < b))
            .filter(|r| q.point.as_ref().is_none_or(|p| *p == r.point))
            .filter(|r| q.outcome.as_ref().is_none_or(|o| *o == r.outcome))
            .take(q.limit)
            .collect())
    }

    /// One task.
    pub(crate) fn task(&mut self, id: &TaskId) -> Result<Option<TaskRow>, Error> {
        self.store.task(id.as_str()).map_err(self.err())
    }

    /// The queue's counts.
    pub(crate) fn stats(&mut self) -> Result<Stats, Error> {
        self.store.stats().map_err(self.err())
    }

    /// Pauses the queue.
    pub(crate) fn pause(&mut self) -> Result<Paused, Error> {
        self.store.pause().map_err(self.err())
    }

    /// Resumes the queue; `None` when it was not paused.
    pub(crate) fn resume(&mut self) -> Result<Option<Paused>, Error> {
        self.store.resume().map_err(self.err())
    }

    /// Drops pending occurrence `id`, keeping it in history as dropped.
    pub(crate) fn drop_entry(&mut self, id: i64) -> Result<PendingRow, Error> {
        self.store.drop_entry(id).map_err(self.err())
    }

    /// Queues history row `id`'s point again.
    pub(crate) fn requeue(&mut self, id: i64) -> Result<Occurrence, Error> {
        self.store
            .write(|tx| record::requeue(tx, id))
            .map_err(self.err())
    }

    /// The task's hook logs on this host, oldest first.
    pub(crate) fn log_files(
        &self,
        task: &TaskId,
        point: Option<Point>,
    ) -> Result<Vec<LogFile>, UiError> {
        logs::task_logs(&self.ws, task, point).map_err(|source| UiError::Io {
            path: self.ws.hook_log_dir(task),
            source,
        })
    }
}

/// The queue shared by every request.
#[derive(Clone)]
pub(crate) struct Shared(Arc<Mutex<Db>>);

impl Shared {
    pub(crate) fn new(db: Db) -> Self {
        Shared(Arc::new(Mutex::new(db)))
    }

    /// Runs `f` on the queue on tokio's blocking pool.
    pub(crate) async fn call<T, F>(&self, f: F) -> Result<T, UiError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Db) -> Result<T, UiError> + Send + 'static,
    {
        let db = self.0.clone();
        tokio::task::spawn_blocking(move || {
            let mut db = db.lock().unwrap_or_else(PoisonError::into_inner);
            f(&mut db)
        })
        .await
        .map_err(|e| UiError::Internal(e.to_string()))?
    }
}
