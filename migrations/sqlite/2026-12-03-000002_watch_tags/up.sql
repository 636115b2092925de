-- Tags on watches, stored normalised as ',tag1,tag2,' (lower case, sorted, once each), so a
-- filter by tag is one LIKE '%,tag,%'.
ALTER TABLE watches ADD COLUMN tags TEXT NOT NULL DEFAULT '';
CREATE INDEX watches_account_name ON watches (account_id, name, id);
CREATE INDEX watches_tagged ON watches (account_id, tags) WHERE tags <> '';
