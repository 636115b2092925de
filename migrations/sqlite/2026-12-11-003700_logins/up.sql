-- An account's named secrets (a password login steps type): the value sealed like an
-- endpoint's secrets, never shown back.
CREATE TABLE account_secrets (
    id                TEXT PRIMARY KEY,
    account_id        TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name              TEXT NOT NULL,
    value             TEXT NOT NULL,
    created_at        TIMESTAMP NOT NULL,
    updated_at        TIMESTAMP NOT NULL
);
CREATE UNIQUE INDEX account_secrets_name ON account_secrets (account_id, name);

-- A watch's kept session (options.fetch.session.keep, or an imported cookies.txt): the JSON of
-- its cookies and local storage, sealed.
CREATE TABLE watch_sessions (
    watch_id          TEXT PRIMARY KEY REFERENCES watches (id) ON DELETE CASCADE,
    state             TEXT NOT NULL,
    cookies           INTEGER NOT NULL DEFAULT 0,
    -- how many times the login steps ran to make it
    logins            BIGINT NOT NULL DEFAULT 0,
    -- where it came from: check | import
    source            TEXT NOT NULL,
    updated_at        TIMESTAMP NOT NULL
);
