//! The listener: one connection and one thread per PostgreSQL server in a process, shared by
//! every [`Watcher`](crate::queue::watch::Watcher) of a queue there, so that a process watching
//! many queues of one server (a hub of many workspaces, a view of many queues) listens on one
//! connection and reads all of their marks in one statement.
//!
//! A watcher of a PostgreSQL queue is a [`Subscription`] to its server's listener. A
//! process-wide registry holds the listeners weakly, keyed by connection string: the first
//! watcher of a server starts its listener, the last one to go ends its thread, which closes its
//! connection. The connection `LISTEN`s on the channel of every queue subscribed
//! ([`QueueName::channel`]) and once on [`LEGACY_CHANNEL`], and `UNLISTEN`s a channel once no
//! watcher of its queues is left; a notification wakes the watchers of the queue it names only.
//!
//! One statement ([`MARKS`]) reads the marks of every queue subscribed, or of a few. The
//! listener reads every queue: every poll of its fastest subscriber
//! ([`Watcher::set_poll`](crate::queue::watch::Watcher)), and when a subscriber's poll is due
//! and no read fresh enough for it is in. It reads only some queues: those notified,
//! [`PG_GAP`] after its last read (a burst costs a read a gap, and the writers of a few
//! queues never cost a read of every queue), and at once the queue of a subscriber joining or
//! settling (a hub settles after each of its passes). Never two reads closer than [`PG_GAP`]
//! but for those last.
//! A subscriber looks at a read when its own poll is due (the latest read, if it started at
//! most half a poll before), when a notification of its queue came before the read, or when
//! the read is the first on a new connection: so a watcher hears of a commit nobody announced
//! within about its own poll, and watchers of one poll fall into step, answered by one read
//! between them. A connection lost is a change for every subscriber (it may have missed a
//! notification): the listener connects again a second later and reads every queue again.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use postgres::fallible_iterator::FallibleIterator;
use postgres::{Client, Notification};

use crate::queue::driver::Place;
use crate::queue::error::Error;
use crate::queue::pg::connect::{connect, guard_session};
use crate::queue::pg::error::PgError;
use crate::queue::pg::marks::{FEW, HEAD, MARKS, MARKS_FEW, mark_of};
use crate::queue::pg::name::{QueueName, quote_ident};
use crate::queue::pg::record::LEGACY_CHANNEL;
use crate::queue::pg::schema;
use crate::queue::pg::target::Target;
use crate::queue::watch::{PG_GAP, PG_POLL, Pause};

/// What the listener names its connection (`application_name`, followed by ` pid N`), so that
/// `pg_stat_activity` tells it from a process's other connections; unless the connection string
/// names its connections itself.
pub const APPLICATION_NAME: &str = "hookq listener";

/// How long the listener's thread waits for a notification at a time: a subscriber joining or
/// settling, or a poll set shorter, is answered within it.
const WAIT: Duration = Duration::from_millis(20);
/// How long it waits at a time while busy: for [`BUSY`] after a read found a change or a
/// subscriber asked for a read, when a hub is likely to settle after a pass next and waits
/// for the answer.
const WAIT_BUSY: Duration = Duration::from_millis(2);
/// How long the listener stays busy after a change or an ask.
const BUSY: Duration = Duration::from_secs(1);
/// How long a step waits for a read or its poll before it returns, so that its owner sees a
/// stop that nobody rang ([`ring`]) and, on a hub, a change of its config. Each waiting watcher
/// costs a wake-up a slice: a hub of 500 queues, 500 a second.
const SLICE: Duration = Duration::from_secs(1);
/// How long the listener waits before it connects again after a failure.
const RETRY: Duration = Duration::from_secs(1);

/// The listeners of this process, one a server: held weakly, so that a listener ends with the
/// last of its subscriptions.
static LISTENERS: Mutex<Vec<(Target, Weak<Listener>)>> = Mutex::new(Vec::new());

/// Whether `a` and `b` connect to the same server as the same user in the same way: the
/// client's settings (its `Debug`, which leaves out the password), the password, and hookq's
/// own TLS keys.
fn same_target(a: &Target, b: &Target) -> bool {
    format!("{:?}", a.config()) == format!("{:?}", b.config())
        && a.config().get_password() == b.config().get_password()
        && a.ssl_mode() == b.ssl_mode()
        && a.roots() == b.roots()
}

/// How many mark statements the listener of `target` in this process has sent, when one runs:
/// every subscribed queue's mark comes from each. For tests, through `hookq::testing`.
pub fn statements(target: &Target) -> Option<u64> {
    let all = LISTENERS.lock().unwrap_or_else(PoisonError::into_inner);
    all.iter()
        .filter(|(t, _)| same_target(t, target))
        .find_map(|(_, l)| l.upgrade())
        .map(|l| l.shared.statements.load(Ordering::Relaxed))
}

/// Wakes every watcher of this process that waits on a listener, so that each looks at its
/// owner's stop at once rather than at the end of its [`SLICE`]: a stop request is a flag,
/// which nothing can wait on, so whoever requests one rings ([`crate::queue::watch::ring`]).
pub(crate) fn ring() {
    let all = LISTENERS.lock().unwrap_or_else(PoisonError::into_inner);
    for listener in all.iter().filter_map(|(_, l)| l.upgrade()) {
        let st = listener.shared.lock();
        for sub in st.subs.values() {
            sub.wake.notify_all();
        }
    }
}

/// A server's listener: its subscriptions hold it, and the last one dropped ends its thread.
struct Listener {
    shared: Arc<Shared>,
}

impl Listener {
    /// The listener of `target` in this process, started when there is none.
    fn of(target: &Target) -> Arc<Listener> {
        let mut all = LISTENERS.lock().unwrap_or_else(PoisonError::into_inner);
        all.retain(|(_, l)| l.strong_count() > 0);
        let found = all
            .iter()
            .filter(|(t, _)| same_target(t, target))
            .find_map(|(_, l)| l.upgrade());
        if let Some(listener) = found {
            return listener;
        }
        let shared = Arc::new(Shared {
            target: target.clone(),
            state: Mutex::new(State::default()),
            told: Condvar::new(),
            asked: Condvar::new(),
            statements: AtomicU64::new(0),
        });
        let thread = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("hookq-listen".into())
            .spawn(move || run(&thread))
            .expect("start the listener's thread");
        let listener = Arc::new(Listener { shared });
        all.push((target.clone(), Arc::downgrade(&listener)));
        listener
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.asked.notify_all();
    }
}

/// What the listener's thread and its subscriptions share.
struct Shared {
    target: Target,
    state: Mutex<State>,
    /// Signalled when a read ends, or fails: what a subscriber joining or settling waits for.
    /// A stepping subscriber waits on its own [`Sub::wake`].
    told: Condvar,
    /// Signalled when a subscriber joins, or the listener is to stop: what a thread with no
    /// connection to wait on waits for.
    asked: Condvar,
    /// Mark statements sent.
    statements: AtomicU64,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The listener's state, under its lock.
#[derive(Default)]
struct State {
    /// The subscriptions, by id.
    subs: HashMap<u64, Sub>,
    /// The queues subscribed, by name.
    queues: HashMap<String, Entry>,
    next_id: u64,
    /// The last read of every queue that succeeded: the polls count from it.
    last: Option<Read>,
    /// Reads so far, of every queue or of the queues asked for, and the connection the last
    /// one was on.
    seq: u64,
    read_epoch: u64,
    /// The queues whose subscribers asked for a read (joining or settling) since the last:
    /// when nothing else is due, a read of these alone answers them.
    asked: HashSet<String>,
    /// Connections made so far.
    epoch: u64,
    /// Whether the last connection or read failed (until a read succeeds), and when.
    failed_at: Option<Instant>,
    /// Failures so far.
    failures: u64,
    /// Whether the failure at hand was logged.
    logged: bool,
    /// Asks for a read (a subscriber joining or settling), the asks the last read answered,
    /// and the asks given up when a read failed (a settle's: it is told of the failure).
    asks: u64,
    answered: u64,
    abandoned: u64,
    /// The asks of subscribers joining: each wants its first read, or the error that stopped it.
    joins: BTreeSet<u64>,
    refused: HashMap<u64, PgError>,
    /// Bumped when a queue is subscribed or its last subscription goes: the channels to
    /// listen on may have changed.
    channels: u64,
    /// When the last read of any queues started.
    read_at: Option<Instant>,
    /// The queues notified since their last read (their `notes` above their `notes_read`),
    /// which a read of some queues takes: kept apart so that neither the next plan nor that
    /// read looks at every queue.
    noted: HashSet<String>,
    /// Until when it waits [`WAIT_BUSY`] at a time rather than [`WAIT`].
    busy_until: Option<Instant>,
    /// The last subscription is gone: end the thread.
    stop: bool,
}

/// A read of every subscribed queue's mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Read {
    /// Its number, from 1.
    seq: u64,
    /// When it started: it saw every commit before.
    started: Instant,
    /// The connection it was read on.
    epoch: u64,
}

/// One subscription, as the listener sees it.
struct Sub {
    poll: Duration,
    /// A read that starts at or after this is wanted: the subscriber's poll is due.
    want: Option<Instant>,
    /// The subscriber's count of the reads of its queue.
    reads: Arc<AtomicU64>,
    /// What its steps wait on: signalled when something it may answer comes (a read it wanted,
    /// a change or a notification of its queue, a new connection, a failure), and no more, so
    /// that a listener of hundreds of queues wakes only the threads of the queues concerned.
    wake: Arc<Condvar>,
}

/// One queue subscribed.
struct Entry {
    channel: String,
    /// Its subscriptions' ids.
    subs: Vec<u64>,
    /// Notifications heard for it, and how many of them came before the last read started.
    notes: u64,
    notes_read: u64,
    /// Its mark, and the read it comes from (`None`: not read yet).
    mark: i64,
    read: Option<Read>,
}

/// What the listener's thread does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    /// Read every queue's mark now (connecting first when it has no connection).
    Read,
    /// Read the marks of the queues asked for ([`State::asked`]) and of those notified since
    /// their last read, now: what a hub's settle after each of its passes, or a commit, costs,
    /// whatever the number of queues.
    ReadAsked,
    /// Wait this long for a notification (or, with no connection, to be asked).
    Wait(Duration),
}

/// What the listener does next, from its state alone at `now`.
fn plan(st: &State, now: Instant) -> Plan {
    if let Some(failed) = st.failed_at {
        // A subscriber joining is answered at once, with a read or the error.
        if !st.joins.is_empty() {
            return Plan::Read;
        }
        let again = failed + RETRY;
        return if now >= again {
            Plan::Read
        } else {
            Plan::Wait(again - now)
        };
    }
    let asked = st.asks > st.answered.max(st.abandoned);
    let wait = if st.busy_until.is_some_and(|b| now < b) {
        WAIT_BUSY
    } else {
        WAIT
    };
    let Some(last) = st.last else {
        return if asked { Plan::Read } else { Plan::Wait(wait) };
    };
    // A gap after the last read, of every queue or of some.
    let gap = st.read_at.unwrap_or(last.started) + PG_GAP;
    let mut at: Option<Instant> = st
        .subs
        .values()
        .map(|s| s.poll.max(PG_GAP))
        .min()
        .and_then(|poll| last.started.checked_add(poll))
        .map(|a| a.max(gap));
    let wanted = st
        .subs
        .values()
        .filter_map(|s| s.want)
        .filter(|&w| w > last.started)
        .min();
    if let Some(w) = wanted {
        at = Some(at.map_or(w.max(gap), |a| a.min(w.max(gap))));
    }
    // A notification is read a gap after the last read of any queue, and of its own queue:
    // the writers of a few queues notify hundreds of times a second.
    let noted = (!st.noted.is_empty()).then_some(gap);
    match at {
        Some(at) if now >= at => Plan::Read,
        _ if asked || noted.is_some_and(|n| now >= n) => Plan::ReadAsked,
        _ => {
            let next = [at, noted].into_iter().flatten().min();
            Plan::Wait(next.map_or(wait, |n| (n - now).min(wait)))
        }
    }
}

/// The listener's connection.
struct Connection {
    client: Client,
    marks: postgres::Statement,
    marks_few: postgres::Statement,
    /// The queues' channels it listens on.
    listening: HashSet<String>,
    /// The [`State::channels`] they were listened on for.
    channels: Option<u64>,
}

impl Connection {
    fn open(target: &Target) -> Result<Connection, PgError> {
        let name = format!("{APPLICATION_NAME} pid {}", std::process::id());
        let mut client = connect(target, &name)?;
        // A server that stops answering fails a read instead of hanging the listener.
        guard_session(&mut client, target)?;
        schema::migrate(&mut client)?;
        // The channel older hosts notify every queue on, naming it; until hookq 0.3, so that a
        // fleet can upgrade its hubs and views before its writers.
        client.batch_execute(&format!("LISTEN {}", quote_ident(LEGACY_CHANNEL)))?;
        let marks = client.prepare(MARKS)?;
        let marks_few = client.prepare(MARKS_FEW)?;
        Ok(Connection {
            client,
            marks,
            marks_few,
            listening: HashSet::new(),
            channels: None,
        })
    }

    /// Listens on `channels` and on no other queue's, in one round trip.
    fn listen(&mut self, channels: HashSet<String>) -> Result<(), PgError> {
        let mut sql = String::new();
        for c in channels.difference(&self.listening) {
            sql.push_str(&format!("LISTEN {};", quote_ident(c)));
        }
        for c in self.listening.difference(&channels) {
            sql.push_str(&format!("UNLISTEN {};", quote_ident(c)));
        }
        if !sql.is_empty() {
            self.client.batch_execute(&sql)?;
            self.listening = channels;
        }
        Ok(())
    }

    /// The notifications that come within `timeout` (none waited for when it is zero), and
    /// every one buffered with them.
    fn notifications(&mut self, timeout: Duration) -> Result<Vec<Notification>, PgError> {
        let mut got = Vec::new();
        {
            let mut notes = self.client.notifications();
            if !timeout.is_zero()
                && let Some(n) = notes.timeout_iter(timeout).next()?
            {
                got.push(n);
            }
            let mut buffered = notes.iter();
            while let Some(n) = buffered.next()? {
                got.push(n);
            }
        }
        if got.is_empty() && self.client.is_closed() {
            // A connection the server closed waits for nothing: its error, rather than a wait
            // that returns at once until the next read fails.
            self.client.batch_execute("")?;
        }
        Ok(got)
    }
}

/// Counts `notes` for the queues they name, on their own channel or the legacy one; the payload
/// is compared on both, since queues whose names are cut to one channel share it. Wakes the
/// subscribers of those queues: a prompt one answers a notification before the read.
fn hear(st: &mut State, notes: &[Notification]) {
    let mut heard = HashSet::new();
    for n in notes {
        if let Some(e) = st.queues.get_mut(n.payload())
            && (n.channel() == e.channel || n.channel() == LEGACY_CHANNEL)
        {
            e.notes += 1;
            st.busy_until = Some(Instant::now() + BUSY);
            heard.insert(n.payload());
        }
    }
    for q in heard {
        if !st.noted.contains(q) {
            st.noted.insert(q.to_owned());
        }
        for id in &st.queues[q].subs {
            st.subs[id].wake.notify_all();
        }
    }
}

/// Wakes every subscriber's step: the connection failed, or came back.
fn wake_all(st: &State) {
    for sub in st.subs.values() {
        sub.wake.notify_all();
    }
}

/// The listener's thread: reads, waits for notifications, connects again after a failure, until
/// its last subscription is gone.
fn run(shared: &Shared) {
    let mut conn: Option<Connection> = None;
    loop {
        let next = {
            let st = shared.lock();
            if st.stop {
                return;
            }
            plan(&st, Instant::now())
        };
        let (done, reading) = match next {
            Plan::Read => (read(shared, &mut conn, false), true),
            Plan::ReadAsked => (read(shared, &mut conn, true), true),
            Plan::Wait(d) => match conn.as_mut() {
                Some(c) => {
                    let heard = c.notifications(d).map(|notes| {
                        if !notes.is_empty() {
                            hear(&mut shared.lock(), &notes);
                        }
                    });
                    (heard, false)
                }
                None => {
                    let st = shared.lock();
                    if !st.stop && st.joins.is_empty() {
                        let waited = shared.asked.wait_timeout(st, d);
                        drop(waited.unwrap_or_else(PoisonError::into_inner));
                    }
                    (Ok(()), false)
                }
            },
        };
        if let Err(e) = done {
            conn = None;
            failed(shared, e, reading);
        }
    }
}

/// Reads every subscribed queue's mark (with `asked`, only those of the queues asked for),
/// connecting first when there is no connection, and tells the subscribers.
fn read(shared: &Shared, conn: &mut Option<Connection>, asked: bool) -> Result<(), PgError> {
    let c = match conn {
        Some(c) => c,
        None => {
            let c = conn.insert(Connection::open(&shared.target)?);
            shared.lock().epoch += 1;
            c
        }
    };
    let (names, channels, covering) = {
        let mut st = shared.lock();
        let mut wanted = std::mem::take(&mut st.asked);
        let names: Vec<String> = if asked {
            wanted.retain(|q| st.queues.contains_key(q));
            wanted.extend(st.noted.iter().cloned());
            wanted.into_iter().collect()
        } else {
            st.queues.keys().cloned().collect()
        };
        let channels = (c.channels != Some(st.channels)).then(|| {
            let all: HashSet<String> = st.queues.values().map(|e| e.channel.clone()).collect();
            (all, st.channels)
        });
        (names, channels, st.asks)
    };
    // Listening before the read, a commit after it is heard or seen by the next.
    if let Some((all, version)) = channels {
        c.listen(all)?;
        c.channels = Some(version);
    }
    // The notifications that came so far are answered by this read.
    let notes = c.notifications(Duration::ZERO)?;
    // The queues notified since the last read: their subscribers look at this one.
    let mut noted: HashSet<String> = HashSet::new();
    let started = {
        let mut st = shared.lock();
        hear(&mut st, &notes);
        for name in &names {
            if let Some(e) = st.queues.get_mut(name)
                && e.notes_read != e.notes
            {
                e.notes_read = e.notes;
                noted.insert(name.clone());
                st.noted.remove(name);
            }
        }
        let now = Instant::now();
        st.read_at = Some(now);
        now
    };
    let statement = if asked && names.len() <= FEW {
        &c.marks_few
    } else {
        &c.marks
    };
    let rows = c.client.query(statement, &[&names, &HEAD])?;
    shared.statements.fetch_add(1, Ordering::Relaxed);
    let mut st = shared.lock();
    st.seq += 1;
    let this = Read {
        seq: st.seq,
        started,
        epoch: st.epoch,
    };
    let mut changed = false;
    for row in &rows {
        let name: String = row.get(0);
        if let Some(e) = st.queues.get_mut(&name) {
            let mark = mark_of(row);
            changed |= e.read.is_some() && e.mark != mark;
            (e.mark, e.read) = (mark, Some(this));
        }
    }
    // What changed wakes a subscriber, and a hub's pass and its settle are likely to follow.
    if changed {
        st.busy_until = Some(Instant::now() + BUSY);
    }
    // Woken: a subscriber of a queue read that was notified before the read or wants a read,
    // and every one after a new connection (it may have missed a notification). A step looks
    // at no other read, so nobody else is woken, whatever moved.
    let again = st.read_epoch != st.epoch;
    st.read_epoch = st.epoch;
    for name in &names {
        let Some(e) = st.queues.get(name) else {
            continue;
        };
        for sub in e.subs.iter().filter_map(|id| st.subs.get(id)) {
            sub.reads.fetch_add(1, Ordering::Relaxed);
            if sub.want.is_some() || noted.contains(name) {
                sub.wake.notify_all();
            }
        }
    }
    if again {
        wake_all(&st);
    }
    if !asked {
        st.last = Some(this);
    }
    st.answered = covering;
    st.joins = st.joins.split_off(&(covering + 1));
    st.failed_at = None;
    st.logged = false;
    drop(st);
    shared.told.notify_all();
    Ok(())
}

/// Takes a failure of the connection: of a connection or a read when `reading`, which the oldest
/// subscriber joining gets (the others joining try again at once); the subscribers are told by
/// the connection's epoch, once back, that they may have missed a change.
fn failed(shared: &Shared, e: PgError, reading: bool) {
    let mut st = shared.lock();
    st.failed_at = Some(Instant::now());
    st.failures += 1;
    st.abandoned = st.asks;
    if let Some(join) = reading.then(|| st.joins.pop_first()).flatten() {
        st.refused.insert(join, e);
    } else if !std::mem::replace(&mut st.logged, true) {
        let mut queues: Vec<&str> = st.queues.keys().map(String::as_str).collect();
        queues.sort_unstable();
        tracing::warn!(
            target = %shared.target.masked(),
            "cannot watch queue(s) {} for changes (retrying): {e}",
            queues.join(", ")
        );
    }
    wake_all(&st);
    drop(st);
    shared.told.notify_all();
}

/// One watcher's subscription to its server's listener: told of its queue's changes at each
/// step.
pub(crate) struct Subscription {
    listener: Arc<Listener>,
    id: u64,
    queue: String,
    poll: Duration,
    /// The last read it was told of, the mark that read found, and the notifications heard
    /// before it.
    told: Read,
    mark: i64,
    notes_seen: u64,
    /// Whether a notification of its queue ends a step at once ([`Subscription::prompt`]).
    prompt: bool,
    /// What its steps wait on ([`Sub::wake`]).
    wake: Arc<Condvar>,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("queue", &self.queue)
            .finish_non_exhaustive()
    }
}

impl Subscription {
    /// Subscribes to `queue` on the listener of `target` (started if this process has none),
    /// counting the reads of its queue in `reads`, and returns once a read of its mark made
    /// after the call (and after its channel was listened on) is in: what comes after is a
    /// change. Fails with the error of that read when it fails.
    pub(crate) fn open(
        target: &Target,
        queue: &QueueName,
        reads: &Arc<AtomicU64>,
    ) -> Result<Subscription, Error> {
        let listener = Listener::of(target);
        let shared = Arc::clone(&listener.shared);
        let name = queue.as_str().to_owned();
        let wake = Arc::new(Condvar::new());
        let mut st = shared.lock();
        let id = st.next_id;
        st.next_id += 1;
        st.subs.insert(
            id,
            Sub {
                poll: PG_POLL,
                want: None,
                reads: Arc::clone(reads),
                wake: Arc::clone(&wake),
            },
        );
        st.queues
            .entry(name.clone())
            .or_insert_with(|| Entry {
                channel: queue.channel(),
                subs: Vec::new(),
                notes: 0,
                notes_read: 0,
                mark: 0,
                read: None,
            })
            .subs
            .push(id);
        st.channels += 1;
        st.asked.insert(name.clone());
        st.asks += 1;
        st.busy_until = Some(Instant::now() + BUSY);
        let ticket = st.asks;
        st.joins.insert(ticket);
        shared.asked.notify_all();
        let mut sub = Subscription {
            listener,
            id,
            queue: name,
            poll: PG_POLL,
            told: Read {
                seq: 0,
                started: Instant::now(),
                epoch: 0,
            },
            mark: 0,
            notes_seen: 0,
            prompt: false,
            wake,
        };
        loop {
            if let Some(e) = st.refused.remove(&ticket) {
                drop(st);
                // Dropped, the subscription leaves the listener.
                return Err(Error::Postgres {
                    place: Box::new(Place::postgres(queue, target)),
                    source: e,
                });
            }
            if st.answered >= ticket
                && let Some(e) = st.queues.get(&sub.queue)
                && let Some(read) = e.read
            {
                (sub.told, sub.mark, sub.notes_seen) = (read, e.mark, e.notes_read);
                return Ok(sub);
            }
            st = shared.told.wait(st).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// From now on a notification of its queue ends a step at once, as a change, instead of
    /// waiting for the read it calls for (a hub's: its pass reads what the notification
    /// announced).
    pub(crate) fn prompt(&mut self) {
        self.prompt = true;
    }

    /// How often it wants its queue read when no notification came: the listener reads at the
    /// shortest poll of its subscribers.
    pub(crate) fn set_poll(&mut self, every: Duration) {
        self.poll = every;
        if let Some(sub) = self.listener.shared.lock().subs.get_mut(&self.id) {
            sub.poll = every;
        }
    }

    /// Waits for the next read of its queue that its poll or a notification calls for (about a
    /// [`SLICE`] when none is due, less when `pause` stops; while the listener cannot read, a
    /// slice), then tells whether the queue changed since the read it was last told of: its mark
    /// moved, a notification for it came, or the listener connected again meanwhile.
    ///
    /// Its poll is due a poll after the start of the read it was last told of. Then the latest
    /// read answers it if that started at most half a poll before (and at once with no poll):
    /// so the watchers of a server fall into step with each other and one read answers them
    /// all, while each sees a commit within about its own poll. Otherwise it wants a read, which
    /// the listener makes. Reads that neither its poll nor its queue's notifications called for
    /// it does not look at, so that a mark caught in passing (another queue's writer in the
    /// middle of its transaction) wakes no one who did not ask.
    pub(crate) fn step(&mut self, pause: &dyn Pause) -> bool {
        let called = Instant::now();
        let deadline = called + SLICE;
        let shared = Arc::clone(&self.listener.shared);
        let mut st = shared.lock();
        loop {
            let now = Instant::now();
            let due = self.told.started.checked_add(self.poll);
            let Some(sub) = st.subs.get_mut(&self.id) else {
                return false;
            };
            if sub.want.is_none() && due.is_some_and(|d| now >= d) {
                let fresh = now.checked_sub(self.poll / 2).unwrap_or(self.told.started);
                // Newer than the read it was told of, which the listener compares it with.
                sub.want = Some(fresh.max(self.told.started + Duration::from_nanos(1)));
            }
            let want = sub.want;
            let heard = st.queues.get(&self.queue).map_or(0, |e| e.notes);
            if self.prompt && heard > self.notes_seen {
                self.notes_seen = heard;
                return true;
            }
            if let Some(e) = st.queues.get(&self.queue)
                && let Some(last) = e.read
                && last.seq > self.told.seq
            {
                let notified = e.notes_read > self.notes_seen;
                let again = last.epoch != self.told.epoch;
                let answered = want.is_some_and(|w| last.started >= w);
                if notified || again || answered {
                    // A notification counts even when the mark did not move: a task moved with
                    // no point recorded, a write the mark does not see.
                    let changed = e.mark != self.mark || notified || again;
                    (self.told, self.mark, self.notes_seen) = (last, e.mark, e.notes_read);
                    if answered && let Some(sub) = st.subs.get_mut(&self.id) {
                        sub.want = None;
                    }
                    // A read its poll wanted that found nothing new ends the step too.
                    return changed;
                }
            }
            let notes = st.queues.get(&self.queue).map_or(0, |e| e.notes);
            let failing = st.failed_at.is_some();
            let pending = !failing && (want.is_some() || notes > self.notes_seen);
            if pause.stopped() || (!pending && now >= deadline) {
                return false;
            }
            // Neither pending nor failing, its poll is not due yet.
            let until = if pending {
                now + SLICE
            } else if failing {
                deadline
            } else {
                due.map_or(deadline, |d| d.min(deadline))
            };
            st = self
                .wake
                .wait_timeout(st, until.saturating_duration_since(now))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Whether a notification of its queue came that no step told of yet: a prompt
    /// subscription's next step tells of it at once.
    pub(crate) fn news_waiting(&self) -> bool {
        let st = self.listener.shared.lock();
        self.prompt && st.queues.get(&self.queue).is_some_and(|e| e.notes > self.notes_seen)
    }

    /// Has its queue read now and takes that read, without telling whether its mark changed:
    /// the next step tells only of what comes after, and of the notifications not told of yet. While the
    /// listener cannot read, or when it connected again since the last step, the next step
    /// tells of a change instead.
    pub(crate) fn settle(&mut self) {
        let shared = Arc::clone(&self.listener.shared);
        let mut st = shared.lock();
        let read = st.queues.get(&self.queue).and_then(|e| e.read);
        if st.failed_at.is_some() || read.is_some_and(|r| r.epoch != self.told.epoch) {
            return;
        }
        st.asked.insert(self.queue.clone());
        st.asks += 1;
        st.busy_until = Some(Instant::now() + BUSY);
        let (ticket, failures) = (st.asks, st.failures);
        loop {
            if st.failures != failures {
                return;
            }
            if st.answered >= ticket
                && let Some(e) = st.queues.get(&self.queue)
                && let Some(last) = e.read
            {
                // The notifications stay for the next step: one that came while the pass ran
                // may announce a commit the pass did not see.
                (self.told, self.mark) = (last, e.mark);
                if let Some(sub) = st.subs.get_mut(&self.id) {
                    sub.want = None;
                }
                return;
            }
            st = shared.told.wait(st).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut st = self.listener.shared.lock();
        st.subs.remove(&self.id);
        if let Some(e) = st.queues.get_mut(&self.queue) {
            e.subs.retain(|&id| id != self.id);
            if e.subs.is_empty() {
                st.queues.remove(&self.queue);
                st.noted.remove(&self.queue);
                st.channels += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(poll: Duration) -> Sub {
        Sub {
            poll,
            want: None,
            reads: Arc::default(),
            wake: Arc::default(),
        }
    }

    fn entry() -> Entry {
        Entry {
            channel: "hookq:q".into(),
            subs: Vec::new(),
            notes: 0,
            notes_read: 0,
            mark: 0,
            read: None,
        }
    }

    /// A listener that read at `at`, with subscribers polling every `polls`.
    fn read_at(at: Instant, polls: &[Duration]) -> State {
        let mut st = State::default();
        for (i, p) in polls.iter().enumerate() {
            st.subs.insert(i as u64, sub(*p));
        }
        let mut q = entry();
        q.subs = (0..polls.len() as u64).collect();
        st.queues.insert("q".into(), q);
        st.last = Some(Read {
            seq: 1,
            started: at,
            epoch: 1,
        });
        st
    }

    #[test]
    fn the_listener_polls_at_its_fastest_subscribers_interval() {
        let t = Instant::now();
        let st = read_at(t, &[Duration::from_secs(1), Duration::from_millis(250)]);
        assert_eq!(plan(&st, t + Duration::from_millis(249)), Plan::Wait(Duration::from_millis(1)));
        assert_eq!(plan(&st, t + Duration::from_millis(250)), Plan::Read);
        // A poll shorter than the gap reads every gap.
        let st = read_at(t, &[Duration::ZERO]);
        let early = Duration::from_millis(10);
        assert_eq!(plan(&st, t + PG_GAP - early), Plan::Wait(early));
        assert_eq!(plan(&st, t + PG_GAP), Plan::Read);
    }

    #[test]
    fn a_notification_reads_its_queue_a_gap_after_the_last_read() {
        let t = Instant::now();
        let mut st = read_at(t, &[Duration::from_secs(3600)]);
        st.queues.get_mut("q").unwrap().notes = 1;
        st.noted.insert("q".into());
        assert_eq!(plan(&st, t + Duration::from_millis(10)), Plan::Wait(Duration::from_millis(20)));
        assert_eq!(plan(&st, t + PG_GAP), Plan::ReadAsked);
        // The gap counts from the last read of any queues.
        let later = t + Duration::from_millis(200);
        st.read_at = Some(later);
        let early = Duration::from_millis(10);
        assert_eq!(plan(&st, later + PG_GAP - early), Plan::Wait(early));
        assert_eq!(plan(&st, later + PG_GAP), Plan::ReadAsked);
        st.queues.get_mut("q").unwrap().notes_read = 1;
        st.noted.remove("q");
        assert_eq!(plan(&st, later + PG_GAP), Plan::Wait(WAIT));
        // So does a poll's read of every queue.
        let mut st = read_at(t, &[Duration::from_millis(250)]);
        let due = t + Duration::from_millis(250);
        let close = PG_GAP - early;
        st.read_at = Some(due - close);
        assert_eq!(plan(&st, due), Plan::Wait(early));
        assert_eq!(plan(&st, due + early), Plan::Read);
    }

    #[test]
    fn a_due_subscriber_wants_a_read_that_starts_after_it_asked() {
        let t = Instant::now();
        let mut st = read_at(t, &[Duration::from_secs(3600)]);
        let asked = t + Duration::from_millis(200);
        st.subs.get_mut(&0).unwrap().want = Some(asked);
        assert_eq!(plan(&st, asked - Duration::from_millis(1)), Plan::Wait(Duration::from_millis(1)));
        assert_eq!(plan(&st, asked), Plan::Read);
        // A want the last read already answers asks for nothing.
        st.subs.get_mut(&0).unwrap().want = Some(t);
        assert_eq!(plan(&st, asked), Plan::Wait(WAIT));
    }

    #[test]
    fn a_busy_listener_waits_in_shorter_slices() {
        let t = Instant::now();
        let mut st = read_at(t, &[Duration::from_secs(3600)]);
        st.busy_until = Some(t + BUSY);
        assert_eq!(plan(&st, t), Plan::Wait(WAIT_BUSY));
        assert_eq!(plan(&st, t + BUSY), Plan::Wait(WAIT));
    }

    #[test]
    fn a_join_or_a_settle_reads_its_queues_at_once_and_a_failure_waits_a_second() {
        let t = Instant::now();
        let mut st = read_at(t, &[Duration::from_secs(3600)]);
        st.asks = 1;
        // Only the queues asked for are read, unless a poll is due too.
        assert_eq!(plan(&st, t), Plan::ReadAsked);
        assert_eq!(plan(&st, t + Duration::from_secs(3600)), Plan::Read);
        st.answered = 1;
        st.failed_at = Some(t);
        assert_eq!(plan(&st, t), Plan::Wait(RETRY));
        assert_eq!(plan(&st, t + RETRY), Plan::Read);
        // A subscriber joining meanwhile gets a connection tried at once, or its error.
        st.asks = 2;
        st.joins.insert(2);
        assert_eq!(plan(&st, t), Plan::Read);
    }
}
