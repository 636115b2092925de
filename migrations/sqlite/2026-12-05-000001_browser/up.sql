-- Pages rendered in a browser. A run says what loaded the page (`http` or `browser`) and, when
-- it failed, what kind of failure it was (`browser`, `step`, `timeout`...). An `auto` watch
-- remembers since when it needs the browser (`browser_since`). A snapshot may have a screenshot,
-- stored once per content hash in `screenshots` (identical images are stored once) and deleted
-- with the last snapshot that refers to it; `visual_change_percent` is how much it differs from
-- the previous snapshot's screenshot.
ALTER TABLE runs ADD COLUMN engine TEXT;
ALTER TABLE runs ADD COLUMN error_kind TEXT;
ALTER TABLE watches ADD COLUMN browser_since TIMESTAMP;
ALTER TABLE snapshots ADD COLUMN screenshot_hash TEXT;
ALTER TABLE snapshots ADD COLUMN visual_change_percent DOUBLE;
CREATE TABLE screenshots (
  hash TEXT PRIMARY KEY NOT NULL,
  format TEXT NOT NULL,
  width INTEGER NOT NULL,
  height INTEGER NOT NULL,
  bytes BLOB NOT NULL,
  created_at TIMESTAMP NOT NULL
);
CREATE INDEX snapshots_screenshot ON snapshots (screenshot_hash) WHERE screenshot_hash IS NOT NULL;
