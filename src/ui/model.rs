//! What each page shows, read from the queue: the same values the pages render and the JSON
//! URLs serve, in the shapes `hookq queue --json` and `hookq task show --json` print.

use serde::Serialize;

use crate::queue::ids::TaskId;
use crate::queue::model::{HistoryFilter, HistoryRow, Page, PendingFilter, Stats};
use crate::queue::{LockState, Queue, TaskShown};

use super::chart::{self, Hour};
use super::error::UiError;

/// How many of the slowest hooks the overview lists.
const SLOWEST: usize = 10;
/// Rows on a page of pending points or history.
pub(crate) const PAGE: usize = 100;
/// The most pending points a task's page lists.
const TASK_PENDING: usize = 1000;
/// The history rows a task's page lists.
const TASK_HISTORY: usize = 50;

/// The overview.
#[derive(Debug, Serialize)]
pub(crate) struct Overview {
    pub(crate) lock: LockState,
    pub(crate) paused: bool,
    pub(crate) paused_since_ms: Option<i64>,
    pub(crate) stats: Stats,
    /// Pending points parked after too many interrupted runs: history rows `abandoned`.
    pub(crate) parked: i64,
    /// Runs by outcome, an hour each, over the last 24 hours, oldest first.
    pub(crate) hours: Vec<Hour>,
    /// The slowest commands of the last 24 hours, slowest first.
    pub(crate) slowest: Vec<HistoryRow>,
}

pub(crate) fn overview(db: &mut Queue, now_ms: i64) -> Result<Overview, UiError> {
    let lock = db.lock()?;
    let stats = db.stats()?;
    let since = chart::since_ms(now_ms);
    let counts = db.outcomes(since, chart::HOUR_MS)?;
    let hours = chart::hours(
        counts
            .iter()
            .map(|c| (c.start_ms, c.outcome.as_str(), c.count)),
        now_ms,
    );
    let slowest = db.slowest(since, SLOWEST)?;
    let parked = stats
        .history_by_outcome
        .iter()
        .find(|(o, _)| o == "abandoned")
        .map_or(0, |(_, n)| *n);
    Ok(Overview {
        lock,
        paused: stats.paused_since_ms.is_some(),
        paused_since_ms: stats.paused_since_ms,
        parked,
        stats,
        hours,
        slowest,
    })
}

pub(crate) use crate::queue::Listing;

pub(crate) fn pending(db: &mut Queue, q: &PendingFilter) -> Result<Listing, UiError> {
    Ok(db.listing(q)?)
}

/// A page of history, newest first, and whether older rows follow.
pub(crate) fn history(db: &mut Queue, q: &HistoryFilter) -> Result<(Vec<HistoryRow>, bool), UiError> {
    let Page { rows, more } = db.history_page(q)?;
    Ok((rows, more))
}

pub(crate) fn task(db: &mut Queue, id: &TaskId) -> Result<Option<TaskShown>, UiError> {
    Ok(db.task_shown(id, TASK_PENDING, TASK_HISTORY)?)
}
