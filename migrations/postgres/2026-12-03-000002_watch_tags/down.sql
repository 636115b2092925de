DROP INDEX watches_tagged;
DROP INDEX watches_account_name;
ALTER TABLE watches DROP COLUMN tags;
