//! Transactions bigger than the page cache: SQLite writes ("spills") their pages into the WAL
//! before the commit. A spilled transaction that rolls back must leave no trace that could later
//! land on another connection's commits, and a committed one must survive a kill of the process
//! at either `synchronous` level (a drain runs at NORMAL). A layer that holds WAL writes back to
//! merge them (a custom VFS) breaks both: it can write a rolled-back transaction's frames over
//! frames committed since, or publish a commit before its last frame is written. These tests
//! keep both true of whatever writes the WAL.
//!
//! A kill is simulated by copying the database and its WAL while the store is still open: what
//! a restart after `kill -9` of every process finds on disk.

use std::path::Path;

use hookq::queue::record;
use hookq::queue::store::{StoreOptions, Synchronous};
use hookq::{Phase, PlanId, Store, TaskId};
use rusqlite::Connection;

/// `PRAGMA integrity_check` and the number of tasks of `plan`, on a plain connection.
fn check(db: &Path, plan: &str) -> (String, i64) {
    let c = Connection::open(db).expect("open the database");
    let rows: Vec<String> = c
        .prepare("PRAGMA integrity_check")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .expect("integrity_check");
    let n = c
        .query_row("SELECT COUNT(*) FROM tasks WHERE plan = ?1", [plan], |r| {
            r.get(0)
        })
        .expect("count tasks");
    (rows.join("; "), n)
}

/// What a restart after a kill finds: the database and WAL files as they are now, recovered.
fn after_a_kill(db: &Path, plan: &str) -> (String, i64) {
    let copy = tempfile::tempdir().expect("tempdir");
    let to = copy.path().join("arc.db");
    std::fs::copy(db, &to).expect("copy the database");
    let wal = db.with_extension("db-wal");
    if wal.exists() {
        std::fs::copy(&wal, to.with_extension("db-wal")).expect("copy the WAL");
    }
    check(&to, plan)
}

fn wal_len(db: &Path) -> u64 {
    std::fs::metadata(db.with_extension("db-wal")).map_or(0, |m| m.len())
}

/// Adds `n` tasks of plan `bulk` in one transaction.
fn bulk(store: &mut Store, n: usize) {
    store
        .write(|tx| {
            let mut add = tx.prepare(
                "INSERT INTO tasks (id, plan, phase, created_ms, updated_ms) VALUES (?1, 'bulk', 'todo.ready', 0, 0)",
            )?;
            for i in 0..n {
                add.execute([format!("bulk{i:06}")])?;
            }
            Ok(())
        })
        .expect("add the bulk tasks");
}

/// A page cache of 8 pages, so a transaction of a few thousand rows spills.
fn small_cache(store: &Store) {
    store
        .conn()
        .execute_batch("PRAGMA cache_size=8; PRAGMA cache_spill=1;")
        .expect("a small cache");
}

#[test]
fn a_rolled_back_spill_leaves_later_commits_alone() {
    for (commits, close) in [(1, false), (1, true), (20, false), (20, true)] {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("arc.db");
        let mut a = Store::open(&db).expect("open");
        bulk(&mut a, 3000);
        a.conn()
            .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
            .expect("checkpoint");
        drop(a);
        let mut a = Store::open(&db).expect("open a");
        let mut b = Store::open(&db).expect("open b");
        small_cache(&a);
        let before = wal_len(&db);
        {
            let tx = a.transaction().expect("begin");
            tx.execute("UPDATE tasks SET updated_ms = 1 - updated_ms", [])
                .expect("update every task");
            tx.rollback().expect("roll back");
        }
        assert!(
            wal_len(&db) > before,
            "the update did not spill: the test does not test what it says"
        );
        let (plan, phase) = (PlanId::new("p").unwrap(), Phase::new("failed.x").unwrap());
        for i in 0..commits {
            b.write(|tx| {
                record::add_task(tx, &TaskId::new(format!("t{i}")).unwrap(), &plan, &phase)
            })
            .expect("b commits");
        }
        // A touches its WAL again: a read, or closing.
        if close {
            drop(a);
        } else {
            let pending = a.pending(0, 100, None).expect("a reads");
            assert_eq!(
                pending.len(),
                commits,
                "a reads b's points (failed.* records one)"
            );
        }
        let want = ("ok".to_string(), commits as i64);
        assert_eq!(
            check(&db, "p"),
            want,
            "{commits} commits, close {close}: live"
        );
        assert_eq!(
            after_a_kill(&db, "p"),
            want,
            "{commits} commits, close {close}: after a kill"
        );
        drop(b);
    }
}

#[test]
fn a_commit_that_rewrote_spilled_pages_survives_a_kill() {
    for synchronous in [Synchronous::Full, Synchronous::Normal] {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("arc.db");
        let opts = StoreOptions {
            synchronous,
            ..StoreOptions::default()
        };
        let mut store = Store::open_with(&db, opts).expect("open");
        small_cache(&store);
        store
            .write(|tx| {
                let mut add = tx.prepare(
                    "INSERT INTO tasks (id, plan, phase, created_ms, updated_ms) VALUES (?1, 'bulk', 'todo.ready', 0, 0)",
                )?;
                for i in 0..3000 {
                    add.execute([format!("bulk{i:06}")])?;
                }
                // Pages spilled above change again: SQLite rewrites their frames in place and
                // the frame checksums at the commit.
                tx.execute("UPDATE tasks SET updated_ms = 1 WHERE rowid % 50 = 0", [])?;
                Ok(())
            })
            .expect("commit");
        let want = ("ok".to_string(), 3000);
        assert_eq!(check(&db, "bulk"), want, "{synchronous:?}: live");
        // Killed now, the store still open.
        assert_eq!(
            after_a_kill(&db, "bulk"),
            want,
            "{synchronous:?}: after a kill"
        );
    }
}
