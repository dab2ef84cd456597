-- Recording as server-side functions. A transition is one call, so it costs the round trips of
-- a bare commit, and PL/pgSQL keeps the plans of the statements inside for the session: a
-- statement sent as text is planned again on every call, which cost more than the commit
-- itself for a transition written as one statement with several parts.
--
-- The rules are the library's (src/queue/pg/record.rs says them); these functions only write.

-- Records `point` for `task` entering `state`: takes the queue's next id (holding the queue's
-- row until the transaction ends, so ids follow the order of commits), writes the point and its
-- state, and notifies `channel` with the queue's name, delivered on commit. The new id.
CREATE FUNCTION hookq_record_point(
    p_queue TEXT, p_task TEXT, p_point TEXT, p_state TEXT, p_now_ms BIGINT, p_channel TEXT)
RETURNS BIGINT
LANGUAGE plpgsql AS $$
DECLARE
    v_id BIGINT;
BEGIN
    INSERT INTO hookq_queues AS q (queue, last_id, created_ms) VALUES (p_queue, 1, p_now_ms)
        ON CONFLICT (queue) DO UPDATE SET last_id = q.last_id + 1
        RETURNING last_id INTO v_id;
    INSERT INTO hookq_pending_hooks (queue, id, task, point, recorded_ms)
        VALUES (p_queue, v_id, p_task, p_point, p_now_ms);
    INSERT INTO hookq_pending_hook_states (queue, hook_id, state) VALUES (p_queue, v_id, p_state);
    PERFORM pg_notify(p_channel, p_queue);
    RETURN v_id;
END
$$;

-- Moves `task` into `to_phase`, taking its row lock first (two moves of one task take turns,
-- the second reading the phase the first committed), and updates its facts; when the phase
-- changes into one with a point (`p_point` not null), records it. No row when the task does
-- not exist; else the phase it left, and the new point's id or null.
CREATE FUNCTION hookq_move_task(
    p_queue TEXT, p_task TEXT, p_to TEXT, p_now_ms BIGINT, p_merged_sha TEXT, p_attempt BIGINT,
    p_point TEXT, p_channel TEXT)
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
        point_id := hookq_record_point(p_queue, p_task, p_point, p_to, p_now_ms, p_channel);
    END IF;
    RETURN NEXT;
END
$$;

-- A move rewrites its task's row. Room left on each page lets PostgreSQL write the new version
-- beside the old one without touching the indexes (a HOT update: no indexed column changes),
-- which a full page cannot.
ALTER TABLE hookq_tasks SET (fillfactor = 70);
