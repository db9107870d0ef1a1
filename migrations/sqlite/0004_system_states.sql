-- The same change as migrations/postgres/0004_system_states.sql (read the reasons there).
-- SQLite cannot drop a NOT NULL constraint, so `players` is rebuilt; nothing refers to it,
-- and copying REAL values keeps every bit.
CREATE TABLE players_0004 (
    pool            TEXT NOT NULL,
    player          TEXT NOT NULL,
    mu              REAL NOT NULL,
    sigma           REAL NOT NULL,
    rounds          INTEGER NOT NULL,
    last_round_id   TEXT NOT NULL,
    last_round_time INTEGER,
    p0              REAL,
    w0              REAL,
    log_decay       REAL,
    last_time       INTEGER,
    PRIMARY KEY (pool, player)
) STRICT;

INSERT INTO players_0004 (pool, player, mu, sigma, rounds, last_round_id, last_round_time,
                          p0, w0, log_decay, last_time)
SELECT pool, player, mu, sigma, rounds, last_round_id, last_round_time,
       p0, w0, log_decay, last_time
FROM players;

DROP TABLE players;
ALTER TABLE players_0004 RENAME TO players;
