-- People who sign in to the browser UI, their server-side sessions, and what each has seen.

CREATE TABLE users (
    id             TEXT PRIMARY KEY,
    account_id     TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    -- stored lower-case; unique across accounts (it is how a person signs in)
    email          TEXT NOT NULL UNIQUE,
    -- Argon2id, PHC string
    password_hash  TEXT NOT NULL,
    -- IANA time zone for times shown in pages
    time_zone      TEXT NOT NULL DEFAULT 'UTC',
    created_at     TIMESTAMP NOT NULL,
    updated_at     TIMESTAMP NOT NULL
);
CREATE INDEX users_account ON users (account_id);

CREATE TABLE sessions (
    -- SHA-256 of the cookie's random id: the id itself is never stored
    id_hash       TEXT PRIMARY KEY,
    user_id       TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    -- the per-session token every state-changing form carries
    csrf_token    TEXT NOT NULL,
    created_at    TIMESTAMP NOT NULL,
    last_seen_at  TIMESTAMP NOT NULL,
    -- absolute expiry; idle expiry is last_seen_at + the idle limit
    expires_at    TIMESTAMP NOT NULL,
    -- a message for the next page this session shows ("2 watches paused")
    flash         TEXT
);
CREATE INDEX sessions_user ON sessions (user_id);

-- The newest snapshot each user has seen of each watch: diffs open from there, and watches
-- with newer changes are marked unseen.
CREATE TABLE watch_views (
    user_id      TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    watch_id     TEXT NOT NULL REFERENCES watches (id) ON DELETE CASCADE,
    snapshot_id  TEXT NOT NULL,
    seen_at      TIMESTAMP NOT NULL,
    PRIMARY KEY (user_id, watch_id)
);
CREATE INDEX watch_views_watch ON watch_views (watch_id);

-- SHA-256 of the key in the account's Atom feed URL; NULL when no feed key is set.
ALTER TABLE accounts ADD COLUMN feed_key_hash TEXT;
CREATE UNIQUE INDEX accounts_feed_key ON accounts (feed_key_hash);
