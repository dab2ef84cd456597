-- A recording tags its transaction with its queue before it takes an occurrence id: a shared
-- transaction-level advisory lock of the class 1751871745 (hookq's lock class plus one), keyed
-- by `hashtext` of the queue's name. Shared locks never wait on each other, and the lock goes
-- with the transaction.
--
-- A queue's change mark names the transactions that hold its tag. Ids are handed out before
-- the commit, so a point whose transaction took its id before a mark was read and committed
-- after it raises no highest id; the transaction leaving the tagged set changes the mark
-- instead. Before the tag the mark named every transaction writing the outbox table, of any
-- queue, so that one queue's writers changed the marks of all the others and woke their hubs.

CREATE OR REPLACE FUNCTION hookq_record_point(
    p_queue TEXT, p_task TEXT, p_point TEXT, p_state TEXT, p_now_ms BIGINT)
RETURNS BIGINT
LANGUAGE plpgsql AS $$
DECLARE
    v_id BIGINT;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(1751871745, hashtext(p_queue));
    v_id := nextval('hookq_occurrence_ids');
    WITH written AS (
        INSERT INTO hookq_pending_hooks (queue, id, task, point, recorded_ms)
            VALUES (p_queue, v_id, p_task, p_point, p_now_ms))
    INSERT INTO hookq_pending_hook_states (queue, hook_id, state) VALUES (p_queue, v_id, p_state);
    RETURN v_id;
END
$$;

-- The library's prepared move is this body too. `tag` calls a volatile function, so it is
-- computed once and never folded into `point`, whose id is taken for a row of the join only
-- after the tag is held.
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
    tag AS (
        SELECT pg_advisory_xact_lock_shared(1751871745, hashtext(p_queue)) FROM moved
            WHERE p_point IS NOT NULL AND moved.left_phase <> p_to),
    point AS (
        SELECT nextval('hookq_occurrence_ids') AS id FROM moved, tag),
    written AS (
        INSERT INTO hookq_pending_hooks (queue, id, task, point, recorded_ms)
            SELECT p_queue, point.id, p_task, p_point, p_now_ms FROM point),
    state AS (
        INSERT INTO hookq_pending_hook_states (queue, hook_id, state)
            SELECT p_queue, point.id, p_to FROM point)
    SELECT moved.left_phase, (SELECT point.id FROM point) FROM moved;
END
$$;
