-- The same change as migrations/postgres/0006_optional_sigma.sql: `sigma` may be NULL for a
-- system that keeps no uncertainty (Elo). SQLite cannot drop a NOT NULL constraint, so
-- `players` and `history` are rebuilt (nothing refers to them; copying REAL values keeps every
-- bit) and history's index is made again.
CREATE TABLE players_0006 (
    pool            TEXT NOT NULL,
    player          TEXT NOT NULL,
    mu              REAL NOT NULL,
    sigma           REAL,
    rounds          INTEGER NOT NULL,
    last_round_id   TEXT NOT NULL,
    last_round_time INTEGER,
    p0              REAL,
    w0              REAL,
    log_decay       REAL,
    last_time       INTEGER,
    volatility      REAL,
    PRIMARY KEY (pool, player)
) STRICT;

INSERT INTO players_0006 (pool, player, mu, sigma, rounds, last_round_id, last_round_time,
                          p0, w0, log_decay, last_time, volatility)
SELECT pool, player, mu, sigma, rounds, last_round_id, last_round_time,
       p0, w0, log_decay, last_time, volatility
FROM players;

DROP TABLE players;
ALTER TABLE players_0006 RENAME TO players;

CREATE TABLE history_0006 (
    pool         TEXT NOT NULL,
    player       TEXT NOT NULL,
    seq          INTEGER NOT NULL,
    rank         INTEGER NOT NULL,
    performance  REAL NOT NULL,
    mu_before    REAL NOT NULL,
    sigma_before REAL,
    mu_after     REAL NOT NULL,
    sigma_after  REAL,
    PRIMARY KEY (pool, player, seq)
) STRICT;

INSERT INTO history_0006 (pool, player, seq, rank, performance, mu_before, sigma_before,
                          mu_after, sigma_after)
SELECT pool, player, seq, rank, performance, mu_before, sigma_before, mu_after, sigma_after
FROM history;

DROP TABLE history;
ALTER TABLE history_0006 RENAME TO history;
CREATE INDEX history_by_round ON history (pool, seq);
