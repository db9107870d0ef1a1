-- The same schema as migrations/postgres/0001_initial.sql (read the reasons there), in
-- SQLite's types. STRICT tables refuse values of the wrong type instead of storing them.

CREATE TABLE pools (
    name          TEXT PRIMARY KEY,
    variant       TEXT NOT NULL CHECK (variant IN ('logistic', 'gaussian')),
    beta          REAL NOT NULL,
    gamma         REAL NOT NULL,
    rho           REAL NOT NULL,
    mu_init       REAL NOT NULL,
    sigma_init    REAL NOT NULL,
    drift_per_day REAL NOT NULL,
    history_limit INTEGER NOT NULL,
    ties          TEXT NOT NULL CHECK (ties IN ('both', 'split'))
) STRICT;

CREATE TABLE rounds (
    pool         TEXT NOT NULL REFERENCES pools (name),
    id           TEXT NOT NULL,
    seq          INTEGER NOT NULL,
    body         TEXT NOT NULL,
    content_hash BLOB NOT NULL,
    status       TEXT NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'applied', 'failed')),
    error        TEXT,
    round_time   INTEGER,
    entrants     INTEGER,
    PRIMARY KEY (pool, id),
    UNIQUE (pool, seq)
) STRICT;
CREATE INDEX rounds_by_status ON rounds (pool, status);
CREATE INDEX rounds_queued ON rounds (pool, seq) WHERE status = 'queued';

CREATE TABLE players (
    pool            TEXT NOT NULL,
    player          TEXT NOT NULL,
    mu              REAL NOT NULL,
    sigma           REAL NOT NULL,
    rounds          INTEGER NOT NULL,
    last_round_id   TEXT NOT NULL,
    last_round_time INTEGER,
    state           TEXT NOT NULL,
    PRIMARY KEY (pool, player)
) STRICT;

CREATE TABLE history (
    pool         TEXT NOT NULL,
    player       TEXT NOT NULL,
    seq          INTEGER NOT NULL,
    rank         INTEGER NOT NULL,
    performance  REAL NOT NULL,
    mu_before    REAL NOT NULL,
    sigma_before REAL NOT NULL,
    mu_after     REAL NOT NULL,
    sigma_after  REAL NOT NULL,
    PRIMARY KEY (pool, player, seq)
) STRICT;
CREATE INDEX history_by_round ON history (pool, seq);
