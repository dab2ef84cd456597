//! Setup on PostgreSQL, never timed: tasks and pending points written by SQL in large
//! transactions, the same rows `pg::record` writes.

use hookq::queue::pg::{PgStore, QueueName, Target};
use postgres::Client;

/// The queue every P figure uses, one per database.
pub const QUEUE: &str = "bench";

/// Opens `url`'s queue [`QUEUE`], creating the schema.
pub fn open(url: &str) -> PgStore {
    PgStore::open(
        &Target::parse(url).expect("a bench URL"),
        QueueName::new(QUEUE).expect("a queue name"),
    )
    .expect("open the queue on PostgreSQL")
}

/// A plain connection for setup and floors.
pub fn client(url: &str) -> Client {
    postgres::Client::connect(url, postgres::NoTls).expect("connect for setup")
}

/// Creates tasks `<prefix>NNNNNNN`, `tasks` of them, in `phase`.
pub fn add_tasks(c: &mut Client, prefix: &str, phase: &str, tasks: usize) {
    let mut tx = c.transaction().expect("begin");
    tx.execute("SET LOCAL synchronous_commit = off", &[])
        .expect("bulk setup");
    tx.execute(
        "INSERT INTO hookq_tasks (queue, id, plan, phase, created_ms, updated_ms)
         SELECT $1, $2 || lpad(i::text, 7, '0'), 'p1', $3, 0, 0
         FROM generate_series(0, $4::bigint - 1) AS i",
        &[&QUEUE, &prefix, &phase, &(tasks as i64)],
    )
    .expect("insert tasks");
    tx.commit().expect("commit tasks");
}

/// Records `points` pending `after_awaiting_human` points over the tasks `<prefix>0000000 ..
/// <prefix>{tasks-1}`, round robin, with ids taken from the sequence `record` takes them from, in transactions of at most 100,000 points; then vacuums and analyzes the tables, as
/// autovacuum would after a load this size (left to autovacuum, that work would land in the
/// middle of a measurement).
pub fn add_points(c: &mut Client, prefix: &str, tasks: usize, points: usize) {
    const CHUNK: usize = 100_000;
    let mut done = 0;
    while done < points {
        let n = CHUNK.min(points - done) as i64;
        let mut tx = c.transaction().expect("begin");
        tx.execute("SET LOCAL synchronous_commit = off", &[])
            .expect("bulk setup");
        tx.execute(
            "INSERT INTO hookq_queues (queue, created_ms) VALUES ($1, 0) ON CONFLICT (queue) DO NOTHING",
            &[&QUEUE],
        )
        .expect("queue row");
        // A run of `n` ids from the sequence recording takes them from (the setup is the
        // database's only writer).
        let first: i64 = tx
            .query_one(
                "SELECT setval('hookq_occurrence_ids', nextval('hookq_occurrence_ids') + $1 - 1) - $1 + 1",
                &[&n],
            )
            .expect("take ids")
            .get(0);
        tx.execute(
            "INSERT INTO hookq_pending_hooks (queue, id, task, point, recorded_ms)
             SELECT $1, $2::bigint + i, $3 || lpad(((i + $5::bigint) % $4::bigint)::text, 7, '0'), 'after_awaiting_human', 0
             FROM generate_series(0, $6::bigint - 1) AS i",
            &[&QUEUE, &first, &prefix, &(tasks as i64), &(done as i64), &n],
        )
        .expect("insert points");
        tx.execute(
            "INSERT INTO hookq_pending_hook_states (queue, hook_id, state)
             SELECT $1, $2::bigint + i, 'review.awaiting_human' FROM generate_series(0, $3::bigint - 1) AS i",
            &[&QUEUE, &first, &n],
        )
        .expect("insert states");
        tx.commit().expect("commit points");
        done += n as usize;
    }
    c.batch_execute(
        "VACUUM (ANALYZE) hookq_queues, hookq_tasks, hookq_pending_hooks, hookq_pending_hook_states",
    )
    .expect("vacuum");
}

/// How many points of the queue are pending.
pub fn pending_count(c: &mut Client) -> i64 {
    c.query_one(
        "SELECT count(*) FROM hookq_pending_hooks WHERE queue = $1",
        &[&QUEUE],
    )
    .expect("count pending")
    .get(0)
}
