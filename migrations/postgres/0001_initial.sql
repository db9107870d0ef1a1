-- Rating pools: one column per engine parameter, not a JSON document, because `rho` may be
-- infinite and JSON has no infinity.
CREATE TABLE pools (
    name          TEXT PRIMARY KEY,
    variant       TEXT NOT NULL CHECK (variant IN ('logistic', 'gaussian')),
    beta          DOUBLE PRECISION NOT NULL,
    gamma         DOUBLE PRECISION NOT NULL,
    rho           DOUBLE PRECISION NOT NULL,
    mu_init       DOUBLE PRECISION NOT NULL,
    sigma_init    DOUBLE PRECISION NOT NULL,
    drift_per_day DOUBLE PRECISION NOT NULL,
    history_limit BIGINT NOT NULL,
    ties          TEXT NOT NULL CHECK (ties IN ('both', 'split'))
);

-- Every accepted round, in acceptance order (`seq`, from 1 within a pool). A round is the
-- queue entry too: `status` moves from 'queued' to 'applied' or 'failed', never back.
CREATE TABLE rounds (
    pool         TEXT NOT NULL REFERENCES pools (name),
    id           TEXT NOT NULL,
    seq          BIGINT NOT NULL,
    body         TEXT NOT NULL,
    content_hash BYTEA NOT NULL,
    status       TEXT NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'applied', 'failed')),
    error        TEXT,
    -- Known once applied: the round's time (seconds since the epoch) and its number of
    -- standings, shown in every entrant's history.
    round_time   BIGINT,
    entrants     BIGINT,
    PRIMARY KEY (pool, id),
    UNIQUE (pool, seq)
);
CREATE INDEX rounds_by_status ON rounds (pool, status);
CREATE INDEX rounds_queued ON rounds (pool, seq) WHERE status = 'queued';

-- Each player's current belief. `state` is the whole posterior as JSON text (TEXT, not
-- JSONB, so the shortest round-trip floats come back exactly as printed); the other columns
-- are copies for queries. No foreign key: only apply_round writes here, after checking the
-- round under the pool's lock, and a per-row check would cost a probe per entrant.
CREATE TABLE players (
    pool            TEXT NOT NULL,
    player          TEXT NOT NULL,
    mu              DOUBLE PRECISION NOT NULL,
    sigma           DOUBLE PRECISION NOT NULL,
    rounds          BIGINT NOT NULL,
    last_round_id   TEXT NOT NULL,
    last_round_time BIGINT,
    state           TEXT NOT NULL,
    PRIMARY KEY (pool, player)
);

-- One row per player per applied round; also the round's results (joined on `seq`).
-- No foreign key, for the same reason as `players`.
CREATE TABLE history (
    pool         TEXT NOT NULL,
    player       TEXT NOT NULL,
    seq          BIGINT NOT NULL,
    rank         BIGINT NOT NULL,
    performance  DOUBLE PRECISION NOT NULL,
    mu_before    DOUBLE PRECISION NOT NULL,
    sigma_before DOUBLE PRECISION NOT NULL,
    mu_after     DOUBLE PRECISION NOT NULL,
    sigma_after  DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (pool, player, seq)
);
CREATE INDEX history_by_round ON history (pool, seq);
