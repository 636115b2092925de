-- Expectations (`options.expect`). The deadline a change rule waits for (NULL: none armed),
-- when it was missed (NULL: not missed since the last change), and whether a value
-- expectation held at the last check that judged it (NULL: never judged).
ALTER TABLE watches ADD COLUMN expect_due_at TIMESTAMP;
ALTER TABLE watches ADD COLUMN expect_missed_at TIMESTAMP;
ALTER TABLE watches ADD COLUMN expect_holds BOOLEAN;
