//! What the hand-made changes of a queue say when done, written once: `hookq queue drop`,
//! `retry`, `pause` and `resume` print these lines, and the web view's actions show them.

use crate::queue::handle::Dropped;
use crate::queue::model::Paused;
use crate::queue::record::Occurrence;
use crate::queue::times::rfc3339;

/// After dropping occurrence `id`: what was dropped. [`Dropped::note`] follows it when there is
/// one.
pub fn dropped(id: i64, d: &Dropped) -> String {
    format!(
        "dropped occurrence {id} ({} for task {}); kept in history as dropped",
        d.occurrence.point, d.occurrence.task
    )
}

/// After retrying history row `history_id` as occurrence `o`.
pub fn retried(history_id: i64, o: &Occurrence) -> String {
    format!(
        "queued {} again as occurrence {} (from history row {history_id})",
        o.point, o.id
    )
}

/// After pausing the queue at `place`.
pub fn paused(p: &Paused, place: &str) -> String {
    if p.changed {
        format!(
            "queue paused: {place}; transitions are still recorded, and no runner starts a point until `hookq queue resume` (a point running now finishes)"
        )
    } else {
        format!(
            "queue already paused since {}: {place}; nothing changed",
            rfc3339(p.since_ms)
        )
    }
}

/// After resuming the queue at `place`: `p` is the pause it ended, `None` when it was not
/// paused.
pub fn resumed(p: Option<&Paused>, place: &str) -> String {
    match p {
        Some(p) => format!(
            "queue resumed: {place} (paused since {}); the next pass runs what is pending",
            rfc3339(p.since_ms)
        ),
        None => format!("queue not paused: {place}; nothing changed"),
    }
}
