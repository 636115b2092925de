-- Which event types an endpoint receives: comma-separated names, NULL for all of them.
ALTER TABLE endpoints ADD COLUMN event_types TEXT;
