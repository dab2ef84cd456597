use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::Connection;

use super::*;
use crate::queue::model::{Cleared, HistoryFilter, NewHistory, Outcome, PendingFilter, now_ms};
use crate::queue::backend::Mark;
use crate::queue::lock::RunnerLock;
use crate::queue::row_error::RowError;
use crate::queue::starts;

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
    let one = |s: &Store, sql: &str| -> i64 { s.conn().query_row(sql, [], |r| r.get(0)).unwrap() };
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
        .with_relaxed_sync(|e| e, |_| Ok::<_, StoreError>(()))
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
    assert!(matches!(err, StoreError::Row(RowError::Invalid(_))), "{err}");
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
    assert_eq!(store.mark_started(&rows[0], &lock).unwrap(), Mark::Started);
    let reader = Store::open(&path).unwrap();
    assert_eq!(passes(&reader), [1, 0]);
    assert_eq!(reader.pending_occurrence(rows[0].id).unwrap().unwrap().passes, 1);
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
    assert_eq!(store.mark_started(&rows[0], &lock).unwrap(), Mark::Started);
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
    store.drop_occurrence(entry.id).unwrap();
    assert_eq!(store.mark_started(&entry, &lock).unwrap(), Mark::Gone);
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
                assert_eq!(marker.mark_started(r).unwrap(), Mark::Started);
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

#[test]
fn listings_narrow_page_and_count_outcomes() {
    let (_dir, _path, _lock, mut store) = with_failed_tasks(&["a", "b", "c", "d"]);
    let pending = store.pending(0, 100, None).unwrap();
    assert_eq!(pending.len(), 4);
    let of_b = store
        .pending_where(&PendingFilter {
            task: Some("b".parse().unwrap()),
            point: Some("after_fail".parse().unwrap()),
            limit: 10,
            ..PendingFilter::default()
        })
        .unwrap();
    assert_eq!(of_b.len(), 1);
    assert_eq!(of_b[0].task, "b");
    let none = store
        .pending_where(&PendingFilter {
            point: Some("after_merge".parse().unwrap()),
            limit: 10,
            ..PendingFilter::default()
        })
        .unwrap();
    assert!(none.is_empty());
    let page2 = store
        .pending_where(&PendingFilter {
            point: Some("after_fail".parse().unwrap()),
            after: pending[1].id,
            limit: 10,
            ..PendingFilter::default()
        })
        .unwrap();
    assert_eq!(
        page2.iter().map(|p| p.id).collect::<Vec<_>>(),
        pending[2..].iter().map(|p| p.id).collect::<Vec<_>>()
    );

    // Runs of 10, 30, 20 and 40 ms; the first two failed.
    let outcomes = [
        Outcome::Failed,
        Outcome::Failed,
        Outcome::Ok,
        Outcome::TimedOut,
    ];
    let cleared: Vec<Cleared> = pending
        .into_iter()
        .zip(outcomes)
        .zip([10, 30, 20, 40])
        .map(|((entry, outcome), ms)| Cleared {
            entry,
            rows: vec![NewHistory {
                command_index: Some(1),
                command: Some("x".into()),
                outcome,
                exit_code: None,
                signal: None,
                started_ms: Some(now_ms() - ms),
                duration_ms: Some(ms),
                log_path: None,
            }],
        })
        .collect();
    store.clear_all(&cleared).unwrap();

    let failed = store
        .history_where(&HistoryFilter {
            outcome: Some("failed".parse().unwrap()),
            limit: 10,
            ..HistoryFilter::default()
        })
        .unwrap();
    assert_eq!(
        failed.iter().map(|h| h.task.as_str()).collect::<Vec<_>>(),
        ["b", "a"]
    );
    let older = store
        .history_where(&HistoryFilter {
            before: Some(failed[0].id),
            limit: 10,
            ..HistoryFilter::default()
        })
        .unwrap();
    assert_eq!(older.len(), 1);
    assert_eq!(older[0].task, "a");
    // No row has a host on SQLite.
    let elsewhere = store
        .history_where(&HistoryFilter {
            host: Some("h".into()),
            limit: 10,
            ..HistoryFilter::default()
        })
        .unwrap();
    assert!(elsewhere.is_empty());

    let since = now_ms() - 60_000;
    let counts = store.outcomes(since, 3_600_000).unwrap();
    let of = |o: &str| {
        counts
            .iter()
            .filter(|c| c.outcome == o)
            .map(|c| (c.start_ms, c.count))
            .collect::<Vec<_>>()
    };
    assert_eq!(of("failed"), [(since, 2)]);
    assert_eq!(of("ok"), [(since, 1)]);
    assert_eq!(of("timed_out"), [(since, 1)]);
    assert!(store.outcomes(now_ms() + 1_000, 1_000).unwrap().is_empty());

    let slowest = store.slowest(since, 2).unwrap();
    assert_eq!(
        slowest.iter().map(|h| h.duration_ms).collect::<Vec<_>>(),
        [Some(40), Some(30)]
    );
}
