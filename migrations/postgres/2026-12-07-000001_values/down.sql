ALTER TABLE watches DROP COLUMN conditions_met;
ALTER TABLE snapshots DROP COLUMN readings;
