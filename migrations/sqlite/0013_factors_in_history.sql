-- A player's logistic factors move into `history`. The factor a round added to an entrant's
-- belief is stored in that entrant's history row (NULL where the round added none: every
-- system but Elo-MMR's logistic variant), and `players.factors` says how many of the player's
-- latest history rows hold the factors their belief keeps. Applying a round then writes one
-- row per entrant instead of two, and a factor falling out of a belief (`history_limit`, a
-- diffusion that drops them all, a season's reset) only lowers that count: nothing is deleted.
--
-- A stored factor is numbered by the player's round count when it was added (`n`), and a
-- player's n-th history row by `seq` is the round that made that count n: the two meet there.
ALTER TABLE history ADD COLUMN factor_perf REAL;
ALTER TABLE history ADD COLUMN factor_weight REAL;
ALTER TABLE history ADD COLUMN factor_beta REAL;
ALTER TABLE history ADD COLUMN factor_log_decay REAL;
ALTER TABLE players ADD COLUMN factors INTEGER NOT NULL DEFAULT 0;

UPDATE history SET
    factor_perf = f.perf, factor_weight = f.weight, factor_beta = f.beta,
    factor_log_decay = f.log_decay
FROM (SELECT pool, player, seq,
             row_number() OVER (PARTITION BY pool, player ORDER BY seq) AS n
      FROM history) AS numbered
JOIN factors f ON f.pool = numbered.pool AND f.player = numbered.player AND f.n = numbered.n
WHERE history.pool = numbered.pool AND history.player = numbered.player
  AND history.seq = numbered.seq;

UPDATE players SET factors = (
    SELECT count(*) FROM factors f WHERE f.pool = players.pool AND f.player = players.player);

-- A factor without its history row would be lost with the table, and factors that are not on
-- a player's latest rows (a player with more history rows than rounds) would not load: stop
-- instead (the CHECK fails, the migration's transaction rolls back), and leave the database as
-- it was. Both terms count what went wrong, so neither can hide the other.
CREATE TEMP TABLE factors_moved (unmatched INTEGER NOT NULL CHECK (unmatched = 0));
INSERT INTO factors_moved
SELECT (SELECT count(*) FROM factors)
     - (SELECT count(*) FROM history WHERE factor_weight IS NOT NULL)
     + (SELECT count(*)
        FROM (SELECT pool, player, max(n) AS last FROM factors GROUP BY pool, player) f
        WHERE f.last <> (SELECT count(*) FROM history h
                         WHERE h.pool = f.pool AND h.player = f.player));
DROP TABLE factors_moved;

DROP TABLE factors;
