//! The reads and hand-made changes of the library's `Queue`, the calls `hookq queue`, `task`
//! and the web view make: pending points and history narrowed by task, point, outcome and host,
//! paged by id; a drop, and a drop of what is not pending; a pass when the runner lock is free;
//! the overview's counts per interval and slowest runs; the runner lock's holder.

use hookq::queue::model::{HistoryFilter, PendingFilter};
use hookq::queue::{DrainIfFree, Error};
use hookq::{MoveFacts, Phase, PlanId, Stop, TaskId};

use super::Driver;
use crate::support::queue::Config;

conformance!(
    the_library_queue_filters_pages_drops_and_drains,
    the_lock_names_the_runner_holding_it_and_is_free_after,
);

fn the_library_queue_filters_pages_drops_and_drains(d: Driver) {
    let hooks = "after_fail = ['true']\nafter_rework = ['false']\n";
    let ws = d.workspace(&Config::hooks(hooks), "");
    let mut q = ws.queue();
    assert_eq!(q.is_postgres(), d.is_postgres());
    if d.is_postgres() {
        assert!(q.place().starts_with("queue q on "), "{}", q.place());
    } else {
        assert_eq!(q.place(), ws.db_path().to_str().unwrap());
    }
    assert_eq!(q.shared_logs().is_some(), d.is_postgres());
    let plan = PlanId::new("p").unwrap();
    for i in 0..4 {
        let task = TaskId::new(format!("t{i}")).unwrap();
        q.add_task(&task, &plan, &Phase::new("failed.x").unwrap())
            .unwrap();
        q.move_task(
            &task,
            &Phase::new("review.rework_pending").unwrap(),
            &MoveFacts::default(),
        )
        .unwrap();
    }
    // Each task recorded after_fail as it was added in a failed phase, then after_rework.
    let all = q
        .pending(&PendingFilter {
            limit: 100,
            ..PendingFilter::default()
        })
        .unwrap();
    let rework = q
        .pending(&PendingFilter {
            point: Some("after_rework".parse().unwrap()),
            limit: 100,
            ..PendingFilter::default()
        })
        .unwrap();
    assert_eq!(all.len(), 8, "{all:?}");
    assert!(rework.iter().all(|p| p.point == "after_rework"));
    assert_eq!(rework.len(), 4, "{all:?}");
    // Keyset paging: the second page starts after the first's last id.
    let first = q
        .pending(&PendingFilter {
            point: Some("after_rework".parse().unwrap()),
            limit: 3,
            ..PendingFilter::default()
        })
        .unwrap();
    let second = q
        .pending(&PendingFilter {
            point: Some("after_rework".parse().unwrap()),
            after: first.last().unwrap().id,
            limit: 3,
            ..PendingFilter::default()
        })
        .unwrap();
    assert_eq!(first.len() + second.len(), 4);
    assert!(second[0].id > first[2].id);
    let of_t1 = q
        .pending(&PendingFilter {
            task: Some("t1".parse().unwrap()),
            point: Some("after_rework".parse().unwrap()),
            limit: 10,
            ..PendingFilter::default()
        })
        .unwrap();
    assert_eq!(of_t1.len(), 1);

    // A drop of what is not pending is "not found", naming the queue.
    let gone = q.drop_occurrence(999_999).unwrap_err();
    assert!(
        matches!(gone, Error::NoOccurrence { id: 999_999, .. }),
        "{gone}"
    );
    assert!(gone.to_string().contains(q.place()), "{gone}");
    let dropped = q.drop_occurrence(of_t1[0].id).unwrap();
    assert_eq!(dropped.occurrence.task, "t1");
    assert!(dropped.note.is_none());

    let DrainIfFree::Ran { report, .. } = q.drain_if_free(&Stop::new()) else {
        panic!("the runner lock was free");
    };
    assert_eq!(report.cleared, all.len() - 1);

    let mut q = ws.queue();
    let failed = q
        .history(&HistoryFilter {
            outcome: Some("failed".parse().unwrap()),
            limit: 100,
            ..HistoryFilter::default()
        })
        .unwrap();
    assert_eq!(failed.len(), 3, "{failed:?}");
    assert!(failed.iter().all(|h| h.point == "after_rework"));
    // On PostgreSQL each row names the host whose runner wrote it, and narrows by it; on
    // SQLite, one file on one host, no row has a host.
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_owned();
    let here = q
        .history(&HistoryFilter {
            outcome: Some("failed".parse().unwrap()),
            host: Some(host.clone()),
            limit: 100,
            ..HistoryFilter::default()
        })
        .unwrap();
    if d.is_postgres() {
        assert_eq!(here, failed);
        assert!(failed.iter().all(|h| h.host.as_deref() == Some(&*host)));
    } else {
        assert!(here.is_empty(), "{here:?}");
        assert!(failed.iter().all(|h| h.host.is_none()));
    }
    let elsewhere = q
        .history(&HistoryFilter {
            host: Some("another-host".into()),
            limit: 100,
            ..HistoryFilter::default()
        })
        .unwrap();
    assert!(elsewhere.is_empty());
    // Newest first, paged by `before`.
    let page = q
        .history(&HistoryFilter {
            limit: 2,
            ..HistoryFilter::default()
        })
        .unwrap();
    let next = q
        .history(&HistoryFilter {
            before: Some(page[1].id),
            limit: 100,
            ..HistoryFilter::default()
        })
        .unwrap();
    assert!(page[0].id > page[1].id && next[0].id < page[1].id);
    let dropped_row = q
        .history(&HistoryFilter {
            outcome: Some("dropped".parse().unwrap()),
            limit: 10,
            ..HistoryFilter::default()
        })
        .unwrap();
    assert_eq!(dropped_row.len(), 1);
    assert_eq!(dropped_row[0].task, "t1");

    // The overview's chart and slowest hooks: counts per interval, and the longest runs.
    let since = hookq::queue::model::now_ms() - 3_600_000;
    let counts = q.outcomes(since, 3_600_000).unwrap();
    let count = |o: &str| -> i64 {
        counts
            .iter()
            .filter(|c| c.outcome == o)
            .map(|c| c.count)
            .sum()
    };
    assert_eq!((count("ok"), count("failed"), count("dropped")), (4, 3, 1));
    assert!(counts.iter().all(|c| c.start_ms == since));
    let slowest = q.slowest(since, 3).unwrap();
    assert_eq!(slowest.len(), 3);
    assert!(
        slowest
            .windows(2)
            .all(|w| w[0].duration_ms >= w[1].duration_ms)
    );
}

/// While `hookq run` runs a point, the library, `hookq queue --json` and `hookq queue` name
/// the runner holding the lock by its pid; once it ended, the lock is free.
fn the_lock_names_the_runner_holding_it_and_is_free_after(d: Driver) {
    let ws = d.workspace(
        &Config::hooks(
            "after_fail = ['touch started; n=0; while [ ! -e go ] && [ $n -lt 6000 ]; do sleep 0.02; n=$((n + 1)); done']",
        ),
        "",
    );
    let mut q = ws.queue();
    let free = q.lock().unwrap();
    assert!(!free.held && free.holder.is_none(), "{free:?}");
    assert!(free.line.ends_with(": free"), "{}", free.line);

    ws.task_add("t1", "p", "failed.x").ok();
    let run = ws.spawn(&["run"]);
    ws.eventually("the point's command to start", || {
        ws.root().join("started").exists()
    });
    let held = q.lock().unwrap();
    let by = format!(": held by pid {} ", run.pid());
    assert!(held.held, "{held:?}");
    assert!(held.line.contains(&by), "{} lacks {by}", held.line);
    let listing = ws.hookq(&["queue", "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&listing.stdout()).unwrap();
    assert_eq!(v["lock"]["pid"], run.pid(), "{v}");
    let text = ws.hookq(&["queue"]).ok().stdout();
    assert!(text.contains(&by), "{text}");

    std::fs::write(ws.root().join("go"), "").unwrap();
    run.wait_within(crate::support::HANG).ok();
    let after = q.lock().unwrap();
    assert!(!after.held, "{after:?}");
    assert!(!after.line.contains(": held by"), "{}", after.line);
}
