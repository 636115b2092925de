-- The earliest lease to expire (the scheduler's next wake) without reading every watch.
CREATE INDEX watches_leased ON watches (lease_until) WHERE lease_until IS NOT NULL;
