-- Limits that hold across nodes: an endpoint's rate limit paces sends from this column, moved
-- on under the endpoint's row lock by whichever node claims; the claim of one limited endpoint's
-- due deliveries (and the count of its leased ones) walks this index.
ALTER TABLE endpoints ADD COLUMN paced_until TIMESTAMP;
CREATE INDEX deliveries_endpoint_due ON deliveries (endpoint_id, next_attempt_at) WHERE status IN ('queued', 'failed');
