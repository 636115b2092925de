-- Limits that hold across nodes. An endpoint's rate limit paces sends from `paced_until`, moved on
-- under the endpoint's row lock by whichever node claims. Deliveries of endpoints with a limit
-- (max_in_flight, a rate limit, or a circuit that is open or half-open) carry `limited`, so the
-- outbox claim's due index leaves them out and never walks past their backlog; they are claimed
-- per endpoint through `deliveries_endpoint_due`, which holds only them. Each pending delivery is
-- in exactly one of the two indexes, so a delivery costs no more index upkeep than before.
-- (Both predicates are written as the queries write them: SQLite matches them as written.)
ALTER TABLE endpoints ADD COLUMN paced_until TIMESTAMP;
ALTER TABLE deliveries ADD COLUMN limited BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE deliveries SET limited = TRUE WHERE status IN ('queued', 'failed') AND endpoint_id IN (
  SELECT id FROM endpoints
  WHERE max_in_flight IS NOT NULL OR rate_limit_per_second IS NOT NULL OR circuit_open_until IS NOT NULL);
DROP INDEX deliveries_due;
CREATE INDEX deliveries_due ON deliveries (next_attempt_at) WHERE status IN ('queued', 'failed') AND limited = FALSE;
CREATE INDEX deliveries_endpoint_due ON deliveries (endpoint_id, next_attempt_at, id) WHERE status IN ('queued', 'failed') AND limited = TRUE;
