-- The foundation schema. Ids are application-made text (`<prefix>_<ulid>`); times are UTC.

CREATE TABLE accounts (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    created_at  TIMESTAMP NOT NULL
);

CREATE TABLE api_tokens (
    id            TEXT PRIMARY KEY,
    account_id    TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    token_hash    TEXT NOT NULL UNIQUE,
    prefix        TEXT NOT NULL,
    scopes        TEXT NOT NULL,
    created_at    TIMESTAMP NOT NULL,
    last_used_at  TIMESTAMP,
    revoked_at    TIMESTAMP
);
CREATE INDEX api_tokens_account ON api_tokens (account_id);

CREATE TABLE watches (
    id                    TEXT PRIMARY KEY,
    account_id            TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name                  TEXT NOT NULL,
    url                   TEXT NOT NULL,
    selector              TEXT,
    -- the schedule: an interval, or a cron expression (seconds optional) in a time zone
    interval_seconds      BIGINT,
    cron                  TEXT,
    time_zone             TEXT,
    state                 TEXT NOT NULL,
    -- ok, failing (a run of failed checks) or selector_missing
    health                TEXT NOT NULL DEFAULT 'ok',
    -- extraction, line rules and noise control (JSON, see driftwatch_core::WatchOptions)
    options               TEXT NOT NULL DEFAULT '{}',
    -- validators of the last page fetched, for conditional GET
    etag                  TEXT,
    last_modified         TEXT,
    -- set when what is fetched or extracted changed: the next check records a new baseline
    rebaseline            BOOLEAN NOT NULL DEFAULT FALSE,
    next_run_at           TIMESTAMP NOT NULL,
    last_run_at           TIMESTAMP,
    consecutive_failures  INTEGER NOT NULL DEFAULT 0,
    lease_owner           TEXT,
    lease_until           TIMESTAMP,
    created_at            TIMESTAMP NOT NULL,
    updated_at            TIMESTAMP NOT NULL
);
CREATE INDEX watches_account ON watches (account_id, id);
CREATE INDEX watches_due ON watches (next_run_at) WHERE state = 'active';
CREATE INDEX watches_lease ON watches (lease_owner);

CREATE TABLE snapshots (
    id            TEXT PRIMARY KEY,
    watch_id      TEXT NOT NULL REFERENCES watches (id) ON DELETE CASCADE,
    content_hash  TEXT NOT NULL,
    content       TEXT NOT NULL,
    created_at    TIMESTAMP NOT NULL
);
CREATE INDEX snapshots_watch ON snapshots (watch_id, id);

CREATE TABLE endpoints (
    id           TEXT PRIMARY KEY,
    account_id   TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    kind         TEXT NOT NULL,
    url          TEXT NOT NULL,
    description  TEXT NOT NULL,
    secret       TEXT NOT NULL,
    enabled      BOOLEAN NOT NULL,
    created_at   TIMESTAMP NOT NULL,
    updated_at   TIMESTAMP NOT NULL,
    -- secret rotation: the previous secret keeps signing until it expires
    previous_secret             TEXT,
    previous_secret_expires_at  TIMESTAMP,
    -- per-endpoint overrides of the global delivery settings
    retry_schedule              TEXT,
    max_attempts                INTEGER,
    rate_limit_per_second       INTEGER,
    max_in_flight               INTEGER,
    -- health: circuit breaker and auto-disable
    consecutive_failures        INTEGER NOT NULL DEFAULT 0,
    failing_since               TIMESTAMP,
    circuit_open_until          TIMESTAMP,
    disabled_reason             TEXT
);
CREATE INDEX endpoints_account ON endpoints (account_id, id);

CREATE TABLE events (
    id                    TEXT PRIMARY KEY,
    account_id            TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    watch_id              TEXT REFERENCES watches (id) ON DELETE CASCADE,
    endpoint_id           TEXT REFERENCES endpoints (id) ON DELETE CASCADE,
    event_type            TEXT NOT NULL,
    previous_snapshot_id  TEXT REFERENCES snapshots (id) ON DELETE SET NULL,
    snapshot_id           TEXT REFERENCES snapshots (id) ON DELETE SET NULL,
    added                 INTEGER NOT NULL,
    removed               INTEGER NOT NULL,
    payload               TEXT NOT NULL,
    created_at            TIMESTAMP NOT NULL
);
CREATE INDEX events_account ON events (account_id, id);
CREATE INDEX events_watch ON events (watch_id, id);
CREATE INDEX events_endpoint ON events (endpoint_id);

CREATE TABLE runs (
    id           TEXT PRIMARY KEY,
    watch_id     TEXT NOT NULL REFERENCES watches (id) ON DELETE CASCADE,
    started_at   TIMESTAMP NOT NULL,
    finished_at  TIMESTAMP NOT NULL,
    outcome      TEXT NOT NULL,
    http_status  INTEGER,
    duration_ms  BIGINT NOT NULL,
    bytes        BIGINT NOT NULL,
    error        TEXT,
    -- why a change raised no alert (noise rules)
    note         TEXT,
    snapshot_id  TEXT REFERENCES snapshots (id) ON DELETE SET NULL,
    event_id     TEXT REFERENCES events (id) ON DELETE SET NULL
);
CREATE INDEX runs_watch ON runs (watch_id, id);


CREATE TABLE deliveries (
    id                TEXT PRIMARY KEY,
    account_id        TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    event_id          TEXT NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    endpoint_id       TEXT NOT NULL REFERENCES endpoints (id) ON DELETE CASCADE,
    watch_id          TEXT REFERENCES watches (id) ON DELETE SET NULL,
    event_type        TEXT NOT NULL,
    body              BLOB NOT NULL,
    status            TEXT NOT NULL,
    attempts          INTEGER NOT NULL DEFAULT 0,
    max_attempts      INTEGER NOT NULL,
    next_attempt_at   TIMESTAMP NOT NULL,
    lease_owner       TEXT,
    lease_until       TIMESTAMP,
    last_status_code  INTEGER,
    last_error        TEXT,
    created_at        TIMESTAMP NOT NULL,
    updated_at        TIMESTAMP NOT NULL,
    finished_at       TIMESTAMP,
    -- attempts before this one belong to an earlier budget (a redelivery of a dead delivery)
    retry_base        INTEGER NOT NULL DEFAULT 0,
    -- why the next attempt happens: scheduled, or manual (redelivery, recovery)
    next_trigger      TEXT NOT NULL DEFAULT 'scheduled',
    -- set when retention removed the body; the row keeps its metadata
    body_purged_at    TIMESTAMP
);
CREATE INDEX deliveries_finished ON deliveries (status, finished_at);
CREATE INDEX deliveries_account ON deliveries (account_id, id);
CREATE INDEX deliveries_due ON deliveries (next_attempt_at) WHERE status IN ('queued', 'failed');
CREATE INDEX deliveries_lease ON deliveries (lease_owner);
CREATE INDEX deliveries_endpoint ON deliveries (endpoint_id, id);
CREATE INDEX deliveries_event ON deliveries (event_id);

CREATE TABLE delivery_attempts (
    id                TEXT PRIMARY KEY,
    delivery_id       TEXT NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
    attempt_number    INTEGER NOT NULL,
    started_at        TIMESTAMP NOT NULL,
    duration_ms       BIGINT NOT NULL,
    status_code       INTEGER,
    error_kind        TEXT,
    error             TEXT,
    response_snippet  TEXT,
    trigger           TEXT NOT NULL
);
CREATE INDEX delivery_attempts_delivery ON delivery_attempts (delivery_id, attempt_number);

-- Bulk re-queue requests (`POST /endpoints/{id}/recover`), processed durably in pages.
CREATE TABLE recoveries (
    id            TEXT PRIMARY KEY,
    account_id    TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    endpoint_id   TEXT NOT NULL REFERENCES endpoints (id) ON DELETE CASCADE,
    since         TIMESTAMP NOT NULL,
    until         TIMESTAMP,
    statuses      TEXT NOT NULL,
    dry_run       BOOLEAN NOT NULL,
    state         TEXT NOT NULL,
    matched       BIGINT NOT NULL DEFAULT 0,
    requeued      BIGINT NOT NULL DEFAULT 0,
    cursor        TEXT,
    lease_owner   TEXT,
    lease_until   TIMESTAMP,
    created_at    TIMESTAMP NOT NULL,
    updated_at    TIMESTAMP NOT NULL,
    finished_at   TIMESTAMP
);
CREATE INDEX recoveries_account ON recoveries (account_id, id);
CREATE INDEX recoveries_pending ON recoveries (state);

-- Answers to POSTs sent with an Idempotency-Key, replayed for 24 hours.
CREATE TABLE idempotency_keys (
    account_id   TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    key          TEXT NOT NULL,
    fingerprint  TEXT NOT NULL,
    status       INTEGER NOT NULL,
    body         BLOB NOT NULL,
    created_at   TIMESTAMP NOT NULL,
    PRIMARY KEY (account_id, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
