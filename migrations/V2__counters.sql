-- Counters kept by triggers, so `queue stats` costs the same at ten pending points as at a
-- million (a COUNT(*) reads the whole table).

CREATE TABLE queue_counts (
    kind  TEXT NOT NULL,  -- 'pending' (by point), 'history' (by outcome) or 'tasks'
    name  TEXT NOT NULL,
    n     INTEGER NOT NULL,
    PRIMARY KEY (kind, name)
) STRICT, WITHOUT ROWID;

INSERT INTO queue_counts (kind, name, n)
    SELECT 'pending', point, COUNT(*) FROM pending_hooks GROUP BY point;
INSERT INTO queue_counts (kind, name, n)
    SELECT 'history', outcome, COUNT(*) FROM hook_history GROUP BY outcome;
INSERT INTO queue_counts (kind, name, n)
    SELECT 'tasks', '', COUNT(*) FROM tasks;

CREATE TRIGGER pending_hooks_counted AFTER INSERT ON pending_hooks BEGIN
    INSERT INTO queue_counts (kind, name, n) VALUES ('pending', NEW.point, 1)
        ON CONFLICT (kind, name) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER pending_hooks_uncounted AFTER DELETE ON pending_hooks BEGIN
    UPDATE queue_counts SET n = n - 1 WHERE kind = 'pending' AND name = OLD.point;
END;
CREATE TRIGGER hook_history_counted AFTER INSERT ON hook_history BEGIN
    INSERT INTO queue_counts (kind, name, n) VALUES ('history', NEW.outcome, 1)
        ON CONFLICT (kind, name) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER hook_history_uncounted AFTER DELETE ON hook_history BEGIN
    UPDATE queue_counts SET n = n - 1 WHERE kind = 'history' AND name = OLD.outcome;
END;
CREATE TRIGGER tasks_counted AFTER INSERT ON tasks BEGIN
    INSERT INTO queue_counts (kind, name, n) VALUES ('tasks', '', 1)
        ON CONFLICT (kind, name) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER tasks_uncounted AFTER DELETE ON tasks BEGIN
    UPDATE queue_counts SET n = n - 1 WHERE kind = 'tasks';
END;

-- Points a pass started without clearing: few, so a partial index keeps counting them cheap.
CREATE INDEX pending_hooks_interrupted ON pending_hooks (id) WHERE passes > 0;
