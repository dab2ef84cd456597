//! [`PgQueue`]: the queue on PostgreSQL behind [`QueueStore`], so that the
//! [`Drainer`](crate::queue::Drainer) and the [hub](crate::queue::hub) run on it unchanged.
//!
//! It reads on a connection other than the lock's (a [`PgStore`]'s own, or a hub's pool of the
//! server), and every write of the drain goes through the runner lock's session. (A hub waits
//! between passes on its [`Watcher`](crate::queue::watch::Watcher), which listens for the
//! queue's notifications.) Only the holder of the queue's runner lock can make one, and a
//! runner whose lock was lost clears nothing: its points run again under the next holder.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError};
use std::time::Duration;

use crate::queue::backend::{ChangeMark, Mark, MarkStarts, QueueStore};
use crate::queue::driver::Place;
use crate::queue::error::Error;
use crate::queue::lock::RunnerLock;
use crate::queue::pg::error::PgError;
use crate::queue::pg::lock::{LeaseClock, PgRunnerLock, lease_live};
use crate::queue::pg::name::QueueName;
use crate::queue::pg::store::{self, PgStore};
use crate::queue::row_error::RowError;
use crate::queue::model::{Cleared, PendingRow};
use crate::queue::store::{StoreError};

/// A queue on PostgreSQL, drained by the holder of its runner lock: its reads go through `R`
/// (a [`PgStore`]'s own connection, or a hub's pool of the server), its writes through the
/// lock's session.
pub struct PgQueue<R = PgStore> {
    reads: R,
    lock: SharedLock,
}

mod sealed {
    use crate::queue::driver::Place;
    use crate::queue::model::PendingRow;
    use crate::queue::pg::error::PgError;
    use crate::queue::pg::name::QueueName;

    /// Where a [`PgQueue`](super::PgQueue) reads: the drain's reads, on a connection other
    /// than the lock's.
    pub trait Reads: Send {
        /// The queue.
        fn queue(&self) -> &QueueName;
        /// Where the queue lives, as errors name it.
        fn place(&self) -> Place;
        /// Pending points after `after`, at most `limit`, in the order they run.
        fn next_batch(&mut self, after: i64, limit: i64) -> Result<Vec<PendingRow>, PgError>;
        /// Whether the queue is paused.
        fn paused(&mut self) -> Result<bool, PgError>;
        /// The queue's change mark.
        fn change_mark(&mut self) -> Result<i64, PgError>;
        /// Fails when a connection of its own no longer answers.
        fn answers(&mut self) -> Result<(), PgError>;
    }
}

pub(crate) use sealed::Reads;

impl Reads for PgStore {
    fn queue(&self) -> &QueueName {
        PgStore::queue(self)
    }

    fn place(&self) -> Place {
        PgStore::place(self)
    }

    /// A prepared statement: the plan of the drain's most frequent read is made once per
    /// connection rather than on every batch.
    fn next_batch(&mut self, after: i64, limit: i64) -> Result<Vec<PendingRow>, PgError> {
        let queue = PgStore::queue(self).clone();
        let next = self.prepared(store::NEXT_BATCH)?;
        let rows = self
            .client()
            .query(&next, &[&queue.as_str(), &after, &limit])?;
        store::pending_rows(&rows)
    }

    fn paused(&mut self) -> Result<bool, PgError> {
        let queue = PgStore::queue(self).clone();
        store::paused(self.client(), &queue).map(|p| p.is_some())
    }

    fn change_mark(&mut self) -> Result<i64, PgError> {
        let queue = PgStore::queue(self).clone();
        store::change_mark(self.client(), &queue)
    }

    fn answers(&mut self) -> Result<(), PgError> {
        Ok(self.client().batch_execute("")?)
    }
}

/// The runner lock, shared by the drain and its workers, with the lease's clock beside it,
/// readable while a statement holds the lock.
#[derive(Clone)]
struct SharedLock {
    lock: Arc<Mutex<PgRunnerLock>>,
    clock: Arc<LeaseClock>,
    queue: QueueName,
    /// The queue and its database, as errors name it.
    place: Place,
}

impl SharedLock {
    /// The lock, once no other thread uses it, while its lease is live: a thread stuck in a
    /// statement on a connection gone silent holds it, and this then fails when the lease
    /// runs out rather than wait for that statement.
    fn get(&self) -> Result<MutexGuard<'_, PgRunnerLock>, PgError> {
        let mut tries = 0u32;
        loop {
            lease_live(&self.clock, &self.queue)?;
            match self.lock.try_lock() {
                Ok(guard) => return Ok(guard),
                Err(TryLockError::Poisoned(p)) => return Ok(p.into_inner()),
                // Another worker's statement, one round trip: wait closely for it first.
                Err(TryLockError::WouldBlock) if tries < 1000 => {
                    tries += 1;
                    std::thread::yield_now();
                }
                Err(TryLockError::WouldBlock) => std::thread::sleep(Duration::from_micros(200)),
            }
        }
    }

    /// Releases the lock, unless a start marker still alive holds it: then it goes when that
    /// marker drops.
    fn release(self) -> Result<(), PgError> {
        match Arc::try_unwrap(self.lock) {
            Ok(lock) => lock.into_inner().unwrap_or_else(PoisonError::into_inner).release(),
            Err(_) => Ok(()),
        }
    }
}

impl<R: Reads> std::fmt::Debug for PgQueue<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgQueue")
            .field("place", &self.lock.place)
            .finish_non_exhaustive()
    }
}

impl PgQueue {
    /// The queue of `store`, drained with `lock`, its runner lock. Refuses a lock of another
    /// queue.
    ///
    /// The drain's bookkeeping on the lock's connection (start marks, clears, parking,
    /// pruning) then commits with `synchronous_commit = off`, as the SQLite store's pass commits
    /// at `synchronous=NORMAL`: a commit is the server's at once, so it survives the runner's
    /// crash, and it reaches disk within the WAL writer's delay (three times
    /// `wal_writer_delay`, 600 ms by default). Only a crash of the server within that window
    /// can undo it, which at worst runs a point again or counts one start fewer. Transitions are
    /// never committed this way: a host's recording transaction keeps the server's setting.
    pub fn new(store: PgStore, lock: PgRunnerLock) -> Result<Self, PgError> {
        Self::over(store, lock)
    }

    /// The store: its connection reads, and records a host's transitions.
    pub fn store(&mut self) -> &mut PgStore {
        &mut self.reads
    }

    /// Releases the runner lock and hands the store back. A start marker still alive (none is
    /// once a pass returned) keeps the lock until it is dropped.
    pub fn release(self) -> Result<PgStore, PgError> {
        self.lock.release()?;
        Ok(self.reads)
    }
}

impl<R: Reads> PgQueue<R> {
    /// The queue `reads` reads, drained with `lock` (see [`PgQueue::new`]); its lease renewed
    /// with the other locks of its session.
    pub(crate) fn over(reads: R, mut lock: PgRunnerLock) -> Result<Self, PgError> {
        if lock.queue() != reads.queue() {
            return Err(RowError::Invalid(format!(
                "the runner lock is queue {}'s, not queue {}'s",
                lock.queue(),
                reads.queue()
            ))
            .into());
        }
        lock.renew()?;
        lock.client().batch_execute("SET synchronous_commit = off")?;
        lock.renew_with_others()?;
        let shared = SharedLock {
            clock: lock.clock(),
            queue: lock.queue().clone(),
            place: reads.place(),
            lock: Arc::new(Mutex::new(lock)),
        };
        Ok(Self {
            reads,
            lock: shared,
        })
    }

    /// Releases the runner lock, leaving the session's others.
    pub(crate) fn let_go(self) -> Result<(), PgError> {
        self.lock.release()
    }

    fn lock(&self) -> Result<MutexGuard<'_, PgRunnerLock>, PgError> {
        self.lock.get()
    }

    fn placed(&self, source: PgError) -> Error {
        placed(&self.lock.place, source)
    }
}

/// `source` as the queue's error, naming `place`.
fn placed(place: &Place, source: PgError) -> Error {
    Error::Postgres {
        place: Box::new(place.clone()),
        source,
    }
}

/// Marks starts from a worker thread of a parallel pass, on the runner lock's connection.
pub struct PgStartMarker {
    lock: SharedLock,
}

impl std::fmt::Debug for PgStartMarker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStartMarker").finish_non_exhaustive()
    }
}

impl MarkStarts for PgStartMarker {
    fn mark_started(&mut self, entry: &PendingRow) -> Result<Mark, Error> {
        let marked = self.lock.get().and_then(|mut lock| store::mark_started(&mut lock, entry));
        marked.map_err(|e| placed(&self.lock.place, e))
    }
}

/// A start is committed as it is marked (one more pass counted in the point's row), so there
/// is never a start left to fold; a pass's first call checks that the lock is still held.
impl<R: Reads> QueueStore for PgQueue<R> {
    type Marker = PgStartMarker;

    fn next_batch(&mut self, after: i64, limit: usize) -> Result<Vec<PendingRow>, Error> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let read = self.reads.next_batch(after, limit);
        read.map_err(|e| self.placed(e))
    }

    fn mark_started(&mut self, entry: &PendingRow, _lock: &RunnerLock) -> Result<Mark, Error> {
        let marked = self.lock().and_then(|mut l| store::mark_started(&mut l, entry));
        marked.map_err(|e| self.placed(e))
    }

    fn paused(&mut self) -> Result<bool, Error> {
        let paused = self.reads.paused();
        paused.map_err(|e| self.placed(e))
    }

    fn start_marker(&mut self, _lock: &RunnerLock) -> PgStartMarker {
        PgStartMarker {
            lock: self.lock.clone(),
        }
    }

    fn fold_starts(&mut self, _lock: &RunnerLock) -> Result<usize, Error> {
        let held = self.lock().and_then(|mut l| l.check_recent());
        held.map(|()| 0).map_err(|e| self.placed(e))
    }

    fn clear_all(&mut self, points: &[Cleared]) -> Result<(), Error> {
        let cleared = self.lock().and_then(|mut l| store::clear_all(&mut l, points));
        cleared.map_err(|e| self.placed(e))
    }

    fn try_clear_all(&mut self, points: &[Cleared]) -> Result<bool, Error> {
        let cleared = self
            .lock()
            .and_then(|mut l| store::try_clear_all(&mut l, points));
        cleared.map_err(|e| self.placed(e))
    }

    fn prune_history(
        &mut self,
        cutoff_ms: i64,
        limit: usize,
        remove_logs: &mut dyn FnMut(&str),
    ) -> Result<usize, Error> {
        let pruned = self
            .lock()
            .and_then(|mut l| store::prune_history(&mut l, cutoff_ms, limit, remove_logs));
        pruned.map_err(|e| self.placed(e))
    }

    fn change_mark(&mut self) -> Result<ChangeMark, Error> {
        let mark = self.reads.change_mark();
        mark.map(ChangeMark).map_err(|e| self.placed(e))
    }

    /// Checks the runner lock on its session, and that the reads' own connection (if they
    /// have one) answers: a lock or a connection lost is found here, and the hub connects
    /// again rather than wait on without it.
    fn check_held(&mut self) -> Result<(), Error> {
        let held = self.lock().and_then(|mut l| l.check_recent());
        held.map_err(|e| self.placed(e))?;
        let answers = self.reads.answers();
        answers.map_err(|e| self.placed(e))
    }

    fn pass<T, E: From<Error>>(
        &mut self,
        _lock: &RunnerLock,
        f: impl FnOnce(&mut Self) -> Result<T, E>,
    ) -> Result<T, E> {
        f(self)
    }

    fn located(&self, source: StoreError) -> Error {
        self.placed(RowError::BadRow(source.to_string()).into())
    }
}
