CREATE OR REPLACE FUNCTION driftwatch_outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('driftwatch_outbox', '');
    RETURN NULL;
END
$$;
