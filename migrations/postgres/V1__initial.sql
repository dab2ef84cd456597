-- hookq's queue on PostgreSQL: tasks, the transactional outbox of hook points their moves
-- record, the history of what became of each point, and the runner of each queue.
--
-- One database holds many queues: every table is keyed by the queue's name first, every query
-- names its queue, so two queues never see each other's rows. Tables are prefixed `hookq_` so
-- that they sit beside a host's own tables in the host's schema (the first of `search_path`).
-- Times are unix milliseconds.

-- One row per queue: the number that keys its runner lock, and the last occurrence id given.
-- Recording a point takes the next id by updating this row, which holds the row until the
-- recording transaction ends: ids are given in the order transactions commit, so a point with a
-- lower id is never committed after the drain has read past it, and none is given twice.
CREATE TABLE hookq_queues (
    queue       TEXT PRIMARY KEY,
    number      INTEGER GENERATED ALWAYS AS IDENTITY UNIQUE,
    last_id     BIGINT NOT NULL DEFAULT 0,
    created_ms  BIGINT NOT NULL
);

-- Tasks, one row each, in the phase (`<state>.<phase>`) their last move put them in.
CREATE TABLE hookq_tasks (
    queue       TEXT NOT NULL,
    id          TEXT NOT NULL,
    plan        TEXT NOT NULL,
    phase       TEXT NOT NULL,
    attempt     BIGINT NOT NULL DEFAULT 1 CHECK (attempt >= 1),
    merged_sha  TEXT,
    created_ms  BIGINT NOT NULL,
    updated_ms  BIGINT NOT NULL,
    PRIMARY KEY (queue, id)
);

-- `task list --plan` and `plan cancel` read one plan's tasks, in id order.
CREATE INDEX hookq_tasks_by_plan ON hookq_tasks (queue, plan, id);

-- The outbox: one row per occurrence of a hook point, written in the transaction of the move
-- that fired it, and deleted when the drain has run it (or parked or dropped it). The primary
-- key serves the drain's next batch (`WHERE queue = $1 AND id > $2 ORDER BY id`).
CREATE TABLE hookq_pending_hooks (
    queue            TEXT NOT NULL,
    id               BIGINT NOT NULL,
    task             TEXT NOT NULL,
    point            TEXT NOT NULL CHECK (point IN (
                         'after_merge', 'after_fail', 'after_rework', 'after_awaiting_human',
                         'after_proposed')),
    recorded_ms      BIGINT NOT NULL,
    -- how many passes started this point without clearing it
    passes           BIGINT NOT NULL DEFAULT 0,
    last_started_ms  BIGINT,
    PRIMARY KEY (queue, id)
);

-- One task's points in order (`task show`, `queue --task`).
CREATE INDEX hookq_pending_hooks_by_task ON hookq_pending_hooks (queue, task, id);

-- The `<state>.<phase>` each pending point fired for, written in the same transaction as the
-- point and deleted with it.
CREATE TABLE hookq_pending_hook_states (
    queue    TEXT NOT NULL,
    hook_id  BIGINT NOT NULL,
    state    TEXT NOT NULL,
    PRIMARY KEY (queue, hook_id),
    FOREIGN KEY (queue, hook_id) REFERENCES hookq_pending_hooks (queue, id) ON DELETE CASCADE
);

-- What became of each point: one row per command run, or one row for a point that was cleared
-- without running (no commands configured, parked, dropped).
CREATE TABLE hookq_hook_history (
    id             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    queue          TEXT NOT NULL,
    occurrence     BIGINT NOT NULL,
    task           TEXT NOT NULL,
    point          TEXT NOT NULL,
    state          TEXT NOT NULL,
    recorded_ms    BIGINT NOT NULL,
    passes         BIGINT NOT NULL,
    command_index  BIGINT,
    command        TEXT,
    outcome        TEXT NOT NULL,
    exit_code      BIGINT,
    signal         BIGINT,
    started_ms     BIGINT,
    duration_ms    BIGINT,
    log_path       TEXT,
    finished_ms    BIGINT NOT NULL
);

-- A queue's history, newest first.
CREATE INDEX hookq_hook_history_by_queue ON hookq_hook_history (queue, id);
-- `queue history --task` and `task show`: one task's rows, newest first.
CREATE INDEX hookq_hook_history_by_task ON hookq_hook_history (queue, task, id);
-- One occurrence's rows.
CREATE INDEX hookq_hook_history_by_occurrence ON hookq_hook_history (queue, occurrence);
-- Pruning deletes a queue's rows finished before a cutoff, oldest first.
CREATE INDEX hookq_hook_history_by_finished ON hookq_hook_history (queue, finished_ms);

-- Who took each queue's runner lock last: the host, its pid and when. The lock itself is a
-- session-level advisory lock, which goes with its connection; `backend_pid` ties the row to
-- the connection, so a row whose backend no longer holds the lock names a past holder.
CREATE TABLE hookq_runners (
    queue        TEXT PRIMARY KEY,
    host         TEXT NOT NULL,
    pid          BIGINT NOT NULL,
    since_ms     BIGINT NOT NULL,
    backend_pid  INTEGER NOT NULL
);
