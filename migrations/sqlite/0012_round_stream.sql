-- The same as migrations/postgres/0012_round_stream.sql (read the reasons there). SQLite cannot
-- change a CHECK constraint in place, so `rounds` is rebuilt with the new ones.
CREATE TABLE rounds_0012 (
    pool         TEXT NOT NULL REFERENCES pools (name),
    id           TEXT NOT NULL,
    seq          INTEGER NOT NULL,
    body         TEXT NOT NULL,
    content_hash BLOB NOT NULL,
    status       TEXT NOT NULL DEFAULT 'queued'
                 CHECK (status IN ('queued', 'applied', 'failed', 'voided')),
    error        TEXT,
    round_time   INTEGER,
    entrants     INTEGER,
    kind         TEXT NOT NULL DEFAULT 'round' CHECK (kind IN ('round', 'season', 'correction')),
    PRIMARY KEY (pool, id),
    UNIQUE (pool, seq)
) STRICT;
INSERT INTO rounds_0012 (pool, id, seq, body, content_hash, status, error, round_time, entrants)
SELECT pool, id, seq, body, content_hash, status, error, round_time, entrants FROM rounds;
DROP TABLE rounds;
ALTER TABLE rounds_0012 RENAME TO rounds;
CREATE INDEX rounds_by_status ON rounds (pool, status);
CREATE INDEX rounds_queued ON rounds (pool, seq) WHERE status = 'queued';
CREATE INDEX rounds_by_kind ON rounds (pool, kind, seq) WHERE kind <> 'round';
ALTER TABLE players ADD COLUMN season_base INTEGER NOT NULL DEFAULT 0;
