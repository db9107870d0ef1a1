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
    n         BIGINT NOT NULL,
    perf      DOUBLE PRECISION NOT NULL,
    weight    DOUBLE PRECISION NOT NULL,
    beta      DOUBLE PRECISION NOT NULL,
    log_decay DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (pool, player, n)
);

ALTER TABLE players
    ADD COLUMN p0 DOUBLE PRECISION,
    ADD COLUMN w0 DOUBLE PRECISION,
    ADD COLUMN log_decay DOUBLE PRECISION NOT NULL DEFAULT 0,
    ADD COLUMN last_time BIGINT;

-- Beliefs stored before this migration carry each factor's current weight and no decay:
-- they become factors added at decay 0 by a player whose decay is 0. JSONB keeps a number's
-- decimal digits and float8 parses them correctly rounded, so every value keeps its bits.
INSERT INTO factors (pool, player, n, perf, weight, beta, log_decay)
SELECT p.pool, p.player,
       p.rounds - jsonb_array_length(p.state::jsonb -> 'factors') + f.ord,
       (f.value ->> 'perf')::float8, (f.value ->> 'weight')::float8,
       (f.value ->> 'beta')::float8, 0
FROM players p
CROSS JOIN LATERAL jsonb_array_elements(p.state::jsonb -> 'factors') WITH ORDINALITY AS f (value, ord);

UPDATE players SET
    p0 = (state::jsonb ->> 'p0')::float8,
    w0 = (state::jsonb ->> 'w0')::float8,
    last_time = (state::jsonb ->> 'last_time')::bigint;

ALTER TABLE players
    ALTER COLUMN p0 SET NOT NULL,
    ALTER COLUMN w0 SET NOT NULL,
    ALTER COLUMN log_decay DROP DEFAULT,
    DROP COLUMN state;
