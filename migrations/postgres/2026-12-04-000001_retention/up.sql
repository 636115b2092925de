-- Retention deletes old runs, events and snapshots. Rows that point at them are set to NULL by
-- their foreign keys, which needs an index on each pointing column or every deleted row scans
-- the whole pointing table. Partial: most runs have no event, and only changed runs a snapshot.
CREATE INDEX runs_event ON runs (event_id) WHERE event_id IS NOT NULL;
CREATE INDEX runs_snapshot ON runs (snapshot_id) WHERE snapshot_id IS NOT NULL;
CREATE INDEX events_snapshot ON events (snapshot_id) WHERE snapshot_id IS NOT NULL;
CREATE INDEX events_previous_snapshot ON events (previous_snapshot_id) WHERE previous_snapshot_id IS NOT NULL;
