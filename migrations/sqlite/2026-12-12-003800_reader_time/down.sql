DROP INDEX endpoints_digest_due;
DROP INDEX deliveries_gathering;
ALTER TABLE deliveries DROP COLUMN digest_id;
ALTER TABLE deliveries DROP COLUMN held;
ALTER TABLE accounts DROP COLUMN quiet_hours;
ALTER TABLE endpoints DROP COLUMN digest_since;
ALTER TABLE endpoints DROP COLUMN digest_due_at;
ALTER TABLE endpoints DROP COLUMN quiet_hours;
ALTER TABLE endpoints DROP COLUMN delivery;
