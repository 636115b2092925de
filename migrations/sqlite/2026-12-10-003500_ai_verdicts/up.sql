-- A change of a watch with options.ai waits here for a language model's verdict: a durable job,
-- claimed under a lease like a delivery, whose outcome queues the event's deliveries (or not).
CREATE TABLE verdicts (
    event_id          TEXT PRIMARY KEY REFERENCES events (id) ON DELETE CASCADE,
    account_id        TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    watch_id          TEXT NOT NULL REFERENCES watches (id) ON DELETE CASCADE,
    -- pending | judged | unjudged (went out without a verdict) | held (on_error hold) | released
    state             TEXT NOT NULL,
    -- the watch's intent when it changed, word for word; NULL asks for a summary only
    intent            TEXT,
    summary           BOOLEAN NOT NULL,
    hold              BOOLEAN NOT NULL,
    attempts          INTEGER NOT NULL DEFAULT 0,
    next_attempt_at   TIMESTAMP NOT NULL,
    deadline_at       TIMESTAMP NOT NULL,
    lease_owner       TEXT,
    lease_until       TIMESTAMP,
    important         BOOLEAN,
    reason            TEXT,
    summary_text      TEXT,
    model             TEXT,
    tokens            INTEGER NOT NULL DEFAULT 0,
    cached            BOOLEAN NOT NULL DEFAULT FALSE,
    error             TEXT,
    -- the attempt budget of the deliveries queued once decided
    max_attempts      INTEGER NOT NULL,
    created_at        TIMESTAMP NOT NULL,
    decided_at        TIMESTAMP
);
CREATE INDEX verdicts_due ON verdicts (next_attempt_at) WHERE state = 'pending';
CREATE INDEX verdicts_watch ON verdicts (watch_id, created_at);

-- Verdicts by a hash of model, prompt version, intent and diff: the same question is asked once.
CREATE TABLE ai_cache (
    key               TEXT PRIMARY KEY,
    model             TEXT NOT NULL,
    important         BOOLEAN NOT NULL,
    reason            TEXT NOT NULL,
    summary           TEXT NOT NULL,
    tokens            INTEGER NOT NULL,
    created_at        TIMESTAMP NOT NULL
);
CREATE INDEX ai_cache_created ON ai_cache (created_at);

-- Tokens spent per account and UTC day, against its daily budget.
CREATE TABLE ai_usage (
    account_id        TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    day               TEXT NOT NULL,
    tokens            INTEGER NOT NULL DEFAULT 0,
    calls             INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (account_id, day)
);

-- An account's own model, instead of the operator's: its key is sealed like other secrets.
ALTER TABLE accounts ADD COLUMN llm_base_url TEXT;
ALTER TABLE accounts ADD COLUMN llm_model TEXT;
ALTER TABLE accounts ADD COLUMN llm_api_key TEXT;
ALTER TABLE accounts ADD COLUMN llm_daily_tokens INTEGER;
