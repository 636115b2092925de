DROP INDEX snapshots_screenshot;
DROP TABLE screenshots;
ALTER TABLE snapshots DROP COLUMN visual_change_percent;
ALTER TABLE snapshots DROP COLUMN screenshot_hash;
ALTER TABLE watches DROP COLUMN browser_since;
ALTER TABLE runs DROP COLUMN error_kind;
ALTER TABLE runs DROP COLUMN engine;
