-- Which host wrote each history row: many hosts drain one queue, and a run's log is on the host
-- that ran it. NULL for the rows written before hookq kept it.
ALTER TABLE hookq_hook_history ADD COLUMN host TEXT;
