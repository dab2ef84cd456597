//! Each queue's own notification channel: a commit wakes its own queue's listeners and no
//! other's, a host of an older hookq that notifies the one legacy channel still wakes a hub, and
//! names near PostgreSQL's 63-byte limit get distinct channels the server takes whole.

use std::time::{Duration, Instant};

use hookq::exec::Stop;
use hookq::queue::MoveFacts;
use hookq::queue::pg::postgres::fallible_iterator::FallibleIterator;
use hookq::queue::pg::postgres::types::Type;
use hookq::queue::pg::{self, PgStore, QueueName, Target, record};
use hookq::queue::watch::Watcher;

use super::cluster::cluster;
use super::{fresh, open, ph, plan, task};
use crate::support::HANG;

/// A channel that no queue's is: what a test sends last, so that once it arrives every
/// notification committed before it has arrived too (PostgreSQL delivers them to a listener in
/// the order their transactions committed).
pub(crate) const MARKER: &str = "test marker";

/// The notifications `listener` receives up to the marker, as `(channel, payload)`.
pub(crate) fn until_marker(listener: &mut PgStore) -> Vec<(String, String)> {
    let mut got = Vec::new();
    let started = Instant::now();
    let mut notes = listener.client().notifications();
    loop {
        let left = HANG.saturating_sub(started.elapsed());
        let n = notes
            .timeout_iter(left)
            .next()
            .unwrap()
            .expect("the marker arrives");
        if n.channel() == MARKER {
            return got;
        }
        got.push((n.channel().to_owned(), n.payload().to_owned()));
    }
}

/// Sends the marker, committed after everything `client` committed before.
pub(crate) fn mark(client: &mut pg::postgres::Client) {
    client
        .batch_execute(&format!("NOTIFY \"{MARKER}\""))
        .unwrap();
}

/// A commit on queue A, through `PgStore::write` or a shared `Notifier`, notifies A's channel
/// only: a connection listening on A's, B's and the legacy channel gets A's notification before
/// the marker sent after the commit, and nothing on B's or the legacy one. A hub listens on its
/// own queue's channel and the legacy one, nothing else.
#[test]
fn a_commit_wakes_its_own_queues_listeners_and_no_other() {
    if crate::postgres::without_postgres("a_commit_wakes_its_own_queues_listeners_and_no_other") {
        return;
    }
    let (db, mut a) = fresh("acme/a");
    let b = QueueName::new("acme/b").unwrap();
    let mut listener = open(&db, "acme/a");
    listener
        .client()
        .batch_execute(&format!(
            "LISTEN \"hookq:acme/a\"; LISTEN \"{}\"; LISTEN {}; LISTEN \"{MARKER}\"",
            b.channel(),
            pg::LEGACY_CHANNEL
        ))
        .unwrap();
    let only_a = vec![("hookq:acme/a".to_owned(), "acme/a".to_owned())];

    a.write(|tx, q| record::add_task(tx, q, &task("t"), &plan("p"), &ph("failed.x")))
        .unwrap();
    mark(a.client());
    assert_eq!(until_marker(&mut listener), only_a, "PgStore::write");

    let notifier = pg::Notifier::new(&Target::parse(&cluster().url(&db, "")).unwrap());
    let mut through = open(&db, "acme/a").with_notifier(notifier.clone());
    through
        .write(|tx, q| record::move_task(tx, q, &task("t"), &ph("failed.y"), &MoveFacts::default()))
        .unwrap();
    assert!(notifier.flush(HANG));
    mark(a.client());
    assert_eq!(until_marker(&mut listener), only_a, "a Notifier");

    // The hub's listening connection, its watcher (its poll an hour, so that only a
    // notification wakes it), hears nothing on B's channel or the legacy one naming B, and
    // wakes on A's.
    let mut watcher = Watcher::postgres(a.target().clone(), a.queue().clone()).unwrap();
    watcher.set_poll(Duration::from_secs(3600));
    let never = Stop::new();
    a.client()
        .batch_execute(&format!(
            "NOTIFY \"{}\", 'acme/b'; SELECT pg_notify('{}', 'acme/b')",
            b.channel(),
            pg::LEGACY_CHANNEL
        ))
        .unwrap();
    let quiet = Instant::now() + Duration::from_millis(300);
    while Instant::now() < quiet {
        assert!(
            !watcher.step(&never),
            "woken by another queue's notification"
        );
    }
    a.client()
        .batch_execute("NOTIFY \"hookq:acme/a\", 'acme/a'")
        .unwrap();
    woken(&mut watcher);
}

/// Steps `watcher` until it tells of a change; fails on a hang.
fn woken(watcher: &mut Watcher) {
    let never = Stop::new();
    let started = Instant::now();
    while !watcher.step(&never) {
        assert!(started.elapsed() < HANG, "never woken");
    }
}

/// A host of an older hookq notifies `hookq` with the queue's name: a hub still wakes on it at
/// once (its poll set to an hour, so only the notification can wake it).
#[test]
fn an_old_style_notification_on_hookq_still_wakes_a_hub() {
    if crate::postgres::without_postgres("an_old_style_notification_on_hookq_still_wakes_a_hub") {
        return;
    }
    let (db, s) = fresh("legacy");
    let mut old_host = open(&db, "legacy");
    let mut watcher = Watcher::postgres(s.target().clone(), s.queue().clone()).unwrap();
    watcher.set_poll(Duration::from_secs(3600));
    assert!(!watcher.step(&Stop::new()), "nothing changed yet");

    // The old host's commit, with no notification of the new kind.
    let q = old_host.queue().clone();
    let mut tx = old_host.client().transaction().unwrap();
    record::add_task(&mut tx, &q, &task("t"), &plan("p"), &ph("failed.x")).unwrap();
    tx.commit().unwrap();
    // As an older hookq's `notify_hubs` sent it.
    old_host
        .client()
        .batch_execute("SELECT pg_notify('hookq', 'legacy')")
        .unwrap();
    woken(&mut watcher);
}

/// The rule of docs/postgres.md, as SQL a host in another language can run: the first fenced
/// block there that computes a channel.
fn documented_rule() -> String {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/postgres.md")).unwrap();
    let block = doc
        .split("```text\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap())
        .find(|b| b.contains("sha256("))
        .expect("docs/postgres.md shows the channel rule as SQL");
    block.trim().trim_end_matches(';').to_owned()
}

/// Names of 56 to 200 bytes, some alike but for their end: each channel is at most 63 bytes,
/// all are distinct, the server takes each whole (`LISTEN` on it, a `pg_notify` to it
/// delivered under the very name), and each is what the documented SQL computes.
#[test]
fn names_near_the_63_byte_limit_map_to_distinct_valid_channels() {
    if crate::postgres::without_postgres(
        "names_near_the_63_byte_limit_map_to_distinct_valid_channels",
    ) {
        return;
    }
    let (_db, mut listener) = fresh("limits");
    let stem = "github.com/an-organisation/a-repository-with-a-long-name";
    let mut names: Vec<String> = (50..=80)
        .map(|len| {
            format!("{stem}{}", "x".repeat(200))
                .split_at(len)
                .0
                .to_owned()
        })
        .collect();
    names.push(format!("{stem}-one-{}", "y".repeat(60)));
    names.push(format!("{stem}-two-{}", "y".repeat(60)));
    names.push("Q".repeat(pg::name::MAX_QUEUE_NAME));
    let rule = documented_rule();
    let mut channels = std::collections::HashSet::new();
    for name in &names {
        let queue = QueueName::new(name.as_str()).unwrap();
        let channel = queue.channel();
        assert!(channel.len() <= pg::MAX_CHANNEL, "{channel}");
        assert!(channels.insert(channel.clone()), "{name}: {channel} twice");
        let sql: String = listener
            .client()
            .query_typed(&format!("SELECT {rule}"), &[(name, Type::TEXT)])
            .unwrap()[0]
            .get(0);
        assert_eq!(sql, channel, "the documented SQL for {name}");
        listener
            .client()
            .batch_execute(&format!("LISTEN \"{channel}\""))
            .unwrap();
        listener
            .client()
            .execute("SELECT pg_notify($1, $2)", &[&channel, name])
            .unwrap();
        let n = listener
            .client()
            .notifications()
            .timeout_iter(HANG)
            .next()
            .unwrap()
            .expect("delivered");
        assert_eq!(
            (n.channel(), n.payload()),
            (channel.as_str(), name.as_str())
        );
    }
}
