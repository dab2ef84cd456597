//! The library's `Queue` on PostgreSQL: the calls `hookq queue`, `task` and the web view make,
//! narrowed and paged as on SQLite, with each history row naming the host that wrote it.

use hookq::queue::store::{HistoryFilter, PendingFilter};
use hookq::queue::{DrainIfFree, Error, Options, Queue};
use hookq::{MoveFacts, Phase, PlanId, Stop, TaskId, Workspace};

use crate::cli::pg_workspace_with;
use crate::support::queue::Config;

fn open(root: &std::path::Path) -> Queue {
    let ws = Workspace::at(root);
    // The config names the database: no environment override.
    let opts = Options {
        database_url: None,
        ..Options::default()
    };
    Queue::open_with(&ws, opts).expect("open the queue")
}

#[test]
fn the_library_queue_filters_pages_and_names_the_host_on_postgres() {
    if crate::without_postgres("the_library_queue_filters_pages_and_names_the_host_on_postgres") {
        return;
    }
    let hooks = "after_fail = ['true']\nafter_rework = ['false']\n";
    let (ws, _db, _url) = pg_workspace_with(&Config::hooks(hooks), "");
    let mut q = open(ws.root());
    assert!(q.is_postgres());
    assert!(q.place().starts_with("queue q on "), "{}", q.place());
    assert!(q.shared_logs().is_some());
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
            point: Some("after_rework".into()),
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
            point: Some("after_rework".into()),
            limit: 3,
            ..PendingFilter::default()
        })
        .unwrap();
    let second = q
        .pending(&PendingFilter {
            point: Some("after_rework".into()),
            after: first.last().unwrap().id,
            limit: 3,
            ..PendingFilter::default()
        })
        .unwrap();
    assert_eq!(first.len() + second.len(), 4);
    assert!(second[0].id > first[2].id);
    let of_t1 = q
        .pending(&PendingFilter {
            task: Some("t1".into()),
            point: Some("after_rework".into()),
            limit: 10,
            ..PendingFilter::default()
        })
        .unwrap();
    assert_eq!(of_t1.len(), 1);

    // A drop of what is not pending is "not found", naming the queue.
    let gone = q.drop_entry(999_999).unwrap_err();
    assert!(matches!(gone, Error::NoEntry { id: 999_999, .. }), "{gone}");
    assert!(gone.to_string().contains("queue q on "), "{gone}");
    let dropped = q.drop_entry(of_t1[0].id).unwrap();
    assert_eq!(dropped.entry.task, "t1");
    assert!(dropped.note.is_none());

    let DrainIfFree::Ran { report, .. } = q.drain_if_free(&Stop::new()) else {
        panic!("the runner lock was free");
    };
    assert_eq!(report.cleared, all.len() - 1);

    let mut q = open(ws.root());
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_owned();
    let failed = q
        .history(&HistoryFilter {
            outcome: Some("failed".into()),
            host: Some(host.clone()),
            limit: 100,
            ..HistoryFilter::default()
        })
        .unwrap();
    assert_eq!(failed.len(), 3, "{failed:?}");
    assert!(failed.iter().all(|h| h.point == "after_rework"));
    assert!(failed.iter().all(|h| h.host.as_deref() == Some(&*host)));
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
            outcome: Some("dropped".into()),
            limit: 10,
            ..HistoryFilter::default()
        })
        .unwrap();
    assert_eq!(dropped_row.len(), 1);
    assert_eq!(dropped_row[0].task, "t1");

    // The overview's chart and slowest hooks: counts per interval, and the longest runs.
    let since = hookq::queue::store::now_ms() - 3_600_000;
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
