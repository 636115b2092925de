-- An account's named proxies: a watch's options.fetch.proxy may name one. The URL (which may
-- carry credentials) is sealed; `shown` is the same URL with its password replaced by ****.
CREATE TABLE proxies (
    id             TEXT PRIMARY KEY,
    account_id     TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name           TEXT NOT NULL,
    url            TEXT NOT NULL,
    shown          TEXT NOT NULL,
    created_at     TIMESTAMP NOT NULL,
    updated_at     TIMESTAMP NOT NULL,
    -- the last "test": when, the status the test URL answered with (NULL: no answer), how
    -- long it took, and what went wrong
    tested_at      TIMESTAMP,
    test_status    INTEGER,
    test_ms        INTEGER,
    test_error     TEXT,
    UNIQUE (account_id, name)
);
