-- A rating system may keep a volatility per player (Glicko-2's σ, on its internal scale):
-- NULL for the players of every other system.
ALTER TABLE players ADD COLUMN volatility REAL;
