-- Whether a queue is paused (`hookq queue pause`), for every host that drains it: when it was
-- paused (unix ms), NULL while it runs. Recording never reads it; a runner's start mark does,
-- so that no host starts a point of a paused queue.
ALTER TABLE hookq_queues ADD COLUMN paused_ms BIGINT;
