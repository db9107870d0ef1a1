-- A player's belief leaves JSON: its Gaussian term and its decay become columns of
-- `players`, and its logistic factors rows of `factors`. A factor never changes once added
-- (see engine::Factor), so applying a round appends one factor per entrant instead of
-- rewriting every entrant's whole belief, up to `history_limit` factors each.
--
-- Factors are numbered by the player's round count when each was added (`n`): a player who
-- has played `rounds` rounds and keeps k factors has those numbered rounds-k+1 ..= rounds.
-- No foreign key, for the same reason as `players`.
CREATE TABLE factors (
    pool      TEXT NOT NULL,
    player    TEXT NOT NULL,
    n         INTEGER NOT NULL,
    perf      REAL NOT NULL,
    weight    REAL NOT NULL,
    beta      REAL NOT NULL,
    log_decay REAL NOT NULL,
    PRIMARY KEY (pool, player, n)
) STRICT, WITHOUT ROWID;

-- SQLite adds a NOT NULL column only with a default; every write sets them all.
ALTER TABLE players ADD COLUMN p0 REAL NOT NULL DEFAULT 0;
ALTER TABLE players ADD COLUMN w0 REAL NOT NULL DEFAULT 0;
ALTER TABLE players ADD COLUMN log_decay REAL NOT NULL DEFAULT 0;
ALTER TABLE players ADD COLUMN last_time INTEGER;

-- Beliefs stored before this migration carry each factor's current weight and no decay:
-- they become factors added at decay 0 by a player whose decay is 0.
INSERT INTO factors (pool, player, n, perf, weight, beta, log_decay)
SELECT p.pool, p.player,
       p.rounds - json_array_length(p.state, '$.factors') + f.key + 1,
       json_extract(f.value, '$.perf'), json_extract(f.value, '$.weight'),
       json_extract(f.value, '$.beta'), 0
FROM players p, json_each(p.state, '$.factors') f;

UPDATE players SET
    p0 = json_extract(state, '$.p0'),
    w0 = json_extract(state, '$.w0'),
    last_time = json_extract(state, '$.last_time');

ALTER TABLE players DROP COLUMN state;
