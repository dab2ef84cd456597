-- Recording a point and clearing it both had to update this index, one more page in every
-- transition's commit and every clear. Only `task show` filtered pending points by task; it
-- now scans the queue, which stays fast enough for one person's command.
DROP INDEX pending_hooks_by_task;
