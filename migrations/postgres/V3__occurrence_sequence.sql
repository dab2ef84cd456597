-- Occurrence ids from a sequence, and recording without a notification.
--
-- Until now a recording took the next id by updating its queue's row in `hookq_queues` and held
-- that row until it committed: every transaction that recorded a point in a queue waited for
-- every other one, across all hosts, until it committed. A sequence hands out ids without a lock
-- that lasts past the call. Ids stay unique and, since a move holds its task's row until it
-- commits, increase per task in the order of commits; across tasks they promise no order, and
-- the drain does not rely on one (a point that commits after points with higher ids is run by the
-- next pass).
--
-- `pg_notify` inside the recording transaction is gone too: PostgreSQL serializes the commits of
-- all transactions that notified, cluster-wide, holding one lock across each commit's WAL flush.
-- hookq notifies after the commit instead (`hookq::queue::pg::notify_hubs`), and hubs also poll.

-- One sequence for every queue of the database: ids of one queue still only increase. It starts
-- above every id given so far, so no pending point, history row or counter is ever met again.
CREATE SEQUENCE hookq_occurrence_ids AS BIGINT;
SELECT setval('hookq_occurrence_ids', GREATEST(
    (SELECT COALESCE(MAX(last_id), 0) FROM hookq_queues),
    (SELECT COALESCE(MAX(id), 0) FROM hookq_pending_hooks),
    (SELECT COALESCE(MAX(occurrence), 0) FROM hookq_hook_history)) + 1, false);

-- The counter no one takes any more.
ALTER TABLE hookq_queues DROP COLUMN last_id;

DROP FUNCTION hookq_move_task(TEXT, TEXT, TEXT, BIGINT, TEXT, BIGINT, TEXT, TEXT);
DROP FUNCTION hookq_record_point(TEXT, TEXT, TEXT, TEXT, BIGINT, TEXT);

-- Records `point` for `task` entering `state`: the point with the sequence's next id, and its
-- state. The new id.
CREATE FUNCTION hookq_record_point(
    p_queue TEXT, p_task TEXT, p_point TEXT, p_state TEXT, p_now_ms BIGINT)
RETURNS BIGINT
LANGUAGE plpgsql AS $$
DECLARE
    v_id BIGINT;
BEGIN
    INSERT INTO hookq_pending_hooks (queue, id, task, point, recorded_ms)
        VALUES (p_queue, nextval('hookq_occurrence_ids'), p_task, p_point, p_now_ms)
        RETURNING id INTO v_id;
    INSERT INTO hookq_pending_hook_states (queue, hook_id, state) VALUES (p_queue, v_id, p_state);
    RETURN v_id;
END
$$;

-- Moves `task` into `to_phase`, taking its row lock first (two moves of one task take turns,
-- the second reading the phase the first committed), and updates its facts; when the phase
-- changes into one with a point (`p_point` not null), records it. No row when the task does
-- not exist; else the phase it left, and the new point's id or null.
CREATE FUNCTION hookq_move_task(
    p_queue TEXT, p_task TEXT, p_to TEXT, p_now_ms BIGINT, p_merged_sha TEXT, p_attempt BIGINT,
    p_point TEXT)
RETURNS TABLE (from_phase TEXT, point_id BIGINT)
LANGUAGE plpgsql AS $$
DECLARE
    v_from TEXT;
BEGIN
    SELECT t.phase INTO v_from FROM hookq_tasks t
        WHERE t.queue = p_queue AND t.id = p_task FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    UPDATE hookq_tasks t SET phase = p_to, updated_ms = p_now_ms,
            merged_sha = COALESCE(p_merged_sha, t.merged_sha),
            attempt = COALESCE(p_attempt, t.attempt)
        WHERE t.queue = p_queue AND t.id = p_task;
    from_phase := v_from;
    point_id := NULL;
    IF p_point IS NOT NULL AND v_from <> p_to THEN
        point_id := hookq_record_point(p_queue, p_task, p_point, p_to, p_now_ms);
    END IF;
    RETURN NEXT;
END
$$;
