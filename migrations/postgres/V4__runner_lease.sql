-- The runner lock's lease: the holder renews it on the lock's own connection, and another
-- runner may end that connection (pg_terminate_backend) once it has run out, which frees the
-- session's advisory lock. A frozen holder (SIGSTOP, a stuck VM) or one behind a silent network
-- keeps its session, and so the lock, for ever otherwise. In ms of the server's clock, so
-- that the hosts' clocks never matter; NULL for a holder that keeps no lease, never broken.
ALTER TABLE hookq_runners ADD COLUMN lease_until_ms BIGINT;
