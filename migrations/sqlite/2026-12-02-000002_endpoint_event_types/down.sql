ALTER TABLE endpoints DROP COLUMN event_types;
