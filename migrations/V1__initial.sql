-- Tasks and the transactional outbox of hook points (SPEC §3).
-- Times are unix milliseconds.

CREATE TABLE tasks (
    id          TEXT PRIMARY KEY NOT NULL,
    plan        TEXT NOT NULL,
    phase       TEXT NOT NULL,
    attempt     INTEGER NOT NULL DEFAULT 1 CHECK (attempt >= 1),
    merged_sha  TEXT,
    created_ms  INTEGER NOT NULL,
    updated_ms  INTEGER NOT NULL
) STRICT;

CREATE INDEX tasks_by_plan ON tasks (plan, id);

-- One row per occurrence: a write that moved a task into a phase with a hook point.
-- AUTOINCREMENT so an occurrence id is never reused once cleared.
CREATE TABLE pending_hooks (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    task             TEXT NOT NULL REFERENCES tasks (id),
    point            TEXT NOT NULL CHECK (point IN ('after_merge', 'after_fail', 'after_rework', 'after_awaiting_human', 'after_proposed')),
    recorded_ms      INTEGER NOT NULL,
    -- how many passes started this point without clearing it
    passes           INTEGER NOT NULL DEFAULT 0,
    last_started_ms  INTEGER
) STRICT;

CREATE INDEX pending_hooks_by_task ON pending_hooks (task, id);

-- The <state>.<phase> the point fires for, written in the same transaction.
CREATE TABLE pending_hook_states (
    hook_id  INTEGER PRIMARY KEY NOT NULL REFERENCES pending_hooks (id) ON DELETE CASCADE,
    state    TEXT NOT NULL
) STRICT;

-- What became of each point: one row per command run, or one row for a point that was cleared
-- without running (no commands configured, parked, dropped).
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

CREATE INDEX hook_history_by_task ON hook_history (task, id);
CREATE INDEX hook_history_by_finished ON hook_history (finished_ms);
