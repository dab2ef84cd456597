//! Workspaces for the figures: a state dir, a config, and pending points filled in bulk.

use std::path::{Path, PathBuf};

use hookq::Workspace;
use hookq::queue::model::now_ms;
use hookq::queue::store::Store;
use hookq::testing::counters::{IdMarks, count_new_points, pending_by_point};
use rusqlite::{Connection, params};

/// The folder each run makes its own temp dir in: `HOOKQ_BENCH_DIR`, else the system temp dir.
pub fn bench_base() -> PathBuf {
    std::env::var_os("HOOKQ_BENCH_DIR").map_or_else(std::env::temp_dir, PathBuf::from)
}

/// The prefix of a run's temp dir in [`bench_base`].
const ROOT_PREFIX: &str = "hookq-bench-";

/// The file in a run's temp dir that the run holds an exclusive lock on while it lives (std's
/// `File::lock`: `flock` on Linux, as the runner lock's holder takes through fs2): the kernel
/// lets go of it however the run ends, so a lock nobody holds means a run that did not finish.
const OWNER: &str = "owner";

/// A run's temp dir: removed when dropped, and marked as the run's while it lives ([`OWNER`]).
pub struct BenchRoot {
    dir: tempfile::TempDir,
    _owner: Option<std::fs::File>,
}

impl BenchRoot {
    /// The temp dir.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// Where the run's databases and logs go: a temp dir of its own in [`bench_base`], removed when
/// the run ends (a run that is killed leaves it: [`stale_roots`]). Floors and figures are
/// measured in the same place, so they share a file system.
pub fn bench_root() -> BenchRoot {
    bench_root_in(&bench_base())
}

/// [`bench_root`] in `base`.
pub fn bench_root_in(base: &Path) -> BenchRoot {
    std::fs::create_dir_all(base).expect("create the bench dir");
    let dir = tempfile::Builder::new()
        .prefix(ROOT_PREFIX)
        .tempdir_in(base)
        .expect("create a temp dir for the bench");
    // Blocking: another run looking at the dir holds the lock only for that look. Without it
    // the dir is reported as left behind: a false warning, never a removal.
    let owner = std::fs::File::create(dir.path().join(OWNER))
        .ok()
        .filter(|f| f.lock().is_ok());
    BenchRoot { dir, _owner: owner }
}

/// The temp dirs in `base` that runs left behind: nobody holds their [`OWNER`] lock, or they
/// have none (made by a bench that did not lock them). Each holds the tens of thousands of files a
/// run makes, and removing them slows file creation for minutes afterwards ("Running it" in
/// BENCHMARKS.md), so they are reported, not removed. Sorted by name.
pub fn stale_roots(base: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(base) else {
        return Vec::new();
    };
    let mut stale: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(ROOT_PREFIX))
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .filter(|dir| !owned(dir))
        .collect();
    stale.sort();
    stale
}

/// Whether a live run holds `dir`'s [`OWNER`] lock. Taking it, to see, lets go at once.
fn owned(dir: &Path) -> bool {
    std::fs::File::open(dir.join(OWNER)).is_ok_and(|f| f.try_lock_shared().is_err())
}

/// A workspace rooted at `dir/name` whose `after_awaiting_human` and `after_fail` points run
/// `commands` (none: points are cleared as soon as a pass reaches them).
pub fn workspace(dir: &Path, name: &str, commands: &[&str]) -> Workspace {
    let root = dir.join(name);
    let ws = Workspace::at(&root);
    std::fs::create_dir_all(ws.state_dir()).expect("create the state dir");
    write_config(&ws, commands);
    drop(Store::open(&ws.db_path()).expect("create the database"));
    ws
}

/// Rewrites the workspace's config with `commands` for `after_awaiting_human` and `after_fail`.
pub fn write_config(ws: &Workspace, commands: &[&str]) {
    let list = commands
        .iter()
        .map(|c| hookq::queue::config::toml_quote(c))
        .collect::<Vec<_>>()
        .join(", ");
    let text = format!("[hooks]\nafter_awaiting_human = [{list}]\nafter_fail = [{list}]\n");
    std::fs::write(ws.config_path(), text).expect("write config.toml");
    // As a config written long ago: the drain clears points without commands only by a config
    // that has gone a few seconds without a write, and a benchmark measures the drain, not that.
    let file = std::fs::File::options()
        .write(true)
        .open(ws.config_path())
        .expect("open config.toml");
    let then = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    file.set_modified(then)
        .expect("set config.toml's modification time");
}

/// A plain connection to the workspace's database for bulk setup: no durability needed, the
/// schema exists already (created by `Store::open`).
pub fn bulk_conn(ws: &Workspace) -> Connection {
    let c = Connection::open(ws.db_path()).expect("open the database for setup");
    c.execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF; PRAGMA foreign_keys=ON; PRAGMA busy_timeout=10000")
        .expect("setup pragmas");
    c
}

/// Creates `tasks` tasks `<prefix>NNNNNNN` of plan `plan` in `phase`, in one transaction.
pub fn add_tasks(c: &mut Connection, prefix: &str, plan: &str, phase: &str, tasks: usize) {
    if tasks == 0 {
        return;
    }
    let tx = c.transaction().expect("begin");
    tx.execute(
        r#"INSERT INTO tasks (id, plan, phase, created_ms, updated_ms)
           WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?1)
           SELECT printf('%s%07d', ?2, i), ?3, ?4, ?5, ?5 FROM n"#,
        params![tasks as i64, prefix, plan, phase, now_ms()],
    )
    .expect("insert tasks");
    tx.commit().expect("commit tasks");
}

/// Records `points` pending `after_awaiting_human` points (state `review.awaiting_human`) over
/// the tasks `<prefix>0000000 .. <prefix>{tasks-1}`, round robin so neighbours are of different
/// tasks, in transactions of at most 100,000 points. These are the rows `record::move_task`
/// writes, written by SQL so that a million of them take seconds, counted into the pending
/// counters `record` keeps (see [`count_new_points`]).
pub fn add_points(c: &mut Connection, prefix: &str, tasks: usize, points: usize) {
    const CHUNK: usize = 100_000;
    let mut done = 0;
    while done < points {
        let n = CHUNK.min(points - done);
        let tx = c.transaction().expect("begin");
        // Ids as `record` gives them: above every id pending or ever cleared.
        let before = IdMarks::read(&tx)
            .and_then(|m| m.next_id())
            .expect("the next id")
            - 1;
        tx.execute(
            r#"INSERT INTO pending_hooks (id, task, point, recorded_ms)
               WITH RECURSIVE n(i) AS (SELECT ?1 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?2)
               SELECT ?6 + 1 + i - ?1, printf('%s%07d', ?3, i % ?4), 'after_awaiting_human', ?5 FROM n"#,
            params![
                done as i64,
                (done + n) as i64,
                prefix,
                tasks as i64,
                now_ms(),
                before
            ],
        )
        .expect("insert pending_hooks");
        tx.execute(
            "INSERT INTO pending_hook_states (hook_id, state) SELECT id, 'review.awaiting_human' FROM pending_hooks WHERE id > ?1",
            [before],
        )
        .expect("insert pending_hook_states");
        count_new_points(&tx).expect("count the points");
        tx.commit().expect("commit points");
        done += n;
    }
}

/// Leaves the newest `k` pending points (all of them if fewer) out of the pending counters, as
/// if recorded since the counters last counted: the most `queue stats` then counts itself is
/// [`hookq::testing::counters::COUNT_EVERY`]. The points must all be `after_awaiting_human`, as
/// [`add_points`] makes them.
pub fn leave_uncounted(c: &Connection, k: i64) {
    let before = pending_count(c);
    let uncounted = k.min(before);
    if uncounted <= 0 {
        return;
    }
    c.execute_batch(&format!(
        "UPDATE queue_counts SET n = n - {uncounted} WHERE kind = 'points' AND name = 'after_awaiting_human';
         UPDATE queue_counts SET n = (SELECT MIN(id) - 1 FROM
             (SELECT id FROM pending_hooks ORDER BY id DESC LIMIT {uncounted}))
         WHERE kind = 'ids' AND name = 'counted';"
    ))
    .expect("leave points uncounted");
    assert_eq!(
        pending_count(c),
        before,
        "the same points, counted another way"
    );
}

/// How many points are pending, as `queue stats` counts them.
pub fn pending_count(c: &Connection) -> i64 {
    pending_by_point(c)
        .expect("count pending")
        .iter()
        .map(|(_, n)| n)
        .sum()
}

/// Moves the WAL into the database file and empties it, so file sizes and whole-process runs
/// start from the same place.
pub fn checkpoint(c: &Connection) {
    c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .expect("checkpoint");
}

/// Moves the WAL into the database file and has the next commit write from the WAL's start,
/// without shrinking the file: a database in steady use (see [`steady_wal`]).
pub fn restart(c: &Connection) {
    c.query_row("PRAGMA wal_checkpoint(RESTART)", [], |_| Ok(()))
        .expect("checkpoint");
}

/// Brings the WAL of the database at `db` to the state it keeps in steady use, so that commits
/// timed on it cost what they cost there.
///
/// A new database, or one just checkpointed with `TRUNCATE`, has an empty WAL: every commit
/// until the first automatic checkpoint (1,000 pages) also extends the file, and on this
/// machine's ext4 that makes a one-row durable commit cost about 1.5x what it costs once the
/// WAL is overwritten from its start after each checkpoint, as it is for good after the first
/// (hookq never truncates it). Timing commits in that first stretch on one side of a ratio and
/// not the other measures the file system's block allocation, not the commits. So this writes
/// one-row commits into a scratch table until the WAL holds more than 1,000 pages, drops the
/// table, syncs the WAL once (the filler commits are not synced, to save time), and checkpoints
/// with `RESTART`.
pub fn steady_wal(db: &Path) {
    let c = Connection::open(db).expect("open the database to fill its WAL");
    c.execute_batch(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF; PRAGMA busy_timeout=10000;
         CREATE TABLE bench_wal_filler (x INTEGER NOT NULL);",
    )
    .expect("create the filler table");
    let page: i64 = c
        .query_row("PRAGMA page_size", [], |r| r.get(0))
        .expect("page_size");
    let wal = PathBuf::from(format!("{}-wal", db.display()));
    // The commit that brings the WAL to 1,000 frames (a 32-byte header, then a 24-byte header
    // and a page each) also checkpoints it.
    let full = 32 + 1_000 * (page.unsigned_abs() + 24);
    let wal_len = || std::fs::metadata(&wal).map_or(0, |m| m.len());
    for i in 0_i64.. {
        if wal_len() >= full {
            break;
        }
        assert!(i < 100_000, "the WAL of {} does not grow", db.display());
        c.execute("INSERT INTO bench_wal_filler (x) VALUES (?1)", [i])
            .expect("fill the WAL");
    }
    c.execute_batch("PRAGMA synchronous=FULL; DROP TABLE bench_wal_filler;")
        .expect("drop the filler table, synced");
    restart(&c);
}
