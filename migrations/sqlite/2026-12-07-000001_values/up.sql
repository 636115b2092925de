-- Typed values. A snapshot keeps the values read with it (a JSON object by name, NULL for a
-- watch without values), so the series is kept and purged with the snapshots. A watch with
-- conditions remembers whether they held at its last check (NULL: never judged), so that
-- condition.met and condition.cleared are raised once per crossing.
ALTER TABLE snapshots ADD COLUMN readings TEXT;
ALTER TABLE watches ADD COLUMN conditions_met BOOLEAN;
