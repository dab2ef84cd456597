//! [`Notifier`]: waking the hubs of queues from a thread and a connection of its own, for a
//! process with many writers, whose commits then never wait for a notification.
//!
//! [`notify_hubs`](crate::queue::pg::notify_hubs) sends on the caller's connection and returns
//! once a notification begun after the call is on its way: one round trip, which a burst of
//! commits pays about once each. A `Notifier` takes the call and returns at once; its thread
//! sends one notification naming every queue asked for since its last, then waits
//! [`Notifier::DEBOUNCE`] before the next, twice as long after each rest during which it was
//! asked again, up to [`Notifier::DEBOUNCE_MAX`]. An idle notifier sends at once, so a lone
//! commit wakes the hubs as soon as with `notify_hubs`; a burst of commits sends one
//! notification per interval, not one per commit, and a steady stream one each
//! `DEBOUNCE_MAX`. Each notification costs the server more than its hubs' wake-up: PostgreSQL
//! before version 19 wakes every connection that listens in the database, whatever its
//! channel, and each drops what is not its own, so sixty idle hubs of other queues turned 200
//! notifications a second into 12,000 wake-ups on the writers' CPUs. A hub that drains a
//! stream of commits misses none of them for the wait: its pass takes every point committed
//! before it, and one committed while a pass runs starts the next.

use std::collections::HashSet;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use postgres::Client;

use crate::queue::pg::connect::connect;
use crate::queue::pg::error::PgError;
use crate::queue::pg::name::QueueName;
use crate::queue::pg::target::Target;

/// A thread that wakes hubs, on a connection of its own to one database. Cheap to clone: the
/// clones share the thread, which ends when the last of them is dropped, once it has sent what
/// was asked for.
#[derive(Clone)]
pub struct Notifier {
    shared: Arc<Shared>,
    /// Dropped with the last clone, which ends the thread.
    _last: Arc<Last>,
}

impl std::fmt::Debug for Notifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notifier")
            .field("target", &self.shared.target)
            .finish()
    }
}

struct Shared {
    target: Target,
    state: Mutex<State>,
    /// Signalled when a queue is asked for, or the last handle goes.
    asked: Condvar,
    /// Signalled when a notification has been sent (or given up).
    sent: Condvar,
}

#[derive(Default)]
struct State {
    /// The queues asked for since the last notification began.
    queues: HashSet<QueueName>,
    /// Calls so far, and the calls the notifications sent (or given up) so far cover.
    calls: u64,
    covered: u64,
    /// The last handle is gone: send what is asked for, then end.
    stop: bool,
    /// The thread waits to be asked (rather than sending, or resting after a notification):
    /// only then does a call wake it, which spares each commit of a burst a system call.
    idle: bool,
}

/// Ends the thread when dropped.
struct Last(Arc<Shared>);

impl Drop for Last {
    fn drop(&mut self) {
        self.0.lock().stop = true;
        self.0.asked.notify_all();
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Notifier {
    /// The least time between two notifications of one notifier: commits asked for within it
    /// are named by the next one.
    pub const DEBOUNCE: Duration = Duration::from_millis(5);
    /// The longest a notifier waits between two notifications while it is asked again and
    /// again.
    pub const DEBOUNCE_MAX: Duration = Duration::from_millis(40);

    /// Starts a notifier for the database of `target`. It connects when first asked, and again
    /// a second after a failure; a notification that fails is a `tracing` warning and is not
    /// sent again, since the hubs' poll finds the commits anyway.
    pub fn new(target: &Target) -> Self {
        let shared = Arc::new(Shared {
            target: target.clone(),
            state: Mutex::new(State::default()),
            asked: Condvar::new(),
            sent: Condvar::new(),
        });
        let thread = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("hookq-notify".into())
            .spawn(move || run(&thread))
            .expect("start the notifier's thread");
        Self {
            _last: Arc::new(Last(Arc::clone(&shared))),
            shared,
        }
    }

    /// Asks for the hubs of `queue` to be woken: call it after a commit that recorded points
    /// of `queue`. Returns at once; the notification that covers it begins after this call.
    pub fn notify(&self, queue: &QueueName) {
        let mut st = self.shared.lock();
        st.calls += 1;
        if !st.queues.contains(queue) {
            st.queues.insert(queue.clone());
        }
        let idle = st.idle;
        drop(st);
        if idle {
            self.shared.asked.notify_one();
        }
    }

    /// Waits until every call made before this one is covered by a notification sent (or given
    /// up), for at most `timeout`: what a process about to exit calls. Whether they all were.
    pub fn flush(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut st = self.shared.lock();
        let me = st.calls;
        while st.covered < me {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            st = self
                .shared
                .sent
                .wait_timeout(st, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        true
    }
}

/// How long the thread rests after a notification failed (the server down, say), before it
/// connects again for the calls made meanwhile.
const AFTER_FAILURE: Duration = Duration::from_secs(1);

/// The notifier's thread: waits to be asked, sends one notification for every queue asked for,
/// rests [`Notifier::DEBOUNCE`] (twice as long as last time when it was asked during that
/// rest, up to [`Notifier::DEBOUNCE_MAX`]), and so on until its last handle is gone and nothing
/// is asked.
fn run(shared: &Shared) {
    let mut client: Option<Client> = None;
    let mut debounce = Notifier::DEBOUNCE;
    loop {
        let mut st = shared.lock();
        if st.queues.is_empty() {
            debounce = Notifier::DEBOUNCE;
        }
        while st.queues.is_empty() && !st.stop {
            st.idle = true;
            st = shared
                .asked
                .wait(st)
                .unwrap_or_else(PoisonError::into_inner);
        }
        st.idle = false;
        if st.queues.is_empty() {
            return;
        }
        let queues = std::mem::take(&mut st.queues);
        let covers = st.calls;
        drop(st);
        let rest = match send(&mut client, &shared.target, &queues) {
            Ok(()) => {
                let rest = debounce;
                debounce = (debounce * 2).min(Notifier::DEBOUNCE_MAX);
                rest
            }
            Err(e) => {
                tracing::warn!(target = %shared.target.masked(), "cannot notify the hubs: {e}");
                client = None;
                AFTER_FAILURE
            }
        };
        shared.lock().covered = covers;
        shared.sent.notify_all();
        std::thread::sleep(rest);
    }
}

/// One notification for each of `queues`, connecting first when there is no connection. The
/// connection commits without waiting for the disk (a lost notification costs only the wait for
/// the hubs' next poll), so each notification is one statement in a transaction of its own.
fn send(
    client: &mut Option<Client>,
    target: &Target,
    queues: &HashSet<QueueName>,
) -> Result<(), PgError> {
    let client = match client {
        Some(c) => c,
        None => {
            let mut c = connect(
                target,
                &format!("hookq notifier pid {}", std::process::id()),
            )?;
            c.batch_execute("SET synchronous_commit = off")?;
            client.insert(c)
        }
    };
    client.batch_execute(&format!("SELECT {}", calls(queues)))?;
    Ok(())
}

/// The statements that notify the hubs of `queues` on a host's connection: one transaction
/// committed without waiting for the disk.
pub(crate) fn notification<'a>(queues: impl IntoIterator<Item = &'a QueueName>) -> String {
    format!(
        "BEGIN; SET LOCAL synchronous_commit = off; SELECT {}; COMMIT",
        calls(queues)
    )
}

/// A `pg_notify` call for each of `queues`, on the queue's own channel with its name as the
/// payload, comma separated.
fn calls<'a>(queues: impl IntoIterator<Item = &'a QueueName>) -> String {
    // Queue names are of letters, digits and `._-/:@+` (no quote), and so are their channels
    // (with `#` and hex digits), so each is a literal as is.
    let calls: Vec<String> = queues
        .into_iter()
        .map(|q| format!("pg_notify('{}', '{}')", q.channel(), q.as_str()))
        .collect();
    calls.join(", ")
}
