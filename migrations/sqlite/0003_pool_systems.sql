-- The same change as migrations/postgres/0003_pool_systems.sql (read the reasons there).
--
-- SQLite's JSON functions print a REAL with 15 significant digits, which can lose its last
-- bits; `quote()` prints 15 digits only when they read back as the same double, and 20
-- otherwise, so `json(quote(x))` carries every parameter exactly. An infinite `rho` becomes
-- the string "inf". SQLite adds a NOT NULL column only with a default; every write sets all
-- three, so the defaults are never read.
ALTER TABLE pools ADD COLUMN system TEXT NOT NULL DEFAULT 'elo_mmr';
ALTER TABLE pools ADD COLUMN params TEXT NOT NULL DEFAULT '{}';
ALTER TABLE pools ADD COLUMN applied INTEGER NOT NULL DEFAULT 0;

UPDATE pools SET
    params = json_object(
        'variant', variant,
        'beta', json(quote(beta)),
        'gamma', json(quote(gamma)),
        'rho', json(CASE WHEN rho > 1.7976931348623157e308 THEN '"inf"' ELSE quote(rho) END),
        'mu_init', json(quote(mu_init)),
        'sigma_init', json(quote(sigma_init)),
        'drift_per_day', json(quote(drift_per_day)),
        'history_limit', history_limit,
        'ties', ties
    ),
    applied = (SELECT count(*) FROM rounds r WHERE r.pool = pools.name AND r.status = 'applied');

ALTER TABLE pools DROP COLUMN variant;
ALTER TABLE pools DROP COLUMN beta;
ALTER TABLE pools DROP COLUMN gamma;
ALTER TABLE pools DROP COLUMN rho;
ALTER TABLE pools DROP COLUMN mu_init;
ALTER TABLE pools DROP COLUMN sigma_init;
ALTER TABLE pools DROP COLUMN drift_per_day;
ALTER TABLE pools DROP COLUMN history_limit;
ALTER TABLE pools DROP COLUMN ties;
