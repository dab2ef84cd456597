//! One runner per queue, across hosts: a session-level advisory lock keyed by the queue, held on
//! the session of the pass or hub that runs hooks (a hub's queues on one server share one
//! session, which holds all their locks and renews all their leases in one statement). It goes
//! with its session: a holder that dies,
//! or whose connection is closed or terminated, lets the next runner take over.
//!
//! A session can outlive its holder's usefulness: a host that vanished without closing its
//! connection keeps it until the server's TCP keepalives notice, and a frozen holder (SIGSTOP,
//! a stuck VM), whose kernel still answers, keeps it for ever. So the holder also keeps a
//! [`Lease`] in its `hookq_runners` row, renewed on the lock's own session, and a waiter
//! that finds it run out ends the holder's session (`pg_terminate_backend`), which frees the
//! lock. A holder that could not renew in time starts nothing more ([`PgRunnerLock::live`]).
//!
//! The holder names itself twice: in its connection's `application_name` (`pg_stat_activity`)
//! and in a `hookq_runners` row (host, pid, since when) tied to its backend, so that
//! [`holder`] tells the live holder from a past one.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use postgres::{Client, GenericClient};
use serde::Serialize;

use crate::queue::lock::Wait;
use crate::queue::pg::error::PgError;
use crate::queue::pg::name::QueueName;
use crate::queue::pg::session::{Conn, Session};
use crate::queue::pg::target::Target;
use crate::queue::model::now_ms;

/// The first key of every advisory lock hookq takes (`"hkq"` in ASCII, shifted): the second is
/// the queue's number, or 0 for migrations.
pub const ADVISORY_CLASS: i32 = 0x686b_7100;

/// The first key of the writer tags: a transaction that records a point of a queue first takes
/// the shared transaction-level advisory lock (`WRITER_CLASS`, `hashtext(queue)`), so that the
/// queue's change mark can name the transactions writing that queue alone, and not the writers
/// of every queue (the statements spell it as a number: `1751871745`).
pub const WRITER_CLASS: i32 = ADVISORY_CLASS + 1;

/// The server's clock in unix ms, in SQL: leases are written and compared on the server's
/// clock alone, so the hosts' clocks never matter.
pub(crate) const SERVER_NOW_MS: &str = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint";

/// The runner lock's lease: how long a holder that stopped renewing keeps the queue. A waiter
/// ends the holder's session once its lease has run out, so a frozen holder, or one cut off
/// from the server without its connection closing, is taken over within
/// `duration` plus one second (the waiter's check) plus one drain's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    /// How long a renewal holds. The holder renews every quarter of it.
    pub duration: Duration,
}

impl Lease {
    /// 20 s: with the renewals every 5 s, a holder may miss three before another breaks it.
    pub const DEFAULT: Duration = crate::queue::options::DEFAULT_LEASE;

    /// How often the holder renews: a quarter of the lease.
    pub fn renew_every(&self) -> Duration {
        self.duration / 4
    }
}

impl Default for Lease {
    fn default() -> Self {
        Self {
            duration: Self::DEFAULT,
        }
    }
}

/// Until when this process may start points under the lock: the time its last renewal was
/// sent plus the lease (the server counts from later, when it wrote it), or why it may not.
/// Kept apart from the connection so that it can be read while the connection is busy.
#[derive(Debug)]
pub(crate) struct LeaseClock(Mutex<Result<Instant, String>>);

impl LeaseClock {
    pub(crate) fn new(until: Result<Instant, String>) -> Self {
        Self(Mutex::new(until))
    }

    pub(crate) fn get(&self) -> Result<Instant, String> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    pub(crate) fn set(&self, until: Result<Instant, String>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = until;
    }
}

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

/// The runner lock of one queue: a share of the session holding it, alone (a session of its
/// own, as [`PgRunnerLock::acquire`] opens) or beside other queues' locks (a hub's, one session
/// per server). The drain's writes go through the session's connection
/// ([`PgRunnerLock::client`]), so that a runner whose session (and lock) was lost cannot clear
/// anything: its points run again under the next holder.
pub struct PgRunnerLock {
    session: Arc<Session>,
    queue: QueueName,
    number: i32,
    /// Which of the session's shares this is.
    share: u64,
    since_ms: i64,
    clock: Arc<LeaseClock>,
    took_over: Option<Takeover>,
    released: bool,
}

/// How a lock was taken from another holder ([`PgRunnerLock::took_over`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Takeover {
    /// Whether the waiter ended the holder's session itself, its lease having run out, rather
    /// than the holder letting go (it released the lock, stopped, or lost its connection).
    pub ended_expired: bool,
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

/// The connection of a lock's session, while this thread uses it.
pub struct SessionClient<'a>(MutexGuard<'a, Conn>);

impl std::ops::Deref for SessionClient<'_> {
    type Target = Client;
    fn deref(&self) -> &Client {
        &self.0.client
    }
}

impl std::ops::DerefMut for SessionClient<'_> {
    fn deref_mut(&mut self) -> &mut Client {
        &mut self.0.client
    }
}

impl SessionClient<'_> {
    /// `sql` prepared on the session's connection, once per connection.
    pub(crate) fn prepared(&mut self, sql: &'static str) -> Result<postgres::Statement, postgres::Error> {
        self.0.prepared(sql)
    }
}

impl PgRunnerLock {
    /// Opens a session of its own on `target` and takes `queue`'s runner lock on it, waiting
    /// as `wait` says. `Ok(None)` when another session held it throughout. The schema must
    /// exist.
    pub fn acquire(
        target: &Target,
        queue: &QueueName,
        wait: Wait,
    ) -> Result<Option<Self>, PgError> {
        Self::acquire_while(target, queue, wait, &|| true)
    }

    /// [`PgRunnerLock::acquire_with`] with the default [`Lease`].
    pub fn acquire_while(
        target: &Target,
        queue: &QueueName,
        wait: Wait,
        keep_waiting: &dyn Fn() -> bool,
    ) -> Result<Option<Self>, PgError> {
        Self::acquire_with(target, queue, wait, keep_waiting, Lease::default())
    }

    /// [`PgRunnerLock::acquire`], giving up early (`Ok(None)`) as soon as `keep_waiting`
    /// returns false: it is asked every try, every 50 ms. A waiter keeps the one connection it
    /// opened for as long as it waits, so a hub waiting for another to die costs the server one
    /// idle connection, and takes the lock within 50 ms of its release. Every second it also
    /// looks for a holder whose lease ran out, and ends that holder's session
    /// (`pg_terminate_backend`, which needs the holder's role or `pg_signal_backend`), saying so
    /// in a warning. The lock taken keeps `lease`: renew it ([`PgRunnerLock::renew`]) at least
    /// every quarter of it, as [`crate::queue::pg::PgQueue`] does.
    ///
    /// The lock's connection has TCP keepalives on both sides
    /// ([`crate::queue::pg::connect::session_settings`]), a statement timeout of half the lease
    /// and a lock timeout of a quarter of it (at most 60 s and 30 s), so that no statement
    /// keeps the lease from being renewed in time.
    pub fn acquire_with(
        target: &Target,
        queue: &QueueName,
        wait: Wait,
        keep_waiting: &dyn Fn() -> bool,
        lease: Lease,
    ) -> Result<Option<Self>, PgError> {
        Session::open(target, lease)?.take(queue, wait, keep_waiting)
    }

    /// The share of `session` holding `queue`, as [`Session::take`] hands it.
    pub(crate) fn share(
        session: Arc<Session>,
        queue: QueueName,
        number: i32,
        share: u64,
        since_ms: i64,
        clock: Arc<LeaseClock>,
        took_over: Option<Takeover>,
    ) -> Self {
        Self {
            session,
            queue,
            number,
            share,
            since_ms,
            clock,
            took_over,
            released: false,
        }
    }

    /// `Some` when the lock was taken after waiting for another holder, whoever it was (a
    /// standby hub taking over from one that stopped, died or froze); `None` when it was free
    /// at the first try.
    pub fn took_over(&self) -> Option<Takeover> {
        self.took_over
    }

    /// The lease this lock keeps.
    pub fn lease(&self) -> Lease {
        self.session.lease()
    }

    /// Renews the lease on the lock's connection. The connection is first asked to answer
    /// within a quarter of the lease, so that a connection that went silent (a network cut
    /// with no reset) fails here rather than hang. Fails, and makes [`PgRunnerLock::live`]
    /// fail from then on, when it does not answer, when the lease's row is no longer this
    /// connection's, or when the lease ran out meanwhile.
    pub fn renew(&mut self) -> Result<(), PgError> {
        let renewed = self.live().and_then(|()| self.session.renew(Some(&self.queue)));
        if let Err(e) = &renewed {
            self.clock.set(Err(e.to_string()));
        }
        renewed
    }

    /// Has the session renew this lock's lease with its other locks', every quarter of the
    /// lease, from now on.
    pub(crate) fn renew_with_others(&self) -> Result<(), PgError> {
        self.session.renew_with_others(&self.queue, self.share)
    }

    /// Whether this process may still start points under the lock: its last renewal is not
    /// older than the lease, and none failed. Reads no connection, so it answers while a
    /// statement holds the connection.
    pub fn live(&self) -> Result<(), PgError> {
        lease_live(&self.clock, &self.queue)
    }

    /// The lease's clock, read by [`lease_live`] without the lock's connection.
    pub(crate) fn clock(&self) -> Arc<LeaseClock> {
        Arc::clone(&self.clock)
    }

    /// The connection of the session that holds the lock. A statement failing on it because
    /// the connection is gone means the lock is gone too.
    pub fn client(&mut self) -> SessionClient<'_> {
        SessionClient(self.session.conn())
    }

    /// The session's connection for a write under the lock: refused once the lease is lost,
    /// read after the connection is this thread's, so that no write follows a renewal that
    /// found the lease gone.
    pub(crate) fn conn(&self) -> Result<SessionClient<'_>, PgError> {
        let conn = self.session.conn();
        self.live()?;
        Ok(SessionClient(conn))
    }

    /// The queue.
    pub fn queue(&self) -> &QueueName {
        &self.queue
    }

    /// When the lock was taken, unix ms.
    pub fn since_ms(&self) -> i64 {
        self.since_ms
    }

    /// Whether the lock is still held: its lease is live, its connection answers and the
    /// server still lists the lock as this backend's. Answers within a quarter of the lease
    /// or fails.
    pub fn check(&mut self) -> Result<(), PgError> {
        self.check_held(false)
    }

    /// [`PgRunnerLock::check`], answered from the session's list of its locks when another
    /// queue's check read it a moment ago: a hub of many queues checks each every poll, and one
    /// statement then answers them all.
    pub(crate) fn check_recent(&mut self) -> Result<(), PgError> {
        self.check_held(true)
    }

    fn check_held(&self, recent: bool) -> Result<(), PgError> {
        self.live()?;
        let lost = |reason: String| PgError::LockLost {
            queue: self.queue.to_string(),
            reason,
        };
        let (held, leased) = self
            .session
            .verified(&self.queue, self.number, recent)
            .map_err(lost)?;
        if !held || !self.session.holds(&self.queue, self.share) {
            return Err(lost("the server no longer lists it".into()));
        }
        if !leased {
            return Err(PgError::LeaseExpired {
                queue: self.queue.to_string(),
                reason: "the server's clock passed its end before it was renewed".into(),
            });
        }
        Ok(())
    }

    /// Releases the lock and ends its lease, leaving the session's other locks; a session of
    /// its own closes as the lock drops. Dropping the lock releases it too.
    pub fn release(mut self) -> Result<(), PgError> {
        self.released = true;
        self.session.release(&self.queue, self.share)
    }
}

impl Drop for PgRunnerLock {
    fn drop(&mut self) {
        if !self.released {
            let _ = self.session.release(&self.queue, self.share);
        }
    }
}

/// [`PgRunnerLock::live`] from the lease's clock alone.
pub(crate) fn lease_live(clock: &LeaseClock, queue: &QueueName) -> Result<(), PgError> {
    match clock.get() {
        Ok(until) if Instant::now() < until => Ok(()),
        Ok(until) => Err(PgError::LeaseExpired {
            queue: queue.to_string(),
            reason: format!(
                "not renewed for {} ms past its end: this process was stopped, or could not reach the server",
                Instant::now().saturating_duration_since(until).as_millis()
            ),
        }),
        Err(why) => Err(PgError::LockLost {
            queue: queue.to_string(),
            reason: why,
        }),
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
