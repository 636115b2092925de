-- Why a change was kept quiet: a snapshot written without an alert, because the noise rules
-- or the watch's conditions did not let it through ("price 67.00 EUR is not below 50"). NULL
-- for a change that alerted and for a baseline. The timeline and the API show it.
ALTER TABLE snapshots ADD COLUMN kept_quiet TEXT;
-- Checks in a row that read the page but not every one of the watch's values (0 for a watch
-- without values): at the failure threshold its health becomes value_missing.
ALTER TABLE watches ADD COLUMN value_failures INTEGER NOT NULL DEFAULT 0;
