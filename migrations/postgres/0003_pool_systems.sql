-- A pool names its rating system and keeps that system's parameters as one JSON object
-- (engine::SystemParams: each system has parameters of its own), instead of one column per
-- Elo-MMR parameter. Every existing pool is an Elo-MMR pool.
--
-- Floats are written by float8out, which (extra_float_digits > 0, the default since
-- PostgreSQL 12 and what sqlx sets) prints the shortest text that reads back as the same
-- double: the parameters convert exactly. JSON has no infinity, so an infinite `rho`
-- (Elo-MMR(∞)) is stored as the string "inf", as the API shows it.
--
-- `applied` counts the pool's applied rounds. The transaction that applies a round bumps it,
-- so the worker's check of its memory against the database reads one row instead of counting
-- the pool's rounds before every step.
ALTER TABLE pools ADD COLUMN system TEXT NOT NULL DEFAULT 'elo_mmr';
ALTER TABLE pools ADD COLUMN params TEXT;
ALTER TABLE pools ADD COLUMN applied BIGINT NOT NULL DEFAULT 0;

UPDATE pools p SET
    params = json_build_object(
        'variant', variant,
        'beta', beta,
        'gamma', gamma,
        'rho', CASE WHEN rho = 'Infinity' THEN to_json('inf'::TEXT) ELSE to_json(rho) END,
        'mu_init', mu_init,
        'sigma_init', sigma_init,
        'drift_per_day', drift_per_day,
        'history_limit', history_limit,
        'ties', ties
    )::TEXT,
    applied = (SELECT count(*) FROM rounds r WHERE r.pool = p.name AND r.status = 'applied');

ALTER TABLE pools
    ALTER COLUMN params SET NOT NULL,
    ALTER COLUMN system DROP DEFAULT,
    ALTER COLUMN applied DROP DEFAULT,
    DROP COLUMN variant,
    DROP COLUMN beta,
    DROP COLUMN gamma,
    DROP COLUMN rho,
    DROP COLUMN mu_init,
    DROP COLUMN sigma_init,
    DROP COLUMN drift_per_day,
    DROP COLUMN history_limit,
    DROP COLUMN ties;
