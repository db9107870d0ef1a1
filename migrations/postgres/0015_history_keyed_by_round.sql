-- History rows are keyed by round, `(pool, seq, player)`, and a player's rows are chained:
-- each row holds the seq of the player's previous row (`prev_seq`, NULL on their first), and
-- `players.last_seq` holds the seq of their newest (0 for a player without any). A round's
-- rows then go to the end of the table's only index, where the key `(pool, player, seq)` put
-- each of them at a random place (and `history_by_round` needed a second index): a player's
-- history is read by following the chain from `last_seq`, one key lookup per row.
ALTER TABLE history ADD COLUMN prev_seq BIGINT;
ALTER TABLE players ADD COLUMN last_seq BIGINT NOT NULL DEFAULT 0;

UPDATE history h SET prev_seq = c.prev
FROM (SELECT pool, player, seq, lag(seq) OVER (PARTITION BY pool, player ORDER BY seq) AS prev
      FROM history) c
WHERE h.pool = c.pool AND h.player = c.player AND h.seq = c.seq AND c.prev IS NOT NULL;

UPDATE players p SET last_seq = l.seq
FROM (SELECT pool, player, max(seq) AS seq FROM history GROUP BY pool, player) l
WHERE p.pool = l.pool AND p.player = l.player;

ALTER TABLE players ALTER COLUMN last_seq DROP DEFAULT;
ALTER TABLE history DROP CONSTRAINT history_pkey;
DROP INDEX history_by_round;
ALTER TABLE history ADD PRIMARY KEY (pool, seq, player);
