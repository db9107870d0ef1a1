-- History rows are keyed by round, `(pool, seq, player)`, and a player's rows are chained:
-- each row holds the seq of the player's previous row (`prev_seq`, NULL on their first), and
-- `players.last_seq` holds the seq of their newest (0 for a player without any). A round's
-- rows then go to the end of the table's only index, where the key `(pool, player, seq)` put
-- each of them at a random place (and `history_by_round` needed a second index): a player's
-- history is read by following the chain from `last_seq`, one key lookup per row.
--
-- SQLite cannot change a table's key: `history` is rebuilt (copying REAL values keeps every
-- bit).
ALTER TABLE players ADD COLUMN last_seq INTEGER NOT NULL DEFAULT 0;
UPDATE players SET last_seq = l.seq
FROM (SELECT pool, player, max(seq) AS seq FROM history GROUP BY pool, player) l
WHERE players.pool = l.pool AND players.player = l.player;

CREATE TABLE history_0014 (
    pool             TEXT NOT NULL,
    player           TEXT NOT NULL,
    seq              INTEGER NOT NULL,
    prev_seq         INTEGER,
    rank             INTEGER NOT NULL,
    performance      REAL NOT NULL,
    mu_before        REAL NOT NULL,
    sigma_before     REAL,
    mu_after         REAL NOT NULL,
    sigma_after      REAL,
    league_before    TEXT,
    division_before  INTEGER,
    league_after     TEXT,
    division_after   INTEGER,
    expected_rank    REAL,
    points_before    REAL,
    points_after     REAL,
    factor_perf      REAL,
    factor_weight    REAL,
    factor_beta      REAL,
    factor_log_decay REAL,
    PRIMARY KEY (pool, seq, player)
) STRICT;

INSERT INTO history_0014 (pool, player, seq, prev_seq, rank, performance, mu_before,
    sigma_before, mu_after, sigma_after, league_before, division_before, league_after,
    division_after, expected_rank, points_before, points_after, factor_perf, factor_weight,
    factor_beta, factor_log_decay)
SELECT pool, player, seq, lag(seq) OVER (PARTITION BY pool, player ORDER BY seq), rank,
    performance, mu_before, sigma_before, mu_after, sigma_after, league_before,
    division_before, league_after, division_after, expected_rank, points_before, points_after,
    factor_perf, factor_weight, factor_beta, factor_log_decay
FROM history
ORDER BY pool, seq, player;

DROP TABLE history;
ALTER TABLE history_0014 RENAME TO history;
