DROP TRIGGER IF EXISTS deliveries_queued ON deliveries;
DROP FUNCTION IF EXISTS driftwatch_outbox_notify();
