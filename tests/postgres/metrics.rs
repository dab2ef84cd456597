//! `hookq hub --metrics ADDR` on PostgreSQL: besides the hooks it runs, the hub counts its
//! takeover of the runner lock from another holder and its reconnections after the server ended
//! its connections.

use std::time::Duration;

use hookq::queue::Wait;
use hookq::queue::pg::{Lease, PgRunnerLock, QueueName, Takeover, Target};
use rustix::process::Signal;

use crate::postgres::cli::{open, pg_workspace_with};
use crate::postgres::cluster::cluster;
use crate::support::queue::{Config, Running, Ws};

const HOOKS: &str = r#"after_fail = ['echo "fail $ARC_TASK" >> ran']"#;

/// Starts `hookq hub --metrics 127.0.0.1:0` and reads the URL it prints.
fn hub_with_metrics(ws: &Ws) -> (Running, String) {
    let mut hub = ws.spawn_env(
        &["hub", "--metrics", "127.0.0.1:0"],
        &[("HOOKQ_LOG", "info")],
    );
    let mut url = None;
    ws.eventually("the hub to say where its metrics are", || {
        assert!(!hub.exited(), "the hub exited: {}", hub.stderr_so_far());
        url = hub
            .stdout_so_far()
            .lines()
            .find_map(|l| l.strip_prefix("hookq hub: serving metrics at "))
            .map(str::to_owned);
        url.is_some()
    });
    (hub, url.unwrap())
}

/// The value of the one sample `series` (its name and labels as exposed) at `url`.
fn value(url: &str, series: &str) -> f64 {
    let text = ureq::get(url)
        .call()
        .unwrap()
        .body_mut()
        .read_to_string()
        .unwrap();
    let found: Vec<f64> = text
        .lines()
        .filter_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .map(|v| v.parse().unwrap())
        .collect();
    assert_eq!(found.len(), 1, "{series} in\n{text}");
    found[0]
}

const RELEASED: &str = r#"hookq_hub_lock_takeovers_total{how="released"}"#;
const EXPIRED: &str = r#"hookq_hub_lock_takeovers_total{how="lease_expired"}"#;
const RECONNECTS: &str = "hookq_hub_reconnects_total";
const FAIL_OK: &str = r#"hookq_hub_hooks_total{point="after_fail",outcome="ok"}"#;

#[test]
fn a_hub_counts_its_takeover_its_reconnections_and_its_hooks() {
    if crate::postgres::without_postgres(
        "a_hub_counts_its_takeover_its_reconnections_and_its_hooks",
    ) {
        return;
    }
    let (ws, db, url) = pg_workspace_with(&Config::hooks(HOOKS), "");
    // Another holder has the lock: the hub waits for it, serving its metrics meanwhile.
    let s = open(&url, "q");
    let held = s.lock(Wait::No).unwrap().expect("free");
    let (hub, metrics) = hub_with_metrics(&ws);
    // Waiting for the lock on a connection of its own, named after it, which has tried it.
    let mut watch = open(&url, "q");
    let name = format!("hookq runner pid {} %", hub.pid());
    ws.eventually("the hub to wait for the lock", || {
        !watch
            .client()
            .query(
                "SELECT pid FROM pg_stat_activity WHERE application_name LIKE $1
                 AND query LIKE '%pg_try_advisory_lock%'",
                &[&name],
            )
            .unwrap()
            .is_empty()
    });
    assert_eq!(value(&metrics, RELEASED), 0.0);
    assert_eq!(value(&metrics, "hookq_hub_passes_total"), 0.0);

    held.release().unwrap();
    ws.eventually("the hub to count its takeover", || {
        value(&metrics, RELEASED) == 1.0
    });
    ws.task_add("t1", "p", "failed.x").ok();
    ws.eventually("the hub to run and count t1's point", || {
        value(&metrics, FAIL_OK) == 1.0
    });
    // The count comes as the command ends, before the pass clears the point: ending the hub's
    // connections before that clear commits would rightly run the point again.
    ws.eventually("the hub to clear t1's point", || ws.pending().is_empty());
    assert_eq!(ws.lines("ran"), ["fail t1"]);
    assert_eq!(value(&metrics, RECONNECTS), 0.0);

    // The server ends the hub's connections: it connects again, and says so in its count.
    let mut admin = cluster().admin(&db);
    let ended = admin
        .execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE datname = current_database() AND application_name LIKE 'hookq %'",
            &[],
        )
        .unwrap();
    assert!(ended >= 1, "the hub holds its lock's connection");
    ws.eventually("the hub to count its reconnection", || {
        value(&metrics, RECONNECTS) == 1.0
    });
    ws.task_add("t2", "p", "failed.y").ok();
    ws.eventually("the hub to run and count t2's point", || {
        value(&metrics, FAIL_OK) == 2.0
    });
    ws.eventually("the hub to clear t2's point", || ws.pending().is_empty());
    assert_eq!(ws.lines("ran"), ["fail t1", "fail t2"]);
    // No lease ran out: nobody was ended for one.
    assert_eq!(value(&metrics, EXPIRED), 0.0);
    assert!(value(&metrics, RELEASED) >= 1.0);

    hub.signal(Signal::TERM);
    let out = hub.wait_within(crate::support::HANG);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
}

/// A lock taken after another holder let go says so; one taken by ending a holder whose lease
/// ran out says that.
#[test]
fn a_lock_taken_after_another_holder_says_how_it_took_over() {
    if crate::postgres::without_postgres("a_lock_taken_after_another_holder_says_how_it_took_over")
    {
        return;
    }
    let (ws, _db, url) = pg_workspace_with(&Config::hooks(HOOKS), "");
    let s = open(&url, "q");
    let first = s.lock(Wait::No).unwrap().expect("free");
    assert_eq!(first.took_over(), None);
    let waiter = std::thread::spawn({
        let url = url.clone();
        move || {
            let s = open(&url, "q");
            let lock = s.lock(Wait::Forever).unwrap().expect("taken");
            lock.took_over()
        }
    });
    // Released once the waiter has tried it (its connection's last statement says so).
    let mut watch = open(&url, "q");
    ws.eventually("the waiter to try the lock", || {
        let tried: i64 = watch
            .client()
            .query_one(
                "SELECT COUNT(*) FROM pg_stat_activity
                 WHERE datname = current_database() AND pid <> pg_backend_pid()
                   AND query LIKE '%pg_try_advisory_lock%'",
                &[],
            )
            .unwrap()
            .get(0);
        tried > 0
    });
    first.release().unwrap();
    assert_eq!(
        waiter.join().unwrap(),
        Some(Takeover {
            ended_expired: false
        })
    );
}

#[test]
fn a_lock_taken_from_a_holder_whose_lease_ran_out_says_it_ended_it() {
    if crate::postgres::without_postgres(
        "a_lock_taken_from_a_holder_whose_lease_ran_out_says_it_ended_it",
    ) {
        return;
    }
    let (_ws, _db, url) = pg_workspace_with(&Config::hooks(HOOKS), "");
    // Opening the queue creates its schema.
    let _store = open(&url, "q");
    let target = Target::parse(&url).unwrap();
    let q = QueueName::new("q").unwrap();
    // Never renewed: its lease runs out after 300 ms, and the waiter ends its session.
    let short = Lease {
        duration: Duration::from_millis(300),
    };
    let frozen = PgRunnerLock::acquire_with(&target, &q, Wait::No, &|| true, short)
        .unwrap()
        .expect("free");
    let taken = PgRunnerLock::acquire_with(
        &target,
        &q,
        Wait::For(Duration::from_secs(60)),
        &|| true,
        Lease::default(),
    )
    .unwrap()
    .expect("taken once the lease ran out");
    assert_eq!(
        taken.took_over(),
        Some(Takeover {
            ended_expired: true
        })
    );
    assert!(frozen.live().is_err());
}
