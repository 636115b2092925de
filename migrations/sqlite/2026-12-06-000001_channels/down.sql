ALTER TABLE watches DROP COLUMN muted;
ALTER TABLE endpoints DROP COLUMN route_watches;
ALTER TABLE endpoints DROP COLUMN route_tags;
ALTER TABLE endpoints DROP COLUMN body_template;
ALTER TABLE endpoints DROP COLUMN title_template;
ALTER TABLE endpoints DROP COLUMN secrets;
ALTER TABLE endpoints DROP COLUMN settings;
