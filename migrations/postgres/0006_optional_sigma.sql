-- A rating system may keep no uncertainty at all (Elo): its players' `sigma` and their
-- history rows' `sigma_before` / `sigma_after` are NULL. Every other system still writes them.
ALTER TABLE players ALTER COLUMN sigma DROP NOT NULL;
ALTER TABLE history ALTER COLUMN sigma_before DROP NOT NULL;
ALTER TABLE history ALTER COLUMN sigma_after DROP NOT NULL;
