-- The pending counters are kept by the statements that add and clear points (record.rs,
-- store.rs) rather than by a trigger per row: `plan cancel` adds ten thousand points in one
-- statement, and the trigger's program ran once for each of them (22 % of its time under perf).
-- History and task counters keep their triggers.
DROP TRIGGER pending_hooks_counted;
DROP TRIGGER pending_hooks_uncounted;
-- Recount, so the counters start from the table as it is.
DELETE FROM queue_counts WHERE kind = 'pending';
INSERT INTO queue_counts (kind, name, n)
    SELECT 'pending', point, COUNT(*) FROM pending_hooks GROUP BY point;
