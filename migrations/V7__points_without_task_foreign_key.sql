-- `pending_hooks.task REFERENCES tasks (id)` was the schema's last foreign key, and SQLite
-- checked it row by row: an eighth to a sixth of `plan cancel`'s time (bench rows 3d and 3f,
-- session 9: 6.0-8.6 ms of 46-51 ms for 10,000 tasks). What it guarded is kept another way:
--
-- * A point names a task that exists: every path that inserts a point (`record::add_task`,
--   `move_task`, `cancel_plan`, `requeue`) reads or writes that task in the same transaction.
-- * A task with a pending point cannot be deleted or renamed: the two triggers below. Unlike
--   the key they hold for every connection, also one that has `foreign_keys` off (the `sqlite3`
--   shell's default).
--
-- A point whose task is missing anyway (only SQL written by hand can make one) is listed by
-- `hookq queue` and parked by the drain with a warning, where the old inner join hid it.
--
-- SQLite cannot drop a key in place, so the table is rebuilt by its documented procedure, as
-- V5 did; dropping the old table drops its index and its trigger, which are made again.
CREATE TABLE pending_hooks_v7 (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    task             TEXT NOT NULL,
    point            TEXT NOT NULL CHECK (
                         point = 'after_merge' OR point = 'after_fail' OR point = 'after_rework'
                         OR point = 'after_awaiting_human' OR point = 'after_proposed'),
    recorded_ms      INTEGER NOT NULL,
    -- how many passes started this point without clearing it
    passes           INTEGER NOT NULL DEFAULT 0,
    last_started_ms  INTEGER
) STRICT;

INSERT INTO pending_hooks_v7 (id, task, point, recorded_ms, passes, last_started_ms)
    SELECT id, task, point, recorded_ms, passes, last_started_ms FROM pending_hooks ORDER BY id;

-- An occurrence id is never given twice: the new table continues the old one's sequence.
DELETE FROM sqlite_sequence WHERE name = 'pending_hooks_v7';
INSERT INTO sqlite_sequence (name, seq)
    SELECT 'pending_hooks_v7', seq FROM sqlite_sequence WHERE name = 'pending_hooks';

DROP TABLE pending_hooks;
ALTER TABLE pending_hooks_v7 RENAME TO pending_hooks;
CREATE INDEX pending_hooks_interrupted ON pending_hooks (id) WHERE passes > 0;

CREATE TRIGGER pending_hooks_state_cleared AFTER DELETE ON pending_hooks BEGIN
    DELETE FROM pending_hook_states WHERE hook_id = OLD.id;
END;

-- Before the store ran pending migrations in one transaction, two processes upgrading a database
-- at once could run V5 twice, and the second run dropped V6's trigger with the table: clearing a
-- point then left its state behind. The trigger is made again above; such states go.
DELETE FROM pending_hook_states WHERE hook_id NOT IN (SELECT id FROM pending_hooks);

CREATE TRIGGER tasks_delete_kept_for_points BEFORE DELETE ON tasks
WHEN EXISTS (SELECT 1 FROM pending_hooks WHERE task = OLD.id)
BEGIN
    SELECT RAISE(ABORT, 'the task has pending hook points; drop or run them first');
END;

CREATE TRIGGER tasks_rename_kept_for_points BEFORE UPDATE OF id ON tasks
WHEN NEW.id IS NOT OLD.id AND EXISTS (SELECT 1 FROM pending_hooks WHERE task = OLD.id)
BEGIN
    SELECT RAISE(ABORT, 'the task has pending hook points; drop or run them first');
END;
