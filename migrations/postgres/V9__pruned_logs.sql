-- The hook logs a host is to remove. A run's log is on the host that ran it, and the pass that
-- prunes a queue's history may run on another: when the rows it prunes were a task's last rows
-- written by some other host, it leaves that host a row here, and that host's next pass
-- removes the task's logs (unless the task was given new points or runs meanwhile) and the row.
CREATE TABLE hookq_pruned_logs (
    queue  TEXT NOT NULL,
    host   TEXT NOT NULL,
    task   TEXT NOT NULL,
    PRIMARY KEY (queue, host, task)
);
