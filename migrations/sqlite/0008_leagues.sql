-- Leagues and divisions (docs/display.md): each player's current league and division, and
-- each history row's before and after, NULL where a player is not placed (or the pool has no
-- leagues). Recomputed together when a pool's leagues change.
ALTER TABLE players ADD COLUMN league TEXT;
ALTER TABLE players ADD COLUMN division INTEGER;
ALTER TABLE history ADD COLUMN league_before TEXT;
ALTER TABLE history ADD COLUMN division_before INTEGER;
ALTER TABLE history ADD COLUMN league_after TEXT;
ALTER TABLE history ADD COLUMN division_after INTEGER;
