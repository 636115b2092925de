CREATE INDEX deliveries_lease ON deliveries (lease_owner);
