-- A transition that records a point wrote five pages to the WAL: the task's, the point's, the
-- state's, the pending counter's (`queue_counts`) and `sqlite_sequence`'s (`AUTOINCREMENT`).
-- The same move without a point writes one. Each page is a WAL frame the commit's `fsync`
-- carries; the last two cost a point-recording transition about a sixth of its time (bench
-- figure 1b, session 11). They go, and with them their work moves off the transition:
--
-- * An occurrence id is still never given twice. `AUTOINCREMENT` kept the highest id ever given
--   in `sqlite_sequence`, written by every insert. Now `queue_counts` row ('ids', 'cleared')
--   keeps the highest id ever deleted, written by the trigger below as points are cleared (by
--   the drain, in its own transactions), and a new point takes the next id above both that and
--   the highest pending id (`record`). The row starts at the old sequence's value.
-- * Pending points are counted in batches. The counters ('pending', <point>) count the points up
--   to the id in row ('ids', 'counted'); `queue stats` adds the few above it, and recording
--   counts them in (moving the mark) before more than a few hundred can gather. The trigger
--   below takes a deleted point off the counters if they had counted it, whoever deletes it.
--   Every counter is exact now, so the mark starts at the highest pending id.
-- * The counters change kind, from 'pending' to 'points': a process still running code from
--   before V8 (a host or hub opened before the upgrade) would record points without an id and
--   count them the old way, giving an id twice and miscounting. The trigger at the end makes
--   every such write fail, and roll its transaction back, until the process is restarted.
CREATE TABLE pending_hooks_v8 (
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

INSERT INTO pending_hooks_v8 (id, task, point, recorded_ms, passes, last_started_ms)
    SELECT id, task, point, recorded_ms, passes, last_started_ms FROM pending_hooks ORDER BY id;

UPDATE queue_counts SET kind = 'points' WHERE kind = 'pending';
INSERT INTO queue_counts (kind, name, n) VALUES
    ('ids', 'cleared', COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'pending_hooks'), 0)),
    ('ids', 'counted', COALESCE((SELECT MAX(id) FROM pending_hooks), 0))
    ON CONFLICT (kind, name) DO NOTHING;
DELETE FROM sqlite_sequence WHERE name = 'pending_hooks';

DROP TABLE pending_hooks;
ALTER TABLE pending_hooks_v8 RENAME TO pending_hooks;
CREATE INDEX pending_hooks_interrupted ON pending_hooks (id) WHERE passes > 0;

-- Runs for every deleted point, whoever deletes it.
CREATE TRIGGER pending_hooks_cleared AFTER DELETE ON pending_hooks BEGIN
    DELETE FROM pending_hook_states WHERE hook_id = OLD.id;
    UPDATE queue_counts SET n = n - 1 WHERE kind = 'points' AND name = OLD.point
        AND OLD.id <= (SELECT n FROM queue_counts WHERE kind = 'ids' AND name = 'counted');
    INSERT INTO queue_counts (kind, name, n) VALUES ('ids', 'cleared', OLD.id)
        ON CONFLICT (kind, name) DO UPDATE SET n = excluded.n WHERE n < excluded.n;
END;

-- Code from before V8 counts every point it records or clears under kind 'pending'.
CREATE TRIGGER queue_counts_pending_retired BEFORE INSERT ON queue_counts
WHEN NEW.kind = 'pending'
BEGIN
    SELECT RAISE(ABORT, 'this process runs hookq code older than the database (schema V8): restart it');
END;
