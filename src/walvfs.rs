//! A thin SQLite VFS over the default `unix` one that writes each commit's WAL frames with one
//! `pwrite` instead of two per page.
//!
//! SQLite appends a frame to the WAL as two writes, its 24-byte header and then the page. A
//! transition that records a point changes five pages: ten writes before the `fsync`. This VFS
//! collects a run of contiguous writes to a WAL file in memory and hands it to the `unix` VFS as
//! one write, so the bytes that reach the file, their offsets and their order are exactly
//! SQLite's own. Only the number of system calls changes. Written as one, the transition costs
//! about 7 % less on this project's machines (0.25 ms against 0.27, interleaved on two stores;
//! `BENCHMARKS.md`). `plan cancel` of ten thousand tasks writes its few hundred frames in about
//! a dozen calls instead of two a frame, which its time does not measurably show.
//!
//! # Why it is safe
//!
//! Nothing SQLite could observe is ever held back. The collected bytes are written out:
//! - when the page of a commit frame arrives (its header carries the database size, which only
//!   a commit frame does), so a commit is in the file before SQLite publishes it in the WAL
//!   index for other connections to read, with or without a sync (`synchronous=NORMAL` does not
//!   sync a commit);
//! - before a write anywhere but at the end of what is collected (SQLite rewriting a frame it
//!   wrote earlier in the same transaction);
//! - before any other operation on the file: read, sync, size, truncate, file control, close;
//! - before the collected bytes would exceed the most the `unix` VFS writes at once (128 KiB),
//!   as when a transaction too big for the page cache spills.
//!
//! A failed write is reported by the call that made it, which is then a later call than it would
//! have been without the VFS (a read or a sync, say, instead of the spill's write). SQLite treats
//! an I/O error anywhere in a write transaction alike: the transaction fails and rolls back, and
//! the frames written for it are never part of the WAL that readers see. A process killed with
//! frames collected but not written loses only frames that were never synced or published.
//!
//! Files other than WALs (the database, its shared memory, journals) are the `unix` VFS's own,
//! untouched. When the default VFS is not `unix`, this one is not registered and hookq opens its
//! databases with the default.

use std::ffi::{CStr, c_int, c_void};
use std::ptr;
use std::sync::OnceLock;

use rusqlite::ffi;

/// The name this VFS is registered under.
const NAME: &CStr = c"hookq-wal";
/// A WAL frame's header: page number, database size after a commit (else 0), salts, checksums.
const FRAME_HEADER: usize = 24;
/// The most the `unix` VFS writes in one call: it masks a write's length to 17 bits, as none of
/// SQLite's own is longer. Bytes collected never exceed it.
const MOST: usize = 0x1ffff;

/// The `unix` VFS, as registered by SQLite. SQLite keeps its VFS objects for the life of the
/// process, so the pointer stays valid.
struct Unix(*mut ffi::sqlite3_vfs);
// SAFETY: the VFS object is immutable once registered and SQLite calls it from any thread.
unsafe impl Send for Unix {}
unsafe impl Sync for Unix {}

static UNIX: OnceLock<Option<Unix>> = OnceLock::new();

/// The name to open hookq's databases with: this VFS once registered, `None` (SQLite's default)
/// when the default VFS is not `unix`.
pub(crate) fn name() -> Option<&'static CStr> {
    UNIX.get_or_init(register).as_ref().map(|_| NAME)
}

fn register() -> Option<Unix> {
    // SAFETY: `sqlite3_vfs_find` initialises SQLite if needed and returns a registered VFS or
    // null; every field is read from it before ours is registered.
    unsafe {
        let unix = ffi::sqlite3_vfs_find(ptr::null());
        if unix.is_null() || (*unix).zName.is_null() || CStr::from_ptr((*unix).zName) != c"unix" {
            return None;
        }
        // Every method but `xOpen` is the `unix` VFS's own. They ignore the VFS pointer they
        // are called with but for `mxPathname`, which the copy keeps.
        let mut ours = *unix;
        ours.pNext = ptr::null_mut();
        ours.zName = NAME.as_ptr();
        ours.szOsFile = c_int::try_from(INNER_OFFSET)
            .ok()?
            .checked_add((*unix).szOsFile)?;
        ours.xOpen = Some(open);
        let ours = Box::leak(Box::new(ours));
        if ffi::sqlite3_vfs_register(ours, 0) != ffi::SQLITE_OK {
            return None;
        }
        Some(Unix(unix))
    }
}

/// The `unix` VFS: always there once this one is registered, which is before it opens a file.
fn unix() -> Option<*mut ffi::sqlite3_vfs> {
    UNIX.get().and_then(Option::as_ref).map(|u| u.0)
}

/// A WAL file opened through this VFS: SQLite allocates `szOsFile` bytes for it; this header
/// comes first, the `unix` VFS's own file object at `INNER_OFFSET`.
#[repr(C)]
struct WalFile {
    base: ffi::sqlite3_file,
    /// Contiguous bytes not yet written, to go at `start`.
    collected: Vec<u8>,
    start: i64,
    /// The last write was a commit frame's header: write out once its page follows.
    commit_page_next: bool,
}

impl WalFile {
    /// Whether `len` bytes at `offset` may join what is collected: nothing is, or they follow
    /// it and the whole stays within what the `unix` VFS writes at once.
    fn continues(&self, offset: i64, len: usize) -> bool {
        self.collected.is_empty()
            || (offset == self.start + self.collected.len() as i64
                && self.collected.len() + len <= MOST)
    }

    /// Collects `bytes`, to go at `offset`; true when they are a commit frame's page, which
    /// must be written out now.
    fn collect(&mut self, offset: i64, bytes: &[u8]) -> bool {
        if self.collected.is_empty() {
            self.start = offset;
        }
        self.collected.extend_from_slice(bytes);
        let commit_page = std::mem::take(&mut self.commit_page_next);
        if bytes.len() == FRAME_HEADER && bytes[4..8] != [0; 4] {
            self.commit_page_next = true;
        }
        commit_page
    }
}

const INNER_OFFSET: usize = std::mem::size_of::<WalFile>().next_multiple_of(16);

#[cfg(test)]
thread_local! {
    /// Writes asked of WAL files and writes made to them, on this thread: what the tests check.
    static WRITES: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
}

/// `(asked, made)`: the WAL writes SQLite asked for on this thread and those this VFS made.
#[cfg(test)]
pub(crate) fn writes() -> (u64, u64) {
    WRITES.with(std::cell::Cell::get)
}

#[cfg(test)]
fn count(asked: u64, made: u64) {
    WRITES.with(|w| {
        let (a, m) = w.get();
        w.set((a + asked, m + made));
    });
}

#[cfg(not(test))]
fn count(_asked: u64, _made: u64) {}

unsafe extern "C" fn open(
    _vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let Some(unix) = unix() else {
        return ffi::SQLITE_CANTOPEN;
    };
    // SAFETY: `file` has `szOsFile` bytes, more than the `unix` VFS needs; SQLite guarantees
    // the rest of the arguments as for any `xOpen`.
    unsafe {
        let Some(unix_open) = (*unix).xOpen else {
            return ffi::SQLITE_CANTOPEN;
        };
        if flags & ffi::SQLITE_OPEN_WAL == 0 {
            return unix_open(unix, name, file, flags, out_flags);
        }
        let rc = unix_open(unix, name, inner(file), flags, out_flags);
        if rc != ffi::SQLITE_OK {
            (*file).pMethods = ptr::null();
            return rc;
        }
        ptr::write(
            file.cast::<WalFile>(),
            WalFile {
                base: ffi::sqlite3_file { pMethods: &METHODS },
                collected: Vec::new(),
                start: 0,
                commit_page_next: false,
            },
        );
    }
    ffi::SQLITE_OK
}

/// The `unix` VFS's file object inside ours.
///
/// # Safety
/// `file` was allocated by SQLite with this VFS's `szOsFile`.
unsafe fn inner(file: *mut ffi::sqlite3_file) -> *mut ffi::sqlite3_file {
    // SAFETY: in bounds of the allocation, by the caller's guarantee.
    unsafe { file.cast::<u8>().add(INNER_OFFSET).cast() }
}

/// Our header and the `unix` file of a WAL this VFS opened, and the `unix` file's methods.
///
/// # Safety
/// `file` was opened by [`open`] as a WAL and not closed.
unsafe fn parts<'a>(
    file: *mut ffi::sqlite3_file,
) -> (
    &'a mut WalFile,
    *mut ffi::sqlite3_file,
    &'a ffi::sqlite3_io_methods,
) {
    // SAFETY: by the caller's guarantee; SQLite uses one file from one thread at a time.
    unsafe {
        let inner = inner(file);
        (&mut *file.cast::<WalFile>(), inner, &*(*inner).pMethods)
    }
}

/// Writes what is collected, if anything.
///
/// # Safety
/// As for [`parts`].
unsafe fn write_out(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: by the caller's guarantee.
    let (w, inner, m) = unsafe { parts(file) };
    if w.collected.is_empty() {
        return ffi::SQLITE_OK;
    }
    let Ok(len) = c_int::try_from(w.collected.len()) else {
        return ffi::SQLITE_IOERR_WRITE;
    };
    // SAFETY: `collected` is `len` initialised bytes.
    let rc = unsafe { unix_write(m, inner, w.collected.as_ptr().cast(), len, w.start) };
    w.collected.clear();
    rc
}

/// One write by the `unix` file itself.
///
/// # Safety
/// `inner` is the open `unix` file whose methods are `m`; `data` has `amount` bytes.
unsafe fn unix_write(
    m: &ffi::sqlite3_io_methods,
    inner: *mut ffi::sqlite3_file,
    data: *const c_void,
    amount: c_int,
    offset: i64,
) -> c_int {
    count(0, 1);
    match m.xWrite {
        // SAFETY: by the caller's guarantee.
        Some(f) => unsafe { f(inner, data, amount, offset) },
        None => ffi::SQLITE_IOERR_WRITE,
    }
}

unsafe extern "C" fn write(
    file: *mut ffi::sqlite3_file,
    data: *const c_void,
    amount: c_int,
    offset: i64,
) -> c_int {
    count(1, 0);
    let Ok(len) = usize::try_from(amount) else {
        return ffi::SQLITE_IOERR_WRITE;
    };
    // SAFETY: SQLite passes `amount` readable bytes at `data`, on a file `open` made a WAL.
    // Each borrow of our header ends before `write_out` takes its own.
    unsafe {
        if !parts(file).0.continues(offset, len) {
            let rc = write_out(file);
            if rc != ffi::SQLITE_OK {
                return rc;
            }
        }
        if len > MOST {
            // Longer than SQLite's own writes: not ours to change.
            let (_, inner, m) = parts(file);
            return unix_write(m, inner, data, amount, offset);
        }
        let bytes = std::slice::from_raw_parts(data.cast::<u8>(), len);
        if parts(file).0.collect(offset, bytes) {
            return write_out(file);
        }
    }
    ffi::SQLITE_OK
}

/// Defines a method that writes out what is collected, then calls the `unix` file's own.
macro_rules! after_write_out {
    ($name:ident, $field:ident, ($($arg:ident: $ty:ty),*)) => {
        unsafe extern "C" fn $name(file: *mut ffi::sqlite3_file $(, $arg: $ty)*) -> c_int {
            // SAFETY: `file` is a WAL `open` made; the arguments are SQLite's, passed on.
            unsafe {
                let rc = write_out(file);
                if rc != ffi::SQLITE_OK {
                    return rc;
                }
                let (_, inner, m) = parts(file);
                match m.$field {
                    Some(f) => f(inner $(, $arg)*),
                    None => ffi::SQLITE_MISUSE,
                }
            }
        }
    };
}

/// Defines a method that only calls the `unix` file's own.
macro_rules! passed_on {
    ($name:ident, $field:ident, ($($arg:ident: $ty:ty),*) -> $ret:ty, $missing:expr) => {
        unsafe extern "C" fn $name(file: *mut ffi::sqlite3_file $(, $arg: $ty)*) -> $ret {
            // SAFETY: `file` is a WAL `open` made; the arguments are SQLite's, passed on.
            unsafe {
                let (_, inner, m) = parts(file);
                match m.$field {
                    Some(f) => f(inner $(, $arg)*),
                    None => $missing,
                }
            }
        }
    };
}

after_write_out!(read, xRead, (buf: *mut c_void, amount: c_int, offset: i64));
after_write_out!(truncate, xTruncate, (size: i64));
after_write_out!(sync, xSync, (flags: c_int));
after_write_out!(file_size, xFileSize, (size: *mut i64));
after_write_out!(file_control, xFileControl, (op: c_int, arg: *mut c_void));
after_write_out!(fetch, xFetch, (offset: i64, amount: c_int, out: *mut *mut c_void));
after_write_out!(unfetch, xUnfetch, (offset: i64, p: *mut c_void));
passed_on!(lock, xLock, (level: c_int) -> c_int, ffi::SQLITE_MISUSE);
passed_on!(unlock, xUnlock, (level: c_int) -> c_int, ffi::SQLITE_MISUSE);
passed_on!(reserved, xCheckReservedLock, (out: *mut c_int) -> c_int, ffi::SQLITE_MISUSE);
passed_on!(sector_size, xSectorSize, () -> c_int, 4096);
passed_on!(device, xDeviceCharacteristics, () -> c_int, 0);
passed_on!(shm_map, xShmMap, (page: c_int, size: c_int, extend: c_int, out: *mut *mut c_void) -> c_int, ffi::SQLITE_IOERR_SHMMAP);
passed_on!(shm_lock, xShmLock, (offset: c_int, n: c_int, flags: c_int) -> c_int, ffi::SQLITE_IOERR_SHMLOCK);
passed_on!(shm_unmap, xShmUnmap, (delete: c_int) -> c_int, ffi::SQLITE_OK);

unsafe extern "C" fn shm_barrier(file: *mut ffi::sqlite3_file) {
    // SAFETY: `file` is a WAL `open` made.
    unsafe {
        let (_, inner, m) = parts(file);
        if let Some(f) = m.xShmBarrier {
            f(inner);
        }
    }
}

unsafe extern "C" fn close(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: `file` is a WAL `open` made; SQLite calls nothing on it after this.
    unsafe {
        let written = write_out(file);
        let (_, inner, m) = parts(file);
        let closed = m.xClose.map_or(ffi::SQLITE_OK, |f| f(inner));
        ptr::drop_in_place(file.cast::<WalFile>());
        (*file).pMethods = ptr::null();
        if written != ffi::SQLITE_OK {
            written
        } else {
            closed
        }
    }
}

static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 3,
    xClose: Some(close),
    xRead: Some(read),
    xWrite: Some(write),
    xTruncate: Some(truncate),
    xSync: Some(sync),
    xFileSize: Some(file_size),
    xLock: Some(lock),
    xUnlock: Some(unlock),
    xCheckReservedLock: Some(reserved),
    xFileControl: Some(file_control),
    xSectorSize: Some(sector_size),
    xDeviceCharacteristics: Some(device),
    xShmMap: Some(shm_map),
    xShmLock: Some(shm_lock),
    xShmBarrier: Some(shm_barrier),
    xShmUnmap: Some(shm_unmap),
    xFetch: Some(fetch),
    xUnfetch: Some(unfetch),
};

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::{Connection, OpenFlags};

    /// A connection through this VFS, and one through SQLite's default beside it.
    fn pair(dir: &std::path::Path, synchronous: &str) -> (Connection, Connection) {
        let path = dir.join("db.sqlite");
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE;
        let ours = Connection::open_with_flags_and_vfs(&path, flags, name().expect("registered"))
            .expect("open through hookq-wal");
        ours.execute_batch(&format!(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous={synchronous};
             CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT NOT NULL);
             CREATE TABLE b (id INTEGER PRIMARY KEY, v TEXT NOT NULL);
             CREATE TABLE c (id INTEGER PRIMARY KEY, v BLOB NOT NULL);"
        ))
        .expect("schema");
        let plain = Connection::open(&path).expect("open through the default VFS");
        (ours, plain)
    }

    fn counts(c: &Connection) -> (i64, i64, i64) {
        c.query_row(
            "SELECT (SELECT COUNT(*) FROM a), (SELECT COUNT(*) FROM b), (SELECT COUNT(*) FROM c)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect("count")
    }

    #[test]
    fn every_commit_is_in_the_file_when_other_connections_can_see_it() {
        for synchronous in ["FULL", "NORMAL"] {
            let dir = tempfile::tempdir().expect("tempdir");
            let (mut ours, plain) = pair(dir.path(), synchronous);
            let before = writes();
            for i in 1..=50 {
                let tx = ours.transaction().expect("begin");
                tx.execute("INSERT INTO a (v) VALUES (?1)", [format!("a{i}")])
                    .expect("a");
                tx.execute("INSERT INTO b (v) VALUES (?1)", [format!("b{i}")])
                    .expect("b");
                tx.execute("INSERT INTO c (v) VALUES (zeroblob(100))", [])
                    .expect("c");
                tx.commit().expect("commit");
                // The plain connection reads the WAL from the file: the commit must be there.
                assert_eq!(counts(&plain), (i, i, i), "synchronous={synchronous}");
            }
            let (asked, made) = (writes().0 - before.0, writes().1 - before.1);
            // Three pages a commit, two writes a page asked; one write made a commit (and one
            // for the WAL's header when FULL syncs it alone on the first).
            assert!(asked >= 50 * 6, "asked {asked}");
            assert!((50..=51).contains(&made), "made {made} for 50 commits");
        }
    }

    #[test]
    fn a_store_commits_a_transition_as_one_write() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut store = crate::Store::open(&dir.path().join("arc.db")).expect("open");
        let task = crate::TaskId::new("t1").expect("id");
        let plan = crate::PlanId::new("p1").expect("id");
        let ready = crate::Phase::new("todo.ready").expect("phase");
        store
            .write(|tx| crate::record::add_task(tx, &task, &plan, &ready))
            .expect("add");
        let awaiting = crate::Phase::new("review.awaiting_human").expect("phase");
        let before = writes();
        let moved = store
            .write(|tx| crate::record::move_task(tx, &task, &awaiting, &Default::default()))
            .expect("move");
        assert!(moved.occurrence.is_some(), "the move records a point");
        let (asked, made) = (writes().0 - before.0, writes().1 - before.1);
        // The task's page, the point's, its state's, the counters' and the id sequence's: five
        // frames, ten writes asked, one made.
        assert!(asked >= 6, "asked {asked}");
        assert_eq!(made, 1, "a store's commit goes through hookq-wal");
    }

    #[test]
    fn a_transaction_that_spills_and_rewrites_frames_commits_or_rolls_back_whole() {
        for synchronous in ["FULL", "NORMAL"] {
            let dir = tempfile::tempdir().expect("tempdir");
            let (mut ours, plain) = pair(dir.path(), synchronous);
            // A page cache of 8 pages: the transactions below spill frames to the WAL, then
            // change the same pages again (SQLite rewrites those frames in place) and read them
            // back from the WAL.
            ours.execute_batch("PRAGMA cache_size=8; PRAGMA cache_spill=1;")
                .expect("small cache");
            let fill = |c: &mut Connection, commit: bool| {
                let tx = c.transaction().expect("begin");
                for i in 0..3_000 {
                    tx.execute(
                        "INSERT INTO c (id, v) VALUES (?1, randomblob(300))
                         ON CONFLICT (id) DO UPDATE SET v = randomblob(300)",
                        [i],
                    )
                    .expect("insert");
                }
                tx.execute("UPDATE c SET v = zeroblob(length(v)) WHERE id % 3 = 0", [])
                    .expect("rewrite");
                tx.execute(
                    "INSERT INTO a (v) SELECT hex(v) FROM c WHERE id % 97 = 0",
                    [],
                )
                .expect("read back");
                if commit {
                    tx.commit().expect("commit");
                } else {
                    tx.rollback().expect("rollback");
                }
            };
            fill(&mut ours, true);
            assert_eq!(counts(&plain), (31, 0, 3_000));
            fill(&mut ours, false);
            assert_eq!(
                counts(&plain),
                (31, 0, 3_000),
                "the rolled back one left nothing"
            );
            for c in [&plain, &ours] {
                let check: String = c
                    .query_row("PRAGMA integrity_check", [], |r| r.get(0))
                    .expect("integrity_check");
                assert_eq!(check, "ok");
                let zeroed: i64 = c
                    .query_row(
                        "SELECT COUNT(*) FROM c WHERE id % 3 = 0 AND v = zeroblob(300)",
                        [],
                        |r| r.get(0),
                    )
                    .expect("zeroed rows");
                assert_eq!(zeroed, 1_000);
            }
            drop(ours);
            drop(plain);
            // Reopened from the file alone, through the default VFS.
            let again = Connection::open(dir.path().join("db.sqlite")).expect("reopen");
            assert_eq!(counts(&again), (31, 0, 3_000));
        }
    }
}
