-- Whether the queue is paused (`hookq queue pause`): one row, kept in the database so that a
-- pause outlives the process that set it and binds every runner of the file. `paused_ms` is
-- when it was paused (unix ms), NULL while it runs. Recording never reads it: a paused queue
-- records as usual; a runner reads it before it starts a point.
CREATE TABLE queue_state (
    id          INTEGER PRIMARY KEY NOT NULL CHECK (id = 1),
    paused_ms   INTEGER
) STRICT;

INSERT INTO queue_state (id, paused_ms) VALUES (1, NULL);
