-- Every statement that queues deliveries tells the listening workers of every node (LISTEN
-- driftwatch_outbox), so a delivery queued on one node is claimed at once by whichever is free.
-- Once per statement, and PostgreSQL folds a transaction's identical notifications into one,
-- delivered at commit.
CREATE FUNCTION driftwatch_outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('driftwatch_outbox', '');
    RETURN NULL;
END
$$;

CREATE TRIGGER deliveries_queued AFTER INSERT ON deliveries
    FOR EACH STATEMENT EXECUTE FUNCTION driftwatch_outbox_notify();
