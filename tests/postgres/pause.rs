//! The pause on PostgreSQL is the queue's: one queue of a database paused leaves another
//! running, and the runner's start mark reads it. (What a pause does to `run` and a hub, the
//! same on both databases, is `conformance::pause`.)

use hookq::queue::pg::{PgStore, store};

use crate::postgres::cli::open;

/// `(task, passes)` of the queue's pending points, in order.
fn pending(s: &mut PgStore) -> Vec<(String, i64)> {
    s.pending(0, 1000, None)
        .unwrap()
        .into_iter()
        .map(|r| (r.task.to_string(), r.passes))
        .collect()
}

#[test]
fn the_pause_is_the_queues_and_the_start_mark_reads_it() {
    if crate::postgres::without_postgres("the_pause_is_the_queues_and_the_start_mark_reads_it") {
        return;
    }
    use hookq::queue::pg::record;
    use hookq::queue::{Mark, MoveFacts, Phase, PlanId, TaskId, Wait};

    let db = crate::postgres::cluster::cluster().database();
    let url = crate::postgres::cluster::cluster().url(&db, "");
    let (mut s, mut other) = (open(&url, "q"), open(&url, "other"));
    for store in [&mut s, &mut other] {
        store
            .write(|tx, q| {
                let t = TaskId::new("t1").unwrap();
                let p = PlanId::new("p").unwrap();
                record::add_task(tx, q, &t, &p, &Phase::new("failed.x").unwrap())?;
                record::move_task(
                    tx,
                    q,
                    &t,
                    &Phase::new("review.rework_pending").unwrap(),
                    &MoveFacts::default(),
                )
            })
            .unwrap();
    }
    // The queue's watcher sees the pause by its mark alone: the pause below notifies no one.
    let mut watcher =
        hookq::queue::watch::Watcher::postgres(s.target().clone(), s.queue().clone()).unwrap();
    watcher.set_poll(std::time::Duration::ZERO);
    let never = hookq::exec::Stop::new();
    assert!(!watcher.step(&never), "nothing changed yet");
    let paused = {
        let q = s.queue().clone();
        let mut tx = s.client().transaction().unwrap();
        let paused = store::pause(&mut tx, &q).unwrap();
        tx.commit().unwrap();
        paused
    };
    assert!(paused.changed);
    assert!(
        watcher.step(&never),
        "the pause left the queue's mark as it was"
    );
    let again = s.write(store::pause).unwrap();
    assert_eq!((again.changed, again.since_ms), (false, paused.since_ms));
    assert_eq!(s.stats().unwrap().paused_since_ms, Some(paused.since_ms));

    // The runner's mark refuses to start a point of the paused queue, and counts nothing.
    let rows = s.pending(0, 10, None).unwrap();
    let mut lock = s.lock(Wait::No).unwrap().unwrap();
    assert_eq!(
        store::mark_started(&mut lock, &rows[0]).unwrap(),
        Mark::Paused
    );
    assert_eq!(pending(&mut s), [("t1".into(), 0), ("t1".into(), 0)]);
    // Another queue of the database runs on.
    assert_eq!(other.paused().unwrap(), None);
    let others = other.pending(0, 10, None).unwrap();
    let mut other_lock = other.lock(Wait::No).unwrap().unwrap();
    assert_eq!(
        store::mark_started(&mut other_lock, &others[0]).unwrap(),
        Mark::Started
    );

    let resumed = s.write(store::resume).unwrap().unwrap();
    assert_eq!(resumed.since_ms, paused.since_ms);
    assert_eq!(s.write(store::resume).unwrap(), None);
    assert_eq!(
        store::mark_started(&mut lock, &rows[0]).unwrap(),
        Mark::Started
    );
    assert_eq!(pending(&mut s), [("t1".into(), 1), ("t1".into(), 0)]);
}
