//! Pruning a queue's history on PostgreSQL: the rows that finished long ago, and the hook logs
//! on this host that nothing names any more.

use crate::queue::pg::error::PgError;
use crate::queue::pg::lock::PgRunnerLock;
use crate::queue::pg::store::this_host;

/// Deletes `queue`'s history rows that finished before `cutoff_ms`, at most `limit`, oldest
/// first; how many went. Before the rows go, `remove_logs` is called with each task whose logs
/// on this host nothing will refer to: no pending point of the task and no other history row of
/// it that this host wrote. A task whose last rows of another host go is left to that host in
/// `hookq_pruned_logs`; this host takes its own from there too, at most `limit` a pass.
///
/// The logs go before the rows and the hand-overs are deleted, so a runner killed between the
/// two leaves rows whose logs are gone (pruned again by the next pass), never logs that nothing
/// names.
pub fn prune_history(
    lock: &mut PgRunnerLock,
    cutoff_ms: i64,
    limit: usize,
    remove_logs: &mut dyn FnMut(&str),
) -> Result<usize, PgError> {
    let queue = lock.queue().clone();
    let q = queue.as_str();
    let host = this_host();
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut conn = lock.conn()?;
    let client = &mut *conn;
    // One round trip when there is nothing to do: the rows to go, and the tasks handed to
    // this host.
    let mut ids: Vec<i64> = Vec::new();
    let mut handed: Vec<String> = Vec::new();
    for r in client.query(
        "(SELECT id, NULL::text FROM hookq_hook_history WHERE queue = $1 AND finished_ms < $2
              ORDER BY finished_ms, id LIMIT $3)
         UNION ALL
         (SELECT NULL::bigint, task FROM hookq_pruned_logs WHERE queue = $1 AND host = $4
              ORDER BY task LIMIT $3)",
        &[&q, &cutoff_ms, &limit, &host],
    )? {
        match (r.get::<_, Option<i64>>(0), r.get::<_, Option<String>>(1)) {
            (Some(id), _) => ids.push(id),
            (None, Some(task)) => handed.push(task),
            (None, None) => {}
        }
    }
    if ids.is_empty() && handed.is_empty() {
        return Ok(0);
    }
    // Each task and host whose every row is among those going (rows from before hosts were
    // kept name none, and their logs are left where they are).
    let (mut mine, mut theirs): (Vec<String>, Vec<(String, String)>) = (Vec::new(), Vec::new());
    if !ids.is_empty() {
        for r in client.query(
            "WITH doomed AS MATERIALIZED (
                 SELECT task, host FROM hookq_hook_history
                 WHERE queue = $1 AND id = ANY($2) AND host IS NOT NULL)
             SELECT d.task, d.host FROM doomed d GROUP BY d.task, d.host
             HAVING COUNT(*) = (SELECT COUNT(*) FROM hookq_hook_history h
                                WHERE h.queue = $1 AND h.task = d.task AND h.host = d.host)",
            &[&q, &ids],
        )? {
            let (task, of): (String, String) = (r.get(0), r.get(1));
            if of == host {
                mine.push(task);
            } else {
                theirs.push((of, task));
            }
        }
    }
    // A task handed over may have run here again since, or have points pending: its logs stay
    // (they go when its new rows do).
    let asked: Vec<&str> = mine.iter().chain(&handed).map(String::as_str).collect();
    if !asked.is_empty() {
        let referenced: std::collections::HashSet<String> = client
            .query(
                "SELECT task FROM hookq_pending_hooks WHERE queue = $1 AND task = ANY($2)
                 UNION
                 SELECT task FROM hookq_hook_history
                 WHERE queue = $1 AND host = $3 AND task = ANY($4) AND NOT (id = ANY($5))",
                &[&q, &asked, &host, &handed, &ids],
            )?
            .into_iter()
            .map(|r| r.get(0))
            .collect();
        for task in asked.iter().filter(|t| !referenced.contains(**t)) {
            remove_logs(task);
        }
    }
    let (hosts, tasks): (Vec<String>, Vec<String>) = theirs.into_iter().unzip();
    let mut tx = client.transaction()?;
    let n = tx.execute(
        "DELETE FROM hookq_hook_history WHERE queue = $1 AND id = ANY($2)",
        &[&q, &ids],
    )?;
    if !hosts.is_empty() {
        tx.execute(
            "INSERT INTO hookq_pruned_logs (queue, host, task)
             SELECT $1, h, t FROM unnest($2::text[], $3::text[]) AS u(h, t)
             ON CONFLICT DO NOTHING",
            &[&q, &hosts, &tasks],
        )?;
    }
    if !handed.is_empty() {
        tx.execute(
            "DELETE FROM hookq_pruned_logs WHERE queue = $1 AND host = $2 AND task = ANY($3)",
            &[&q, &host, &handed],
        )?;
    }
    tx.commit()?;
    Ok(n as usize)
}
