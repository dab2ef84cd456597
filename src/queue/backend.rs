//! What the drain and the hub need of the database: one trait, [`QueueStore`].
//!
//! [`Drainer`](crate::queue::Drainer) and [`hub::run`](crate::queue::hub::run) are generic over
//! it, so a pass costs no dynamic call. The SQLite [`Store`] implements it; a store for another
//! database implements it the same way, and the drain and the hub run on it unchanged.
//!
//! Recording is not part of it: a host records inside its own transaction, of its own database
//! binding (for SQLite, the functions of [`crate::queue::record`] over a
//! [`rusqlite::Transaction`]), and the store only reads back what was committed.

use std::time::Duration;

use crate::queue::error::Error;
use crate::queue::lock::RunnerLock;
use crate::queue::store::{Cleared, PendingRow, StartMarker, Store, StoreError};

/// Where a queue's data stood at one moment, as [`QueueStore::change_mark`] reads it: two
/// marks differ when another connection committed between them. Only equality means anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ChangeMark(pub i64);

/// The database side of draining a queue.
///
/// Every method that writes is called only by the holder of the runner lock, and the ones that
/// change what a pass counts take the [`RunnerLock`] as proof. The rules an implementation keeps:
///
/// - **Order.** [`next_batch`](QueueStore::next_batch) gives pending points by occurrence id,
///   ascending, and a point's id never changes; the drain keeps each task's points in that order.
/// - **At least once.** A point stays pending until [`clear_all`](QueueStore::clear_all)
///   commits its clear, which deletes it and writes its history rows in one transaction; a pass
///   that dies before then leaves it to run again.
/// - **Counted starts.** A point is marked started ([`mark_started`](QueueStore::mark_started),
///   or a worker's [`MarkStarts`]) before its first command starts; the mark must outlive a
///   killed runner and be counted exactly once in the point's `passes`, by
///   [`fold_starts`](QueueStore::fold_starts) in the next pass at the latest. The drain parks a
///   point that as many passes as `queue.max_interrupted_runs` started: a clear whose one history
///   row is [`Outcome::Abandoned`](crate::queue::store::Outcome::Abandoned).
/// - **Errors** are the queue's [`Error`], naming where the store lives.
pub trait QueueStore {
    /// What marks starts from a worker thread of a parallel pass.
    type Marker: MarkStarts + Send;

    /// Pending points after occurrence `after` (exclusive), in the order they run, at most
    /// `limit`. Starts marked and not folded yet are counted in each row's `passes`.
    fn next_batch(&self, after: i64, limit: usize) -> Result<Vec<PendingRow>, Error>;

    /// Marks `entry` started by this pass now. Returns `false`, and marks nothing, when the point
    /// is no longer pending (dropped since it was read).
    fn mark_started(&mut self, entry: &PendingRow, lock: &RunnerLock) -> Result<bool, Error>;

    /// A marker for one worker thread of a parallel pass, marking starts as
    /// [`mark_started`](QueueStore::mark_started) does, counted with this store's.
    fn start_marker(&self, lock: &RunnerLock) -> Self::Marker;

    /// Counts the starts an earlier runner marked and did not fold (it died first), each once;
    /// how many it found. A pass calls it first, and it fails when the store cannot be written,
    /// so that a pass that could not clear what it runs runs nothing.
    fn fold_starts(&mut self, lock: &RunnerLock) -> Result<usize, Error>;

    /// Clears `points` in one transaction: deletes each and writes its history rows, and folds
    /// the starts this store marked for points still pending. Waits for another writer as long
    /// as the store's busy timeout.
    fn clear_all(&mut self, points: &[Cleared]) -> Result<(), Error>;

    /// [`clear_all`](QueueStore::clear_all) unless another writer holds the database: then it
    /// returns `Ok(false)` at once and clears nothing. The drain clears this way while a command
    /// runs, whose timeout and output must not wait on another writer.
    fn try_clear_all(&mut self, points: &[Cleared]) -> Result<bool, Error>;

    /// Deletes history rows that finished before `cutoff_ms` (unix ms), at most `limit` of them;
    /// how many went.
    fn prune_history(&mut self, cutoff_ms: i64, limit: usize) -> Result<usize, Error>;

    /// A mark that changes whenever another connection commits: the drain compares two to tell
    /// whether points were recorded while a pass ran, the hub to know when to drain again.
    fn change_mark(&mut self) -> Result<ChangeMark, Error>;

    /// Waits up to `timeout` for a commit by another connection since `seen`; whether one came.
    /// The hub calls it between passes. This default sleeps `timeout`, then compares
    /// [`change_mark`](QueueStore::change_mark)s; a store that is told of commits (a
    /// notification channel) can return as soon as one arrives.
    fn wait_for_change(&mut self, seen: ChangeMark, timeout: Duration) -> Result<bool, Error> {
        std::thread::sleep(timeout);
        Ok(self.change_mark()? != seen)
    }

    /// Runs one pass, `f`, under the settings a pass wants, then restores the store's own. The
    /// SQLite store relaxes durability for the drain's bookkeeping there (see
    /// [`Store`]'s implementation); a store whose runner holds a lock of its own in the database
    /// takes and releases it here.
    fn pass<T, E: From<Error>>(
        &mut self,
        lock: &RunnerLock,
        f: impl FnOnce(&mut Self) -> Result<T, E>,
    ) -> Result<T, E>;

    /// `source`, a failure found in a row this store gave (a point name it cannot parse), as the
    /// queue's error naming this store.
    fn located(&self, source: StoreError) -> Error;
}

/// Marks points started from a worker thread of a parallel pass (see
/// [`QueueStore::start_marker`]).
pub trait MarkStarts {
    /// As [`QueueStore::mark_started`].
    fn mark_started(&mut self, entry: &PendingRow) -> Result<bool, Error>;
}

/// The SQLite store. A pass ([`QueueStore::pass`]) commits its clears and folds at
/// `synchronous=NORMAL`, with rarer checkpoints and a small page cache: in WAL mode a NORMAL
/// commit survives a crash of the process and is made durable by the next FULL commit or
/// checkpoint; power loss can undo it, which at worst runs a point again, never loses one.
/// Transitions are never recorded this way.
impl QueueStore for Store {
    type Marker = StartMarker;

    fn next_batch(&self, after: i64, limit: usize) -> Result<Vec<PendingRow>, Error> {
        self.pending(after, limit, None)
            .map_err(|e| self.located(e))
    }

    fn mark_started(&mut self, entry: &PendingRow, lock: &RunnerLock) -> Result<bool, Error> {
        Store::mark_started(self, entry, lock).map_err(|e| self.located(e))
    }

    fn start_marker(&self, lock: &RunnerLock) -> StartMarker {
        Store::start_marker(self, lock)
    }

    fn fold_starts(&mut self, lock: &RunnerLock) -> Result<usize, Error> {
        Store::fold_starts(self, lock).map_err(|e| self.located(e))
    }

    fn clear_all(&mut self, points: &[Cleared]) -> Result<(), Error> {
        Store::clear_all(self, points).map_err(|e| self.located(e))
    }

    fn try_clear_all(&mut self, points: &[Cleared]) -> Result<bool, Error> {
        Store::try_clear_all(self, points).map_err(|e| self.located(e))
    }

    fn prune_history(&mut self, cutoff_ms: i64, limit: usize) -> Result<usize, Error> {
        Store::prune_history(self, cutoff_ms, limit).map_err(|e| self.located(e))
    }

    fn change_mark(&mut self) -> Result<ChangeMark, Error> {
        self.data_version()
            .map(ChangeMark)
            .map_err(|e| self.located(e))
    }

    fn pass<T, E: From<Error>>(
        &mut self,
        _lock: &RunnerLock,
        f: impl FnOnce(&mut Self) -> Result<T, E>,
    ) -> Result<T, E> {
        let path = self.path().to_path_buf();
        self.with_relaxed_sync(|e| Error::store(&path, e).into(), f)
    }

    fn located(&self, source: StoreError) -> Error {
        Error::store(self.path(), source)
    }
}

impl MarkStarts for StartMarker {
    fn mark_started(&mut self, entry: &PendingRow) -> Result<bool, Error> {
        StartMarker::mark_started(self, entry).map_err(|e| Error::store(self.db_path(), e))
    }
}
