-- Claims return their rows (`UPDATE ... RETURNING`) and redeliveries find theirs by id, so
-- nothing looks deliveries up by lease owner any more; the index only cost a write per claim.
DROP INDEX deliveries_lease;
