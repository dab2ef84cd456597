//! Choosing what runs next: a pure function of the queue's window and the tasks running.

use std::collections::{HashSet, VecDeque};

use crate::queue::ids::TaskId;
use crate::queue::model::PendingRow;

/// The index of the first point in `window`, from `from` on, that may start now: in recorded
/// order, a point whose task has a point running (`busy`) waits, and so does every later point
/// of that task, even once the task is free again within this scan, so a task's points always
/// run in the order recorded. Every task passed over is added to `blocked`, which the caller
/// keeps across the calls of one scan of the window. `None` when nothing may start.
pub(super) fn next(
    window: &VecDeque<PendingRow>,
    from: usize,
    busy: &HashSet<TaskId>,
    blocked: &mut HashSet<TaskId>,
) -> Option<usize> {
    let mut i = from;
    while i < window.len() {
        let task = &window[i].task;
        if !busy.contains(task) && !blocked.contains(task) {
            return Some(i);
        }
        blocked.insert(task.clone());
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::model::Attempt;
    use crate::queue::phase::Point;

    /// A window of points of `tasks`, in order, with ids from 1.
    fn window(tasks: &[&str]) -> VecDeque<PendingRow> {
        tasks
            .iter()
            .zip(1..)
            .map(|(task, id)| PendingRow {
                id,
                task: task.parse().unwrap(),
                plan: Some("p".into()),
                point: Point::AfterFail,
                state: Some("failed.x".into()),
                recorded_ms: 0,
                passes: 0,
                last_started_ms: None,
                attempt: Some(Attempt::FIRST),
                merged_sha: None,
            })
            .collect()
    }

    fn set(tasks: &[&str]) -> HashSet<TaskId> {
        tasks.iter().map(|t| t.parse().unwrap()).collect()
    }

    /// Takes every point that may start, one after another, as the pass does with a pool of
    /// `slots`; the tasks of the points taken, in the order taken.
    fn take_all(tasks: &[&str], busy: &[&str], slots: usize) -> Vec<String> {
        let mut window = window(tasks);
        let mut busy = set(busy);
        let mut blocked = HashSet::new();
        let (mut taken, mut at) = (Vec::new(), 0);
        while taken.len() < slots {
            let Some(i) = next(&window, at, &busy, &mut blocked) else {
                break;
            };
            at = i;
            let entry = window.remove(i).unwrap();
            busy.insert(entry.task.clone());
            taken.push(entry.task.to_string());
        }
        taken
    }

    #[test]
    fn points_start_in_recorded_order() {
        assert_eq!(take_all(&["a", "b", "c"], &[], 3), ["a", "b", "c"]);
        assert_eq!(take_all(&["a", "b", "c"], &[], 2), ["a", "b"]);
    }

    #[test]
    fn a_task_runs_one_point_at_a_time() {
        assert_eq!(
            take_all(&["a", "a", "b", "a", "c"], &[], 5),
            ["a", "b", "c"]
        );
    }

    #[test]
    fn a_busy_task_holds_back_all_its_points() {
        assert_eq!(take_all(&["a", "b", "a", "c"], &["a"], 4), ["b", "c"]);
        assert!(take_all(&["a", "a"], &["a"], 4).is_empty());
    }

    #[test]
    fn a_task_passed_over_stays_blocked_for_the_rest_of_the_scan() {
        let window = window(&["a", "b", "a"]);
        let mut blocked = HashSet::new();
        // a is running: its first point is passed over, so its second must wait too, even
        // though the caller no longer counts a as busy.
        assert_eq!(next(&window, 0, &set(&["a"]), &mut blocked), Some(1));
        assert_eq!(blocked, set(&["a"]));
        assert_eq!(next(&window, 2, &HashSet::new(), &mut blocked), None);
        // A new scan starts with nothing blocked.
        assert_eq!(
            next(&window, 0, &HashSet::new(), &mut HashSet::new()),
            Some(0)
        );
    }

    #[test]
    fn an_empty_or_exhausted_window_offers_nothing() {
        let mut blocked = HashSet::new();
        assert_eq!(next(&window(&[]), 0, &HashSet::new(), &mut blocked), None);
        assert_eq!(
            next(&window(&["a"]), 1, &HashSet::new(), &mut blocked),
            None
        );
    }
}
