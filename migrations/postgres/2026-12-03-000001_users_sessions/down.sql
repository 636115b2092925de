DROP INDEX accounts_feed_key;
ALTER TABLE accounts DROP COLUMN feed_key_hash;
DROP TABLE watch_views;
DROP TABLE sessions;
DROP TABLE users;
