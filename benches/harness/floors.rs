//! The machine's physical floors, measured in the same run as the figures they bound.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use rusqlite::{Connection, TransactionBehavior, params};

use super::stats::{median, ms, timed};

/// Spawns `/bin/sh -c true` and waits for it, `samples` times; the median, ms.
pub fn spawn(samples: usize) -> f64 {
    let times: Vec<f64> = (0..samples)
        .map(|_| {
            let t = Instant::now();
            let status = Command::new("/bin/sh")
                .args(["-c", "true"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("spawn /bin/sh");
            assert!(status.success());
            ms(t.elapsed())
        })
        .collect();
    median(&times)
}

/// The floor loop of a drain: `/bin/sh -c true` `n` times, output (stdout and stderr) to a newly
/// created log file each. Total ms.
///
/// Each log file goes into a folder of its own, created beforehand and not timed, laid out as
/// the drain's are (`<dir>/<task>/hooks/`), so the floor creates the same inodes in the same
/// places as the drain it is compared with. On this machine's ext4 the place matters: the same
/// loop with every file in one shared folder took 1.7-2.1 ms a spawn against 1.1-1.6 ms.
pub fn spawn_to_new_logs(dir: &Path, n: usize) -> f64 {
    let logs: Vec<_> = (0..n)
        .map(|i| {
            let folder = dir.join(format!("t{i:07}")).join("hooks");
            std::fs::create_dir_all(&folder).expect("create the floor's log folder");
            folder.join("after_awaiting_human-01.log")
        })
        .collect();
    timed(|| {
        for path in &logs {
            let log = File::create(path).expect("create a log");
            let status = true_into(log).status().expect("spawn /bin/sh");
            assert!(status.success());
        }
    })
    .1
}

/// The floor loop for points of new tasks (figure 2b): as [`spawn_to_new_logs`], but each log's
/// folders (`<dir>/<task>/` and `<dir>/<task>/hooks/`) are new too, as hookq's log layout makes
/// them for a task's first point. They are made, with the file, while the command before runs:
/// the most a runner that starts one command at a time could hide of them. (The drain itself
/// makes them as the command starts, which measured faster there: made ahead, the file system
/// work shares the CPU the command before has just started on, and that command's own CPU time
/// grows with it.) Total ms.
pub fn spawn_to_new_task_logs(dir: &Path, n: usize) -> f64 {
    std::fs::create_dir_all(dir).expect("create the floor's folder");
    let create = |i: usize| {
        let folder = dir.join(format!("t{i:07}")).join("hooks");
        std::fs::create_dir_all(&folder).expect("create the floor's log folders");
        File::create(folder.join("after_awaiting_human-01.log")).expect("create a log")
    };
    timed(|| {
        let mut next = (n > 0).then(|| create(0));
        for i in 0..n {
            let log = next.take().expect("the log made ahead");
            let mut child = true_into(log).spawn().expect("spawn /bin/sh");
            if i + 1 < n {
                next = Some(create(i + 1));
            }
            assert!(child.wait().expect("wait for /bin/sh").success());
        }
    })
    .1
}

/// `/bin/sh -c true` with `/dev/null` as stdin and `log` as stdout and stderr.
fn true_into(log: File) -> Command {
    let mut sh = Command::new("/bin/sh");
    sh.args(["-c", "true"])
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("dup the log"))
        .stderr(log);
    sh
}

/// Overwrites a 4 KiB block of a preallocated file and `fdatasync`s it, `samples` times; the
/// median, ms.
pub fn fdatasync(dir: &Path, samples: usize) -> f64 {
    let file = File::create(dir.join("fdatasync.bin")).expect("create the fdatasync file");
    let block = vec![0x5au8; 4096];
    for i in 0..16 {
        file.write_all_at(&block, i * 4096).expect("preallocate");
    }
    file.sync_all().expect("sync");
    let times: Vec<f64> = (0..samples as u64)
        .map(|i| {
            let t = Instant::now();
            file.write_all_at(&block, (i % 16) * 4096).expect("write");
            file.sync_data().expect("fdatasync");
            ms(t.elapsed())
        })
        .collect();
    median(&times)
}

/// SQLite's default page size, the floors' unless a figure says otherwise: the floors' "durable
/// SQLite commit" is SQLite as it comes. hookq creates its databases with
/// [`hookq::queue::store::PAGE_SIZE`].
pub const SQLITE_PAGE_SIZE: i64 = 4096;

/// Creates `dir/<name>.db` with `page_size` and hookq's store pragmas (WAL, synchronous=FULL,
/// foreign keys, busy timeout), each read back.
pub fn bare_connection(dir: &Path, name: &str, page_size: i64) -> Connection {
    let conn = Connection::open(dir.join(format!("{name}.db"))).expect("open the bare database");
    conn.execute_batch(&format!("PRAGMA page_size={page_size}"))
        .expect("page_size");
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .expect("busy_timeout");
    let mode: String = conn
        .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
        .expect("journal_mode");
    assert_eq!(mode, "wal");
    conn.execute_batch("PRAGMA foreign_keys=ON; PRAGMA synchronous=FULL;")
        .expect("pragmas");
    let sync: i64 = conn
        .query_row("PRAGMA synchronous", [], |r| r.get(0))
        .expect("synchronous");
    assert_eq!(sync, 2, "synchronous=FULL");
    // Journal mode WAL wrote the header: the size is fixed now.
    let page: i64 = conn
        .query_row("PRAGMA page_size", [], |r| r.get(0))
        .expect("page_size");
    assert_eq!(page, page_size, "page_size");
    conn
}

/// A bare database beside the workspace's: same pragmas as hookq's store (WAL, synchronous=FULL,
/// foreign keys, busy timeout), the page size it is given, one table of its own, its WAL in
/// steady state ([`super::fixture::steady_wal`]) as the store's is when it is timed.
pub struct Bare {
    conn: Connection,
    next: i64,
}

impl Bare {
    /// Creates `dir/<name>.db` with `page_size`.
    pub fn create(dir: &Path, name: &str, page_size: i64) -> Self {
        let conn = bare_connection(dir, name, page_size);
        conn.execute_batch(
            "CREATE TABLE bare (id INTEGER PRIMARY KEY, name TEXT NOT NULL, at INTEGER NOT NULL) STRICT;",
        )
        .expect("create the bare table");
        super::fixture::steady_wal(&dir.join(format!("{name}.db")));
        Self { conn, next: 0 }
    }

    /// Checkpoints the WAL with `RESTART`, as a round's setup does for the database compared.
    pub fn restart(&self) {
        super::fixture::restart(&self.conn);
    }

    /// Inserts `rows` rows in one durable `BEGIN IMMEDIATE` transaction; ms.
    pub fn insert(&mut self, rows: usize) -> f64 {
        let start = self.next;
        self.next += rows as i64;
        timed(|| {
            let tx = self
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .expect("begin");
            {
                let mut st = tx
                    .prepare_cached("INSERT INTO bare (name, at) VALUES (?1, ?2)")
                    .expect("prepare");
                for i in start..start + rows as i64 {
                    st.execute(params![format!("task{i:07}"), i])
                        .expect("insert");
                }
            }
            tx.commit().expect("commit");
        })
        .1
    }
}
