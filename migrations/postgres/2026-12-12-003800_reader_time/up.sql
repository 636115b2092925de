-- Alerts on the reader's time. An endpoint's delivery mode (`{"mode": "digest", ...}`; NULL is
-- at once) and quiet hours (NULL: the account's); the end and start of its open digest period.
ALTER TABLE endpoints ADD COLUMN delivery TEXT;
ALTER TABLE endpoints ADD COLUMN quiet_hours TEXT;
ALTER TABLE endpoints ADD COLUMN digest_due_at TIMESTAMP;
ALTER TABLE endpoints ADD COLUMN digest_since TIMESTAMP;
-- The quiet hours of endpoints that set none.
ALTER TABLE accounts ADD COLUMN quiet_hours TEXT;
-- Why a pending delivery waits past its due time (`quiet_hours`), and the digest delivery a
-- gathered one went out in.
ALTER TABLE deliveries ADD COLUMN held TEXT;
ALTER TABLE deliveries ADD COLUMN digest_id TEXT;
-- What a digest gathers: the waiting deliveries of one endpoint, in order.
CREATE INDEX deliveries_gathering ON deliveries (endpoint_id, created_at) WHERE status = 'gathering';
-- Digests to close: endpoints by the end of their open period.
CREATE INDEX endpoints_digest_due ON endpoints (digest_due_at) WHERE digest_due_at IS NOT NULL;
