//! The statements that read queues' marks for the listener
//! ([`crate::queue::pg::listener`]): what a watcher of a PostgreSQL queue compares from one read
//! to the next.

/// How many of a queue's oldest pending points [`MARKS`] looks at for starts.
pub(crate) const HEAD: i64 = 1024;

/// The columns of [`MARKS`] but its last, the queue's writers.
macro_rules! marks_columns {
    () => {
        "SELECT q.queue,
        (SELECT MAX(p.id) FROM hookq_pending_hooks p WHERE p.queue = q.queue),
        (SELECT MAX(h.id) FROM hookq_hook_history h WHERE h.queue = q.queue),
        (SELECT s.paused_ms FROM hookq_queues s WHERE s.queue = q.queue),
        (SELECT r.host || ' ' || r.pid || ' ' || r.since_ms FROM hookq_runners r
         WHERE r.queue = q.queue),
        head.started, head.passes, "
    };
}

/// The queues [`MARKS`] reads (`$1`), with their [`HEAD`] (`$2`).
macro_rules! marks_from {
    () => {
        " FROM unnest($1::text[]) AS q(queue)
    CROSS JOIN LATERAL (
        SELECT MAX(o.last_started_ms) AS started, SUM(o.passes)::BIGINT AS passes
        FROM (SELECT p.last_started_ms, p.passes FROM hookq_pending_hooks p
              WHERE p.queue = q.queue ORDER BY p.id LIMIT $2) o) head"
    };
}

/// The writer tags held on the server by other connections' transactions, as `pg_locks l`
/// rows ([`WRITER_CLASS`](crate::queue::pg::lock::WRITER_CLASS), key `hashtext(queue)`).
macro_rules! writer_locks {
    () => {
        "FROM pg_locks l
         WHERE l.locktype = 'advisory' AND l.classid = 1751871745::oid AND l.objsubid = 2
           AND l.pid IS DISTINCT FROM pg_backend_pid()"
    };
}
pub(crate) use writer_locks;

/// The transactions now recording on queue `$q` (an SQL expression), or `NULL` for none. The
/// lock table is read only when a writer holds the queue's tag: the tag is first tried
/// exclusively, which succeeds only when no transaction holds it (the set is then empty, as the
/// read would say) and is let go as the transaction ends, so a writer that comes meanwhile
/// waits that long. A read of the lock table costs about a microsecond for each lock held on
/// the server, and a hub's session holds one for each of its queues (0.73 ms against 0.21 ms
/// for the whole mark at 500 queues). Hence only in a statement of its own transaction, and
/// only for a few queues at once. Its expansion names [`writer_locks`], which a caller imports
/// with it.
macro_rules! queue_writers {
    ($q:literal) => {
        concat!(
            "CASE WHEN pg_try_advisory_xact_lock(1751871745, hashtext(", $q, ")) THEN NULL ELSE
            (SELECT string_agg(l.virtualtransaction, ',' ORDER BY l.virtualtransaction) ",
            writer_locks!(),
            " AND l.objid = (hashtext(", $q, ")::bigint & 4294967295)::oid) END"
        )
    };
}
pub(crate) use queue_writers;

/// The marks of the queues `$1`, one row each: what a view of a queue shows. A queue's mark
/// differs from one read earlier when a point was recorded (the highest pending id), cleared,
/// dropped or parked (the highest history id), started (the latest start and the passes counted
/// among the [`HEAD`] oldest pending points: a pass starts points in the order they were
/// recorded, so a point it starts is among them unless that many wait before it), when the
/// queue was paused or resumed, or its runner lock changed hands. A start is an `UPDATE` that
/// notifies nobody, so only a poll sees it. It also names the transactions now recording on the
/// queue on other connections (their writer tags,
/// [`WRITER_CLASS`](crate::queue::pg::lock::WRITER_CLASS), read once for all the queues), so
/// that a point whose id was taken before a read and committed after it (a lower id than one
/// seen already) changes it when its transaction ends; writers of other queues leave it as it
/// is (but for a rare clash of two names' hashes, which costs a read that finds nothing). Four
/// index probes and one short index range scan a queue and one read of the lock table, whatever
/// the queues hold (0.4 ms of the server's time for one queue with 1,000,000 points pending);
/// prepared once per connection.
pub(crate) const MARKS: &str = concat!(
    "WITH w AS MATERIALIZED (
        SELECT l.objid, string_agg(l.virtualtransaction, ',' ORDER BY l.virtualtransaction)
            AS writers ",
    writer_locks!(),
    " GROUP BY l.objid) ",
    marks_columns!(),
    "w.writers",
    marks_from!(),
    " LEFT JOIN w ON w.objid = (hashtext(q.queue)::bigint & 4294967295)::oid"
);

/// [`MARKS`] for the few queues a read asked for answers ([`FEW`] at most), each queue's
/// writers looked for in the lock table only when some transaction holds its tag
/// ([`queue_writers`]), as the hub's [`change_mark`](crate::queue::pg::store::change_mark)
/// does: every hub's settle after a pass would otherwise read the whole table. Each tag tried
/// is held until the statement ends: too long for a read of every queue.
pub(crate) const MARKS_FEW: &str = concat!(
    marks_columns!(),
    queue_writers!("q.queue"),
    marks_from!()
);

/// How many queues a read answers with [`MARKS_FEW`].
pub(crate) const FEW: usize = 8;

/// One row of [`MARKS`] as a mark: only equality means anything.
pub(crate) fn mark_of(row: &postgres::Row) -> i64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    row.get::<_, Option<i64>>(1).hash(&mut h);
    row.get::<_, Option<i64>>(2).hash(&mut h);
    row.get::<_, Option<i64>>(3).hash(&mut h);
    row.get::<_, Option<String>>(4).hash(&mut h);
    row.get::<_, Option<i64>>(5).hash(&mut h);
    row.get::<_, Option<i64>>(6).hash(&mut h);
    row.get::<_, Option<String>>(7).hash(&mut h);
    h.finish() as i64
}
