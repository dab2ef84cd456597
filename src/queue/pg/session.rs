//! The lock session: one connection that holds the runner locks of many queues, each a
//! session-level advisory lock, with a lease row per queue in `hookq_runners`.
//!
//! A hub's queues on one server share one session ([`crate::queue::pg::server`]); a pass, or a
//! host that takes one lock by hand ([`PgRunnerLock::acquire`]), opens a session of its own
//! for its one queue. Either way the same rules hold:
//!
//! - **Taking** a queue is `pg_try_advisory_lock` on the session. Every queue waited for is
//!   tried in one statement, at most every [`RETRY`] whatever their number, and every
//!   [`BREAK_CHECK`] one statement looks for holders whose lease ran out, to end their
//!   sessions. The session never takes a lock it holds already (advisory locks nest): two
//!   waiters of one queue in one process take turns.
//! - **Renewing** is one statement for every held queue, every quarter of the lease, on a
//!   thread of the session's. A queue missing from its answer lost its lease (its row was
//!   changed or removed, or ran out): only that queue's lock goes, let go of at once; the
//!   others stay. A renewal that fails, or a session the server ended, loses every queue.
//! - **Releasing** one queue unlocks it and ends its lease, leaving the others.
//!
//! The drain's writes go through the session's connection, so that a session lost clears
//! nothing: its points run again under the next holder.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError, Weak};
use std::time::{Duration, Instant};

use postgres::Client;

use crate::queue::lock::Wait;
use crate::queue::model::now_ms;
use crate::queue::pg::connect::{LOCK_TIMEOUT, Prepared, STATEMENT_TIMEOUT, connect, guard_session};
use crate::queue::pg::error::{PgError, error_chain};
use crate::queue::pg::lock::{
    ADVISORY_CLASS, Lease, LeaseClock, PgRunnerLock, SERVER_NOW_MS, Takeover, host_name,
    queue_number,
};
use crate::queue::pg::name::QueueName;
use crate::queue::pg::target::Target;

/// How often the queues a session waits for are tried, all in one statement.
pub(crate) const RETRY: Duration = Duration::from_millis(50);

/// How often a waiting session looks for holders whose lease ran out.
const BREAK_CHECK: Duration = Duration::from_secs(1);

/// One connection holding runner locks, shared by the [`PgRunnerLock`]s taken on it.
pub(crate) struct Session {
    conn: Mutex<Conn>,
    state: Mutex<State>,
    lease: Lease,
    masked: String,
    /// Its server process and when that started, which tell it from a later one with the
    /// same pid.
    backend: (i32, String),
}

/// The session's connection and the statements prepared on it.
pub(crate) struct Conn {
    pub(crate) client: Client,
    prepared: Prepared,
}

impl Conn {
    /// `sql` prepared on this connection, once.
    pub(crate) fn prepared(&mut self, sql: &'static str) -> Result<postgres::Statement, postgres::Error> {
        self.prepared.get(&mut self.client, sql)
    }
}

/// A held queue.
struct Held {
    /// The share holding it, or `None` while no waiter has claimed it yet.
    share: Option<u64>,
    number: i32,
    clock: Arc<LeaseClock>,
    /// Renewed by the session's thread.
    renewing: bool,
}

/// A queue waited for.
struct Wanted {
    number: i32,
    waiters: usize,
    /// A holder's session was ended for it, its lease having run out.
    ended_expired: bool,
}

#[derive(Default)]
struct State {
    held: HashMap<QueueName, Held>,
    wanted: HashMap<QueueName, Wanted>,
    last_try: Option<Instant>,
    last_break: Option<Instant>,
    /// Whether this role may end an expired holder's session (cleared after one refusal).
    may_not_break: bool,
    /// Why the session is gone, once it is.
    dead: Option<String>,
    next_share: u64,
    renewer: bool,
    /// The last answer of [`Session::verified`]'s statement and when it was asked: every lock
    /// the server lists as this session's, and every queue whose lease it holds live.
    listed: Option<(Instant, Vec<i64>, Vec<String>)>,
}

/// How long one answer of the server's list of a session's locks stands for every queue of the
/// session: a hub of many queues checks each every poll, and one statement answers them all.
const LISTED_FOR: Duration = Duration::from_millis(250);

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("target", &self.masked).finish_non_exhaustive()
    }
}

impl Session {
    /// Connects to `target` for runner locks held with `lease`: the connection has TCP
    /// keepalives on both sides ([`crate::queue::pg::connect::session_settings`]), a statement
    /// timeout of half the lease and a lock timeout of a quarter of it (at most 60 s and 30 s),
    /// so that no statement keeps the leases from being renewed in time.
    pub(crate) fn open(target: &Target, lease: Lease) -> Result<Arc<Session>, PgError> {
        let pid = std::process::id();
        let mut client = connect(target, &format!("hookq runner pid {pid} on {}", host_name()))?;
        guard_session(&mut client, target)?;
        client.batch_execute(&format!(
            "SET statement_timeout = {}; SET lock_timeout = {}",
            (lease.duration / 2).min(STATEMENT_TIMEOUT).as_millis().max(1),
            (lease.duration / 4).min(LOCK_TIMEOUT).as_millis().max(1),
        ))?;
        let me = client.query_one(
            "SELECT pid, backend_start::text FROM pg_stat_activity WHERE pid = pg_backend_pid()",
            &[],
        )?;
        Ok(Arc::new(Session {
            backend: (me.get(0), me.get(1)),
            conn: Mutex::new(Conn {
                client,
                prepared: Prepared::default(),
            }),
            state: Mutex::new(State::default()),
            lease,
            masked: target.masked().to_owned(),
        }))
    }

    /// The lease its locks keep.
    pub(crate) fn lease(&self) -> Lease {
        self.lease
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The connection, once no other thread uses it.
    pub(crate) fn conn(&self) -> MutexGuard<'_, Conn> {
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The connection, once free within `within`; `None` when something held it all that while.
    fn conn_within(&self, within: Duration) -> Option<MutexGuard<'_, Conn>> {
        let until = Instant::now() + within;
        loop {
            match self.conn.try_lock() {
                Ok(conn) => return Some(conn),
                Err(TryLockError::Poisoned(p)) => return Some(p.into_inner()),
                Err(TryLockError::WouldBlock) if Instant::now() < until => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(TryLockError::WouldBlock) => return None,
            }
        }
    }

    /// Why the session is gone, when it is: its connection closed, or a renewal failed.
    pub(crate) fn dead(&self) -> Option<String> {
        self.state().dead.clone()
    }

    /// Ends `old`, a session of this process found gone, on this one's connection: its
    /// connection may still be open on the server (a renewal that went unanswered), holding
    /// locks that this session is about to wait for. Nothing when it is closed already (its
    /// pid, maybe another session's now, is told apart by when it started).
    pub(crate) fn end(&self, old: &Session) {
        let mut conn = self.conn();
        let ended = conn.client.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE pid = $1 AND backend_start::text = $2",
            &[&old.backend.0, &old.backend.1],
        );
        if let Err(e) = ended {
            tracing::debug!("cannot end a lost lock session: {}", error_chain(&e));
        }
    }

    /// Marks the session gone: every queue it holds lost, for `why`. Its connection closes
    /// once the last lock taken on it is dropped.
    /// Said once, in a warning naming the queues lost, whichever thread finds it.
    pub(crate) fn fail(&self, why: &str) {
        let mut st = self.state();
        if st.dead.is_none() {
            st.dead = Some(why.to_owned());
            if !st.held.is_empty() {
                let mut queues: Vec<&str> = st.held.keys().map(QueueName::as_str).collect();
                queues.sort_unstable();
                tracing::warn!(
                    "{}",
                    lost_named(queues.join(", "), why.to_owned())
                );
            }
        }
        for held in st.held.values() {
            held.clock.set(Err(why.to_owned()));
        }
        st.held.clear();
    }

    /// `e`, a statement's failure on the session; a connection that closed with it ends the
    /// session.
    fn failed(&self, conn: &Conn, e: postgres::Error) -> PgError {
        if conn.client.is_closed() {
            self.fail(&format!("its connection closed: {}", error_chain(&e)));
        }
        e.into()
    }

    /// Takes `queue`'s runner lock on this session, waiting as `wait` says and while
    /// `keep_waiting` says so (asked every try). `Ok(None)` when another session (or another
    /// waiter of this process, on this session) held it throughout.
    pub(crate) fn take(
        self: &Arc<Self>,
        queue: &QueueName,
        wait: Wait,
        keep_waiting: &dyn Fn() -> bool,
    ) -> Result<Option<PgRunnerLock>, PgError> {
        let number = {
            let mut conn = self.conn();
            if let Some(why) = self.dead() {
                return Err(lost(queue, why));
            }
            queue_number(&mut conn.client, queue).map_err(|e| match e {
                PgError::Postgres(e) => self.failed(&conn, e),
                e => e,
            })?
        };
        let deadline = match wait {
            Wait::No => Some(Instant::now()),
            Wait::For(d) => Instant::now().checked_add(d),
            Wait::Forever => None,
        };
        {
            let mut st = self.state();
            let w = st.wanted.entry(queue.clone()).or_insert(Wanted {
                number,
                waiters: 0,
                ended_expired: false,
            });
            w.waiters += 1;
        }
        let mut first = true;
        let mut took_over: Option<Takeover> = None;
        let outcome = loop {
            if let Some(claimed) = self.claim(queue) {
                break Ok(Some(claimed));
            }
            // The first try at once; then one statement every RETRY for every waiter.
            let due = first || self.state().last_try.is_none_or(|t| t.elapsed() >= RETRY);
            if due {
                if let Err(e) = self.try_wanted() {
                    break Err(e);
                }
                if let Some(claimed) = self.claim(queue) {
                    break Ok(Some(claimed));
                }
            }
            took_over.get_or_insert(Takeover {
                ended_expired: false,
            });
            first = false;
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if left.is_some_and(|l| l.is_zero()) || !keep_waiting() {
                break Ok(None);
            }
            std::thread::sleep(left.map_or(RETRY, |l| l.min(RETRY)));
        };
        let ended_expired = {
            let mut st = self.state();
            let mut ended = false;
            if let Some(w) = st.wanted.get_mut(queue) {
                ended = w.ended_expired;
                w.waiters -= 1;
                if w.waiters == 0 {
                    st.wanted.remove(queue);
                }
            }
            ended
        };
        match outcome {
            Ok(Some((share, since_ms, clock))) => {
                if took_over.is_some() && ended_expired {
                    took_over = Some(Takeover {
                        ended_expired: true,
                    });
                }
                Ok(Some(PgRunnerLock::share(
                    Arc::clone(self),
                    queue.clone(),
                    number,
                    share,
                    since_ms,
                    clock,
                    took_over,
                )))
            }
            Ok(None) => {
                // Taken for this waiter after its last look, and no one else waits for it.
                self.let_go_unclaimed(queue);
                Ok(None)
            }
            Err(e) => {
                self.let_go_unclaimed(queue);
                Err(e)
            }
        }
    }

    /// Claims `queue` for a waiter, when the session took it and no one claimed it yet.
    fn claim(&self, queue: &QueueName) -> Option<(u64, i64, Arc<LeaseClock>)> {
        let mut st = self.state();
        let share = st.next_share;
        let held = st.held.get_mut(queue)?;
        if held.share.is_some() {
            return None;
        }
        held.share = Some(share);
        let clock = Arc::clone(&held.clock);
        st.next_share += 1;
        Some((share, now_ms(), clock))
    }

    /// Unlocks `queue` when the session took it for a waiter that gave up.
    fn let_go_unclaimed(&self, queue: &QueueName) {
        let unclaimed = {
            let st = self.state();
            st.held.get(queue).is_some_and(|h| h.share.is_none()) && !st.wanted.contains_key(queue)
        };
        if unclaimed {
            let mut conn = self.conn();
            let number = self.state().held.get(queue).map(|h| h.number);
            if let Some(number) = number {
                let _ = unlock(&mut conn.client, queue, number);
                self.state().held.remove(queue);
            }
        }
    }

    /// One try of every queue waited for and not held, in one statement; those taken get their
    /// lease rows. Every [`BREAK_CHECK`] it also ends the sessions of their holders whose lease
    /// ran out.
    fn try_wanted(&self) -> Result<(), PgError> {
        let mut conn = self.conn();
        let (queues, numbers, break_due) = {
            let mut st = self.state();
            if let Some(why) = &st.dead {
                return Err(PgError::LockLost {
                    queue: st.wanted.keys().next().map(|q| q.to_string()).unwrap_or_default(),
                    reason: why.clone(),
                });
            }
            st.last_try = Some(Instant::now());
            let (queues, numbers): (Vec<String>, Vec<i32>) = st
                .wanted
                .iter()
                .filter(|(q, _)| !st.held.contains_key(*q))
                .map(|(q, w)| (q.to_string(), w.number))
                .unzip();
            let break_due =
                !st.may_not_break && st.last_break.is_some_and(|t| t.elapsed() >= BREAK_CHECK);
            if st.last_break.is_none() || break_due {
                st.last_break = Some(Instant::now());
            }
            (queues, numbers, break_due)
        };
        if queues.is_empty() {
            return Ok(());
        }
        let rows = conn
            .client
            .query(
                "SELECT q, pg_try_advisory_lock($1, n) FROM unnest($2::text[], $3::int4[]) AS u(q, n)",
                &[&ADVISORY_CLASS, &queues, &numbers],
            )
            .map_err(|e| self.failed(&conn, e))?;
        let taken: Vec<String> = rows
            .iter()
            .filter(|r| r.get::<_, bool>(1))
            .map(|r| r.get(0))
            .collect();
        if !taken.is_empty() {
            let sent = Instant::now();
            let lease_ms = i64::try_from(self.lease.duration.as_millis()).unwrap_or(i64::MAX);
            let written = conn.client.execute(
                &format!(
                    "INSERT INTO hookq_runners (queue, host, pid, since_ms, backend_pid, lease_until_ms)
                     SELECT q, $2, $3, $4, pg_backend_pid(), {SERVER_NOW_MS} + $5 FROM unnest($1::text[]) AS q
                     ON CONFLICT (queue) DO UPDATE SET host = EXCLUDED.host, pid = EXCLUDED.pid,
                         since_ms = EXCLUDED.since_ms, backend_pid = EXCLUDED.backend_pid,
                         lease_until_ms = EXCLUDED.lease_until_ms"
                ),
                &[&taken, &host_name(), &i64::from(std::process::id()), &now_ms(), &lease_ms],
            );
            let mut st = self.state();
            for q in &taken {
                let Ok(name) = QueueName::new(q) else { continue };
                let Some(number) = st.wanted.get(&name).map(|w| w.number) else {
                    continue;
                };
                st.held.insert(
                    name,
                    Held {
                        share: None,
                        number,
                        clock: Arc::new(LeaseClock::new(Ok(sent + self.lease.duration))),
                        renewing: false,
                    },
                );
            }
            drop(st);
            if let Err(e) = written {
                // Taken without a lease row: let go again, so that nothing runs unleased.
                let e = self.failed(&conn, e);
                let mut st = self.state();
                for q in &taken {
                    if let Ok(name) = QueueName::new(q)
                        && let Some(h) = st.held.remove(&name)
                    {
                        let _ = unlock(&mut conn.client, &name, h.number);
                    }
                }
                return Err(e);
            }
        }
        if break_due {
            let waiting: Vec<String> = queues.into_iter().filter(|q| !taken.contains(q)).collect();
            if !waiting.is_empty() {
                self.break_expired(&mut conn, &waiting)?;
            }
        }
        Ok(())
    }

    /// Ends the sessions holding `queues` whose lease ran out, which frees their locks, and
    /// notes which queues it freed so. A session that still renews any lease is alive, and lets
    /// go of a queue whose lease it lost by itself: it is not ended.
    fn break_expired(&self, conn: &mut Conn, queues: &[String]) -> Result<(), PgError> {
        let ended = conn.client.query(
            &format!(
                "SELECT r.queue, r.backend_pid, r.host, r.pid, {SERVER_NOW_MS} - r.lease_until_ms,
                        pg_terminate_backend(r.backend_pid)
                 FROM hookq_runners r
                 JOIN hookq_queues q ON q.queue = r.queue
                 JOIN pg_locks l ON l.locktype = 'advisory' AND l.granted AND l.pid = r.backend_pid
                     AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                     AND l.classid = $2::bigint::oid AND l.objid = q.number::bigint::oid AND l.objsubid = 2
                 WHERE r.queue = ANY($1) AND r.lease_until_ms < {SERVER_NOW_MS}
                     AND r.backend_pid <> pg_backend_pid()
                     AND NOT EXISTS (SELECT 1 FROM hookq_runners o WHERE o.backend_pid = r.backend_pid
                         AND o.lease_until_ms >= {SERVER_NOW_MS})"
            ),
            &[&queues, &i64::from(ADVISORY_CLASS)],
        );
        let rows = match ended {
            Ok(rows) => rows,
            Err(e) if e.code() == Some(&postgres::error::SqlState::INSUFFICIENT_PRIVILEGE) => {
                tracing::warn!(
                    "queues {}: the runner lock's holder let its lease run out, but this role may not end its session ({}); waiting for the server's keepalives to end it",
                    queues.join(", "),
                    error_chain(&e)
                );
                self.state().may_not_break = true;
                return Ok(());
            }
            Err(e) => return Err(self.failed(conn, e)),
        };
        let mut st = self.state();
        for r in &rows {
            let (queue, backend, host, pid, late): (String, i32, String, i64, i64) =
                (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4));
            tracing::warn!(
                "queue {queue}: ended the session of the runner lock's holder, pid {pid} on {host} (backend {backend}): its lease ran out {late} ms ago (it is stopped, or cut off from the server); taking the queue over"
            );
            if let Ok(name) = QueueName::new(&queue)
                && let Some(w) = st.wanted.get_mut(&name)
            {
                w.ended_expired = true;
            }
        }
        Ok(())
    }

    /// Whether the server lists `queue`'s lock (number `number`) as this session's, and its
    /// lease as live. `Err` says why the session is lost (it did not answer within a quarter
    /// of the lease).
    ///
    ///
    /// With `recent`, a queue found held with a live lease in an answer under [`LISTED_FOR`]
    /// old is answered from it, without a round trip: only a queue the answer does not list
    /// asks the server again. The drain's writes go through the session whatever this says, so
    /// an answer a moment old lets nothing be cleared by a session that lost its lock.
    pub(crate) fn verified(
        &self,
        queue: &QueueName,
        number: i32,
        recent: bool,
    ) -> Result<(bool, bool), String> {
        if let Some(why) = self.dead() {
            return Err(why);
        }
        let listed = |held: &[i64], leased: &[String]| {
            (
                held.contains(&i64::from(number)),
                leased.iter().any(|q| q == queue.as_str()),
            )
        };
        let fresh = || {
            recent
                && self
                    .state()
                    .listed
                    .as_ref()
                    .is_some_and(|(at, held, leased)| {
                        at.elapsed() < LISTED_FOR && listed(held, leased) == (true, true)
                    })
        };
        if fresh() {
            return Ok((true, true));
        }
        let asked = Instant::now();
        let mut conn = self.conn();
        if let Some(why) = self.dead() {
            return Err(why);
        }
        // The queues of a hub fall into step, and check together: those that waited for the
        // connection take the answer the first of them read.
        if fresh() {
            return Ok((true, true));
        }
        if let Err(e) = conn
            .client
            .is_valid(self.lease.renew_every().max(Duration::from_millis(250)))
        {
            let why = error_chain(&e);
            self.fail(&format!("the server did not answer: {why}"));
            return Err(why);
        }
        let row = conn.client.query_one(
            &format!(
                "SELECT ARRAY(SELECT objid::bigint FROM pg_locks WHERE locktype = 'advisory'
                     AND granted AND pid = pg_backend_pid() AND classid = $1::bigint::oid
                     AND objsubid = 2),
                 ARRAY(SELECT queue FROM hookq_runners WHERE backend_pid = pg_backend_pid()
                     AND lease_until_ms > {SERVER_NOW_MS})"
            ),
            &[&i64::from(ADVISORY_CLASS)],
        );
        let row = match row {
            Ok(row) => row,
            Err(e) => {
                let why = error_chain(&e);
                if conn.client.is_closed() {
                    self.fail(&format!("its connection closed: {why}"));
                }
                return Err(why);
            }
        };
        let (held, leased): (Vec<i64>, Vec<String>) = (row.get(0), row.get(1));
        let answer = listed(&held, &leased);
        self.state().listed = Some((asked, held, leased));
        Ok(answer)
    }

    /// Whether share `share` holds `queue` now.
    pub(crate) fn holds(&self, queue: &QueueName, share: u64) -> bool {
        self.state().held.get(queue).is_some_and(|h| h.share == Some(share))
    }

    /// Unlocks `queue` for share `share` and ends its lease, when that share holds it.
    pub(crate) fn release(&self, queue: &QueueName, share: u64) -> Result<(), PgError> {
        if !self.holds(queue, share) {
            return Ok(());
        }
        let mut conn = self.conn();
        let Some(held) = ({
            let mut st = self.state();
            match st.held.get(queue) {
                Some(h) if h.share == Some(share) => st.held.remove(queue),
                _ => None,
            }
        }) else {
            return Ok(());
        };
        held.clock.set(Err("released".into()));
        if self.dead().is_some() {
            return Ok(());
        }
        unlock(&mut conn.client, queue, held.number).map_err(|e| self.failed(&conn, e))
    }

    /// Starts renewing `queue`'s lease (held by `share`) with the others', on the session's
    /// thread, started with the first.
    pub(crate) fn renew_with_others(self: &Arc<Self>, queue: &QueueName, share: u64) -> Result<(), PgError> {
        let start = {
            let mut st = self.state();
            if let Some(h) = st.held.get_mut(queue)
                && h.share == Some(share)
            {
                h.renewing = true;
            }
            !std::mem::replace(&mut st.renewer, true)
        };
        if start {
            let weak = Arc::downgrade(self);
            let every = self.lease.renew_every();
            std::thread::Builder::new()
                .name("hookq-lease".into())
                .spawn(move || renew_leases(weak, every))
                .map_err(|e| PgError::LockLost {
                    queue: queue.to_string(),
                    reason: format!("cannot start the thread that renews its lease: {e}"),
                })?;
        }
        Ok(())
    }

    /// Renews the leases of `only` (or of every queue renewed by the session's thread) in one
    /// statement. A queue missing from the answer lost its lease: its clock says so, and the
    /// session lets go of its lock. A failure to renew at all loses every queue.
    ///
    /// It waits for the connection half a lease at most: a statement of the drain that got no
    /// answer (a network that went silent mid-statement, which nothing on this side times out)
    /// would otherwise keep the renewal, and the news that the session is lost, waiting for
    /// ever. Beyond that the lease could not be renewed in time anyway.
    pub(crate) fn renew(&self, only: Option<&QueueName>) -> Result<(), PgError> {
        let within = self.lease.duration / 2;
        let Some(mut conn) = self.conn_within(within) else {
            let why = format!(
                "the server did not answer: the session's connection stayed busy for {within:?}"
            );
            self.fail(&why);
            let names: Vec<String> = match only {
                Some(q) => vec![q.to_string()],
                None => self.state().held.keys().map(ToString::to_string).collect(),
            };
            return Err(lost_named(names.join(", "), why));
        };
        let renewed: Vec<(QueueName, Arc<LeaseClock>)> = {
            let st = self.state();
            if let Some(why) = &st.dead {
                let queue = only.map(|q| q.to_string()).unwrap_or_default();
                return Err(lost_named(queue, why.clone()));
            }
            st.held
                .iter()
                .filter(|(q, h)| only.map_or(h.renewing, |o| o == *q))
                .map(|(q, h)| (q.clone(), Arc::clone(&h.clock)))
                .collect()
        };
        if renewed.is_empty() {
            return Ok(());
        }
        let sent = Instant::now();
        let names: Vec<&str> = renewed.iter().map(|(q, _)| q.as_str()).collect();
        let lease_ms = i64::try_from(self.lease.duration.as_millis()).unwrap_or(i64::MAX);
        let answered = conn
            .client
            .is_valid(self.lease.renew_every().max(Duration::from_millis(250)))
            .map_err(|e| format!("the server did not answer: {}", error_chain(&e)))
            .and_then(|()| {
                conn.client
                    .query(
                        &format!(
                            "UPDATE hookq_runners SET lease_until_ms = {SERVER_NOW_MS} + $2
                             WHERE backend_pid = pg_backend_pid() AND queue = ANY($1)
                                 AND lease_until_ms > {SERVER_NOW_MS}
                             RETURNING queue"
                        ),
                        &[&names, &lease_ms],
                    )
                    .map_err(|e| error_chain(&e))
            });
        let rows = match answered {
            Ok(rows) => rows,
            Err(why) => {
                self.fail(&why);
                return Err(lost_named(names.join(", "), why));
            }
        };
        let kept: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
        let until = sent + self.lease.duration;
        let mut gone = None;
        for (queue, clock) in &renewed {
            if kept.iter().any(|k| k == queue.as_str()) {
                // The lease counted from now could have been renewed meanwhile: keep the later end.
                match clock.get() {
                    Ok(old) if old > until => {}
                    Ok(_) => clock.set(Ok(until)),
                    Err(_) => {}
                }
                continue;
            }
            let why = "its lease had run out, or its row names another runner".to_owned();
            clock.set(Err(why.clone()));
            let number = self.state().held.remove(queue).map(|h| h.number);
            if let Some(number) = number {
                tracing::warn!("queue {queue}: lost the runner lock's lease ({why}); letting go of it");
                let _ = unlock(&mut conn.client, queue, number);
            }
            gone = Some(lost(queue, why));
        }
        match (only, gone) {
            (Some(_), Some(e)) => Err(e),
            _ => Ok(()),
        }
    }
}

/// Renews the leases of every queue `session` holds, every `every`, until the session is gone.
fn renew_leases(session: Weak<Session>, every: Duration) {
    let mut next = Instant::now() + every;
    loop {
        while Instant::now() < next {
            if session.strong_count() == 0 {
                return;
            }
            std::thread::sleep(RETRY.min(every));
        }
        let Some(session) = session.upgrade() else { return };
        next = Instant::now() + every;
        if session.dead().is_some() {
            return;
        }
        // A queue lost, or the session, is said where it is found.
        let _ = session.renew(None);
    }
}

/// Lets go of `queue`'s lock on `client` and ends its lease, leaving its row to name the last
/// holder.
fn unlock(client: &mut Client, queue: &QueueName, number: i32) -> Result<(), postgres::Error> {
    client.execute(
        "SELECT pg_advisory_unlock($1, $2)",
        &[&ADVISORY_CLASS, &number],
    )?;
    client.execute(
        &format!(
            "UPDATE hookq_runners SET lease_until_ms = LEAST(lease_until_ms, {SERVER_NOW_MS})
             WHERE queue = $1 AND backend_pid = pg_backend_pid()"
        ),
        &[&queue.as_str()],
    )?;
    Ok(())
}

fn lost(queue: &QueueName, reason: String) -> PgError {
    lost_named(queue.to_string(), reason)
}

fn lost_named(queue: String, reason: String) -> PgError {
    PgError::LockLost { queue, reason }
}
