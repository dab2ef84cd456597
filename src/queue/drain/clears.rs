//! Finished points waiting to be cleared together, and when their batch is due.

use std::time::{Duration, Instant};

use crate::queue::backend::QueueStore;
use crate::queue::error::Error;
use crate::queue::model::Cleared;

/// How many finished points make a batch of clears.
pub const CLEAR_BATCH: usize = 64;
/// How long the first finished point of a batch waits for its clear at most, give or take the
/// 50 ms a command's wait may take to wake.
pub const CLEAR_AFTER: Duration = Duration::from_millis(50);

/// Finished points waiting to be cleared together.
#[derive(Debug, Default)]
pub(super) struct Clears {
    points: Vec<Cleared>,
    /// When the first of them was queued.
    since: Option<Instant>,
    /// Another writer held the database at the last [`Clears::try_flush`]: not due again
    /// before this.
    busy_until: Option<Instant>,
}

impl Clears {
    pub(super) fn push(&mut self, point: Cleared) {
        self.since.get_or_insert_with(Instant::now);
        self.points.push(point);
    }

    /// Whether the batch should be committed now.
    pub(super) fn due(&self) -> bool {
        if self.busy_until.is_some_and(|t| Instant::now() < t) {
            return false;
        }
        self.points.len() >= CLEAR_BATCH || self.since.is_some_and(|t| t.elapsed() >= CLEAR_AFTER)
    }

    /// Empties the batch once a commit was tried, whatever came of it: a commit that failed
    /// leaves those points pending, and the next pass reads them again and runs them again.
    fn take(&mut self) -> Vec<Cleared> {
        self.since = None;
        self.busy_until = None;
        std::mem::take(&mut self.points)
    }

    /// Commits every queued clear in one transaction, waiting up to the store's busy timeout
    /// for another writer.
    pub(super) fn flush<S: QueueStore>(&mut self, store: &mut S) -> Result<(), Error> {
        let points = self.take();
        store.clear_all(&points)
    }

    /// [`Clears::flush`] while a command runs: when another writer holds the database, keeps
    /// the batch and tries again [`CLEAR_AFTER`] later, rather than leave the command's timeout,
    /// stop requests and output unserved for as long as that writer holds on.
    pub(super) fn try_flush<S: QueueStore>(&mut self, store: &mut S) -> Result<(), Error> {
        let tried = store.try_clear_all(&self.points);
        if let Ok(false) = tried {
            self.busy_until = Some(Instant::now() + CLEAR_AFTER);
        } else {
            self.take();
        }
        tried.map(drop)
    }
}
