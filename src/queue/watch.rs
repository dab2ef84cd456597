//! The change watcher: tells when a queue changed, by reading one small mark of it over and
//! over. The web view's live updates and the hub's waits between passes
//! ([`crate::queue::hub::run`]) come from one of these; what the database is (SQLite's data
//! version and start log, PostgreSQL's LISTEN, poll and reconnect) is known here and nowhere in
//! the view or the hub.
//!
//! - **SQLite**: `PRAGMA data_version` (it changes whenever another connection commits: a
//!   recording, a clear, a pause), and the size and time of the start log `arc.db-starts`, where
//!   a runner notes a point's start without a commit. They are read when the kernel tells of a
//!   write to the database, its `-wal` file or the start log (an inotify watch on their
//!   folder), at once unless a change was told less than a poll ago ([`SQLITE_POLL`] unless set
//!   otherwise), and every [`SQLITE_COVER`] without a write, in case a wake-up was missed. Where
//!   the watch cannot be set up (the kernel's inotify limits reached), every poll, as said once.
//! - **PostgreSQL**: a subscription to the process's one listener of the queue's server, shared
//!   by every watcher of a queue there: one connection, `LISTEN`ing on the channel of each
//!   queue watched (a recording or a pause, notified by the writer), and one statement that
//!   reads the marks of all of them, at the shortest poll any of them asked for ([`PG_POLL`]
//!   unless set otherwise): a start, a clear and a recording nobody notified of send no
//!   notification. A commit wakes only its own queue's watchers.
//!
//! Either way a change reaches every open page within a poll and a page's fetch. With nothing
//! changing, the SQLite watcher wakes once a second to read and look at its owner's stop; the
//! PostgreSQL one makes four round trips a second of under a millisecond each, whatever the
//! queue holds, and as many for all the queues a process watches on one server (each adds a few
//! index probes to the one statement).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use crate::exec::Stop;
use crate::queue::error::Error;
use crate::queue::store::{Store, StoreOptions};
use crate::queue::wake::{Wake, WakeError};

/// How a [`Watcher`] waits between reads: its owner's clock, which a stop cuts short.
pub trait Pause {
    /// Sleeps `d`, or less when the owner stops.
    fn sleep(&self, d: Duration);
    /// Whether the owner has stopped.
    fn stopped(&self) -> bool;
}

/// A stop request is a clock that a stop cuts short: the hub's.
impl Pause for Stop {
    fn sleep(&self, d: Duration) {
        let until = std::time::Instant::now() + d;
        loop {
            let left = until.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() || self.graceful() {
                return;
            }
            std::thread::sleep(left.min(Duration::from_millis(10)));
        }
    }
    fn stopped(&self) -> bool {
        self.graceful()
    }
}

/// A queue's change watcher: on a connection of its own (SQLite), or on its server's listener,
/// which it shares with every other watcher of the process on that server (PostgreSQL). Each
/// watcher is stepped by one thread at a time; many threads may each own one.
pub struct Watcher {
    source: Source,
    reads: Arc<AtomicU64>,
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watcher").finish_non_exhaustive()
    }
}

impl Watcher {
    /// The watcher of the SQLite file `db`, on a connection of its own opened with `opts`.
    pub fn sqlite(db: PathBuf, opts: StoreOptions) -> Result<Watcher, Error> {
        let reads = Arc::new(AtomicU64::new(0));
        let source = SqliteSource::open(db, opts, &reads).map(|s| Source::Sqlite(Box::new(s)))?;
        Ok(Watcher { source, reads })
    }

    /// The watcher of PostgreSQL queue `queue` at `target`: a subscription to the process's
    /// listener of that server, started by the first watcher of the server and ended (its
    /// connection closed) with the last. Returns once the listener listens on the queue's
    /// channel and has read its mark, so that what commits after is a change; fails when that
    /// connection or read fails.
    #[cfg(feature = "postgres")]
    pub fn postgres(
        target: crate::queue::pg::Target,
        queue: crate::queue::pg::QueueName,
    ) -> Result<Watcher, Error> {
        let reads = Arc::new(AtomicU64::new(0));
        let subscription = crate::queue::pg::listener::Subscription::open(&target, &queue, &reads)?;
        Ok(Watcher {
            source: Source::Postgres(Box::new(subscription)),
            reads,
        })
    }

    /// Waits about one poll (on SQLite, until a write to the queue's files wakes it or the
    /// cover's second is up; on PostgreSQL a second at most unless a read is due or [`ring`] rings;
    /// less when `pause` stops), then tells whether the queue changed since the last call (on
    /// SQLite a step that `pause` stopped tells of nothing). A failed read is logged once; the
    /// watcher (on PostgreSQL its listener) opens its connection again and counts that as a
    /// change, since it may have missed one.
    pub fn step(&mut self, pause: &dyn Pause) -> bool {
        self.source.step(pause, &self.reads)
    }

    /// Reads the queue's mark every `every` ([`SQLITE_POLL`], [`PG_POLL`] unless set). On
    /// PostgreSQL the listener reads every queue of its server at the shortest poll its watchers
    /// set, and never closer than [`PG_GAP`] but when a watcher starts or settles; a watcher
    /// looks at the latest of those reads when its own poll is due, and wants one of its own
    /// when that read is older than half its poll.
    pub fn set_poll(&mut self, every: Duration) {
        match &mut self.source {
            Source::Sqlite(s) => s.poll = every,
            #[cfg(feature = "postgres")]
            Source::Postgres(p) => p.set_poll(every),
        }
    }

    /// Answers a notification of its queue at once, without waiting for the listener's read
    /// of the mark (which comes at least [`PG_GAP`] after the last, so that a burst costs one):
    /// for a hub, whose next pass takes whatever the burst recorded and whose start should
    /// follow a commit by milliseconds. Nothing changes on SQLite.
    pub fn prompt(&mut self) {
        #[cfg(feature = "postgres")]
        if let Source::Postgres(p) = &mut self.source {
            p.prompt();
        }
    }

    /// Reads the queue's mark now (on PostgreSQL, has the listener read it, within a few
    /// milliseconds), without telling whether it changed: the next [`step`](Watcher::step)
    /// tells only of what comes after. A hub settles its watcher after each of its own passes,
    /// whose clears and starts would otherwise wake it again. A notification that came
    /// meanwhile stays for the next step to tell of: it may announce a commit the pass did not
    /// see. A failed read is handled as [`step`](Watcher::step) handles it: the next step that
    /// reads counts as a change.
    pub fn settle(&mut self) {
        match &mut self.source {
            Source::Sqlite(s) => s.settle(&self.reads),
            #[cfg(feature = "postgres")]
            Source::Postgres(p) => p.settle(),
        }
    }

    /// Whether the next [`step`](Watcher::step) of a [`prompt`](Watcher::prompt) watcher tells
    /// of a change at once: on PostgreSQL, a notification of its queue came that no step told
    /// of yet. A hub that finds one after its pass leaves the commit to that step rather than
    /// read the queue's mark to look for it. Never on SQLite, which has no notifications.
    pub fn news_waiting(&self) -> bool {
        match &self.source {
            Source::Sqlite(_) => false,
            #[cfg(feature = "postgres")]
            Source::Postgres(p) => p.news_waiting(),
        }
    }

    /// How many times the watcher has read the database (on PostgreSQL, how many of its
    /// listener's reads covered its queue: one statement covers every queue of the server),
    /// shared so that its owner can count while the watcher runs on a thread of its own.
    pub fn reads(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.reads)
    }
}

/// Wakes every watcher of this process that waits on a PostgreSQL queue's listener, so that
/// each looks at its owner's stop at once: a stop request is a flag nothing can wait on, and a
/// watcher that nobody rings sees it within a second. A host that requests a stop rings after
/// it ([`fleet::run`](crate::queue::fleet::run) and the `hookq` command do); ringing when
/// nothing stopped costs each waiting watcher a look at its state.
pub fn ring() {
    #[cfg(feature = "postgres")]
    crate::queue::pg::listener::ring();
}

/// How often the watcher reads a SQLite queue's mark: at most this often when writes to the
/// queue's files wake it, and this often when the kernel cannot tell of them.
pub const SQLITE_POLL: Duration = Duration::from_millis(100);
/// How often the watcher of a SQLite queue reads its mark when no write woke it (or its poll,
/// if longer): the cover for a wake-up the kernel did not give (a write through another
/// machine's mount of the folder). A folder replaced under the watch is not covered: the
/// watcher's connection keeps the files it opened, whose data version no longer changes.
pub const SQLITE_COVER: Duration = Duration::from_secs(1);
/// How often the watcher reads a PostgreSQL queue's mark, notifications aside.
pub const PG_POLL: Duration = Duration::from_millis(250);
/// The least time between two reads of a PostgreSQL queue's mark: a burst of notifications
/// (writers committing one after another) costs one read, and one change, each this long.
pub const PG_GAP: Duration = Duration::from_millis(50);
/// How long the watcher waits before it opens the database again after a failed read.
const RETRY: Duration = Duration::from_secs(1);

/// What the watcher reads: the queue's database.
enum Source {
    /// A SQLite queue.
    Sqlite(Box<SqliteSource>),
    /// A PostgreSQL queue, through its server's listener.
    #[cfg(feature = "postgres")]
    Postgres(Box<crate::queue::pg::listener::Subscription>),
}

impl Source {
    /// Waits about one poll (less when stopped), then tells whether the queue changed since
    /// the last call. A failed read is reported once; the source opens its connection again
    /// and counts that as a change, since it may have missed one.
    fn step(&mut self, pause: &dyn Pause, reads: &AtomicU64) -> bool {
        match self {
            Source::Sqlite(s) => s.step(pause, reads),
            #[cfg(feature = "postgres")]
            Source::Postgres(p) => p.step(pause),
        }
    }
}

/// The mark of a SQLite queue: the database's data version and the start log's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SqliteMark {
    data_version: i64,
    starts: Option<(u64, Option<SystemTime>)>,
}

/// A SQLite queue's watcher connection, woken by writes to the queue's files when the kernel
/// can tell of them.
struct SqliteSource {
    db: PathBuf,
    opts: StoreOptions,
    starts: PathBuf,
    store: Option<Store>,
    last: Option<SqliteMark>,
    poll: Duration,
    failing: bool,
    /// The watch on the queue's files; `None` when it could not be set up or ended: the
    /// watcher then reads every poll.
    wake: Option<Wake>,
    /// When the mark was last read.
    read_at: Instant,
    /// Whether the owner settled since the last change told: reads then answer a write at
    /// once, rather than a poll after the last read.
    settled: bool,
    /// Reads due again soon: a write was told of but the read found no change yet.
    recheck: Option<Recheck>,
}

/// The reads that follow a write the read after it did not find committed: SQLite publishes a
/// commit (in its shared-memory index, which tells the kernel nothing) only after writing and
/// syncing the `-wal` file, so a read woken by the write can come too early.
#[derive(Debug, Clone, Copy)]
struct Recheck {
    /// When the write came.
    since: Instant,
    /// The wait before the next read.
    next: Duration,
}

/// The first wait of a [`Recheck`]; each next one is twice as long.
const RECHECK_FIRST: Duration = Duration::from_millis(1);
/// How long after a write its [`Recheck`] goes on: past that, a commit it told of is found by
/// the cover's read.
const RECHECK_FOR: Duration = Duration::from_millis(250);

/// What ended a SQLite watcher's wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    /// A write to the queue's files.
    Write,
    /// A [`Recheck`]'s time.
    Recheck,
    /// The cover's time, a poll without a watch, or a stop.
    Time,
}

/// Whether a watcher has said that it polls for want of a watch: said once a process, since a
/// hub of many workspaces that runs out of inotify instances would say it for each.
static POLLING_SAID: AtomicBool = AtomicBool::new(false);

impl SqliteSource {
    fn open(db: PathBuf, opts: StoreOptions, reads: &AtomicU64) -> Result<SqliteSource, Error> {
        let store = Store::open_with(&db, opts).map_err(|e| Error::store(&db, e))?;
        let starts = crate::queue::starts::path_for(&db);
        let mut source = SqliteSource {
            wake: None,
            starts,
            db,
            opts,
            store: Some(store),
            last: None,
            poll: SQLITE_POLL,
            failing: false,
            read_at: Instant::now(),
            settled: false,
            recheck: None,
        };
        // Watched before the first read, so that no commit falls between the two.
        match Wake::new(&source.db, &source.starts) {
            Ok(wake) => source.wake = Some(wake),
            Err(e) => source.polling(&e),
        }
        source.take_wakes();
        source.last = Some(source.mark(reads)?);
        Ok(source)
    }

    /// Goes on without the watch, saying why (once a process).
    fn polling(&mut self, why: &WakeError) {
        self.wake = None;
        if !POLLING_SAID.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "{why}; polling {} for changes instead (other queues of this process may poll too)",
                self.db.display()
            );
        } else {
            tracing::debug!("{why}; polling {}", self.db.display());
        }
    }

    /// Takes the writes told so far, for the next read to answer: whether one was to the
    /// queue's files.
    fn take_wakes(&mut self) -> bool {
        let Some(wake) = &mut self.wake else {
            return false;
        };
        match wake.take() {
            Ok(woken) => woken,
            Err(e) => {
                self.polling(&e);
                false
            }
        }
    }

    /// Waits for a write to the queue's files, a [`Recheck`]'s time, or [`SQLITE_COVER`] (the
    /// poll if longer) since the last read; without a watch, a poll. Unless the owner settled
    /// since the last change told, never less than a poll (at most [`SQLITE_POLL`]) after the
    /// last read: a burst of commits is told once a poll, as polling tells it, while a hub,
    /// which settles after each pass, hears of the next commit at once. Less when `pause`
    /// stops.
    fn wait(&mut self, pause: &dyn Pause) -> Ended {
        let Some(wake) = &mut self.wake else {
            pause.sleep(self.poll);
            return Ended::Time;
        };
        if !self.settled {
            let gap = self.poll.min(SQLITE_POLL);
            if let Some(left) = gap.checked_sub(self.read_at.elapsed()) {
                pause.sleep(left);
            }
        }
        let cover = self
            .poll
            .max(SQLITE_COVER)
            .saturating_sub(self.read_at.elapsed());
        let timeout = self.recheck.map_or(cover, |r| r.next.min(cover));
        match wake.wait(pause, timeout) {
            Ok(true) => Ended::Write,
            Ok(false) if self.recheck.is_some() && timeout < cover => Ended::Recheck,
            Ok(false) => Ended::Time,
            Err(e) => {
                self.polling(&e);
                Ended::Time
            }
        }
    }

    /// What follows a read that found no change after `ended`: a write starts a [`Recheck`],
    /// whose reads come twice as far apart each time, for [`RECHECK_FOR`].
    fn unchanged(&mut self, ended: Ended) {
        self.recheck = match (ended, self.recheck) {
            (Ended::Write, _) => Some(Recheck {
                since: Instant::now(),
                next: RECHECK_FIRST,
            }),
            (Ended::Recheck, Some(r)) if r.since.elapsed() < RECHECK_FOR => Some(Recheck {
                since: r.since,
                next: r.next * 2,
            }),
            (Ended::Recheck, _) => None,
            (Ended::Time, r) => r,
        };
    }

    fn mark(&mut self, reads: &AtomicU64) -> Result<SqliteMark, Error> {
        let store = match &mut self.store {
            Some(s) => s,
            None => self.store.insert(
                Store::open_with(&self.db, self.opts)
                    .map_err(|e| Error::store(&self.db, e))?,
            ),
        };
        // The start log first: a fold empties it in the same pass that commits, so a start
        // folded between the two reads still changes the data version read second.
        let starts = std::fs::metadata(&self.starts)
            .ok()
            .map(|m| (m.len(), m.modified().ok()));
        reads.fetch_add(1, Ordering::Relaxed);
        self.read_at = Instant::now();
        let data_version = store
            .data_version()
            .map_err(|e| Error::store(&self.db, e))?;
        Ok(SqliteMark {
            data_version,
            starts,
        })
    }

    fn step(&mut self, pause: &dyn Pause, reads: &AtomicU64) -> bool {
        let ended = if self.failing {
            pause.sleep(RETRY);
            self.recheck = None;
            Ended::Time
        } else {
            self.wait(pause)
        };
        if pause.stopped() {
            return false;
        }
        match self.mark(reads) {
            Ok(mark) => {
                self.failing = false;
                let changed = self.last.replace(mark) != Some(mark);
                if changed {
                    self.settled = false;
                    self.recheck = None;
                } else {
                    self.unchanged(ended);
                }
                changed
            }
            Err(e) => {
                self.failed(e);
                false
            }
        }
    }

    fn settle(&mut self, reads: &AtomicU64) {
        if self.failing {
            // The next step reads, and counts what it finds as a change.
            return;
        }
        // What was written so far is answered by the read below, and what comes after it at
        // once. A write taken here may be a commit not published yet: read again soon.
        if self.take_wakes() {
            self.unchanged(Ended::Write);
        }
        self.settled = true;
        match self.mark(reads) {
            Ok(mark) => self.last = Some(mark),
            Err(e) => self.failed(e),
        }
    }

    fn failed(&mut self, e: Error) {
        if !self.failing {
            tracing::warn!("cannot watch the queue for changes (retrying): {e}");
        }
        self.failing = true;
        // A new connection's data version is not comparable with the old one's.
        self.store = None;
        self.last = None;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use crate::queue::{PlanId, Queue, TaskId, Workspace};
    use crate::queue::phase::Phase;

    use super::*;

    /// The plain clock: sleeps what it is asked, never stops.
    struct Clock;

    impl Pause for Clock {
        fn sleep(&self, d: Duration) {
            std::thread::sleep(d);
        }
        fn stopped(&self) -> bool {
            false
        }
    }

    #[test]
    fn the_watcher_a_queue_hands_out_sees_another_connections_commit() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::at(dir.path());
        std::fs::create_dir_all(ws.db_path().parent().unwrap()).unwrap();
        let mut watcher = Queue::open(&ws).unwrap().watcher().unwrap();
        Queue::open(&ws)
            .unwrap()
            .add_task(
                &TaskId::new("t1").unwrap(),
                &PlanId::new("p").unwrap(),
                &Phase::new("todo.ready").unwrap(),
            )
            .unwrap();
        // The bound only catches a hang: the commit is seen at the next poll.
        let hang = Instant::now() + Duration::from_secs(60);
        while !watcher.step(&Clock) {
            assert!(Instant::now() < hang, "the watcher never saw the commit");
        }
        assert!(watcher.reads().load(Ordering::Relaxed) >= 2);
    }

    /// The plain clock, stopping at a deadline: a step cut short by it reads nothing.
    struct Until(Instant);

    impl Pause for Until {
        fn sleep(&self, d: Duration) {
            std::thread::sleep(d.min(self.0.saturating_duration_since(Instant::now())));
        }
        fn stopped(&self) -> bool {
            Instant::now() >= self.0
        }
    }

    #[test]
    fn a_commit_wakes_the_watcher_long_before_its_poll() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::at(dir.path());
        std::fs::create_dir_all(ws.db_path().parent().unwrap()).unwrap();
        let mut watcher = Queue::open(&ws).unwrap().watcher().unwrap();
        // Read without a write only every ten minutes: only the write's wake-up can end the
        // step before the hang bound stops it, and a stopped step tells of nothing.
        watcher.set_poll(Duration::from_secs(600));
        let hang = Until(Instant::now() + Duration::from_secs(60));
        let committer = std::thread::spawn({
            let ws = ws.clone();
            move || {
                Queue::open(&ws)
                    .unwrap()
                    .add_task(
                        &TaskId::new("t1").unwrap(),
                        &PlanId::new("p").unwrap(),
                        &Phase::new("todo.ready").unwrap(),
                    )
                    .unwrap();
            }
        });
        // A write that is not a commit (none is expected) wakes a step that tells of nothing.
        while !watcher.step(&hang) {
            assert!(
                !hang.stopped(),
                "the commit did not wake the watcher within the hang bound"
            );
        }
        committer.join().unwrap();
    }

    #[test]
    fn a_settled_watcher_tells_only_of_what_comes_after() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::at(dir.path());
        std::fs::create_dir_all(ws.db_path().parent().unwrap()).unwrap();
        let mut watcher = Queue::open(&ws).unwrap().watcher().unwrap();
        watcher.set_poll(Duration::from_millis(1));
        let add = |task: &str| {
            Queue::open(&ws)
                .unwrap()
                .add_task(
                    &TaskId::new(task).unwrap(),
                    &PlanId::new("p").unwrap(),
                    &Phase::new("todo.ready").unwrap(),
                )
                .unwrap();
        };
        // What a hub's own pass commits is settled, and wakes nothing.
        add("t1");
        watcher.settle();
        assert!(!watcher.step(&Clock), "a commit from before the settle");
        add("t2");
        let hang = Instant::now() + Duration::from_secs(60);
        while !watcher.step(&Clock) {
            assert!(Instant::now() < hang, "the watcher never saw the commit after the settle");
        }
    }
}
