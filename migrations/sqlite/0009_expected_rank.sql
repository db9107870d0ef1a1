-- Each history row's expected place before the round (docs/display.md, "Why a rating moved"):
-- 1 + the sum over the round's other entrants of P(they finish ahead), from the priors. NULL for
-- rows applied before this migration.
ALTER TABLE history ADD COLUMN expected_rank REAL;
