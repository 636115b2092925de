ALTER TABLE watches DROP COLUMN expect_holds;
ALTER TABLE watches DROP COLUMN expect_missed_at;
ALTER TABLE watches DROP COLUMN expect_due_at;
