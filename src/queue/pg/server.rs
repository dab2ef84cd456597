//! One server's connections, shared by every queue a process drains on it: the registry that
//! hands the same [`Server`] to every hub of one connection string, the lock session that holds
//! all their runner locks, and a small pool for their reads.
//!
//! A hub process so holds, per server, one lock session ([`crate::queue::pg::session`]) and at
//! most [`POOL_SIZE`] pooled connections, whatever the number of its queues (its watchers
//! listen apart). When the lock session is lost, every queue's hub finds its lock gone and
//! connects again through here: the first opens one new session, the others share it.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError, Weak};

use postgres::Client;

use crate::queue::driver::Place;
use crate::queue::lock::Wait;
use crate::queue::model::PendingRow;
use crate::queue::pg::connect::{Prepared, connect, guard_session};
use crate::queue::pg::error::PgError;
use crate::queue::pg::lock::{Lease, PgRunnerLock, host_name, queue_number};
use crate::queue::pg::name::QueueName;
use crate::queue::pg::queue::Reads;
use crate::queue::pg::schema;
use crate::queue::pg::store;
use crate::queue::pg::session::Session;
use crate::queue::pg::target::Target;

/// How many connections a server's pool opens at most: the reads of every queue of a hub on
/// that server (a batch, a pause, a mark) are short, and take turns on these.
pub const POOL_SIZE: usize = 2;

/// A server as a process's queues share it: one per connection string and lease.
pub(crate) struct Server {
    target: Target,
    lease: Lease,
    session: Mutex<Option<Arc<Session>>>,
    pool: Pool,
}

/// Which servers are one: the connection string as written, and the lease.
type Key = (String, std::time::Duration);

/// The servers this process uses now.
fn registry() -> MutexGuard<'static, HashMap<Key, Weak<Server>>> {
    static SERVERS: OnceLock<Mutex<HashMap<Key, Weak<Server>>>> = OnceLock::new();
    SERVERS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

impl Server {
    /// The server of `target`, its runner locks held with `lease`: the one other queues of this
    /// process use already, or a new one. It connects only when asked to.
    pub(crate) fn get(target: &Target, lease: Lease) -> Arc<Server> {
        let key = (target.identity().to_owned(), lease.duration);
        let mut servers = registry();
        servers.retain(|_, s| s.strong_count() > 0);
        if let Some(server) = servers.get(&key).and_then(Weak::upgrade) {
            return server;
        }
        let server = Arc::new(Server {
            target: target.clone(),
            lease,
            session: Mutex::new(None),
            pool: Pool::new(target.clone(), POOL_SIZE),
        });
        servers.insert(key, Arc::downgrade(&server));
        server
    }

    /// Creates or upgrades the schema and `queue`'s row, on a pooled connection.
    pub(crate) fn open_queue(&self, queue: &QueueName) -> Result<(), PgError> {
        let mut conn = self.pool.get()?;
        schema::migrate(&mut conn.client)?;
        queue_number(&mut conn.client, queue)?;
        Ok(())
    }

    /// The lock session: the one every queue of the server shares while it lives, or a new one
    /// once it is gone (its connection closed, a renewal failed).
    fn session(&self) -> Result<Arc<Session>, PgError> {
        let mut slot = self.session.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(s) = slot.as_ref()
            && s.dead().is_none()
            && !s.conn().client.is_closed()
        {
            return Ok(Arc::clone(s));
        }
        // The old session closes once the last of its locks is dropped, or now: a lock still
        // held there would keep its queue from the new one until its lease ran out.
        let old = slot.take();
        if let Some(old) = &old {
            old.fail("its connection closed");
        }
        let session = Session::open(&self.target, self.lease)?;
        if let Some(old) = old {
            session.end(&old);
        }
        *slot = Some(Arc::clone(&session));
        Ok(session)
    }

    /// Takes `queue`'s runner lock on the server's lock session, waiting as long as
    /// `keep_waiting` says so. `Ok(None)` when it gave up.
    pub(crate) fn take(
        &self,
        queue: &QueueName,
        keep_waiting: &dyn Fn() -> bool,
    ) -> Result<Option<PgRunnerLock>, PgError> {
        self.session()?.take(queue, Wait::Forever, keep_waiting)
    }

    /// A pooled connection for one read.
    pub(crate) fn read(&self) -> Result<Pooled<'_>, PgError> {
        self.pool.get()
    }
}

/// A bounded pool of connections for reads, opened as they are needed and opened again after
/// one closes. Handed out in the order asked for: the queues of a hub take turns, so that the
/// busy ones, which ask again the moment they give one back, cannot keep a quiet queue's pass
/// waiting.
pub(crate) struct Pool {
    target: Target,
    size: usize,
    state: Mutex<PoolState>,
}

struct PoolState {
    idle: Vec<PoolConn>,
    open: usize,
    /// Who waits for a connection, oldest first, each woken on its own.
    waiting: VecDeque<(u64, Arc<Condvar>)>,
    next_ticket: u64,
}

impl PoolState {
    /// Wakes the oldest waiter: a connection may be its.
    fn wake_first(&self) {
        if let Some((_, wake)) = self.waiting.front() {
            wake.notify_one();
        }
    }
}

/// A pooled connection and the statements prepared on it.
pub(crate) struct PoolConn {
    pub(crate) client: Client,
    prepared: Prepared,
}

impl PoolConn {
    /// `sql` prepared on this connection, once.
    pub(crate) fn prepared(&mut self, sql: &'static str) -> Result<postgres::Statement, postgres::Error> {
        self.prepared.get(&mut self.client, sql)
    }
}

/// A connection taken from the pool, given back as it drops (or let go, once closed).
pub(crate) struct Pooled<'a> {
    pool: &'a Pool,
    conn: Option<PoolConn>,
}

impl std::ops::Deref for Pooled<'_> {
    type Target = PoolConn;
    fn deref(&self) -> &PoolConn {
        self.conn.as_ref().expect("held until dropped")
    }
}

impl std::ops::DerefMut for Pooled<'_> {
    fn deref_mut(&mut self) -> &mut PoolConn {
        self.conn.as_mut().expect("held until dropped")
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        let mut st = self.pool.state();
        match self.conn.take() {
            Some(conn) if !conn.client.is_closed() => st.idle.push(conn),
            _ => st.open -= 1,
        }
        st.wake_first();
    }
}

impl Pool {
    fn new(target: Target, size: usize) -> Self {
        Self {
            target,
            size,
            state: Mutex::new(PoolState {
                idle: Vec::new(),
                open: 0,
                waiting: VecDeque::new(),
                next_ticket: 0,
            }),
        }
    }

    fn state(&self) -> MutexGuard<'_, PoolState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// An idle connection, a new one while fewer than the pool's size are open, or the next
    /// one given back, once everyone who asked before has theirs. A connection's statements
    /// time out, so none is held for ever.
    fn get(&self) -> Result<Pooled<'_>, PgError> {
        let mut st = self.state();
        // Nobody waiting and a connection to be had: no turn to take.
        if st.waiting.is_empty()
            && let Some(conn) = st.idle.pop()
        {
            return Ok(Pooled {
                pool: self,
                conn: Some(conn),
            });
        }
        let (ticket, wake) = (st.next_ticket, Arc::new(Condvar::new()));
        st.next_ticket += 1;
        st.waiting.push_back((ticket, Arc::clone(&wake)));
        loop {
            let first = st.waiting.front().is_some_and(|(t, _)| *t == ticket);
            if first && let Some(conn) = st.idle.pop() {
                st.waiting.pop_front();
                // Another connection may be idle for the next in line.
                st.wake_first();
                return Ok(Pooled {
                    pool: self,
                    conn: Some(conn),
                });
            }
            if first && st.open < self.size {
                st.waiting.pop_front();
                st.wake_first();
                st.open += 1;
                drop(st);
                let opened = connect(
                    &self.target,
                    &format!("hookq pool pid {} on {}", std::process::id(), host_name()),
                )
                .and_then(|mut client| guard_session(&mut client, &self.target).map(|()| client));
                return match opened {
                    Ok(client) => Ok(Pooled {
                        pool: self,
                        conn: Some(PoolConn {
                            client,
                            prepared: Prepared::default(),
                        }),
                    }),
                    Err(e) => {
                        let mut st = self.state();
                        st.open -= 1;
                        st.wake_first();
                        Err(e)
                    }
                };
            }
            st = wake.wait(st).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// A queue's reads through its server's pool, as a hub's
/// [`PgQueue`](crate::queue::pg::PgQueue) makes them.
pub(crate) struct ServerReads {
    server: Arc<Server>,
    queue: QueueName,
}

impl ServerReads {
    /// `queue`'s reads on `server`.
    pub(crate) fn new(server: Arc<Server>, queue: QueueName) -> Self {
        Self { server, queue }
    }
}

impl ServerReads {
    /// `f` on a pooled connection; once more on another when the connection it got had closed
    /// while idle (the server restarted, or ended it).
    fn read<T>(&self, mut f: impl FnMut(&mut PoolConn) -> Result<T, PgError>) -> Result<T, PgError> {
        let mut conn = self.server.read()?;
        match f(&mut conn) {
            Err(_) if conn.client.is_closed() => {
                drop(conn);
                let mut again = self.server.read()?;
                f(&mut again)
            }
            done => done,
        }
    }
}

impl Reads for ServerReads {
    fn queue(&self) -> &QueueName {
        &self.queue
    }

    fn place(&self) -> Place {
        Place::postgres(&self.queue, &self.server.target)
    }

    fn next_batch(&mut self, after: i64, limit: i64) -> Result<Vec<PendingRow>, PgError> {
        let queue = self.queue.clone();
        self.read(|conn| {
            let next = conn.prepared(store::NEXT_BATCH)?;
            let rows = conn
                .client
                .query(&next, &[&queue.as_str(), &after, &limit])?;
            store::pending_rows(&rows)
        })
    }

    fn paused(&mut self) -> Result<bool, PgError> {
        let queue = self.queue.clone();
        self.read(|conn| store::paused(&mut conn.client, &queue).map(|p| p.is_some()))
    }

    fn change_mark(&mut self) -> Result<i64, PgError> {
        let queue = self.queue.clone();
        self.read(|conn| store::change_mark(&mut conn.client, &queue))
    }

    /// Pooled connections are opened again as they are needed: none is this queue's to check.
    fn answers(&mut self) -> Result<(), PgError> {
        Ok(())
    }
}
