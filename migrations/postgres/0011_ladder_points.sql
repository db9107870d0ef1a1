-- Ladder points (docs/display.md, "Ladder points"): each placed player's points in their league
-- and the bonus points they have spent, and each history row's points before and after the
-- round. NULL where a pool keeps no points (bonus_spent 0).
ALTER TABLE players ADD COLUMN points DOUBLE PRECISION;
ALTER TABLE players ADD COLUMN bonus_spent DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE history ADD COLUMN points_before DOUBLE PRECISION;
ALTER TABLE history ADD COLUMN points_after DOUBLE PRECISION;
