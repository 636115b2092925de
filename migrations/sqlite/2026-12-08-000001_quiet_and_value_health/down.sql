ALTER TABLE watches DROP COLUMN value_failures;
ALTER TABLE snapshots DROP COLUMN kept_quiet;
