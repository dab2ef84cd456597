//! One runner per queue, across hosts: a session-level advisory lock keyed by the queue, held on
//! the connection of the pass or hub that runs hooks. It goes with its connection: a holder
//! that dies, or whose connection is closed or terminated, lets the next runner take over.
//!
//! The holder names itself twice: in its connection's `application_name` (`pg_stat_activity`)
//! and in a `hookq_runners` row (host, pid, since when) tied to its backend, so that
//! [`holder`] tells the live holder from a past one.

use std::time::{Duration, Instant};

use postgres::{Client, GenericClient};
use serde::Serialize;

use crate::queue::lock::Wait;
use crate::queue::pg::connect::{Prepared, connect};
use crate::queue::pg::error::PgError;
use crate::queue::pg::name::QueueName;
use crate::queue::pg::target::Target;
use crate::queue::store::now_ms;

/// The first key of every advisory lock hookq takes (`"hkq"` in ASCII, shifted): the second is
/// the queue's number, or 0 for migrations.
pub const ADVISORY_CLASS: i32 = 0x686b_7100;

/// How often a waiting [`PgRunnerLock::acquire`] tries again.
const RETRY: Duration = Duration::from_millis(50);

/// This machine's name, as `hostname` prints it.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "unknown".into())
}

/// The queue's number, which keys its lock: created with the queue's row on first use.
pub fn queue_number(client: &mut impl GenericClient, queue: &QueueName) -> Result<i32, PgError> {
    let select = "SELECT number FROM hookq_queues WHERE queue = $1";
    if let Some(row) = client.query_opt(select, &[&queue.as_str()])? {
        return Ok(row.get(0));
    }
    client.execute(
        "INSERT INTO hookq_queues (queue, created_ms) VALUES ($1, $2) ON CONFLICT (queue) DO NOTHING",
        &[&queue.as_str(), &now_ms()],
    )?;
    Ok(client.query_one(select, &[&queue.as_str()])?.get(0))
}

/// The runner lock of one queue, held on a connection of its own. The drain's writes go through
/// [`PgRunnerLock::client`], so that a runner whose connection (and lock) was lost cannot clear
/// anything: its points run again under the next holder.
pub struct PgRunnerLock {
    client: Client,
    queue: QueueName,
    number: i32,
    since_ms: i64,
    /// Statements the drain sends on this connection for every point.
    prepared: Prepared,
}

impl std::fmt::Debug for PgRunnerLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgRunnerLock")
            .field("queue", &self.queue)
            .field("number", &self.number)
            .field("since_ms", &self.since_ms)
            .finish()
    }
}

impl PgRunnerLock {
    /// Opens a connection to `target` and takes `queue`'s runner lock on it, waiting as `wait`
    /// says. `Ok(None)` when another connection held it throughout. The schema must exist.
    pub fn acquire(
        target: &Target,
        queue: &QueueName,
        wait: Wait,
    ) -> Result<Option<Self>, PgError> {
        Self::acquire_while(target, queue, wait, &|| true)
    }

    /// [`PgRunnerLock::acquire`], giving up early (`Ok(None)`) as soon as `keep_waiting`
    /// returns false: it is asked every try, every 50 ms. A waiter keeps the one connection it
    /// opened for as long as it waits, so a hub waiting for another to die costs the server one
    /// idle connection, and takes the lock within 50 ms of its release.
    pub fn acquire_while(
        target: &Target,
        queue: &QueueName,
        wait: Wait,
        keep_waiting: &dyn Fn() -> bool,
    ) -> Result<Option<Self>, PgError> {
        let pid = std::process::id();
        let host = host_name();
        let mut client = connect(target, &format!("hookq runner pid {pid} on {host}"))?;
        let number = queue_number(&mut client, queue)?;
        let deadline = match wait {
            Wait::No => Some(Instant::now()),
            Wait::For(d) => Instant::now().checked_add(d),
            Wait::Forever => None,
        };
        loop {
            let taken: bool = client
                .query_one(
                    "SELECT pg_try_advisory_lock($1, $2)",
                    &[&ADVISORY_CLASS, &number],
                )?
                .get(0);
            if taken {
                break;
            }
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if left.is_some_and(|l| l.is_zero()) || !keep_waiting() {
                return Ok(None);
            }
            std::thread::sleep(left.map_or(RETRY, |l| l.min(RETRY)));
        }
        let since_ms = now_ms();
        client.execute(
            "INSERT INTO hookq_runners (queue, host, pid, since_ms, backend_pid)
             VALUES ($1, $2, $3, $4, pg_backend_pid())
             ON CONFLICT (queue) DO UPDATE SET host = EXCLUDED.host, pid = EXCLUDED.pid,
                 since_ms = EXCLUDED.since_ms, backend_pid = EXCLUDED.backend_pid",
            &[&queue.as_str(), &host, &i64::from(pid), &since_ms],
        )?;
        Ok(Some(Self {
            client,
            queue: queue.clone(),
            number,
            since_ms,
            prepared: Prepared::default(),
        }))
    }

    /// The connection that holds the lock. A statement failing on it because the connection
    /// is gone means the lock is gone too.
    pub fn client(&mut self) -> &mut Client {
        &mut self.client
    }

    /// `sql` prepared on the lock's connection, once per connection.
    pub(crate) fn prepared(
        &mut self,
        sql: &'static str,
    ) -> Result<postgres::Statement, postgres::Error> {
        self.prepared.get(&mut self.client, sql)
    }

    /// The queue.
    pub fn queue(&self) -> &QueueName {
        &self.queue
    }

    /// When the lock was taken, unix ms.
    pub fn since_ms(&self) -> i64 {
        self.since_ms
    }

    /// Whether the lock is still held: its connection answers and the server still lists the
    /// lock as this backend's.
    pub fn check(&mut self) -> Result<(), PgError> {
        let lost = |reason: String| PgError::LockLost {
            queue: self.queue.to_string(),
            reason,
        };
        let held: bool = self
            .client
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted
                     AND pid = pg_backend_pid() AND classid = $1::bigint::oid
                     AND objid = $2::bigint::oid AND objsubid = 2)",
                &[&i64::from(ADVISORY_CLASS), &i64::from(self.number)],
            )
            .map_err(|e| lost(crate::queue::pg::error::error_chain(&e)))?
            .get(0);
        if held {
            Ok(())
        } else {
            Err(lost("the server no longer lists it".into()))
        }
    }

    /// Releases the lock and closes its connection. Dropping the lock does the same, by
    /// closing the connection.
    pub fn release(mut self) -> Result<(), PgError> {
        self.client.execute(
            "SELECT pg_advisory_unlock($1, $2)",
            &[&ADVISORY_CLASS, &self.number],
        )?;
        self.client.close()?;
        Ok(())
    }
}

/// Who holds a queue's runner lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PgHolder {
    /// The holder's server process (`pg_stat_activity.pid`, what `pg_terminate_backend` takes).
    pub backend_pid: i32,
    /// The holder's host, from its row (`None` when it wrote none: another program's lock).
    pub host: Option<String>,
    /// The holder's pid on its host.
    pub pid: Option<u32>,
    /// When it took the lock (RFC 3339).
    pub since: Option<String>,
    /// Its connection's `application_name`, when the server shows it.
    pub application_name: Option<String>,
}

impl std::fmt::Display for PgHolder {
    /// `pid 42 on build-3 since <time>`, or the backend alone for a holder with no row.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.pid, &self.host, &self.since) {
            (Some(pid), Some(host), Some(since)) => {
                write!(f, "pid {pid} on {host} since {since}")
            }
            _ => write!(f, "backend {} (no holder row)", self.backend_pid),
        }
    }
}

/// Who holds `queue`'s runner lock now, from the server's lock table; `None` when no one does.
pub fn holder(
    client: &mut impl GenericClient,
    queue: &QueueName,
) -> Result<Option<PgHolder>, PgError> {
    let row = client.query_opt(
        "SELECT l.pid, r.host, r.pid, r.since_ms, a.application_name
         FROM hookq_queues q
         JOIN pg_locks l ON l.locktype = 'advisory' AND l.granted
             AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
             AND l.classid = $2::bigint::oid AND l.objid = q.number::bigint::oid AND l.objsubid = 2
         LEFT JOIN hookq_runners r ON r.queue = q.queue AND r.backend_pid = l.pid
         LEFT JOIN pg_stat_activity a ON a.pid = l.pid
         WHERE q.queue = $1",
        &[&queue.as_str(), &i64::from(ADVISORY_CLASS)],
    )?;
    Ok(row.map(|r| {
        let since_ms: Option<i64> = r.get(3);
        PgHolder {
            backend_pid: r.get(0),
            host: r.get(1),
            pid: r
                .get::<_, Option<i64>>(2)
                .and_then(|p| u32::try_from(p).ok()),
            since: since_ms
                .and_then(chrono::DateTime::from_timestamp_millis)
                .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
            application_name: r.get(4),
        }
    }))
}
