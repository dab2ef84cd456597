-- `pending_hook_states.hook_id REFERENCES pending_hooks (id)` cost `plan cancel` a tenth of its
-- time: SQLite looked up each new state's point and, because one statement inserts many points,
-- each new point's states (10,000 tasks, scratch, interleaved: 46.8-50.6 ms with the key,
-- 42.3-45.7 without). Only hookq writes these two tables, always both in one transaction; what
-- the key still did, deleting a point's state with the point (ON DELETE CASCADE), this trigger
-- does. `pending_hooks.task REFERENCES tasks (id)` stays: a point never names a task that does
-- not exist, and a task with a pending point cannot be deleted. The store runs migrations with
-- foreign keys off, so dropping the old table deletes nothing through the old key.
CREATE TABLE pending_hook_states_v6 (
    hook_id  INTEGER PRIMARY KEY NOT NULL,
    state    TEXT NOT NULL
) STRICT;

INSERT INTO pending_hook_states_v6 (hook_id, state)
    SELECT hook_id, state FROM pending_hook_states ORDER BY hook_id;

DROP TABLE pending_hook_states;
ALTER TABLE pending_hook_states_v6 RENAME TO pending_hook_states;

CREATE TRIGGER pending_hooks_state_cleared AFTER DELETE ON pending_hooks BEGIN
    DELETE FROM pending_hook_states WHERE hook_id = OLD.id;
END;
