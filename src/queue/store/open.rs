//! Opening the database: the pragmas every connection sets and reads back, the embedded
//! migrations, and the write transactions.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::{Connection, ErrorCode, OpenFlags, Transaction, TransactionBehavior};

use crate::queue::row_error::RowError;
use crate::queue::starts::{self, StartLog};

use super::StoreError;
use super::error::classify;

mod embedded {
    refinery::embed_migrations!("migrations/sqlite");
}

/// WAL pages between automatic checkpoints while a drain runs (SQLite's default is 1,000).
pub(crate) const DRAIN_AUTOCHECKPOINT: i64 = 8_000;

/// The drain's page cache: `cache_size` in KiB when negative, as SQLite takes it (1 MiB).
pub(crate) const DRAIN_CACHE_SIZE: i64 = -1024;

/// The page size of a database the store creates, in bytes (SQLite's default is 4,096). A
/// database that has a page already keeps its own: SQLite sets the size only while the file is
/// empty, and in WAL mode not even `VACUUM` changes it.
///
/// A durable commit writes every page it changed to the WAL, whole, and a transition that
/// records a point changes three pages (the task's, the point's and the state's): smaller pages
/// make each transition cheaper, and cost the big transactions (`plan cancel`), which write the
/// same bytes in more WAL frames. `docs/design.md` ("Measurements behind the design") has the
/// figures behind this size.
pub const PAGE_SIZE: i64 = 2048;

/// How long one `BEGIN IMMEDIATE` attempt waits in SQLite's busy handler before
/// [`Store::transaction`] tries again.
const BEGIN_POLL: Duration = Duration::from_millis(1);

/// The busy timeout every connection sets unless told otherwise.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(10);

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
    pub(super) conn: Connection,
    pub(super) path: PathBuf,
    pub(super) busy_timeout: Duration,
    pub(super) synchronous: Synchronous,
    /// Shared with the [`StartMarker`](super::StartMarker)s of a parallel drain's workers.
    pub(super) starts: Arc<Mutex<StartLog>>,
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
            return Err(RowError::Invalid(format!(
                "busy timeout {:?} is longer than SQLite takes ({longest:?})",
                opts.busy_timeout
            )).into());
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
    pub(crate) fn with_relaxed_sync<T, E>(
        &mut self,
        into: impl Fn(StoreError) -> E,
        f: impl FnOnce(&mut Self) -> Result<T, E>,
    ) -> Result<T, E> {
        let saved = self.relax().map_err(&into)?;
        let out = f(self);
        let restored = self.restore(saved);
        let out = out?;
        restored.map_err(into)?;
        Ok(out)
    }

    /// Sets the pass's settings; what they were, to restore.
    fn relax(&mut self) -> Result<(i64, i64), StoreError> {
        set_synchronous(&self.conn, Synchronous::Normal)?;
        // Restored as they were: a host embedding the store may have set its own.
        let read = |pragma: &str| -> Result<i64, StoreError> {
            Ok(self
                .conn
                .query_row(&format!("PRAGMA {pragma}"), [], |r| r.get(0))?)
        };
        let (cache, checkpoint) = (read("cache_size")?, read("wal_autocheckpoint")?);
        self.conn.execute_batch(&format!(
            "PRAGMA wal_autocheckpoint={DRAIN_AUTOCHECKPOINT}; PRAGMA cache_size={DRAIN_CACHE_SIZE}"
        ))?;
        Ok((cache, checkpoint))
    }

    /// Restores what [`Store::relax`] changed.
    fn restore(&mut self, (cache, checkpoint): (i64, i64)) -> Result<(), StoreError> {
        self.conn.execute_batch(&format!(
            "PRAGMA wal_autocheckpoint={checkpoint}; PRAGMA cache_size={cache}"
        ))?;
        set_synchronous(&self.conn, self.synchronous)
    }

    /// Whether the database has a table `name`.
    fn has_table(&self, name: &str) -> Result<bool, StoreError> {
        Ok(self.conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1)",
            [name],
            |r| r.get(0),
        )?)
    }

    pub(super) fn applied_version(&self) -> Result<Option<i64>, StoreError> {
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
    pub(super) fn transaction_within(
        &mut self,
        patience: Duration,
    ) -> Result<Transaction<'_>, StoreError> {
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
    pub(super) fn write_within<T>(
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

    /// The options this connection was opened with.
    pub fn options(&self) -> StoreOptions {
        StoreOptions {
            busy_timeout: self.busy_timeout,
            synchronous: self.synchronous,
        }
    }

    /// `PRAGMA data_version`: changes whenever another connection commits.
    pub(crate) fn data_version(&self) -> Result<i64, StoreError> {
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
pub(super) fn connect(path: &Path, opts: StoreOptions) -> Result<Connection, StoreError> {
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
    // journal to a temporary file, where a big `plan cancel` spent a good part of its time
    // (docs/design.md); held in memory, it costs a copy of each page. No query of ours sorts or
    // groups outside an index, so nothing else grows there.
    set_pragma(&c, "temp_store", "MEMORY", 2)?;
    set_synchronous(&c, opts.synchronous)?;
    Ok(c)
}

/// Sets an integer-valued pragma on `c` and reads it back as `want`.
pub(super) fn set_pragma(
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
pub(super) fn set_synchronous(c: &Connection, level: Synchronous) -> Result<(), StoreError> {
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
