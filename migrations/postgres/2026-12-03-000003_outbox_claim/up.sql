-- Claims return their rows (`UPDATE ... RETURNING`) and redeliveries find theirs by id, so
-- nothing looks deliveries up by lease owner any more. Without an index on the lease columns a
-- claim is a HOT update: no new index entries, nothing for vacuum to clean behind it.
DROP INDEX deliveries_lease;
-- Room on each page for those HOT versions, and vacuum that keeps up with a queue table: the
-- due index's entries of finished deliveries are removed after 2% of the rows change, not 20%.
ALTER TABLE deliveries SET (
  fillfactor = 85,
  autovacuum_vacuum_scale_factor = 0.02,
  autovacuum_vacuum_threshold = 1000,
  autovacuum_vacuum_insert_scale_factor = 0.05,
  autovacuum_analyze_scale_factor = 0.05
);
