-- The same as migrations/postgres/0012_seasons.sql (read the reasons there).
ALTER TABLE rounds ADD COLUMN kind TEXT NOT NULL DEFAULT 'round'
    CHECK (kind IN ('round', 'season'));
CREATE INDEX rounds_seasons ON rounds (pool, seq) WHERE kind = 'season';
ALTER TABLE players ADD COLUMN season_base INTEGER NOT NULL DEFAULT 0;
