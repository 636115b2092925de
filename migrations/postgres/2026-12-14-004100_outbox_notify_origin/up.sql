-- The outbox's notification names the pool that queued the deliveries (each driftwatch process
-- sets `driftwatch.origin` on its connections), so a node skips its own: its worker was woken
-- in-process already, and the notification only cost it an empty claim. Sessions without the
-- setting (psql, another tool) notify with an empty payload, heard by every node.
CREATE OR REPLACE FUNCTION driftwatch_outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('driftwatch_outbox', coalesce(current_setting('driftwatch.origin', true), ''));
    RETURN NULL;
END
$$;
