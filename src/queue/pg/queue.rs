//! [`PgQueue`]: the queue on PostgreSQL behind [`QueueStore`], so that the
//! [`Drainer`](crate::queue::Drainer) and the [hub](crate::queue::hub) run on it unchanged.
//!
//! It holds two connections: the store's, for the reads, and the runner lock's, through which
//! every write of the drain goes. (A hub waits between passes on a third, its
//! [`Watcher`](crate::queue::watch::Watcher)'s, which listens for the queue's notifications.) Only the holder of the queue's runner
//! lock can make one, and a runner whose lock connection was lost clears nothing: its points run
//! again under the next holder.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError, Weak};
use std::time::{Duration, Instant};

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

/// A queue on PostgreSQL, drained by the holder of its runner lock.
pub struct PgQueue {
    store: PgStore,
    lock: SharedLock,
    /// Tells the lease's renewing thread to stop.
    renewing: Arc<AtomicBool>,
}

/// The runner lock, shared by the drain, its workers and the thread that renews its lease,
/// with the lease's clock beside it, readable while a statement holds the lock.
#[derive(Clone)]
struct SharedLock {
    lock: Arc<Mutex<PgRunnerLock>>,
    clock: Arc<LeaseClock>,
    queue: QueueName,
    /// The queue and its database, as errors name them.
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
}

/// Renews the lease of `lock` every quarter of it until `stop` is set or the lock is gone;
/// a renewal that fails marks the lease lost (the lock's clock says why) and ends the thread.
fn renew_lease(lock: Weak<Mutex<PgRunnerLock>>, stop: Arc<AtomicBool>, every: Duration) {
    let mut next = Instant::now() + every;
    loop {
        while Instant::now() < next {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50).min(every));
        }
        let Some(lock) = lock.upgrade() else { return };
        next = Instant::now() + every;
        let renewed = lock.lock().unwrap_or_else(PoisonError::into_inner).renew();
        if let Err(e) = renewed {
            if !stop.load(Ordering::Relaxed) {
                tracing::warn!("{e}");
            }
            return;
        }
    }
}

impl std::fmt::Debug for PgQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgQueue")
            .field("store", &self.store)
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
    pub fn new(store: PgStore, mut lock: PgRunnerLock) -> Result<Self, PgError> {
        if lock.queue() != store.queue() {
            return Err(RowError::Invalid(format!(
                "the runner lock is queue {}'s, not queue {}'s",
                lock.queue(),
                store.queue()
            )).into());
        }
        lock.renew()?;
        lock.client()
            .batch_execute("SET synchronous_commit = off")?;
        let every = lock.lease().renew_every();
        let shared = SharedLock {
            clock: lock.clock(),
            queue: lock.queue().clone(),
            place: store.place(),
            lock: Arc::new(Mutex::new(lock)),
        };
        let renewing = Arc::new(AtomicBool::new(false));
        let (weak, stop) = (Arc::downgrade(&shared.lock), Arc::clone(&renewing));
        std::thread::Builder::new()
            .name("hookq-lease".into())
            .spawn(move || renew_lease(weak, stop, every))
            .map_err(|e| {
                PgError::LockLost {
                    queue: shared.queue.to_string(),
                    reason: format!("cannot start the thread that renews its lease: {e}"),
                }
            })?;
        Ok(Self {
            store,
            lock: shared,
            renewing,
        })
    }

    /// The store: its connection reads, and records a host's transitions.
    pub fn store(&mut self) -> &mut PgStore {
        &mut self.store
    }

    /// Releases the runner lock and hands the store back. A start marker still alive (none is
    /// once a pass returned) keeps the lock until it is dropped.
    pub fn release(self) -> Result<PgStore, PgError> {
        self.renewing.store(true, Ordering::Relaxed);
        // The renewing thread holds the lock for a moment at most, unless it is stuck on a
        // silent connection: then the lock goes with that connection.
        let deadline = Instant::now() + Duration::from_millis(500);
        let mut lock = self.lock.lock;
        while Instant::now() < deadline {
            match Arc::try_unwrap(lock) {
                Ok(l) => {
                    l.into_inner()
                        .unwrap_or_else(PoisonError::into_inner)
                        .release()?;
                    return Ok(self.store);
                }
                Err(back) => lock = back,
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(self.store)
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
impl QueueStore for PgQueue {
    type Marker = PgStartMarker;

    /// A prepared statement: the plan of the drain's most frequent read is made once per
    /// connection rather than on every batch.
    fn next_batch(&mut self, after: i64, limit: usize) -> Result<Vec<PendingRow>, Error> {
        let queue = self.store.queue().clone();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let read = self.store.prepared(store::NEXT_BATCH).and_then(|next| {
            self.store
                .client()
                .query(&next, &[&queue.as_str(), &after, &limit])
        });
        read.map_err(PgError::from)
            .and_then(|rows| store::pending_rows(&rows))
            .map_err(|e| self.placed(e))
    }

    fn mark_started(&mut self, entry: &PendingRow, _lock: &RunnerLock) -> Result<Mark, Error> {
        let marked = self.lock().and_then(|mut l| store::mark_started(&mut l, entry));
        marked.map_err(|e| self.placed(e))
    }

    fn paused(&mut self) -> Result<bool, Error> {
        let queue = self.store.queue().clone();
        store::paused(self.store.client(), &queue)
            .map(|p| p.is_some())
            .map_err(|e| self.placed(e))
    }

    fn start_marker(&mut self, _lock: &RunnerLock) -> PgStartMarker {
        PgStartMarker {
            lock: self.lock.clone(),
        }
    }

    fn fold_starts(&mut self, _lock: &RunnerLock) -> Result<usize, Error> {
        let held = self.lock().and_then(|mut l| l.check());
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
        let queue = self.store.queue().clone();
        store::change_mark(self.store.client(), &queue)
            .map(ChangeMark)
            .map_err(|e| self.placed(e))
    }

    /// Checks the runner lock on its connection, and that the store's connection answers:
    /// nothing else uses either while a hub waits, so a lock or a connection lost is found
    /// here, and the hub connects again rather than wait on without it.
    fn check_held(&mut self) -> Result<(), Error> {
        let held = self.lock().and_then(|mut l| l.check());
        held.map_err(|e| self.placed(e))?;
        let answers = self.store.client().batch_execute("");
        answers.map_err(|e| self.placed(e.into()))
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
