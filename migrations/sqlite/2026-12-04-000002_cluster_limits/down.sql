DROP INDEX deliveries_endpoint_due;
ALTER TABLE endpoints DROP COLUMN paced_until;
