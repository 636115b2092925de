-- SQLite is one node: its worker is woken in-process when deliveries are queued. This migration
-- exists so both backends keep the same list (PostgreSQL's adds the cross-node notification).
SELECT 1;
