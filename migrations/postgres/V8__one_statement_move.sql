-- A move in one statement. Under many writers a recording's cost is the server's work, and the
-- largest part of what a move added to a bare update was PL/pgSQL running three statements,
-- each with an executor start of its own: a read of the phase the task leaves, the update, and
-- the point with its state.
--
-- `left_phase` is the phase a task left at its last change of phase (null for a task never
-- moved). An update that sets it to the row's phase and the phase to the new one hands back the
-- phase it left in `RETURNING`, read under the row lock the update takes: two moves of one task
-- still take turns, the second reading the phase the first committed, without a read of its
-- own or a loop. Adding a nullable column without a default rewrites no row.
ALTER TABLE hookq_tasks ADD COLUMN left_phase TEXT;

-- The same move as the library's prepared statement, for hosts and tools that call the
-- function. No row when the task does not exist; else the phase it left, and the new point's id
-- or null.
CREATE OR REPLACE FUNCTION hookq_move_task(
    p_queue TEXT, p_task TEXT, p_to TEXT, p_now_ms BIGINT, p_merged_sha TEXT, p_attempt BIGINT,
    p_point TEXT)
RETURNS TABLE (from_phase TEXT, point_id BIGINT)
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY
    WITH moved AS (
        UPDATE hookq_tasks t SET left_phase = t.phase, phase = p_to, updated_ms = p_now_ms,
                merged_sha = COALESCE(p_merged_sha, t.merged_sha),
                attempt = COALESCE(p_attempt, t.attempt)
            WHERE t.queue = p_queue AND t.id = p_task
            RETURNING t.left_phase),
    point AS (
        SELECT nextval('hookq_occurrence_ids') AS id FROM moved
            WHERE p_point IS NOT NULL AND moved.left_phase <> p_to),
    written AS (
        INSERT INTO hookq_pending_hooks (queue, id, task, point, recorded_ms)
            SELECT p_queue, point.id, p_task, p_point, p_now_ms FROM point),
    state AS (
        INSERT INTO hookq_pending_hook_states (queue, hook_id, state)
            SELECT p_queue, point.id, p_to FROM point)
    SELECT moved.left_phase, (SELECT point.id FROM point) FROM moved;
END
$$;
