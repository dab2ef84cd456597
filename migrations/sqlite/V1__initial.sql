-- hookq's schema: tasks, the transactional outbox of hook points their moves record, the history
-- of what became of each point, and the counters `queue stats` reads.
--
-- Times are unix milliseconds. Every table is STRICT, so a value of the wrong type is an error
-- rather than a silent conversion. No table has a foreign key: SQLite checks a key row by row,
-- and `plan cancel`, which writes a point and its state for each of ten thousand tasks in one
-- statement, spent a tenth of its time on a key from a state to its point and an eighth to a
-- sixth on a key from a point to its task. What such keys would guard is kept by the code that
-- writes the rows (it reads or writes the task a point names in the same transaction) and by the
-- triggers below, which unlike a key hold on every connection, also one with `foreign_keys` off
-- (the `sqlite3` shell's default).

-- Tasks, one row each, in the phase (`<state>.<phase>`) their last move put them in.
CREATE TABLE tasks (
    id          TEXT PRIMARY KEY NOT NULL,
    plan        TEXT NOT NULL,
    phase       TEXT NOT NULL,
    attempt     INTEGER NOT NULL DEFAULT 1 CHECK (attempt >= 1),
    merged_sha  TEXT,
    created_ms  INTEGER NOT NULL,
    updated_ms  INTEGER NOT NULL
) STRICT;

-- `task list --plan` and `plan cancel` read one plan's tasks, in id order.
CREATE INDEX tasks_by_plan ON tasks (plan, id);

-- The outbox: one row per occurrence of a hook point, written in the transaction of the move
-- that fired it, and deleted when the drain has run it (or parked or dropped it).
--
-- The id is an occurrence id that is never given twice, not even one of a point cleared since:
-- the code takes the next id above both the highest pending id and the highest id ever cleared
-- (row ('ids', 'cleared') of queue_counts). `AUTOINCREMENT` would give the same guarantee, but
-- it writes sqlite_sequence's page on every insert: one more page for each commit that records a
-- point to write to the WAL and sync, and with the counter's page (which the batched counting
-- below spares) about a sixth of such a transition's time.
--
-- The CHECK is written as comparisons, not `point IN (...)`: SQLite evaluated the IN list at
-- about 1.5 us a row, half of what `plan cancel` spent inserting ten thousand points.
--
-- No index by task: recording and clearing a point would both update it, one more page in every
-- such commit. `task show` scans the queue for a task's points, fast enough for one command.
CREATE TABLE pending_hooks (
    id               INTEGER PRIMARY KEY,
    task             TEXT NOT NULL,
    point            TEXT NOT NULL CHECK (
                         point = 'after_merge' OR point = 'after_fail' OR point = 'after_rework'
                         OR point = 'after_awaiting_human' OR point = 'after_proposed'),
    recorded_ms      INTEGER NOT NULL,
    -- how many passes started this point without clearing it
    passes           INTEGER NOT NULL DEFAULT 0,
    last_started_ms  INTEGER
) STRICT;

-- Points a pass started without clearing them (its runner died, or the command still runs):
-- few, so a partial index keeps counting them cheap however long the queue.
CREATE INDEX pending_hooks_interrupted ON pending_hooks (id) WHERE passes > 0;

-- The `<state>.<phase>` each pending point fired for, written in the same transaction as the
-- point and deleted with it (trigger pending_hooks_cleared).
CREATE TABLE pending_hook_states (
    hook_id  INTEGER PRIMARY KEY NOT NULL,
    state    TEXT NOT NULL
) STRICT;

-- What became of each point: one row per command run, or one row for a point that was cleared
-- without running (no commands configured, parked, dropped). Rows older than
-- `keep_history_days` are pruned.
CREATE TABLE hook_history (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    occurrence     INTEGER NOT NULL,
    task           TEXT NOT NULL,
    point          TEXT NOT NULL,
    state          TEXT NOT NULL,
    recorded_ms    INTEGER NOT NULL,
    passes         INTEGER NOT NULL,
    command_index  INTEGER,
    command        TEXT,
    outcome        TEXT NOT NULL,
    exit_code      INTEGER,
    signal         INTEGER,
    started_ms     INTEGER,
    duration_ms    INTEGER,
    log_path       TEXT,
    finished_ms    INTEGER NOT NULL
) STRICT;

-- `queue history --task` and `task show`: one task's rows, newest first.
CREATE INDEX hook_history_by_task ON hook_history (task, id);
-- Pruning deletes the rows finished before a cutoff, oldest first.
CREATE INDEX hook_history_by_finished ON hook_history (finished_ms);

-- Counters, so that `queue stats` costs the same at ten rows as at a million (a COUNT(*) reads
-- the whole table). Rows by kind:
--
-- * ('tasks', ''): the number of tasks, kept by triggers.
-- * ('history', <outcome>): history rows by outcome, kept by triggers.
-- * ('points', <point>): pending points by point, of those with an id up to the mark in
--   ('ids', 'counted'); `queue stats` counts the few above the mark itself. The code that
--   records points keeps these, in batches (it counts the new ones in once a few hundred have
--   gathered): a trigger would run once for each of the ten thousand points one `plan cancel`
--   statement inserts (22 % of its time under perf), and writing the counter's page in every
--   transition cost it about a tenth of its time. The delete trigger below takes a cleared point
--   off, whoever deletes it.
-- * ('ids', 'counted'): the mark above.
-- * ('ids', 'cleared'): the highest point id ever deleted, so that no id is given twice.
CREATE TABLE queue_counts (
    kind  TEXT NOT NULL,
    name  TEXT NOT NULL,
    n     INTEGER NOT NULL,
    PRIMARY KEY (kind, name)
) STRICT, WITHOUT ROWID;

INSERT INTO queue_counts (kind, name, n) VALUES
    ('tasks', '', 0),
    ('ids', 'cleared', 0),
    ('ids', 'counted', 0);

CREATE TRIGGER tasks_counted AFTER INSERT ON tasks BEGIN
    INSERT INTO queue_counts (kind, name, n) VALUES ('tasks', '', 1)
        ON CONFLICT (kind, name) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER tasks_uncounted AFTER DELETE ON tasks BEGIN
    UPDATE queue_counts SET n = n - 1 WHERE kind = 'tasks';
END;
CREATE TRIGGER hook_history_counted AFTER INSERT ON hook_history BEGIN
    INSERT INTO queue_counts (kind, name, n) VALUES ('history', NEW.outcome, 1)
        ON CONFLICT (kind, name) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER hook_history_uncounted AFTER DELETE ON hook_history BEGIN
    UPDATE queue_counts SET n = n - 1 WHERE kind = 'history' AND name = OLD.outcome;
END;

-- Runs for every deleted point, whoever deletes it (the drain, `queue drop`, a host's own SQL):
-- deletes its state, takes it off the counters if they had counted it, and raises the highest
-- cleared id.
CREATE TRIGGER pending_hooks_cleared AFTER DELETE ON pending_hooks BEGIN
    DELETE FROM pending_hook_states WHERE hook_id = OLD.id;
    UPDATE queue_counts SET n = n - 1 WHERE kind = 'points' AND name = OLD.point
        AND OLD.id <= (SELECT n FROM queue_counts WHERE kind = 'ids' AND name = 'counted');
    INSERT INTO queue_counts (kind, name, n) VALUES ('ids', 'cleared', OLD.id)
        ON CONFLICT (kind, name) DO UPDATE SET n = excluded.n WHERE n < excluded.n;
END;

-- A task with a pending point can be neither deleted nor renamed: its point would name a task
-- that does not exist. (A point whose task is missing anyway, which only SQL written by hand can
-- make, is listed by `hookq queue` and parked by the drain with a warning.)
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
