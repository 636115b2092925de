ALTER TABLE deliveries RESET (
  fillfactor,
  autovacuum_vacuum_scale_factor,
  autovacuum_vacuum_threshold,
  autovacuum_vacuum_insert_scale_factor,
  autovacuum_analyze_scale_factor
);
CREATE INDEX deliveries_lease ON deliveries (lease_owner);
