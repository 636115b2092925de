DROP INDEX events_previous_snapshot;
DROP INDEX events_snapshot;
DROP INDEX runs_snapshot;
DROP INDEX runs_event;
