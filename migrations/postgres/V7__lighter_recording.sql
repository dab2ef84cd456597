-- Recording with less work per point: the server's work is what bounds how many transitions
-- many writers commit a second, since they no longer wait on each other.
--
-- The state row's foreign key goes. Its check ran a query of its own and locked the point row
-- at every recording, about a tenth of a recording's work; the one statement that deletes
-- points (the drain's clear) deletes their state rows with them, as the key's cascade did.
ALTER TABLE hookq_pending_hook_states
    DROP CONSTRAINT hookq_pending_hook_states_queue_hook_id_fkey;

-- A point and its state row in one statement.
CREATE OR REPLACE FUNCTION hookq_record_point(
    p_queue TEXT, p_task TEXT, p_point TEXT, p_state TEXT, p_now_ms BIGINT)
RETURNS BIGINT
LANGUAGE plpgsql AS $$
DECLARE
    v_id BIGINT := nextval('hookq_occurrence_ids');
BEGIN
    WITH written AS (
        INSERT INTO hookq_pending_hooks (queue, id, task, point, recorded_ms)
            VALUES (p_queue, v_id, p_task, p_point, p_now_ms))
    INSERT INTO hookq_pending_hook_states (queue, hook_id, state) VALUES (p_queue, v_id, p_state);
    RETURN v_id;
END
$$;

-- A move reads the task's phase without a lock first and updates the row only while it still
-- holds that phase: the update takes the row lock (so two moves of one task still take turns,
-- the second reading the phase the first committed), and the phase read is the one it left,
-- without writing a lock of its own to the log. When another move changed the phase meanwhile,
-- it reads it again under the row lock. No row when the task does not exist; else the phase it
-- left, and the new point's id or null.
CREATE OR REPLACE FUNCTION hookq_move_task(
    p_queue TEXT, p_task TEXT, p_to TEXT, p_now_ms BIGINT, p_merged_sha TEXT, p_attempt BIGINT,
    p_point TEXT)
RETURNS TABLE (from_phase TEXT, point_id BIGINT)
LANGUAGE plpgsql AS $$
DECLARE
    v_from TEXT;
BEGIN
    SELECT t.phase INTO v_from FROM hookq_tasks t
        WHERE t.queue = p_queue AND t.id = p_task;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    -- At most twice: once the phase is read under the row lock, it still holds.
    LOOP
        UPDATE hookq_tasks t SET phase = p_to, updated_ms = p_now_ms,
                merged_sha = COALESCE(p_merged_sha, t.merged_sha),
                attempt = COALESCE(p_attempt, t.attempt)
            WHERE t.queue = p_queue AND t.id = p_task AND t.phase = v_from;
        EXIT WHEN FOUND;
        SELECT t.phase INTO v_from FROM hookq_tasks t
            WHERE t.queue = p_queue AND t.id = p_task FOR UPDATE;
        IF NOT FOUND THEN
            RETURN;
        END IF;
    END LOOP;
    from_phase := v_from;
    point_id := NULL;
    IF p_point IS NOT NULL AND v_from <> p_to THEN
        point_id := nextval('hookq_occurrence_ids');
        WITH written AS (
            INSERT INTO hookq_pending_hooks (queue, id, task, point, recorded_ms)
                VALUES (p_queue, point_id, p_task, p_point, p_now_ms))
        INSERT INTO hookq_pending_hook_states (queue, hook_id, state)
            VALUES (p_queue, point_id, p_to);
    END IF;
    RETURN NEXT;
END
$$;
