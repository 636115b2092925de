DROP INDEX deliveries_endpoint_due;
DROP INDEX deliveries_due;
CREATE INDEX deliveries_due ON deliveries (next_attempt_at) WHERE status IN ('queued', 'failed');
ALTER TABLE deliveries DROP COLUMN limited;
ALTER TABLE endpoints DROP COLUMN paced_until;
