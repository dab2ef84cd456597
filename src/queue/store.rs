//! The SQLite store: one `Store::open`, pragmas read back, embedded migrations.
//!
//! The store knows tasks, pending points and history rows. It knows nothing of processes.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rusqlite::{
    Connection, ErrorCode, OpenFlags, OptionalExtension, Transaction, TransactionBehavior, params,
};
use serde::Serialize;

use crate::queue::ids::TaskId;
use crate::queue::lock::RunnerLock;
use crate::queue::phase::Point;
use crate::queue::starts::{self, Start, StartLog};

mod embedded {
    refinery::embed_migrations!("migrations");
}

/// WAL pages between automatic checkpoints while a drain runs (SQLite's default is 1,000).
pub const DRAIN_AUTOCHECKPOINT: i64 = 8_000;

/// The drain's page cache: `cache_size` in KiB when negative, as SQLite takes it (1 MiB).
pub const DRAIN_CACHE_SIZE: i64 = -1024;

/// The page size of a database the store creates, in bytes (SQLite's default is 4,096). A
/// database that has a page already keeps its own: SQLite sets the size only while the file is
/// empty, and in WAL mode not even `VACUUM` changes it.
///
/// A durable commit writes every page it changed to the WAL, whole, and syncs it; a transition
/// that records a point changes three pages (the task's, the point's and the state's), so with
/// 4 KiB pages it writes 12 KiB for about 200 bytes of rows. Interleaved with a bare one-row
/// commit at 4 KiB pages (the bench's durable-commit floor; three runs each), such a transition ran at
/// 0.75-0.79x the bare commit's rate with 4 KiB pages, 0.81-0.84x with 2 KiB and 0.86-0.90x with
/// 1 KiB. Smaller pages cost the big transactions: `plan cancel` of 10,000 tasks writes the
/// same bytes in more WAL frames, each with its own `pwrite` calls, and took 44-46 ms with 2 KiB
/// pages and 56-63 ms with 1 KiB, against 38-44 ms with 4 KiB.
pub const PAGE_SIZE: i64 = 2048;

/// How long one `BEGIN IMMEDIATE` attempt waits in SQLite's busy handler before
/// [`Store::transaction`] tries again.
const BEGIN_POLL: Duration = Duration::from_millis(1);

/// The busy timeout every connection sets unless told otherwise.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// A store failure. Messages are short fragments; the CLI adds the database path.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Another writer held the database beyond `busy_timeout`.
    #[error("database is locked by another writer (waited {} ms)", .0.as_millis())]
    Busy(Duration),
    /// The file is not a SQLite database or is damaged.
    #[error("database is corrupt or not a hookq database: {0}")]
    Corrupt(String),
    /// The disk (or a size limit) is full.
    #[error("disk is full: {0}")]
    Full(String),
    /// Reading or writing the file failed (a failing disk, or a file-size limit).
    #[error("disk I/O error {0}; is the disk full?")]
    DiskIo(String),
    /// The database or its folder cannot be written.
    #[error("database is read-only: {0}")]
    ReadOnly(String),
    /// The file could not be opened or created.
    #[error("cannot open database: {0}")]
    CannotOpen(String),
    /// A pragma did not take.
    #[error("pragma {pragma} reads back {found:?}, expected {expected:?}")]
    Pragma {
        /// The pragma.
        pragma: &'static str,
        /// What was set.
        expected: String,
        /// What was read back.
        found: String,
    },
    /// The database was migrated by a newer hookq.
    #[error(
        "database schema is version {found}, newer than this hookq supports ({supported}); upgrade hookq"
    )]
    NewerSchema {
        /// The schema version found.
        found: i64,
        /// The newest version this binary knows.
        supported: i64,
    },
    /// A migration failed.
    #[error("migration failed: {0}")]
    Migrate(String),
    /// Creating the database's folder or file failed.
    #[error("cannot create {}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Any other SQLite error.
    #[error("sqlite: {0}")]
    Sqlite(#[source] rusqlite::Error),
    /// No such task.
    #[error("no task {0}")]
    NoTask(String),
    /// The task exists already.
    #[error("task {0} exists already")]
    TaskExists(String),
    /// No pending entry with this id.
    #[error("no pending entry {0}")]
    NoEntry(i64),
    /// No history row with this id.
    #[error("no history row {0}")]
    NoHistory(i64),
    /// A stored value that should have been validated on the way in is not valid.
    #[error("stored value is not valid: {0}")]
    BadRow(String),
    /// A value given by the caller is not valid.
    #[error("{0}")]
    Invalid(String),
    /// The start log beside the database (see [`crate::queue::starts`]) cannot be read or written.
    #[error("cannot {action} {}: {source}", path.display())]
    StartLog {
        /// What failed: "read", "write" or "empty".
        action: &'static str,
        /// The start log's path.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        classify(&e).unwrap_or(StoreError::Sqlite(e))
    }
}

/// The errors a user can act on, told apart by SQLite's code.
fn classify(e: &rusqlite::Error) -> Option<StoreError> {
    let text = e.to_string();
    Some(match e.sqlite_error_code()? {
        ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => {
            StoreError::Busy(DEFAULT_BUSY_TIMEOUT)
        }
        ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt => StoreError::Corrupt(text),
        ErrorCode::DiskFull => StoreError::Full(text),
        ErrorCode::ReadOnly => StoreError::ReadOnly(text),
        ErrorCode::CannotOpen | ErrorCode::PermissionDenied => StoreError::CannotOpen(text),
        ErrorCode::SystemIoFailure => StoreError::DiskIo(io_detail(e)),
        _ => return None,
    })
}

/// Which operation a SQLite I/O error came from, from its extended code.
fn io_detail(e: &rusqlite::Error) -> String {
    let rusqlite::Error::SqliteFailure(f, _) = e else {
        return String::new();
    };
    let op = match f.extended_code {
        rusqlite::ffi::SQLITE_IOERR_READ | rusqlite::ffi::SQLITE_IOERR_SHORT_READ => "reading",
        rusqlite::ffi::SQLITE_IOERR_WRITE => "writing",
        rusqlite::ffi::SQLITE_IOERR_FSYNC | rusqlite::ffi::SQLITE_IOERR_DIR_FSYNC => "syncing",
        rusqlite::ffi::SQLITE_IOERR_TRUNCATE => "truncating",
        rusqlite::ffi::SQLITE_IOERR_SHMSIZE
        | rusqlite::ffi::SQLITE_IOERR_SHMMAP
        | rusqlite::ffi::SQLITE_IOERR_SHMOPEN => "growing the WAL index (arc.db-shm)",
        _ => return format!("(SQLite extended code {})", f.extended_code),
    };
    format!("while {op}")
}

/// How durable a commit is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Synchronous {
    /// `synchronous=FULL`: a committed transition survives power loss (the default).
    #[default]
    Full,
    /// `synchronous=NORMAL`: survives a crash of the process, may lose the last commits on power
    /// loss.
    Normal,
}

/// Options for [`Store::open_with`].
#[derive(Debug, Clone, Copy)]
pub struct StoreOptions {
    /// `busy_timeout`.
    pub busy_timeout: Duration,
    /// `synchronous`.
    pub synchronous: Synchronous,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            busy_timeout: DEFAULT_BUSY_TIMEOUT,
            synchronous: Synchronous::Full,
        }
    }
}

/// A connection to `arc.db` with hookq's schema.
#[derive(Debug)]
pub struct Store {
    conn: Connection,
    path: PathBuf,
    busy_timeout: Duration,
    synchronous: Synchronous,
    /// Shared with the [`StartMarker`]s of a parallel drain's workers.
    starts: Arc<Mutex<StartLog>>,
}

/// The newest schema version this binary knows.
pub fn schema_version() -> i64 {
    embedded::migrations::runner()
        .get_migrations()
        .iter()
        .map(|m| i64::from(m.version()))
        .max()
        .unwrap_or(0)
}

impl Store {
    /// Opens (creating when absent) the database at `path` with default options.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        Self::open_with(path, StoreOptions::default())
    }

    /// Opens (creating when absent) the database at `path`: sets and reads back the pragmas,
    /// refuses a newer schema, runs the embedded migrations.
    pub fn open_with(path: &Path, opts: StoreOptions) -> Result<Self, StoreError> {
        // SQLite takes the timeout in milliseconds as a C `int`.
        let longest = Duration::from_millis(i32::MAX as u64);
        if opts.busy_timeout > longest {
            return Err(StoreError::Invalid(format!(
                "busy timeout {:?} is longer than SQLite takes ({longest:?})",
                opts.busy_timeout
            )));
        }
        create_private(path)?;
        let timed = |e| match e {
            StoreError::Busy(_) => StoreError::Busy(opts.busy_timeout),
            other => other,
        };
        let mut store = Store {
            conn: connect(path, opts).map_err(timed)?,
            path: path.to_path_buf(),
            busy_timeout: opts.busy_timeout,
            synchronous: opts.synchronous,
            starts: Arc::new(Mutex::new(StartLog::new(starts::path_for(path)))),
        };
        store.migrate().map_err(timed)?;
        Ok(store)
    }

    /// Runs `f` with this connection's commits at `synchronous=NORMAL`, checkpoints every
    /// [`DRAIN_AUTOCHECKPOINT`] WAL pages and a page cache of [`DRAIN_CACHE_SIZE`], then restores
    /// the store's settings.
    ///
    /// The drain uses it for its own bookkeeping (clearing points, counting their starts): in WAL
    /// mode a NORMAL commit survives a crash of the process and is made durable by the next
    /// FULL commit or checkpoint; power loss can undo it, which at worst runs a point again,
    /// never loses one. Transitions are never recorded this way. Rarer checkpoints spare the
    /// drain most of their fsyncs: it rewrites the same few pages point after point. It reads
    /// the queue front to back, once, so a bigger cache would only hold pages it never reads
    /// again: the small one keeps a pass's memory flat however long the queue.
    pub fn with_relaxed_sync<T, E: From<StoreError>>(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<T, E>,
    ) -> Result<T, E> {
        set_synchronous(&self.conn, Synchronous::Normal)?;
        // Restored as they were: a host embedding the store may have set its own.
        let read = |pragma: &str| -> Result<i64, StoreError> {
            Ok(self
                .conn
                .query_row(&format!("PRAGMA {pragma}"), [], |r| r.get(0))?)
        };
        let (cache, checkpoint) = (read("cache_size")?, read("wal_autocheckpoint")?);
        self.conn
            .execute_batch(&format!(
                "PRAGMA wal_autocheckpoint={DRAIN_AUTOCHECKPOINT}; PRAGMA cache_size={DRAIN_CACHE_SIZE}"
            ))
            .map_err(StoreError::from)?;
        let out = f(self);
        let restored = self
            .conn
            .execute_batch(&format!(
                "PRAGMA wal_autocheckpoint={checkpoint}; PRAGMA cache_size={cache}"
            ))
            .map_err(StoreError::from)
            .and_then(|()| set_synchronous(&self.conn, self.synchronous));
        let out = out?;
        restored?;
        Ok(out)
    }

    /// Whether the database has a table `name`.
    fn has_table(&self, name: &str) -> Result<bool, StoreError> {
        Ok(self.conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1)",
            [name],
            |r| r.get(0),
        )?)
    }

    fn applied_version(&self) -> Result<Option<i64>, StoreError> {
        if !self.has_table("refinery_schema_history")? {
            return Ok(None);
        }
        Ok(self.conn.query_row(
            "SELECT MAX(version) FROM refinery_schema_history",
            [],
            |r| r.get(0),
        )?)
    }

    fn migrate(&mut self) -> Result<(), StoreError> {
        let supported = schema_version();
        let check = |found: Option<i64>| match found {
            Some(v) if v > supported => Err(StoreError::NewerSchema {
                found: v,
                supported,
            }),
            Some(v) => Ok(v == supported),
            None => Ok(false),
        };
        if check(self.applied_version()?)? {
            return Ok(());
        }
        // Every pending migration and its history row commit in one transaction (refinery's
        // grouped mode; otherwise each history row is a transaction of its own, and a kill
        // between the two leaves a migration applied but not recorded, which the next open
        // runs again). It begins IMMEDIATE: a second process creating or upgrading the same
        // database waits for the first, then runs what it read as missing, fails (the tables
        // exist) and rolls all of it back; it finds the schema current below.
        self.conn
            .set_transaction_behavior(TransactionBehavior::Immediate);
        let ran = embedded::migrations::runner()
            .set_abort_divergent(true)
            .set_grouped(true)
            .run(&mut self.conn);
        self.conn
            .set_transaction_behavior(TransactionBehavior::Deferred);
        if let Err(e) = ran {
            // Another process migrated (or created) the same database meanwhile: if the
            // schema is current now, this process's duplicate run was rolled back.
            if check(self.applied_version()?)? {
                return Ok(());
            }
            if let Some(classified) = std::error::Error::source(&e)
                .and_then(|s| s.downcast_ref::<rusqlite::Error>())
                .and_then(classify)
            {
                return Err(classified);
            }
            return Err(StoreError::Migrate(e.to_string()));
        }
        Ok(())
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The connection, for reads and for a host's own statements.
    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    /// Begins a write transaction (`BEGIN IMMEDIATE`). Record transitions into it with
    /// [`crate::queue::record`], then commit it yourself.
    ///
    /// Waits up to `busy_timeout` for another writer, trying again every millisecond or two.
    /// SQLite's own busy handler backs off to 100 ms sleeps, and a writer that sleeps that long
    /// while others commit every fraction of a millisecond can lose every race for the lock
    /// until its timeout runs out (seen here: four writers, one starved for 10 s). Trying often
    /// gives every waiter its fair chance.
    pub fn transaction(&mut self) -> Result<Transaction<'_>, StoreError> {
        self.transaction_within(self.busy_timeout)
    }

    /// [`Store::transaction`], waiting at most `patience` for another writer.
    fn transaction_within(&mut self, patience: Duration) -> Result<Transaction<'_>, StoreError> {
        let deadline = Instant::now() + patience;
        let busy = |e: &rusqlite::Error| {
            matches!(
                e.sqlite_error_code(),
                Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
            )
        };
        self.conn.busy_timeout(BEGIN_POLL)?;
        let mut attempt: u32 = 0;
        let begun = loop {
            match Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate) {
                Err(e) if busy(&e) && Instant::now() < deadline => {
                    attempt = attempt.wrapping_add(1);
                    // A little spread, so waiters do not retry in lockstep.
                    let spread = (std::process::id() ^ attempt.wrapping_mul(2_654_435_761)) % 1000;
                    std::thread::sleep(Duration::from_micros(u64::from(spread)));
                }
                other => break other,
            }
        };
        // Statements inside the transaction get the full timeout again.
        self.conn.busy_timeout(self.busy_timeout)?;
        begun.map_err(|e| match StoreError::from(e) {
            StoreError::Busy(_) => StoreError::Busy(self.busy_timeout),
            other => other,
        })
    }

    /// Runs `f` in a write transaction and commits it when `f` succeeds.
    pub fn write<T>(
        &mut self,
        f: impl FnOnce(&Transaction<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.write_within(self.busy_timeout, f)
    }

    /// [`Store::write`], waiting at most `patience` for another writer to begin.
    fn write_within<T>(
        &mut self,
        patience: Duration,
        f: impl FnOnce(&Transaction<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let busy = self.busy_timeout;
        let tx = self.transaction_within(patience)?;
        let out = f(&tx)?;
        tx.commit().map_err(|e| match StoreError::from(e) {
            StoreError::Busy(_) => StoreError::Busy(busy),
            other => other,
        })?;
        Ok(out)
    }

    /// `PRAGMA data_version`: changes whenever another connection commits.
    pub fn data_version(&self) -> Result<i64, StoreError> {
        Ok(self
            .conn
            .query_row("PRAGMA data_version", [], |r| r.get(0))?)
    }

    /// `PRAGMA integrity_check`, `"ok"` when sound.
    pub fn integrity_check(&self) -> Result<String, StoreError> {
        let rows: Vec<String> = self
            .conn
            .prepare("PRAGMA integrity_check")?
            .query_map([], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        Ok(rows.join("; "))
    }
}

/// Opens the database at `path` and sets the pragmas every connection needs, each read back (a
/// misspelt or refused pragma is otherwise silently ignored): `busy_timeout`, `journal_mode=WAL`
/// (readers never block the writer), `foreign_keys=ON` (a host's tables on the same connection
/// get their keys enforced), `synchronous`;
/// and `temp_store=MEMORY`, and [`PAGE_SIZE`] for a database it creates.
fn connect(path: &Path, opts: StoreOptions) -> Result<Connection, StoreError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let c = Connection::open_with_flags(path, flags)?;
    c.busy_timeout(opts.busy_timeout)?;
    let ms: i64 = c.query_row("PRAGMA busy_timeout", [], |r| r.get(0))?;
    expect(
        "busy_timeout",
        opts.busy_timeout.as_millis().to_string(),
        ms.to_string(),
    )?;
    // Before anything writes the file's first page, which fixes its page size for good.
    let pages: i64 = c.query_row("PRAGMA page_count", [], |r| r.get(0))?;
    if pages == 0 {
        c.execute_batch(&format!("PRAGMA page_size={PAGE_SIZE}"))?;
    }
    // Switching a new database to WAL takes an exclusive lock, and SQLite answers "busy" at once,
    // without its busy handler, when another connection is switching the same new file too
    // (two processes creating the database together): the switch is tried again until the
    // busy timeout runs out. Once the file is in WAL mode the pragma takes no lock.
    let deadline = Instant::now() + opts.busy_timeout;
    let mode: String = loop {
        match c.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0)) {
            Err(e)
                if e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy)
                    && Instant::now() < deadline =>
            {
                std::thread::sleep(BEGIN_POLL);
            }
            other => break other?,
        }
    };
    expect("journal_mode", "wal".into(), mode.to_lowercase())?;
    set_pragma(&c, "foreign_keys", "ON", 1)?;
    // A statement that changes many rows inside a bigger transaction keeps the pages it changes
    // in a statement journal, to undo itself alone if it fails. Past 64 KiB SQLite writes that
    // journal to a temporary file (`plan cancel` of ten thousand tasks spent about a tenth of
    // its time there); held in memory, it costs a copy of each page. No query of ours sorts or
    // groups outside an index, so nothing else grows there.
    set_pragma(&c, "temp_store", "MEMORY", 2)?;
    set_synchronous(&c, opts.synchronous)?;
    Ok(c)
}

/// Sets an integer-valued pragma on `c` and reads it back as `want`.
fn set_pragma(
    c: &Connection,
    name: &'static str,
    value: &str,
    want: i64,
) -> Result<(), StoreError> {
    c.execute_batch(&format!("PRAGMA {name}={value}"))?;
    let found: i64 = c.query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))?;
    expect(name, want.to_string(), found.to_string())
}

/// Sets `synchronous` on `c` and reads it back.
fn set_synchronous(c: &Connection, level: Synchronous) -> Result<(), StoreError> {
    match level {
        Synchronous::Full => set_pragma(c, "synchronous", "FULL", 2),
        Synchronous::Normal => set_pragma(c, "synchronous", "NORMAL", 1),
    }
}

fn expect(pragma: &'static str, expected: String, found: String) -> Result<(), StoreError> {
    if expected == found {
        Ok(())
    } else {
        Err(StoreError::Pragma {
            pragma,
            expected,
            found,
        })
    }
}

/// Creates the database's folder and an empty file readable by its owner only, so SQLite never
/// creates it with the umask's wider mode.
fn create_private(path: &Path) -> Result<(), StoreError> {
    use std::os::unix::fs::OpenOptionsExt;
    let io = |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io)?;
    }
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(io(e)),
    }
}

/// Now, in unix milliseconds.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// A task as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskRow {
    /// Task id.
    pub id: String,
    /// Plan id.
    pub plan: String,
    /// `<state>.<phase>`.
    pub phase: String,
    /// Current attempt, from 1.
    pub attempt: i64,
    /// The sha the last merge put on the target branch.
    pub merged_sha: Option<String>,
    /// Created, unix ms.
    pub created_ms: i64,
    /// Last changed, unix ms.
    pub updated_ms: i64,
}

impl TaskRow {
    const COLUMNS: &'static str = "id, plan, phase, attempt, merged_sha, created_ms, updated_ms";

    fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: r.get(0)?,
            plan: r.get(1)?,
            phase: r.get(2)?,
            attempt: r.get(3)?,
            merged_sha: r.get(4)?,
            created_ms: r.get(5)?,
            updated_ms: r.get(6)?,
        })
    }
}

/// A pending point, as `queue` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PendingRow {
    /// Occurrence id; points run in this order.
    pub id: i64,
    /// Task id.
    pub task: String,
    /// Plan id of the task (`None` if the task is missing).
    pub plan: Option<String>,
    /// Point name.
    pub point: String,
    /// The `<state>.<phase>` recorded with the point (`None` if its state row is missing).
    pub state: Option<String>,
    /// Recorded, unix ms.
    pub recorded_ms: i64,
    /// Passes that started this point without clearing it.
    pub passes: i64,
    /// When a pass last started it, unix ms.
    pub last_started_ms: Option<i64>,
    /// The task's current attempt (`None` if the task is missing).
    pub attempt: Option<i64>,
    /// The task's merged sha.
    pub merged_sha: Option<String>,
}

impl PendingRow {
    const SELECT: &'static str = r#"
        SELECT h.id, h.task, t.plan, h.point, s.state, h.recorded_ms, h.passes, h.last_started_ms,
               t.attempt, t.merged_sha
        FROM pending_hooks h
        LEFT JOIN tasks t ON t.id = h.task
        LEFT JOIN pending_hook_states s ON s.hook_id = h.id"#;

    fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: r.get(0)?,
            task: r.get(1)?,
            plan: r.get(2)?,
            point: r.get(3)?,
            state: r.get(4)?,
            recorded_ms: r.get(5)?,
            passes: r.get(6)?,
            last_started_ms: r.get(7)?,
            attempt: r.get(8)?,
            merged_sha: r.get(9)?,
        })
    }

    fn count_starts(&mut self, starts: &[Start]) {
        starts::apply(starts, self.id, &mut self.passes, &mut self.last_started_ms);
    }

    /// The point, parsed.
    pub fn point(&self) -> Result<Point, StoreError> {
        self.point
            .parse()
            .map_err(|e: crate::queue::phase::UnknownPoint| StoreError::BadRow(e.to_string()))
    }

    /// The task id, parsed.
    pub fn task_id(&self) -> Result<TaskId, StoreError> {
        TaskId::new(self.task.as_str()).map_err(|e| StoreError::BadRow(e.to_string()))
    }
}

/// What became of a command, or of a point cleared without running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Exited 0.
    Ok,
    /// Exited non-zero.
    Failed,
    /// Ended by a signal it did not get from hookq.
    Signalled,
    /// Ran past `gate.command_timeout_secs` and was killed.
    TimedOut,
    /// Could not be started.
    SpawnFailed,
    /// The point had no commands configured.
    Empty,
    /// Parked after `queue.max_interrupted_runs` passes started it without clearing it.
    Abandoned,
    /// Dropped by `hookq queue drop`.
    Dropped,
}

impl Outcome {
    /// The name stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Failed => "failed",
            Outcome::Signalled => "signalled",
            Outcome::TimedOut => "timed_out",
            Outcome::SpawnFailed => "spawn_failed",
            Outcome::Empty => "empty",
            Outcome::Abandoned => "abandoned",
            Outcome::Dropped => "dropped",
        }
    }
}

/// A point whose commands all ran (or that had none to run), with the history rows its clear
/// writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cleared {
    /// The point, as the pass read it (with the pass counted).
    pub entry: PendingRow,
    /// One row per command run, or one bare row.
    pub rows: Vec<NewHistory>,
}

/// One history row to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewHistory {
    /// 1-based command index, `None` for a point cleared without running.
    pub command_index: Option<usize>,
    /// The command line.
    pub command: Option<String>,
    /// What became of it.
    pub outcome: Outcome,
    /// Exit code when it exited.
    pub exit_code: Option<i32>,
    /// Signal number when a signal ended it.
    pub signal: Option<i32>,
    /// Start, unix ms.
    pub started_ms: Option<i64>,
    /// Duration in ms.
    pub duration_ms: Option<i64>,
    /// The log it appended to.
    pub log_path: Option<String>,
}

impl NewHistory {
    /// A row for a point cleared without running a command.
    pub fn bare(outcome: Outcome) -> Self {
        Self {
            command_index: None,
            command: None,
            outcome,
            exit_code: None,
            signal: None,
            started_ms: None,
            duration_ms: None,
            log_path: None,
        }
    }
}

/// A history row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HistoryRow {
    /// History id (`queue retry` takes it).
    pub id: i64,
    /// The occurrence id the point had while pending.
    pub occurrence: i64,
    /// Task id.
    pub task: String,
    /// Point name.
    pub point: String,
    /// The `<state>.<phase>` it fired for.
    pub state: String,
    /// Recorded, unix ms.
    pub recorded_ms: i64,
    /// Passes that had started it.
    pub passes: i64,
    /// 1-based command index.
    pub command_index: Option<i64>,
    /// The command line.
    pub command: Option<String>,
    /// Outcome name.
    pub outcome: String,
    /// Exit code.
    pub exit_code: Option<i64>,
    /// Signal number.
    pub signal: Option<i64>,
    /// Start, unix ms.
    pub started_ms: Option<i64>,
    /// Duration, ms.
    pub duration_ms: Option<i64>,
    /// Log path.
    pub log_path: Option<String>,
    /// When the row was written, unix ms.
    pub finished_ms: i64,
}

impl HistoryRow {
    const SELECT: &'static str = r#"
        SELECT id, occurrence, task, point, state, recorded_ms, passes, command_index, command,
               outcome, exit_code, signal, started_ms, duration_ms, log_path, finished_ms
        FROM hook_history"#;

    fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: r.get(0)?,
            occurrence: r.get(1)?,
            task: r.get(2)?,
            point: r.get(3)?,
            state: r.get(4)?,
            recorded_ms: r.get(5)?,
            passes: r.get(6)?,
            command_index: r.get(7)?,
            command: r.get(8)?,
            outcome: r.get(9)?,
            exit_code: r.get(10)?,
            signal: r.get(11)?,
            started_ms: r.get(12)?,
            duration_ms: r.get(13)?,
            log_path: r.get(14)?,
            finished_ms: r.get(15)?,
        })
    }
}

/// Counts for `queue stats`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// Pending points.
    pub pending: i64,
    /// Pending points by point name.
    pub pending_by_point: Vec<(String, i64)>,
    /// Pending points that a pass started without clearing.
    pub interrupted: i64,
    /// When the oldest pending point was recorded, unix ms.
    pub oldest_recorded_ms: Option<i64>,
    /// History rows by outcome.
    pub history_by_outcome: Vec<(String, i64)>,
    /// Tasks.
    pub tasks: i64,
}

/// Reads and the drain's writes.
impl Store {
    /// One task.
    pub fn task(&self, id: &str) -> Result<Option<TaskRow>, StoreError> {
        Ok(self
            .conn
            .prepare_cached(&format!(
                "SELECT {} FROM tasks WHERE id = ?1",
                TaskRow::COLUMNS
            ))?
            .query_row([id], TaskRow::from_row)
            .optional()?)
    }

    /// Tasks, optionally of one plan, by id.
    pub fn tasks(&self, plan: Option<&str>) -> Result<Vec<TaskRow>, StoreError> {
        // A filter written as `?1 IS NULL OR plan = ?1` keeps SQLite from using the index.
        let of_plan = if plan.is_some() {
            "plan = ?1"
        } else {
            "?1 IS NULL"
        };
        let sql = format!(
            "SELECT {} FROM tasks WHERE {of_plan} ORDER BY id",
            TaskRow::COLUMNS
        );
        let rows = self
            .conn
            .prepare_cached(&sql)?
            .query_map([plan], TaskRow::from_row)?
            .collect::<Result<_, _>>()?;
        Ok(rows)
    }

    /// Pending points in the order they run, from occurrence `after` (exclusive), at most `limit`.
    /// Starts in the start log not folded yet are counted in `passes` (see [`crate::queue::starts`]).
    pub fn pending(
        &self,
        after: i64,
        limit: usize,
        task: Option<&str>,
    ) -> Result<Vec<PendingRow>, StoreError> {
        // The file before the rows: a fold commits before it empties the file.
        let starts = self.unfolded_starts()?;
        let sql = format!(
            "{} WHERE h.id > ?1 AND (?2 IS NULL OR h.task = ?2) ORDER BY h.id LIMIT ?3",
            PendingRow::SELECT
        );
        let mut rows: Vec<PendingRow> = self
            .conn
            .prepare_cached(&sql)?
            .query_map(params![after, task, limit as i64], PendingRow::from_row)?
            .collect::<Result<_, _>>()?;
        if !starts.is_empty() {
            let by_id = starts::by_id(&starts);
            for r in &mut rows {
                if let Some(own) = by_id.get(&r.id) {
                    r.count_starts(own);
                }
            }
        }
        Ok(rows)
    }

    /// One pending point, its unfolded starts counted as in [`Store::pending`].
    pub fn pending_entry(&self, id: i64) -> Result<Option<PendingRow>, StoreError> {
        let starts = self.unfolded_starts()?;
        let sql = format!("{} WHERE h.id = ?1", PendingRow::SELECT);
        let mut row = self
            .conn
            .prepare_cached(&sql)?
            .query_row([id], PendingRow::from_row)
            .optional()?;
        if let Some(r) = &mut row {
            r.count_starts(&starts);
        }
        Ok(row)
    }

    /// What the start log holds now.
    fn unfolded_starts(&self) -> Result<Vec<Start>, StoreError> {
        let path = starts::path_for(&self.path);
        starts::read(&path).map_err(|e| start_log_error(&path, "read", e))
    }

    /// History, newest first, optionally of one task or one occurrence.
    pub fn history(
        &self,
        task: Option<&str>,
        occurrence: Option<i64>,
        limit: usize,
    ) -> Result<Vec<HistoryRow>, StoreError> {
        // As in `tasks`: `hook_history_by_task` serves only a plain `task = ?1`.
        let of_task = if task.is_some() {
            "task = ?1"
        } else {
            "?1 IS NULL"
        };
        let of_occurrence = if occurrence.is_some() {
            "occurrence = ?2"
        } else {
            "?2 IS NULL"
        };
        let sql = format!(
            "{} WHERE {of_task} AND {of_occurrence} ORDER BY id DESC LIMIT ?3",
            HistoryRow::SELECT
        );
        let rows = self
            .conn
            .prepare_cached(&sql)?
            .query_map(
                params![task, occurrence, limit as i64],
                HistoryRow::from_row,
            )?
            .collect::<Result<_, _>>()?;
        Ok(rows)
    }

    /// One history row.
    pub fn history_entry(&self, id: i64) -> Result<Option<HistoryRow>, StoreError> {
        let sql = format!("{} WHERE id = ?1", HistoryRow::SELECT);
        Ok(self
            .conn
            .prepare_cached(&sql)?
            .query_row([id], HistoryRow::from_row)
            .optional()?)
    }

    /// Counts for `queue stats`, read from the kept counters and the few points recorded since
    /// they last counted (see [`count_new_points`]): as cheap with a million pending points as
    /// with ten. The interrupted count adds the start log's points not counted yet
    /// (one lookup per line; the log holds the starts of the last batch or so).
    pub fn stats(&self) -> Result<Stats, StoreError> {
        let starts = self.unfolded_starts()?;
        // One snapshot for every count: a fold committing between two of them could otherwise
        // hide a running point from both.
        let snapshot = self.conn.unchecked_transaction()?;
        let c = &self.conn;
        let counts: Vec<(String, String, i64)> = c
            .prepare_cached(
                "SELECT kind, name, n FROM queue_counts WHERE n != 0 ORDER BY kind, name",
            )?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<Result<_, _>>()?;
        let of = |kind: &str| -> Vec<(String, i64)> {
            counts
                .iter()
                .filter(|(k, _, _)| k == kind)
                .map(|(_, name, n)| (name.clone(), *n))
                .collect()
        };
        let pending_by_point = pending_by_point(c)?;
        let oldest: Option<i64> = c
            .prepare_cached("SELECT recorded_ms FROM pending_hooks ORDER BY id LIMIT 1")?
            .query_row([], |r| r.get(0))
            .optional()?;
        let interrupted = c
            .prepare_cached("SELECT COUNT(*) FROM pending_hooks WHERE passes > 0")?
            .query_row([], |r| r.get::<_, i64>(0))?
            + self.newly_started(&starts)?;
        snapshot.commit()?;
        Ok(Stats {
            pending: pending_by_point.iter().map(|(_, n)| n).sum(),
            pending_by_point,
            interrupted,
            oldest_recorded_ms: oldest,
            history_by_outcome: of("history"),
            tasks: of("tasks").first().map_or(0, |(_, n)| *n),
        })
    }

    /// How many pending points with no counted start the start log has started.
    fn newly_started(&self, starts: &[Start]) -> Result<i64, StoreError> {
        let mut ids: Vec<i64> = starts.iter().map(|s| s.id).collect();
        ids.sort_unstable();
        ids.dedup();
        let mut n = 0;
        let mut st = self
            .conn
            .prepare_cached("SELECT passes, last_started_ms FROM pending_hooks WHERE id = ?1")?;
        for id in ids {
            let Some((mut passes, mut last)) = st
                .query_row([id], |r| Ok((r.get::<_, i64>(0)?, r.get(1)?)))
                .optional()?
            else {
                continue;
            };
            if passes == 0 {
                starts::apply(starts, id, &mut passes, &mut last);
                n += i64::from(passes > 0);
            }
        }
        Ok(n)
    }

    /// Records that this pass starts `entry` now, in the start log (see [`crate::queue::starts`]):
    /// one `write`, no commit. Returns false when the point is no longer pending (dropped since
    /// it was read), and then records nothing.
    pub fn mark_started(
        &mut self,
        entry: &PendingRow,
        _lock: &RunnerLock,
    ) -> Result<bool, StoreError> {
        mark_started_on(&self.conn, &self.starts, entry)
    }

    /// A [`StartMarker`] for a thread of its own, sharing this store's start log. Its
    /// connection to the database, which it only reads, is opened when it first marks a point.
    pub fn start_marker(&self, _lock: &RunnerLock) -> StartMarker {
        StartMarker {
            path: self.path.clone(),
            opts: StoreOptions {
                busy_timeout: self.busy_timeout,
                synchronous: self.synchronous,
            },
            conn: None,
            starts: Arc::clone(&self.starts),
        }
    }

    /// Folds what the start log holds (the starts of a runner that died before it folded them)
    /// into the points' counts, then empties it. A pass does this before it reads the queue. It
    /// takes the write lock even when there is nothing to fold, so that a pass that cannot write
    /// (another writer holds the database) stops before it runs anything it could not clear.
    pub fn fold_starts(&mut self, _lock: &RunnerLock) -> Result<usize, StoreError> {
        let starts = self.unfolded_starts()?;
        self.write(|tx| fold_in(tx, &starts))?;
        self.empty_start_log()?;
        Ok(starts.len())
    }

    /// Clears points, each with its history rows, in one transaction: the drain commits the
    /// points it finished together. The starts this store recorded for points still pending
    /// (running, or stopped) are folded in the same transaction.
    pub fn clear_all(&mut self, points: &[Cleared]) -> Result<(), StoreError> {
        self.clear_all_within(points, self.busy_timeout)
    }

    /// [`Store::clear_all`], unless another writer holds the database: then it returns
    /// `Ok(false)` at once (after a millisecond or two) and clears nothing. The drain clears this
    /// way while a command runs, whose timeout and output must not wait on another writer.
    pub fn try_clear_all(&mut self, points: &[Cleared]) -> Result<bool, StoreError> {
        match self.clear_all_within(points, Duration::ZERO) {
            Ok(()) => Ok(true),
            Err(StoreError::Busy(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn clear_all_within(
        &mut self,
        points: &[Cleared],
        patience: Duration,
    ) -> Result<(), StoreError> {
        let cleared: HashSet<i64> = points.iter().map(|p| p.entry.id).collect();
        // Held until the file is emptied: a parallel pass's worker marking a start meanwhile
        // waits for this commit rather than append a line the emptying would lose.
        let starts = Arc::clone(&self.starts);
        let mut log = lock_log(&starts);
        let still: Vec<Start> = log
            .unfolded()
            .iter()
            .filter(|s| !cleared.contains(&s.id))
            .copied()
            .collect();
        if points.is_empty() && still.is_empty() {
            return Ok(());
        }
        self.write_within(patience, |tx| {
            fold_in(tx, &still)?;
            points
                .iter()
                .try_for_each(|p| clear_in(tx, &p.entry, &p.rows))
        })?;
        if log.unfolded().is_empty() {
            return Ok(());
        }
        log.truncate()
            .map_err(|e| start_log_error(log.path(), "empty", e))
    }

    fn empty_start_log(&mut self) -> Result<(), StoreError> {
        let mut log = lock_log(&self.starts);
        log.truncate()
            .map_err(|e| start_log_error(log.path(), "empty", e))
    }

    /// Drops a pending point to history as `dropped`.
    pub fn drop_entry(&mut self, id: i64) -> Result<PendingRow, StoreError> {
        let entry = self.pending_entry(id)?.ok_or(StoreError::NoEntry(id))?;
        self.write(|tx| {
            // Re-check inside the write lock: a pass may have cleared it since the read.
            let still: bool = tx.query_row(
                "SELECT EXISTS (SELECT 1 FROM pending_hooks WHERE id = ?1)",
                [id],
                |r| r.get(0),
            )?;
            if !still {
                return Err(StoreError::NoEntry(id));
            }
            clear_in(tx, &entry, &[NewHistory::bare(Outcome::Dropped)])
        })?;
        Ok(entry)
    }

    /// Deletes history rows that finished before `cutoff_ms`, at most `limit` of them; returns how
    /// many went.
    pub fn prune_history(&mut self, cutoff_ms: i64, limit: usize) -> Result<usize, StoreError> {
        self.write(|tx| {
            Ok(tx
                .prepare_cached(
                    "DELETE FROM hook_history WHERE id IN (SELECT id FROM hook_history WHERE finished_ms < ?1 ORDER BY finished_ms LIMIT ?2)",
                )?
                .execute(params![cutoff_ms, limit as i64])?)
        })
    }
}

/// How many points recording lets gather above the counted mark before it counts them in
/// ([`count_new_points`]): what `queue stats` may have to count itself.
pub const COUNT_EVERY: i64 = 256;

/// Where point ids and the pending counters stand (see table `queue_counts` in
/// `migrations/V1__initial.sql`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdMarks {
    /// The highest pending id (0: none).
    pub newest: i64,
    /// The highest id ever cleared (kept by a trigger on every delete).
    pub cleared: i64,
    /// The pending counters count the points up to this id.
    pub counted: i64,
}

/// The three columns [`IdMarks::from_row`] reads, as a literal for `concat!`: for a `SELECT` of
/// their own or after other columns of one, with no SQL built at run time.
macro_rules! id_mark_columns {
    () => {
        "(SELECT COALESCE(MAX(id), 0) FROM pending_hooks),
         COALESCE((SELECT n FROM queue_counts WHERE kind = 'ids' AND name = 'cleared'), 0),
         COALESCE((SELECT n FROM queue_counts WHERE kind = 'ids' AND name = 'counted'), 0)"
    };
}
pub(crate) use id_mark_columns;

impl IdMarks {
    /// Reads the marks inside `conn`'s current transaction.
    pub fn read(conn: &Connection) -> Result<Self, StoreError> {
        Ok(conn
            .prepare_cached(concat!("SELECT ", id_mark_columns!()))?
            .query_row([], |r| Self::from_row(r, 0))?)
    }

    /// The marks from [`id_mark_columns`] at column `first` of `row`.
    pub(crate) fn from_row(row: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<Self> {
        Ok(Self {
            newest: row.get(first)?,
            cleared: row.get(first + 1)?,
            counted: row.get(first + 2)?,
        })
    }

    /// The id the next point takes: above every id pending or ever cleared, so that an
    /// occurrence id is never given twice (as `AUTOINCREMENT` would, without writing
    /// `sqlite_sequence` on every insert).
    pub fn next_id(&self) -> Result<i64, StoreError> {
        self.ids_after(1)
    }

    /// The last of `n` ids taken from [`IdMarks::next_id`] on; an error when the ids run out,
    /// as `AUTOINCREMENT` failed with `SQLITE_FULL`.
    pub fn ids_after(&self, n: i64) -> Result<i64, StoreError> {
        self.newest.max(self.cleared).checked_add(n).ok_or_else(|| {
            StoreError::Invalid("occurrence ids are used up (the highest one was given)".into())
        })
    }
}

/// Pending points by point name, as `queue stats` gives them: the counters, and the points
/// recorded since they last counted (at most [`COUNT_EVERY`]). Names with none are left out.
pub fn pending_by_point(conn: &Connection) -> Result<Vec<(String, i64)>, StoreError> {
    Ok(conn
        .prepare_cached(
            "SELECT name, SUM(n) FROM (
                 SELECT name, n FROM queue_counts WHERE kind = 'points'
                 UNION ALL
                 SELECT point, COUNT(*) FROM pending_hooks WHERE id >
                     COALESCE((SELECT n FROM queue_counts WHERE kind = 'ids' AND name = 'counted'), 0)
                 GROUP BY point)
             GROUP BY name HAVING SUM(n) != 0 ORDER BY name",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?)
}

/// Records that the pending counters have counted every point up to `id`.
pub(crate) fn set_counted_mark(conn: &Connection, id: i64) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO queue_counts (kind, name, n) VALUES ('ids', 'counted', ?1) ON CONFLICT (kind, name) DO UPDATE SET n = excluded.n",
    )?
    .execute([id])?;
    Ok(())
}

/// Counts the points recorded since the pending counters last counted, and moves their mark to
/// the newest point. Recording does this once [`COUNT_EVERY`] points have gathered, so that a
/// transition need not write a counter's page; code that writes pending rows by
/// SQL of its own, as the bench's fixtures do, calls it after.
pub fn count_new_points(conn: &Connection) -> Result<(), StoreError> {
    count_up_to(conn, IdMarks::read(conn)?)
}

/// [`count_new_points`] for a caller that has the marks as they stand in its transaction
/// already: counts the points above `marks.counted` and moves the mark to `marks.newest`.
pub(crate) fn count_up_to(conn: &Connection, marks: IdMarks) -> Result<(), StoreError> {
    if marks.newest <= marks.counted {
        return Ok(());
    }
    conn.prepare_cached(
        "INSERT INTO queue_counts (kind, name, n)
         SELECT 'points', point, COUNT(*) FROM pending_hooks WHERE id > ?1 GROUP BY point
         ON CONFLICT (kind, name) DO UPDATE SET n = n + excluded.n",
    )?
    .execute([marks.counted])?;
    set_counted_mark(conn, marks.newest)
}

/// Adds `delta` to the count of pending `point`s that `queue stats` reads, for points at or
/// below the counted mark (see [`count_new_points`]). Deleted points are taken off by the
/// delete trigger.
pub(crate) fn count_pending(conn: &Connection, point: &str, delta: i64) -> Result<(), StoreError> {
    if delta != 0 {
        conn.prepare_cached(
            "INSERT INTO queue_counts (kind, name, n) VALUES ('points', ?1, ?2) ON CONFLICT (kind, name) DO UPDATE SET n = n + ?2",
        )?
        .execute(params![point, delta])?;
    }
    Ok(())
}

/// Marks points started from a thread other than its store's: a parallel drain's worker marks
/// the point it takes from the queue the moment it starts it, as the store itself does with one
/// job. Made by [`Store::start_marker`], it shares the store's start log.
#[derive(Debug)]
pub struct StartMarker {
    path: PathBuf,
    opts: StoreOptions,
    conn: Option<Connection>,
    starts: Arc<Mutex<StartLog>>,
}

impl StartMarker {
    /// As [`Store::mark_started`].
    pub fn mark_started(&mut self, entry: &PendingRow) -> Result<bool, StoreError> {
        let conn = match &mut self.conn {
            Some(c) => c,
            None => {
                let c = connect(&self.path, self.opts)?;
                set_pragma(&c, "query_only", "ON", 1)?;
                self.conn.insert(c)
            }
        };
        mark_started_on(conn, &self.starts, entry)
    }
}

/// [`Store::mark_started`] on `conn`, appending to `starts`.
fn mark_started_on(
    conn: &Connection,
    starts: &Mutex<StartLog>,
    entry: &PendingRow,
) -> Result<bool, StoreError> {
    let last: Option<Option<i64>> = conn
        .prepare_cached("SELECT last_started_ms FROM pending_hooks WHERE id = ?1")?
        .query_row([entry.id], |r| r.get(0))
        .optional()?;
    let Some(last) = last else {
        return Ok(false);
    };
    // Later than any start counted before, so that folding it counts it exactly once.
    let ms = now_ms().max(last.unwrap_or(0) + 1);
    let mut log = lock_log(starts);
    log.append(Start { id: entry.id, ms })
        .map_err(|e| start_log_error(log.path(), "write", e))?;
    Ok(true)
}

/// The start log, whoever panicked holding it: each of its operations leaves it whole.
fn lock_log(starts: &Mutex<StartLog>) -> MutexGuard<'_, StartLog> {
    starts.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The error for a failed `action` ("read", "write", "empty") on the start log at `path`.
fn start_log_error(path: &Path, action: &'static str, source: std::io::Error) -> StoreError {
    StoreError::StartLog {
        action,
        path: path.to_path_buf(),
        source,
    }
}

/// Counts starts a pass recorded in the start log, each once (see [`crate::queue::starts`]).
fn fold_in(tx: &Transaction<'_>, starts: &[Start]) -> Result<(), StoreError> {
    let mut fold = tx.prepare_cached(
        "UPDATE pending_hooks SET passes = passes + 1, last_started_ms = ?2
         WHERE id = ?1 AND (last_started_ms IS NULL OR last_started_ms < ?2)",
    )?;
    for s in starts {
        fold.execute(params![s.id, s.ms])?;
    }
    Ok(())
}

fn clear_in(
    tx: &Transaction<'_>,
    entry: &PendingRow,
    rows: &[NewHistory],
) -> Result<(), StoreError> {
    // The delete trigger keeps the counters and the cleared mark.
    tx.prepare_cached("DELETE FROM pending_hooks WHERE id = ?1")?
        .execute([entry.id])?;
    let now = now_ms();
    let state = entry.state.as_deref().unwrap_or("");
    let mut insert = tx.prepare_cached(
        r#"INSERT INTO hook_history (occurrence, task, point, state, recorded_ms, passes,
               command_index, command, outcome, exit_code, signal, started_ms, duration_ms,
               log_path, finished_ms)
           VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)"#,
    )?;
    for h in rows {
        insert.execute(params![
            entry.id,
            entry.task,
            entry.point,
            state,
            entry.recorded_ms,
            entry.passes,
            h.command_index.map(|i| i as i64),
            h.command,
            h.outcome.as_str(),
            h.exit_code,
            h.signal,
            h.started_ms,
            h.duration_ms,
            h.log_path,
            now,
        ])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_with_pragmas_and_schema() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s/arc.db");
        let store = Store::open(&path).unwrap();
        let mode: String = store
            .conn()
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        let page: i64 = store
            .conn()
            .query_row("PRAGMA page_size", [], |r| r.get(0))
            .unwrap();
        assert_eq!(page, PAGE_SIZE);
        assert_eq!(store.integrity_check().unwrap(), "ok");
        drop(store);
        // Reopening is the fast path: nothing to migrate.
        Store::open(&path).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    /// Clears every pending point of `store` as `empty`, as a drain with no commands would; how
    /// many.
    fn clear_everything(store: &mut Store) -> usize {
        let cleared: Vec<Cleared> = store
            .pending(0, 1_000_000, None)
            .unwrap()
            .into_iter()
            .map(|entry| Cleared {
                entry,
                rows: vec![NewHistory::bare(Outcome::Empty)],
            })
            .collect();
        store.clear_all(&cleared).unwrap();
        cleared.len()
    }

    #[test]
    fn a_database_made_elsewhere_keeps_its_page_size() {
        use crate::queue::ids::{PlanId, TaskId};
        use crate::queue::phase::Phase;
        use crate::queue::record::{self, MoveFacts};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("arc.db");
        // A host made the database first, with a table of its own, at SQLite's default.
        Connection::open(&path)
            .unwrap()
            .execute_batch(
                "CREATE TABLE host_notes (note TEXT); INSERT INTO host_notes VALUES ('kept')",
            )
            .unwrap();
        let mut store = Store::open(&path).unwrap();
        let one =
            |s: &Store, sql: &str| -> i64 { s.conn().query_row(sql, [], |r| r.get(0)).unwrap() };
        assert_eq!(one(&store, "PRAGMA page_size"), 4096);
        assert_eq!(one(&store, "SELECT COUNT(*) FROM host_notes"), 1);
        store
            .write(|tx| {
                let (a, p) = (TaskId::new("a").unwrap(), PlanId::new("p").unwrap());
                record::add_task(tx, &a, &p, &Phase::new("todo.ready").unwrap())?;
                let to = Phase::new("review.awaiting_human").unwrap();
                record::move_task(tx, &a, &to, &MoveFacts::default())
            })
            .unwrap();
        assert_eq!(clear_everything(&mut store), 1);
        assert_eq!(store.integrity_check().unwrap(), "ok");
        drop(store);
        assert_eq!(one(&Store::open(&path).unwrap(), "PRAGMA page_size"), 4096);
    }

    #[test]
    fn the_schema_keeps_points_whole_without_foreign_keys() {
        use crate::queue::ids::{PlanId, TaskId};
        use crate::queue::phase::Phase;
        use crate::queue::record;
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("arc.db")).unwrap();
        store
            .write(|tx| {
                let failed = Phase::new("failed.x").unwrap();
                record::add_task(
                    tx,
                    &TaskId::new("a").unwrap(),
                    &PlanId::new("p").unwrap(),
                    &failed,
                )
            })
            .unwrap();
        let one = |sql: &str| -> i64 { store.conn().query_row(sql, [], |r| r.get(0)).unwrap() };
        assert_eq!(one("SELECT COUNT(*) FROM pending_hooks"), 1);
        // The rule of the CHECK holds.
        let bad = store.conn().execute(
            "INSERT INTO pending_hooks (task, point, recorded_ms) VALUES ('a', 'after_lunch', 0)",
            [],
        );
        assert!(bad.unwrap_err().to_string().contains("CHECK"));
        // No foreign key; a task with a pending point still cannot be deleted or renamed, also
        // on a connection with foreign keys off. A task without one can.
        let refused = |sql: &str| {
            for fk in ["OFF", "ON"] {
                store
                    .conn()
                    .execute_batch(&format!("PRAGMA foreign_keys={fk}"))
                    .unwrap();
                let err = store.conn().execute(sql, []).unwrap_err().to_string();
                assert!(err.contains("pending hook points"), "{sql}: {err}");
            }
        };
        refused("DELETE FROM tasks WHERE id = 'a'");
        refused("UPDATE tasks SET id = 'a2' WHERE id = 'a'");
        store
            .conn()
            .execute_batch(
                "INSERT INTO tasks (id, plan, phase, created_ms, updated_ms) VALUES ('c', 'p', 'todo.ready', 0, 0);
                 UPDATE tasks SET id = 'c2' WHERE id = 'c';
                 UPDATE tasks SET phase = 'todo.blocked' WHERE id = 'a';
                 DELETE FROM tasks WHERE id = 'c2';",
            )
            .unwrap();
        assert_eq!(
            one("SELECT COUNT(*) FROM pragma_foreign_key_list('pending_hooks')")
                + one("SELECT COUNT(*) FROM pragma_foreign_key_list('pending_hook_states')"),
            0
        );
        // Clearing a point deletes its state, by the trigger, whoever deletes it.
        assert_eq!(one("SELECT COUNT(*) FROM pending_hook_states"), 1);
        store
            .conn()
            .execute("DELETE FROM pending_hooks", [])
            .unwrap();
        assert_eq!(one("SELECT COUNT(*) FROM pending_hook_states"), 0);
        store
            .conn()
            .execute_batch("DELETE FROM tasks WHERE id = 'a'")
            .unwrap();
        assert_eq!(store.integrity_check().unwrap(), "ok");
    }

    /// The highest migration `path` records, read without migrating it.
    fn recorded_version(path: &Path) -> Option<i64> {
        Connection::open(path)
            .unwrap()
            .query_row(
                "SELECT MAX(version) FROM refinery_schema_history",
                [],
                |r| r.get(0),
            )
            .unwrap()
    }

    #[test]
    fn pending_migrations_commit_all_or_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("arc.db");
        // A host made the database first, with an index of the name the schema gives one of its
        // own: the migration creates tables, then fails.
        Connection::open(&path)
            .unwrap()
            .execute_batch(
                "CREATE TABLE host_notes (note TEXT);
                 CREATE INDEX hook_history_by_finished ON host_notes (note);",
            )
            .unwrap();
        let err = Store::open(&path).unwrap_err().to_string();
        assert!(err.contains("hook_history_by_finished"), "{err}");
        // Nothing of it stayed: no history row, none of its tables.
        assert_eq!(recorded_version(&path), None);
        let conn = Connection::open(&path).unwrap();
        let tables: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE name IN ('tasks', 'pending_hooks', 'queue_counts')",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(tables, 0);
        conn.execute_batch("DROP INDEX hook_history_by_finished")
            .unwrap();
        drop(conn);
        let store = Store::open(&path).unwrap();
        assert_eq!(store.applied_version().unwrap(), Some(schema_version()));
        assert_eq!(recorded_version(&path), Some(schema_version()));
        assert_eq!(store.stats().unwrap().tasks, 0);
    }

    #[test]
    fn stores_creating_one_database_at_once_all_open_it_whole() {
        use crate::queue::ids::{PlanId, TaskId};
        use crate::queue::phase::Phase;
        use crate::queue::record;
        // Eight stores create each of forty new databases together. Two things collide there:
        // switching the new file to WAL, which SQLite refuses at once rather than waiting, and
        // the migration, which a store may find missing and then run after another store ran
        // it (it fails, rolls back and finds the schema current). Each happens in some of the
        // rounds, not in every one: the forty make both all but certain in every run.
        const STORES: usize = 8;
        let dir = tempfile::tempdir().unwrap();
        for round in 0..40 {
            let path = dir.path().join(format!("arc{round}.db"));
            let barrier = std::sync::Barrier::new(STORES);
            std::thread::scope(|scope| {
                let opened: Vec<_> = (0..STORES)
                    .map(|_| {
                        scope.spawn(|| {
                            barrier.wait();
                            Store::open(&path).map(drop)
                        })
                    })
                    .collect();
                for o in opened {
                    if let Err(e) = o.join().unwrap() {
                        panic!("round {round}: {e}");
                    }
                }
            });
            assert_eq!(recorded_version(&path), Some(schema_version()));
        }
        let mut store = Store::open(&dir.path().join("arc0.db")).unwrap();
        store
            .write(|tx| {
                let failed = Phase::new("failed.x").unwrap();
                let (a, p) = (TaskId::new("a").unwrap(), PlanId::new("p").unwrap());
                record::add_task(tx, &a, &p, &failed)
            })
            .unwrap();
        assert_eq!(clear_everything(&mut store), 1);
        assert_eq!(store.stats().unwrap().tasks, 1);
        assert_eq!(store.integrity_check().unwrap(), "ok");
    }

    #[test]
    fn relaxed_sync_gives_back_the_hosts_own_settings() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("arc.db")).unwrap();
        store
            .conn()
            .execute_batch("PRAGMA wal_autocheckpoint=0; PRAGMA cache_size=-4096")
            .unwrap();
        store
            .with_relaxed_sync(|_| Ok::<_, StoreError>(()))
            .unwrap();
        let read = |pragma: &str| -> i64 {
            let sql = format!("PRAGMA {pragma}");
            store.conn().query_row(&sql, [], |r| r.get(0)).unwrap()
        };
        let (cache, checkpoint) = (read("cache_size"), read("wal_autocheckpoint"));
        assert_eq!((cache, checkpoint), (-4096, 0));
    }

    #[test]
    fn a_busy_timeout_sqlite_cannot_take_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("arc.db");
        let opts = StoreOptions {
            busy_timeout: Duration::from_secs(30 * 24 * 3600),
            ..StoreOptions::default()
        };
        let err = Store::open_with(&path, opts).unwrap_err();
        assert!(matches!(err, StoreError::Invalid(_)), "{err}");
        assert!(err.to_string().contains("busy timeout"), "{err}");
        assert!(!path.exists(), "nothing was created");
    }

    /// A new store whose `tasks` were each created in `failed.x` (one pending point each), and
    /// the runner lock beside it.
    fn with_failed_tasks(tasks: &[&str]) -> (tempfile::TempDir, PathBuf, RunnerLock, Store) {
        use crate::queue::ids::{PlanId, TaskId};
        use crate::queue::lock::Wait;
        use crate::queue::phase::Phase;
        use crate::queue::record;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("arc.db");
        let lock = RunnerLock::acquire(&dir.path().join("runner.lock"), Wait::No, &|| true)
            .unwrap()
            .unwrap();
        let mut store = Store::open(&path).unwrap();
        store
            .write(|tx| {
                let failed = Phase::new("failed.x").unwrap();
                for t in tasks {
                    let t = TaskId::new(*t).unwrap();
                    record::add_task(tx, &t, &PlanId::new("p").unwrap(), &failed)?;
                }
                Ok(())
            })
            .unwrap();
        (dir, path, lock, store)
    }

    /// How many passes each pending point was counted as started by, in recorded order.
    fn passes(store: &Store) -> Vec<i64> {
        store
            .pending(0, 1000, None)
            .unwrap()
            .iter()
            .map(|p| p.passes)
            .collect()
    }

    #[test]
    fn starts_are_counted_once_whether_folded_or_not() {
        let (_dir, path, lock, mut store) = with_failed_tasks(&["a", "b"]);
        let rows = store.pending(0, 10, None).unwrap();
        assert_eq!(passes(&store), [0, 0]);

        // Started: counted by every reader before it is folded, in another store too.
        assert!(store.mark_started(&rows[0], &lock).unwrap());
        let reader = Store::open(&path).unwrap();
        assert_eq!(passes(&reader), [1, 0]);
        assert_eq!(reader.pending_entry(rows[0].id).unwrap().unwrap().passes, 1);
        assert_eq!(reader.stats().unwrap().interrupted, 1);
        let raw = |s: &Store, id: i64| -> i64 {
            s.conn()
                .query_row(
                    "SELECT passes FROM pending_hooks WHERE id = ?1",
                    [id],
                    |r| r.get(0),
                )
                .unwrap()
        };
        assert_eq!(raw(&reader, rows[0].id), 0, "not folded yet");

        // The runner dies; a copy of its log survives the next pass's fold and is read again:
        // counted once all the same.
        let log = starts::path_for(&path);
        let copy = std::fs::read(&log).unwrap();
        drop(store);
        let mut store = Store::open(&path).unwrap();
        assert_eq!(store.fold_starts(&lock).unwrap(), 1);
        assert_eq!(std::fs::metadata(&log).unwrap().len(), 0, "emptied");
        std::fs::write(&log, &copy).unwrap();
        assert_eq!(passes(&store), [1, 0]);
        assert_eq!(store.stats().unwrap().interrupted, 1);
        store.fold_starts(&lock).unwrap();
        assert_eq!(passes(&store), [1, 0]);

        // Started again by the next pass, later than the last counted start even within the
        // same millisecond; folded with a clear of the other point.
        let rows = store.pending(0, 10, None).unwrap();
        assert!(store.mark_started(&rows[0], &lock).unwrap());
        assert_eq!(passes(&store), [2, 0]);
        store
            .clear_all(&[Cleared {
                entry: rows[1].clone(),
                rows: vec![NewHistory::bare(Outcome::Empty)],
            }])
            .unwrap();
        assert_eq!(std::fs::metadata(&log).unwrap().len(), 0);
        assert_eq!((raw(&store, rows[0].id), passes(&store)), (2, vec![2]));

        // A point dropped since it was read is not started.
        let entry = store.pending(0, 10, None).unwrap().remove(0);
        store.drop_entry(entry.id).unwrap();
        assert!(!store.mark_started(&entry, &lock).unwrap());
        assert_eq!(std::fs::metadata(&log).unwrap().len(), 0);
    }

    #[test]
    fn a_fold_while_a_worker_marks_starts_loses_none_and_keeps_no_folded_line() {
        let tasks: Vec<String> = (0..300).map(|t| format!("t{t}")).collect();
        let tasks: Vec<&str> = tasks.iter().map(String::as_str).collect();
        let (_dir, path, lock, mut store) = with_failed_tasks(&tasks);
        let rows = store.pending(0, 300, None).unwrap();
        let mut marker = store.start_marker(&lock);
        let log = starts::path_for(&path);
        let folded_ms = |s: &Store, id: i64| -> Option<i64> {
            s.conn()
                .query_row(
                    "SELECT last_started_ms FROM pending_hooks WHERE id = ?1",
                    [id],
                    |r| r.get(0),
                )
                .unwrap()
        };
        std::thread::scope(|scope| {
            let worker = scope.spawn(|| {
                for r in &rows {
                    assert!(marker.mark_started(r).unwrap());
                }
            });
            // Folds commit while the worker appends: none may leave a folded line in the file
            // (it would stay there for as long as folds keep meeting appends).
            while !worker.is_finished() {
                store.clear_all(&[]).unwrap();
                for line in starts::read(&log).unwrap() {
                    assert_eq!(
                        folded_ms(&store, line.id),
                        None,
                        "line {line:?} folded and kept"
                    );
                }
            }
            worker.join().unwrap();
        });
        store.clear_all(&[]).unwrap();
        assert_eq!(std::fs::metadata(&log).unwrap().len(), 0);
        assert_eq!(passes(&store), vec![1; 300], "every start counted, once");
    }

    #[test]
    fn refuses_a_newer_schema() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("arc.db");
        let store = Store::open(&path).unwrap();
        store
            .conn()
            .execute(
                "INSERT INTO refinery_schema_history (version, name, applied_on, checksum) VALUES (999, 'future', '', '0')",
                [],
            )
            .unwrap();
        drop(store);
        let err = Store::open(&path).unwrap_err();
        assert!(
            matches!(err, StoreError::NewerSchema { found: 999, .. }),
            "{err}"
        );
    }

    #[test]
    fn refuses_random_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("arc.db");
        std::fs::write(&path, vec![0x5a; 8192]).unwrap();
        let err = Store::open(&path).unwrap_err();
        assert!(matches!(err, StoreError::Corrupt(_)), "{err}");
    }
}
