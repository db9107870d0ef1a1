-- Seasons (docs/seasons.md): a season start is a line of the pool's round stream, queued and
-- applied in order with the rounds, so `kind` tells the two apart. `season_base` is how many
-- rounds a player had played when the current season started: placement in a league counts
-- the rounds played since.
ALTER TABLE rounds ADD COLUMN kind TEXT NOT NULL DEFAULT 'round'
    CHECK (kind IN ('round', 'season'));
CREATE INDEX rounds_seasons ON rounds (pool, seq) WHERE kind = 'season';
ALTER TABLE players ADD COLUMN season_base BIGINT NOT NULL DEFAULT 0;
