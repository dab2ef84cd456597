//! What the drain and the hub need of the database: one trait, [`QueueStore`].
//!
//! [`Drainer`](crate::queue::Drainer) and [`hub::run`](crate::queue::hub::run) are generic over
//! it, so a pass costs no dynamic call. The SQLite [`Store`] implements it, and so does
//! `hookq::queue::pg::PgQueue` (the `postgres` feature): the drain and the hub run on either
//! unchanged.
//!
//! Recording is not part of it: a host records inside its own transaction, of its own database
//! binding (for SQLite, the functions of [`crate::queue::record`] over a
//! [`rusqlite::Transaction`]), and the store only reads back what was committed.

use crate::queue::error::Error;
use crate::queue::lock::RunnerLock;
use crate::queue::model::{Cleared, PendingRow};
use crate::queue::store::{StartMarker, Store, StoreError};

/// Where a queue's data stood at one moment, as [`QueueStore::change_mark`] reads it: two
/// marks differ when another connection committed between them. Only equality means anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ChangeMark(pub i64);

/// What marking a point started found ([`QueueStore::mark_started`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// Marked: the point's first command runs.
    Started,
    /// The point is no longer pending (dropped since it was read): nothing marked, nothing run.
    Gone,
    /// The queue is paused (`hookq queue pause`): nothing marked, the point stays pending, and
    /// the pass starts no other point.
    Paused,
}

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
///   or a worker's [`MarkStarts`]) before any of its first command runs (the drain calls it
///   while the command's shell waits at its gate, see [`crate::exec::run_gated`]); the mark must
///   outlive a killed runner and be counted exactly once in the point's `passes`, by
///   [`fold_starts`](QueueStore::fold_starts) in the next pass at the latest. The drain parks a
///   point that as many passes as `queue.max_interrupted_runs` started: a clear whose one history
///   row is [`Outcome::Abandoned`](crate::queue::model::Outcome::Abandoned).
/// - **Pause.** A paused queue starts no point: [`paused`](QueueStore::paused) says so before
///   a pass starts any, and the start mark reads it again in the same statement or read that
///   marks the point ([`Mark::Paused`]), so a pause that lands mid-pass costs no read of its
///   own per point and stops the pass before its next point.
/// - **Errors** are the queue's [`Error`], naming where the store lives.
///
/// Every method takes the store mutably, reads too: a client whose queries need `&mut` (as a
/// PostgreSQL client's do) implements it directly.
pub trait QueueStore {
    /// What marks starts from a worker thread of a parallel pass.
    type Marker: MarkStarts + Send;

    /// Pending points after occurrence `after` (exclusive), in the order they run, at most
    /// `limit`. Starts marked and not folded yet are counted in each row's `passes`.
    fn next_batch(&mut self, after: i64, limit: usize) -> Result<Vec<PendingRow>, Error>;

    /// Marks `entry` started by this pass now, unless the point is no longer pending
    /// ([`Mark::Gone`]) or the queue is paused ([`Mark::Paused`]): then it marks nothing.
    fn mark_started(&mut self, entry: &PendingRow, lock: &RunnerLock) -> Result<Mark, Error>;

    /// Whether the queue is paused (`hookq queue pause`): a pass reads it once before it starts
    /// any point, and starts none while it is.
    fn paused(&mut self) -> Result<bool, Error>;

    /// A marker for one worker thread of a parallel pass, marking starts as
    /// [`mark_started`](QueueStore::mark_started) does, counted with this store's.
    fn start_marker(&mut self, lock: &RunnerLock) -> Self::Marker;

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

    /// Deletes history rows that finished before `cutoff_ms` (unix ms), at most `limit` of them,
    /// oldest first; how many went. Before they go, `remove_logs` is called with each task whose
    /// hook logs on this host nothing will refer to once they are gone: no pending point of the
    /// task, and no other history row of it that this host wrote. A store that other hosts
    /// drain too hands each of them the tasks whose logs on it are to go, at their own passes.
    fn prune_history(
        &mut self,
        cutoff_ms: i64,
        limit: usize,
        remove_logs: &mut dyn FnMut(&str),
    ) -> Result<usize, Error>;

    /// A mark that changes whenever another connection commits a point (or pauses or resumes
    /// the queue): the drain compares two to tell whether points were recorded while a pass
    /// ran, and so does the hub after each pass. The store's own clears and starts leave it as
    /// it was. (Between passes the hub waits on a [`Watcher`](crate::queue::watch::Watcher).)
    fn change_mark(&mut self) -> Result<ChangeMark, Error>;

    /// Fails when the runner's own lock in the database, or the store's connection, is lost;
    /// the hub calls it while it waits between passes, so that it connects again rather than
    /// wait on without them. This default, for a store whose lock is the workspace's
    /// `runner.lock` alone, has nothing to check.
    fn check_held(&mut self) -> Result<(), Error> {
        Ok(())
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
    fn mark_started(&mut self, entry: &PendingRow) -> Result<Mark, Error>;
}

/// The SQLite store. A pass ([`QueueStore::pass`]) commits its clears and folds at
/// `synchronous=NORMAL`, with rarer checkpoints and a small page cache: in WAL mode a NORMAL
/// commit survives a crash of the process and is made durable by the next FULL commit or
/// checkpoint; power loss can undo it, which at worst runs a point again, never loses one.
/// Transitions are never recorded this way.
impl QueueStore for Store {
    type Marker = StartMarker;

    fn next_batch(&mut self, after: i64, limit: usize) -> Result<Vec<PendingRow>, Error> {
        self.pending(after, limit, None)
            .map_err(|e| self.located(e))
    }

    fn mark_started(&mut self, entry: &PendingRow, lock: &RunnerLock) -> Result<Mark, Error> {
        Store::mark_started(self, entry, lock).map_err(|e| self.located(e))
    }

    fn paused(&mut self) -> Result<bool, Error> {
        Store::paused(self)
            .map(|p| p.is_some())
            .map_err(|e| self.located(e))
    }

    fn start_marker(&mut self, lock: &RunnerLock) -> StartMarker {
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

    fn prune_history(
        &mut self,
        cutoff_ms: i64,
        limit: usize,
        remove_logs: &mut dyn FnMut(&str),
    ) -> Result<usize, Error> {
        Store::prune_history(self, cutoff_ms, limit, remove_logs).map_err(|e| self.located(e))
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
    fn mark_started(&mut self, entry: &PendingRow) -> Result<Mark, Error> {
        StartMarker::mark_started(self, entry).map_err(|e| Error::store(self.db_path(), e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::Stop;
    use crate::queue::drain::Drainer;
    use crate::queue::ids::{PlanId, TaskId};
    use crate::queue::lock::Wait;
    use crate::queue::phase::Phase;
    use crate::queue::record;
    use crate::queue::workspace::Workspace;

    /// Another store behind the seam: the SQLite store, reached only through the trait, with no
    /// settings of its own for a pass, counting what the drain asks of it.
    struct Counting {
        inner: Store,
        passes: usize,
        batches: usize,
        clears: usize,
    }

    impl QueueStore for Counting {
        type Marker = StartMarker;

        fn next_batch(&mut self, after: i64, limit: usize) -> Result<Vec<PendingRow>, Error> {
            self.batches += 1;
            self.inner.next_batch(after, limit)
        }

        fn mark_started(&mut self, entry: &PendingRow, lock: &RunnerLock) -> Result<Mark, Error> {
            QueueStore::mark_started(&mut self.inner, entry, lock)
        }

        fn paused(&mut self) -> Result<bool, Error> {
            QueueStore::paused(&mut self.inner)
        }

        fn start_marker(&mut self, lock: &RunnerLock) -> StartMarker {
            QueueStore::start_marker(&mut self.inner, lock)
        }

        fn fold_starts(&mut self, lock: &RunnerLock) -> Result<usize, Error> {
            QueueStore::fold_starts(&mut self.inner, lock)
        }

        fn clear_all(&mut self, points: &[Cleared]) -> Result<(), Error> {
            self.clears += points.len();
            QueueStore::clear_all(&mut self.inner, points)
        }

        fn try_clear_all(&mut self, points: &[Cleared]) -> Result<bool, Error> {
            let cleared = QueueStore::try_clear_all(&mut self.inner, points)?;
            if cleared {
                self.clears += points.len();
            }
            Ok(cleared)
        }

        fn prune_history(
            &mut self,
            cutoff_ms: i64,
            limit: usize,
            remove_logs: &mut dyn FnMut(&str),
        ) -> Result<usize, Error> {
            QueueStore::prune_history(&mut self.inner, cutoff_ms, limit, remove_logs)
        }

        fn change_mark(&mut self) -> Result<ChangeMark, Error> {
            self.inner.change_mark()
        }

        fn pass<T, E: From<Error>>(
            &mut self,
            _lock: &RunnerLock,
            f: impl FnOnce(&mut Self) -> Result<T, E>,
        ) -> Result<T, E> {
            self.passes += 1;
            f(self)
        }

        fn located(&self, source: StoreError) -> Error {
            self.inner.located(source)
        }
    }

    #[test]
    fn the_drain_runs_unchanged_on_another_store_behind_the_trait() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::at(dir.path());
        let mut store = Store::open(&ws.db_path()).unwrap();
        std::fs::write(
            ws.config_path(),
            "[hooks]\nafter_fail = ['echo \"$ARC_TASK\" >> ran']\n",
        )
        .unwrap();
        let add = |store: &mut Store, tasks: &[&str]| {
            store
                .write(|tx| {
                    for t in tasks {
                        let (t, p) = (TaskId::new(*t).unwrap(), PlanId::new("p").unwrap());
                        record::add_task(tx, &t, &p, &Phase::new("failed.x").unwrap())?;
                    }
                    Ok(())
                })
                .unwrap();
        };
        add(&mut store, &["a", "b", "c"]);
        let mut counting = Counting {
            inner: store,
            passes: 0,
            batches: 0,
            clears: 0,
        };
        let lock = RunnerLock::acquire(&ws.lock_path(), Wait::No, &|| true)
            .unwrap()
            .unwrap();
        let stop = Stop::new();
        let report = Drainer::new(ws.clone(), &stop)
            .jobs(2)
            .drain(&mut counting, &lock)
            .unwrap();
        assert_eq!((report.cleared, report.commands, report.failed), (3, 3, 0));
        assert_eq!((counting.passes, counting.clears), (1, 3));
        assert!(counting.batches >= 1);
        let mut ran: Vec<String> = std::fs::read_to_string(dir.path().join("ran"))
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
        ran.sort();
        assert_eq!(ran, ["a", "b", "c"]);
        assert!(counting.next_batch(0, 10).unwrap().is_empty());

        // The mark moves with a commit by another connection, and only then.
        let seen = counting.change_mark().unwrap();
        assert_eq!(counting.change_mark().unwrap(), seen);
        add(&mut Store::open(&ws.db_path()).unwrap(), &["d"]);
        assert_ne!(counting.change_mark().unwrap(), seen);
    }
}
