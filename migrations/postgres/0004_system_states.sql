-- Players of any rating system share `players`: every system shows a rating (`mu`), its
-- uncertainty (`sigma`) and a round count, which stay NOT NULL. The rest of an Elo-MMR
-- posterior (its Gaussian term and the decay of its factors, with its factors in `factors`)
-- is NULL for the players of a system that keeps nothing more, such as Weng-Lin.
ALTER TABLE players
    ALTER COLUMN p0 DROP NOT NULL,
    ALTER COLUMN w0 DROP NOT NULL,
    ALTER COLUMN log_decay DROP NOT NULL;
